//! Every unsafe block of envshim: thin wrappers over the system calls std
//! does not offer. Each returns `io::Result` and nothing here makes policy.

use std::ffi::{CStr, CString};
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

/// `read(2)` into `buf`, retried on EINTR.
pub fn read(fd: BorrowedFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
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
pub fn execve(path: &CStr, argv: &[CString], envp: &[CString]) -> io::Error {
    let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_p.push(std::ptr::null());
    let mut envp_p: Vec<*const libc::c_char> = envp.iter().map(|e| e.as_ptr()).collect();
    envp_p.push(std::ptr::null());
    // SAFETY: both arrays are NULL-terminated and their strings outlive the call.
    unsafe { libc::execve(path.as_ptr(), argv_p.as_ptr(), envp_p.as_ptr()) };
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

/// The real and effective user ids, for "permission denied" messages.
pub fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
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
