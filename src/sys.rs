//! Every unsafe block of envshim: thin wrappers over the system calls std
//! does not offer. Each returns `io::Result` and nothing here makes policy.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_fd(ret: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a non-negative return of an open-like call is a new descriptor we own.
    cvt(ret).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat(2)`.
pub fn openat(dir: Option<BorrowedFd>, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `path` is NUL-terminated; the kernel does not keep the pointer.
    cvt_fd(unsafe { libc::openat(dirfd, path.as_ptr(), flags | libc::O_CLOEXEC, 0) })
}

/// `openat2(2)` with `RESOLVE_IN_ROOT`: `path` is resolved as if `root` were `/`.
pub fn openat2_in_root(root: BorrowedFd, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    // `struct open_how` of <linux/openat2.h> (libc's is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_IN_ROOT | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `how` and `path` outlive the call; the size passed is that of `how`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    cvt_fd(ret as libc::c_int)
}

/// `fstat(2)`.
pub fn fstat(fd: BorrowedFd) -> io::Result<libc::stat> {
    // SAFETY: a zeroed `stat` is a valid value; the kernel fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `stat`.
    cvt(unsafe { libc::fstat(fd.as_raw_fd(), &mut st) })?;
    Ok(st)
}

/// The target of the symbolic link opened (`O_PATH|O_NOFOLLOW`) as `fd`.
pub fn readlink_fd(fd: BorrowedFd) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: `buf` is writable for its length; an empty path reads the link `fd` itself.
    let n = unsafe { libc::readlinkat(fd.as_raw_fd(), c"".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

/// The names in the directory open (`O_RDONLY|O_DIRECTORY`) as `fd`,
/// without `.` and `..`, in the order `getdents64(2)` gives them; None when
/// there are more than `max` (the listing stops there).
pub fn dir_names(fd: BorrowedFd, max: usize) -> io::Result<Option<Vec<Vec<u8>>>> {
    let mut names = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        // SAFETY: `buf` is writable for its length; the kernel fills it with `linux_dirent64` records.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(Some(names));
        }
        let mut at = 0;
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), then the NUL-terminated name.
        while at + 19 < n as usize {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            // The kernel's records are never shorter; a shorter one would be no record.
            if reclen < 20 {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            let record = &buf[at + 19..(at + reclen).min(n as usize)];
            let name = &record[..record.iter().position(|&b| b == 0).unwrap_or(record.len())];
            if name != b"." && name != b".." {
                if names.len() == max {
                    return Ok(None);
                }
                names.push(name.to_vec());
            }
            at += reclen;
        }
    }
}

/// `read(2)` into the spare capacity of `buf`, which is not initialised
/// first (zeroing it would only touch pages the kernel is about to fill);
/// `buf` grows by the bytes read. Retried on EINTR.
pub fn read_spare(fd: BorrowedFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    let (ptr, room) = (spare.as_mut_ptr(), spare.len());
    loop {
        // SAFETY: `ptr` is writable for `room` bytes (the vector's spare capacity).
        let n = unsafe { libc::read(fd.as_raw_fd(), ptr.cast(), room) };
        if n >= 0 {
            // SAFETY: the kernel initialised the first `n` (at most `room`) spare bytes.
            unsafe { buf.set_len(buf.len() + n as usize) };
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// `faccessat(2)` with `X_OK`, checked with the effective ids.
pub fn executable(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated.
    cvt(unsafe { libc::faccessat(libc::AT_FDCWD, path.as_ptr(), libc::X_OK, libc::AT_EACCESS) }).map(drop)
}

/// `stat(2)`.
pub fn stat(path: &CStr) -> io::Result<libc::stat> {
    // SAFETY: a zeroed `stat` is a valid value; the kernel fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` writable.
    cvt(unsafe { libc::stat(path.as_ptr(), &mut st) })?;
    Ok(st)
}

/// `execve(2)`: returns only on failure.
pub fn execve(path: &CStr, argv: &[*const libc::c_char], envp: &crate::exec::Envp) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    // SAFETY: both arrays are NULL-terminated and their strings, NUL-terminated,
    // outlive the call (`Exec` holds the argv strings, `envp` borrows the
    // environment that holds the others).
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.pointers().as_ptr()) };
    io::Error::last_os_error()
}

/// The soft `RLIMIT_STACK`, which sets how much argv + envp `execve` accepts.
pub fn stack_limit() -> Option<u64> {
    // SAFETY: a zeroed `rlimit` is valid; the kernel fills it.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `rl` is writable.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut rl) } == 0;
    (ok && rl.rlim_cur != libc::RLIM_INFINITY).then_some(rl.rlim_cur as u64)
}

/// The effective user id (the one permission checks use), for "permission denied" messages.
pub fn uid() -> u32 {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() }
}

/// The command line as C's `main` received it.
///
/// # Safety
/// `argv` must point to `argc` valid NUL-terminated strings, as C's `main` gets them.
pub unsafe fn args(argc: libc::c_int, argv: *const *const libc::c_char) -> Vec<std::ffi::OsString> {
    use std::os::unix::ffi::OsStrExt;
    (0..argc.max(0) as usize)
        // SAFETY: the caller guarantees `argc` valid strings at `argv`.
        .map(|i| std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(*argv.add(i)) }.to_bytes()).to_os_string())
        .collect()
}

/// `fchmod(2)`.
pub fn fchmod(fd: BorrowedFd, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor we borrow.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
}

// ------------------------------------------------ processes and signals (`--init`)

/// A set of signals (`sigset_t`).
#[derive(Clone, Copy)]
pub struct SigSet(libc::sigset_t);

impl SigSet {
    /// The empty set.
    pub fn empty() -> SigSet {
        // SAFETY: a zeroed `sigset_t` is valid storage; sigemptyset only fails on a NULL pointer.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is valid and writable.
        unsafe { libc::sigemptyset(&mut set) };
        SigSet(set)
    }

    /// Every signal.
    pub fn full() -> SigSet {
        // SAFETY: as in `empty`; sigfillset only fails on a NULL pointer.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is valid and writable.
        unsafe { libc::sigfillset(&mut set) };
        SigSet(set)
    }

    /// Adds `sig`; EINVAL when it is not a signal number.
    pub fn add(&mut self, sig: libc::c_int) -> io::Result<()> {
        // SAFETY: `self.0` is an initialised `sigset_t`.
        cvt(unsafe { libc::sigaddset(&mut self.0, sig) }).map(drop)
    }

    /// Removes `sig`; EINVAL when it is not a signal number.
    pub fn remove(&mut self, sig: libc::c_int) -> io::Result<()> {
        // SAFETY: `self.0` is an initialised `sigset_t`.
        cvt(unsafe { libc::sigdelset(&mut self.0, sig) }).map(drop)
    }
}

/// `sigprocmask(SIG_SETMASK)`: blocks exactly `set`; returns the previous mask.
pub fn set_signal_mask(set: &SigSet) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    // SAFETY: both sets are valid; the kernel copies them.
    cvt(unsafe { libc::sigprocmask(libc::SIG_SETMASK, &set.0, &mut old.0) })?;
    Ok(old)
}

/// `sigprocmask(SIG_BLOCK)`: blocks `set` as well; returns the previous mask.
pub fn block_signals(set: &SigSet) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    // SAFETY: both sets are valid; the kernel copies them.
    cvt(unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set.0, &mut old.0) })?;
    Ok(old)
}

/// What a signal does when it is delivered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Disposition {
    Default,
    Ignore,
}

/// `sigaction(2)` setting `SIG_DFL` or `SIG_IGN`.
pub fn set_disposition(sig: libc::c_int, disposition: Disposition) -> io::Result<()> {
    // SAFETY: a zeroed `sigaction` is valid: no flags, an empty mask.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = match disposition {
        Disposition::Default => libc::SIG_DFL,
        Disposition::Ignore => libc::SIG_IGN,
    };
    // SAFETY: `action` is valid for the call; the previous action is not asked for.
    cvt(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) }).map(drop)
}

/// What a signal caught by [`catch_if_default`] does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Handler {
    /// Ends the process at once with exit code 128 + the signal number.
    Exit,
    /// Nothing: the system call that raised it (a write to a closed pipe) fails instead.
    Nothing,
}

extern "C" fn exit_128_plus(sig: libc::c_int) {
    // SAFETY: _exit is async-signal-safe and has no preconditions.
    unsafe { libc::_exit(128 + sig) }
}

extern "C" fn do_nothing(_sig: libc::c_int) {}

/// Installs `handler` for `sig` when its disposition is the default, and
/// returns whether it did: an inherited "ignore" is left alone. `execve`
/// resets a caught signal to the default, so a program started afterwards
/// inherits the same disposition envshim did.
pub fn catch_if_default(sig: libc::c_int, handler: Handler) -> io::Result<bool> {
    if disposition(sig)? != libc::SIG_DFL {
        return Ok(false);
    }
    let f: extern "C" fn(libc::c_int) = match handler {
        Handler::Exit => exit_128_plus,
        Handler::Nothing => do_nothing,
    };
    // SAFETY: a zeroed `sigaction` is valid: no flags, an empty mask.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = f as libc::sighandler_t;
    // SAFETY: `action` is valid for the call, and both handlers are
    // async-signal-safe (one calls only `_exit`, the other nothing).
    cvt(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) })?;
    Ok(true)
}

/// The current action of `sig`: `SIG_DFL`, `SIG_IGN` or a handler.
fn disposition(sig: libc::c_int) -> io::Result<libc::sighandler_t> {
    // SAFETY: a zeroed `sigaction` is valid storage; the kernel fills it.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: asks for the current action only (no new one is given).
    cvt(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction)
}

/// Whether `sig` is ignored (an inherited `SIG_IGN`, as under `nohup`).
pub fn is_ignored(sig: libc::c_int) -> io::Result<bool> {
    Ok(disposition(sig)? == libc::SIG_IGN)
}

/// `sigtimedwait(2)`: takes the next pending signal of `set` (which must be
/// blocked), waiting at most `timeout` (None: without limit). Ok(None) when
/// the time ran out or the wait was interrupted (a stop and continue).
pub fn wait_signal(set: &SigSet, timeout: Option<std::time::Duration>) -> io::Result<Option<libc::c_int>> {
    // Clamped to what a 32-bit time_t holds (68 years).
    let ts = timeout.map(|t| libc::timespec { tv_sec: t.as_secs().min(i32::MAX as u64) as _, tv_nsec: t.subsec_nanos() as _ });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a zeroed `siginfo_t` is valid storage; the kernel fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set`, `info` and `ts` (when given) outlive the call.
    let sig = unsafe { libc::sigtimedwait(&set.0, &mut info, ts_ptr) };
    if sig >= 0 {
        return Ok(Some(sig));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(None),
        _ => Err(e),
    }
}

/// Runs `child` in a new process that shares this one's memory until it
/// execs or exits, as `posix_spawn` does (`clone(CLONE_VM | CLONE_VFORK)`):
/// no page tables are copied and no page is faulted in again for a copy.
/// This process is suspended until then; returns the child's pid.
///
/// `child` must end with `execve` or [`exit_now`], must not allocate, and
/// runs on a 32 KiB stack of its own, taken from the heap uninitialised: a
/// stack array here would sit in the caller's frame, which the compiler
/// probes page by page on entry (8 page faults in every run, `--init` or not,
/// once inlined into `main`); on the heap only the pages the child uses are
/// faulted in. It has its own copy of the signal dispositions (no
/// `CLONE_SIGHAND`), and the caller blocks every signal it could catch
/// first, so no handler runs on the shared memory.
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
    let pid = unsafe {
        libc::clone(start::<F>, top, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, child as *mut F as *mut libc::c_void)
    };
    cvt(pid)
}

/// `waitpid(2)` for `pid`, retried on EINTR; returns its wait status.
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
    // SAFETY: plain syscall on integers.
    cvt(unsafe { libc::setpgid(pid, pgid) }).map(drop)
}

/// `getpgrp(2)`: this process's group.
pub fn getpgrp() -> libc::pid_t {
    // SAFETY: getpgrp cannot fail.
    unsafe { libc::getpgrp() }
}

/// Standard input, as a descriptor (without std's buffered `Stdin`).
pub fn stdin() -> BorrowedFd<'static> {
    // SAFETY: descriptor 0 stays open for the life of the process (a closed
    // one only makes the calls on it fail with EBADF).
    unsafe { BorrowedFd::borrow_raw(libc::STDIN_FILENO) }
}

/// `tcgetpgrp(3)`: the foreground process group of the terminal `fd`.
pub fn tcgetpgrp(fd: BorrowedFd) -> io::Result<libc::pid_t> {
    // SAFETY: plain ioctl on a descriptor we borrow.
    cvt(unsafe { libc::tcgetpgrp(fd.as_raw_fd()) })
}

/// `tcsetpgrp(3)`: makes `pgrp` the foreground process group of the terminal `fd`.
pub fn tcsetpgrp(fd: BorrowedFd, pgrp: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain ioctl on a descriptor we borrow.
    cvt(unsafe { libc::tcsetpgrp(fd.as_raw_fd(), pgrp) }).map(drop)
}

/// `kill(2)`: `pid` > 0 is a process, `-pgid` a process group.
pub fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall on integers.
    cvt(unsafe { libc::kill(pid, sig) }).map(drop)
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
    // SAFETY: plain prctl on integers.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// `_exit(2)`: ends this process now, without running exit handlers or
/// flushing buffers (in a forked child they are the parent's).
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

/// The binary's allocator: a bump arena for a process that usually lives a
/// few hundred microseconds before `execve`.
///
/// musl's allocator (mallocng) maps and unmaps small regions all the time: at
/// start-up it made ~170 of envshim's ~190 system calls (docs/performance.md).
/// This one hands out memory from a 4 MiB static region (`.bss`: no system
/// call, pages faulted in only as used), gives the most recent allocation
/// back to the cursor, grows the most recent one in place, keeps other freed
/// blocks of 16 bytes or more on free lists by size (power-of-two classes) for
/// the next allocations that fit, so that memory already faulted in is used
/// again (clap's command, grown `Vec`s, the manifest's tree; docs/performance.md),
/// and falls back to the system allocator once the region is used up, so an
/// `--init` supervisor that kept allocating would move to malloc, never fail.
pub struct Arena;

/// Free lists: class `k` holds freed blocks of at least `2^k` bytes; a block
/// holds the next block's address and its own size in its first 16 bytes.
/// Slot 0 ([`NONEMPTY`]) holds the set of non-empty classes instead.
struct FreeLists(std::cell::UnsafeCell<[usize; usize::BITS as usize]>);
// SAFETY: only touched with `FREE_LOCK` held.
unsafe impl Sync for FreeLists {}
static FREE: FreeLists = FreeLists(std::cell::UnsafeCell::new([0; usize::BITS as usize]));
static FREE_LOCK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Runs `f` on the free lists, with the lock held.
fn with_free_lists<T>(f: impl FnOnce(&mut [usize; usize::BITS as usize]) -> T) -> T {
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    while FREE_LOCK.compare_exchange_weak(false, true, Acquire, Relaxed).is_err() {
        std::hint::spin_loop();
    }
    // SAFETY: the lock makes this the only reference to the lists.
    let r = f(unsafe { &mut *FREE.0.get() });
    FREE_LOCK.store(false, Release);
    r
}

/// A freed block of the region that fits `l`, taken off its free list: the
/// first one at the head of the smallest class that fits, or of any larger
/// class, that holds the request at its alignment. What the request leaves of the block (16 bytes or more) is
/// listed again, so pages already faulted in serve small requests too.
fn take_free(l: std::alloc::Layout) -> Option<*mut u8> {
    if l.size() < 16 {
        return None;
    }
    // Every block of class ceil(log2(size)) or above is large enough.
    let class = (usize::BITS - (l.size() - 1).leading_zeros()) as usize;
    let used = (l.size() + 15) & !15;
    with_free_lists(|lists| {
        // The non-empty classes at or above `class` (bit k of `lists[NONEMPTY]`: class k).
        let mut classes = lists[NONEMPTY] >> class << class;
        loop {
            let c = classes.trailing_zeros() as usize;
            if c == usize::BITS as usize {
                return None;
            }
            let head = lists[c];
            // The bytes that bring the request to its alignment (a `Vec<u8>`'s
            // block may start anywhere): they stay free, listed when 16 or more.
            let pad = head.wrapping_neg() & (l.align() - 1);
            // SAFETY: `head` is a freed block of the region, at least 16 bytes,
            // whose first two words the dealloc that listed it wrote.
            let (next, size) = unsafe { ((head as *const usize).read_unaligned(), (head as *const usize).add(1).read_unaligned()) };
            if size >= pad + l.size() {
                lists[c] = next;
                if next == 0 {
                    lists[NONEMPTY] &= !(1 << c);
                }
                if pad >= 16 {
                    push_free(lists, head as *mut u8, pad);
                }
                if size >= pad + used + 16 {
                    push_free(lists, (head + pad + used) as *mut u8, size - pad - used);
                }
                return Some((head + pad) as *mut u8);
            }
            classes &= classes - 1;
        }
    })
}

/// Lists the freed block `p` of `size` bytes (at least 16) under class floor(log2(size)).
fn put_free(p: *mut u8, size: usize) {
    with_free_lists(|lists| push_free(lists, p, size))
}

fn push_free(lists: &mut [usize; usize::BITS as usize], p: *mut u8, size: usize) {
    let class = (usize::BITS - 1 - size.leading_zeros()) as usize;
    // SAFETY: `p` is a block of the region, no longer used, of `size` >= 16 bytes.
    unsafe {
        (p as *mut usize).write_unaligned(lists[class]);
        (p as *mut usize).add(1).write_unaligned(size);
    }
    lists[class] = p as usize;
    lists[NONEMPTY] |= 1 << class;
}

/// The slot of the free lists that holds the set of non-empty classes, not a
/// list (class 0 would hold blocks of 1 byte; blocks are 16 bytes or more).
const NONEMPTY: usize = 0;

const ARENA_BYTES: usize = 4 << 20;

#[repr(C, align(4096))]
struct Region(std::cell::UnsafeCell<[u8; ARENA_BYTES]>);
// SAFETY: each byte is handed out to one owner at a time, through the atomic cursor.
unsafe impl Sync for Region {}
static REGION: Region = Region(std::cell::UnsafeCell::new([0; ARENA_BYTES]));
/// Offset of the first free byte of the region.
static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn region_base() -> usize {
    REGION.0.get() as usize
}

fn in_region(p: *mut u8) -> bool {
    (region_base()..region_base() + ARENA_BYTES).contains(&(p as usize))
}

// SAFETY: `alloc` returns either a fresh, suitably aligned range of the region
// that no other allocation overlaps (the cursor moves past it atomically) or
// the system allocator's block; `dealloc`/`realloc` route each pointer back to
// whichever gave it out.
unsafe impl std::alloc::GlobalAlloc for Arena {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(p) = take_free(l) {
            return p;
        }
        let mut cur = NEXT.load(Relaxed);
        loop {
            let start = (region_base() + cur + l.align() - 1) & !(l.align() - 1);
            let end = start - region_base() + l.size();
            if end > ARENA_BYTES {
                // SAFETY: forwarding the caller's valid layout.
                return unsafe { std::alloc::System.alloc(l) };
            }
            match NEXT.compare_exchange_weak(cur, end, Relaxed, Relaxed) {
                Ok(_) => return start as *mut u8,
                Err(now) => cur = now,
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
        if !in_region(p) {
            // SAFETY: `p` came from the system allocator with layout `l`.
            return unsafe { std::alloc::System.dealloc(p, l) };
        }
        // The most recent allocation gives its bytes back to the cursor; any
        // other of 16 bytes or more goes on a free list.
        let off = p as usize - region_base();
        let top = NEXT.compare_exchange(off + l.size(), off, std::sync::atomic::Ordering::Relaxed, std::sync::atomic::Ordering::Relaxed);
        if top.is_err() && l.size() >= 16 {
            put_free(p, l.size());
        }
    }

    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, new: usize) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        if !in_region(p) {
            // SAFETY: `p` came from the system allocator with layout `l`.
            return unsafe { std::alloc::System.realloc(p, l, new) };
        }
        let off = p as usize - region_base();
        if new <= l.size() {
            return p;
        }
        // The most recent allocation grows in place.
        if off + new <= ARENA_BYTES && NEXT.compare_exchange(off + l.size(), off + new, Relaxed, Relaxed).is_ok() {
            return p;
        }
        // SAFETY: `new` is non-zero (it exceeds `l.size()`) and `l.align()` is a valid alignment.
        let q = unsafe { self.alloc(std::alloc::Layout::from_size_align_unchecked(new, l.align())) };
        if !q.is_null() {
            // SAFETY: both blocks are valid for `l.size()` bytes and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(p, q, l.size());
                self.dealloc(p, l);
            }
        }
        q
    }
}

/// Byte scans of the env-file parser, sixteen bytes at a time with SSE2 (part
/// of every x86_64 target: no run-time detection, whose CPUID traps to the
/// hypervisor on some machines). The parser scans eight bytes at a time
/// without them (other targets, and its tests, which check both agree).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub mod sse2 {
    use std::arch::x86_64::*;

    /// The first byte from `i` that is a control byte or a blank (at most
    /// 0x20: NUL, TAB, LF, CR, space), or `data.len()`.
    #[inline(always)]
    pub fn control_or_blank(data: &[u8], i: usize) -> usize {
        // SAFETY (both blocks): SSE2 is enabled (the module's `cfg`).
        scan(data, i, |x| unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x20)), x)) as u32 })
    }

    /// The first byte from `i` that is a control byte or a blank, `=`, or
    /// from 0x7f (what cannot be in a name written without blanks), or `data.len()`.
    #[inline(always)]
    pub fn not_in_plain_name(data: &[u8], i: usize) -> usize {
        scan(data, i, |x| unsafe {
            // 0x21..=0x7e, less `=`: the bytes that are not marked.
            let y = _mm_sub_epi8(x, _mm_set1_epi8(0x21));
            let printable = _mm_cmpeq_epi8(_mm_min_epu8(y, _mm_set1_epi8(0x7e - 0x21)), y);
            let eq = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'=' as i8));
            _mm_movemask_epi8(_mm_andnot_si128(eq, printable)) as u32 ^ 0xffff
        })
    }

    /// Whether every byte of `data` is ASCII: 64 bytes a step (four blocks
    /// or-ed, one test), then 16, then the rest. About a third of the
    /// instructions of `<[u8]>::is_ascii` on a 64 KiB file.
    pub fn is_ascii(data: &[u8]) -> bool {
        let mut chunks = data.chunks_exact(64);
        for c in &mut chunks {
            // SAFETY: SSE2 is enabled (the module's `cfg`).
            let high = unsafe {
                let x = _mm_or_si128(_mm_or_si128(load(c), load(&c[16..])), _mm_or_si128(load(&c[32..]), load(&c[48..])));
                _mm_movemask_epi8(x)
            };
            if high != 0 {
                return false;
            }
        }
        let mut blocks = chunks.remainder().chunks_exact(16);
        // SAFETY: as above.
        blocks.all(|b| unsafe { _mm_movemask_epi8(load(b)) } == 0) && blocks.remainder().is_ascii()
    }

    /// The first byte from `i` whose bit `marks` sets (bit k: byte k of the 16 it is given).
    #[inline(always)]
    fn scan(data: &[u8], mut i: usize, marks: impl Fn(__m128i) -> u32) -> usize {
        let len = data.len();
        while let Some(block) = data.get(i..i + 16) {
            let m = marks(load(block));
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
        if i >= len {
            return len;
        }
        // Fewer than 16 bytes left: the data's last 16 bytes, those before `i`
        // shifted out, or (shorter data) a copy padded with bytes never looked at.
        let m = if len >= 16 {
            marks(load(&data[len - 16..])) >> (i + 16 - len)
        } else {
            let mut padded = [0u8; 16];
            padded[..len - i].copy_from_slice(&data[i..]);
            marks(load(&padded)) & ((1 << (len - i)) - 1)
        };
        if m != 0 { i + m.trailing_zeros() as usize } else { len }
    }

    #[inline(always)]
    fn load(block: &[u8]) -> __m128i {
        assert!(block.len() >= 16);
        // SAFETY: SSE2 is enabled; the unaligned load reads 16 bytes of `block`.
        unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::{GlobalAlloc, Layout};

    /// The only test that uses the region (the test binary's allocator is the system one).
    #[test]
    fn arena_bump_lifo_grow_in_place_and_fallback() {
        let a = Arena;
        let l = |n| Layout::from_size_align(n, 8).unwrap();
        unsafe {
            let p = a.alloc(l(100));
            assert!(in_region(p) && p as usize % 8 == 0);
            p.write_bytes(7, 100);
            // The most recent allocation grows in place and keeps its bytes.
            let g = a.realloc(p, l(100), 5000);
            assert_eq!(g, p);
            assert_eq!(*g.add(99), 7);
            // A newer allocation stops it growing in place: it moves, bytes copied.
            let q = a.alloc(l(16));
            let m = a.realloc(g, l(5000), 6000);
            assert_ne!(m, g);
            assert_eq!(*m.add(99), 7);
            // LIFO: freeing the most recent allocation gives its bytes back.
            a.dealloc(m, l(6000));
            let r = a.alloc(l(6000));
            assert_eq!(r, m);
            a.dealloc(r, l(6000));
            a.dealloc(q, l(16));
            // A freed block below the cursor is listed and given to the next
            // allocation it fits; a block too small for a request is not.
            let x = a.alloc(l(40));
            let y = a.alloc(l(16));
            y.write_bytes(9, 16);
            a.dealloc(x, l(40));
            assert_ne!(a.alloc(l(48)), x, "40 bytes cannot hold 48");
            let z = a.alloc(l(32));
            assert_eq!(z, x, "class 5 (32..63 bytes) serves a 32-byte request");
            z.write_bytes(3, 32);
            assert!((0..16).all(|i| *y.add(i) == 9), "the neighbour is untouched");
            a.dealloc(z, l(32));
            a.dealloc(y, l(16));
            // A request takes a block of a larger class when its own is empty,
            // and what it leaves (16-byte steps) is listed for the next ones.
            let b = a.alloc(l(1000));
            let g = a.alloc(l(16));
            a.dealloc(b, l(1000));
            let s1 = a.alloc(l(100));
            assert_eq!(s1, b, "class 9 (1000 bytes) serves 100 when classes 7 and 8 are empty");
            let s2 = a.alloc(l(200));
            assert_eq!(s2, b.add(112), "the rest of the block serves the next request");
            s1.write_bytes(1, 100);
            s2.write_bytes(2, 200);
            assert!((0..100).all(|i| *s1.add(i) == 1), "the pieces do not overlap");
            let s3 = a.alloc(l(700));
            assert!(s3 as usize >= g as usize + 16, "680 bytes left cannot hold 700: fresh memory");
            // A block that starts off the request's alignment (a `Vec<u8>`'s)
            // serves it from its first aligned byte.
            let one = Layout::from_size_align(1, 1).unwrap();
            while a.alloc(one) as usize % 8 != 0 {}
            let bytes = Layout::from_size_align(5000, 1).unwrap();
            let odd = a.alloc(bytes);
            assert_eq!(odd as usize % 8, 1);
            a.alloc(one);
            a.dealloc(odd, bytes);
            assert_eq!(a.alloc(l(4000)), odd.add(7), "5000 bytes hold 7 of padding and 4000");
            // Alignment is honoured.
            let big = Layout::from_size_align(10, 4096).unwrap();
            let s = a.alloc(big);
            assert_eq!(s as usize % 4096, 0);
            // Beyond the region: the system allocator, and back to it on free.
            let huge = a.alloc(l(ARENA_BYTES + 1));
            assert!(!huge.is_null() && !in_region(huge));
            huge.write_bytes(1, ARENA_BYTES + 1);
            let huge2 = a.realloc(huge, l(ARENA_BYTES + 1), ARENA_BYTES + 4096);
            a.dealloc(huge2, l(ARENA_BYTES + 4096));
        }
    }
}
