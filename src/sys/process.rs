//! Processes: the command line, `execve` and its limits, ids, starting,
//! waiting for and reaping children, process groups and the terminal.
//! Through `nix`, except `execve`, `clone`, `waitpid` and `_exit` (each says why).

use std::ffi::CStr;
use std::io;
use std::os::fd::BorrowedFd;

use nix::unistd::Pid;

use super::cvt;

/// The pointers of an `envp` array (then a null one) into strings that
/// `owner`, borrowed for `'e`, holds: the borrow keeps them alive for
/// [`execve`].
pub struct Envp<'e> {
    ptrs: Vec<*const libc::c_char>,
    owner: std::marker::PhantomData<&'e ()>,
}

impl<'e> Envp<'e> {
    pub fn new<T: ?Sized>(ptrs: Vec<*const libc::c_char>, _owner: &'e T) -> Envp<'e> {
        debug_assert!(ptrs.last().is_some_and(|p| p.is_null()));
        Envp { ptrs, owner: std::marker::PhantomData }
    }

    /// A pointer to each string, then a null one.
    pub fn pointers(&self) -> &[*const libc::c_char] {
        &self.ptrs
    }
}

/// `execve(2)`: returns only on failure. Raw `libc`: `nix`'s `execve`
/// builds its pointer arrays on each call, and `--init`'s child, which
/// shares the parent's memory until it execs, must not allocate.
pub fn execve(path: &CStr, argv: &[*const libc::c_char], envp: &Envp) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    // SAFETY: both arrays are NULL-terminated and their strings, NUL-terminated,
    // outlive the call (`Exec` holds the argv strings, `envp` borrows the
    // environment that holds the others).
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.pointers().as_ptr()) };
    io::Error::last_os_error()
}

/// The soft `RLIMIT_STACK`, which sets how much argv + envp `execve` accepts.
pub fn stack_limit() -> Option<u64> {
    let (soft, _) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_STACK).ok()?;
    (soft != libc::RLIM_INFINITY).then_some(soft)
}

/// The effective user id (the one permission checks use), for "permission denied" messages.
pub fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The command line as C's `main` received it, read by [`Argv::to_vec`].
#[derive(Clone, Copy)]
pub struct Argv {
    argc: libc::c_int,
    argv: *const *const libc::c_char,
}

impl Argv {
    /// # Safety
    /// `argv` must point to `argc` valid NUL-terminated strings that live as
    /// long as the process, as C's `main` gets them.
    #[inline]
    pub unsafe fn new(argc: libc::c_int, argv: *const *const libc::c_char) -> Argv {
        Argv { argc, argv }
    }

    /// The arguments, copied.
    pub fn to_vec(self) -> Vec<std::ffi::OsString> {
        use std::os::unix::ffi::OsStrExt;
        (0..self.argc.max(0) as usize)
            // SAFETY: `Argv::new`'s caller guarantees `argc` valid strings at `argv`.
            .map(|i| std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(*self.argv.add(i)) }.to_bytes()).to_os_string())
            .collect()
    }
}

/// Defines C's `main` to return `$run(argv)` ([`Argv`]): the binary starts
/// from C's `main` (src/main.rs says why). Declaring it (`no_mangle`) and
/// taking its arguments are unsafe code, which stays in this module: the
/// `unsafe_code` lint judges a macro's code where it is written, so main.rs,
/// which calls it, allows nothing.
#[macro_export]
macro_rules! c_main {
    ($run:path) => {
        // `no_mangle`: the symbol C's start-up calls.
        #[no_mangle]
        extern "C" fn main(argc: ::std::ffi::c_int, argv: *const *const ::std::ffi::c_char) -> ::std::ffi::c_int {
            // SAFETY: these are C main's own arguments.
            $run(unsafe { $crate::Argv::new(argc, argv) })
        }
    };
}

/// Runs `child` in a new process that shares this one's memory until it
/// execs or exits, as `posix_spawn` does (`clone(CLONE_VM | CLONE_VFORK)`):
/// no page tables are copied and no page is faulted in again for a copy.
/// This process is suspended until then; returns the child's pid.
///
/// `child` must end with `execve` or [`exit_now`], must not allocate, and
/// runs on a 32 KiB stack of its own, taken from the heap uninitialised: a
/// stack array here would sit in the caller's frame, which the compiler
/// probes page by page on entry (in every run, `--init` or not, once
/// inlined into `main`); on the heap only the pages the child uses are
/// faulted in. It has its own copy of the signal dispositions (no
/// `CLONE_SIGHAND`), and the caller blocks every signal it could catch
/// first, so no handler runs on the shared memory. Raw `libc`: `nix`'s
/// `clone` takes the stack as an initialised `&mut [u8]` (zeroing it would
/// fault in all 8 pages).
pub fn spawn_shared<F: FnMut() -> libc::c_int>(child: &mut F) -> io::Result<libc::pid_t> {
    extern "C" fn start<F: FnMut() -> libc::c_int>(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` is the `&mut F` given to clone below, alive (the
        // parent is suspended in clone until this process execs or exits).
        let child = unsafe { &mut *(arg as *mut F) };
        exit_now(child())
    }
    #[repr(C, align(16))]
    struct Stack([u8; 32 * 1024]);
    let mut stack = Box::<Stack>::new_uninit();
    // The stack grows down: the child starts at its (16-byte aligned) end.
    let top = stack.as_mut_ptr().wrapping_add(1) as *mut libc::c_void;
    // SAFETY: `start` only runs `child` on `stack`, both alive for the whole
    // life of the child's use of them (CLONE_VFORK), then execs or _exits.
    let pid = unsafe { libc::clone(start::<F>, top, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, child as *mut F as *mut libc::c_void) };
    cvt(pid)
}

/// `waitpid(2)` for `pid`, retried on EINTR; returns its wait status.
/// Raw `libc` (as [`reap_one`]): `--init` maps the status word the way tini
/// does (`WIFEXITED`, `WTERMSIG`); `nix` decodes it into a `WaitStatus`.
pub fn wait_for(pid: libc::pid_t) -> io::Result<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is writable.
        match cvt(unsafe { libc::waitpid(pid, &mut status, 0) }) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r.map(|_| status),
        }
    }
}

/// `setpgid(2)`: moves `pid` (0: this process) into the group `pgid` (0: its own).
pub fn setpgid(pid: libc::pid_t, pgid: libc::pid_t) -> io::Result<()> {
    Ok(nix::unistd::setpgid(Pid::from_raw(pid), Pid::from_raw(pgid))?)
}

/// `getpgid(2)`: the group of the process `pid` (a zombie's too, until it is reaped).
pub fn getpgid(pid: libc::pid_t) -> io::Result<libc::pid_t> {
    Ok(nix::unistd::getpgid(Some(Pid::from_raw(pid)))?.as_raw())
}

/// `getpgrp(2)`: this process's group.
pub fn getpgrp() -> libc::pid_t {
    nix::unistd::getpgrp().as_raw()
}

/// Standard input, as a descriptor (without std's buffered `Stdin`).
pub fn stdin() -> BorrowedFd<'static> {
    // SAFETY: descriptor 0 stays open for the life of the process (a closed
    // one only makes the calls on it fail with EBADF).
    unsafe { BorrowedFd::borrow_raw(libc::STDIN_FILENO) }
}

/// `tcgetpgrp(3)`: the foreground process group of the terminal `fd`.
pub fn tcgetpgrp(fd: BorrowedFd) -> io::Result<libc::pid_t> {
    Ok(nix::unistd::tcgetpgrp(fd)?.as_raw())
}

/// `tcsetpgrp(3)`: makes `pgrp` the foreground process group of the terminal `fd`.
pub fn tcsetpgrp(fd: BorrowedFd, pgrp: libc::pid_t) -> io::Result<()> {
    Ok(nix::unistd::tcsetpgrp(fd, Pid::from_raw(pgrp))?)
}

/// `waitpid(-1, WNOHANG)`, retried on EINTR: a child that has terminated and
/// its wait status, or None when children remain and none has terminated.
pub fn reap_one() -> io::Result<Option<(libc::pid_t, libc::c_int)>> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is writable.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            return Ok(Some((pid, status)));
        }
        if pid == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `prctl(PR_SET_CHILD_SUBREAPER)`: orphaned descendants are re-parented to
/// this process instead of to PID 1.
pub fn set_child_subreaper() -> io::Result<()> {
    Ok(nix::sys::prctl::set_child_subreaper(true)?)
}

/// `_exit(2)`: ends this process now, without running exit handlers or
/// flushing buffers (in a forked child they are the parent's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return (`nix` has no wrapper).
    unsafe { libc::_exit(code) }
}
