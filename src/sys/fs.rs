//! Files: opening (inside a volume too), reading, metadata, permissions.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use super::{cvt, cvt_fd};

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

/// `fchmod(2)`.
pub fn fchmod(fd: BorrowedFd, mode: libc::mode_t) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor we borrow.
    cvt(unsafe { libc::fchmod(fd.as_raw_fd(), mode) }).map(drop)
}
