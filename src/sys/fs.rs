//! Files: opening (inside a volume too), reading, metadata, permissions.
//! Through `nix`, except `read_spare` (below).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use nix::fcntl::{OFlag, OpenHow, ResolveFlag, AT_FDCWD};
use nix::sys::stat::Mode;
use nix::unistd::AccessFlags;

/// `openat(2)` (`dir` None: the working directory), with `O_CLOEXEC`.
pub fn openat(dir: Option<BorrowedFd>, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let flags = OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC;
    Ok(nix::fcntl::openat(dir.unwrap_or(AT_FDCWD), path, flags, Mode::empty())?)
}

/// `openat2(2)` with `RESOLVE_IN_ROOT`: `path` is resolved as if `root` were `/`.
pub fn openat2_in_root(root: BorrowedFd, path: &CStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let how = OpenHow::new()
        .flags(OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC)
        .resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    Ok(nix::fcntl::openat2(root, path, how)?)
}

/// `fstat(2)`.
pub fn fstat(fd: BorrowedFd) -> io::Result<libc::stat> {
    Ok(nix::sys::stat::fstat(fd)?)
}

/// The target of the symbolic link opened (`O_PATH|O_NOFOLLOW`) as `fd`.
pub fn readlink_fd(fd: BorrowedFd) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    Ok(nix::fcntl::readlinkat(fd, c"")?.into_vec())
}

/// `read(2)` into the spare capacity of `buf`, which is not initialised
/// first (zeroing it would only touch pages the kernel is about to fill);
/// `buf` grows by the bytes read. Retried on EINTR. Raw `libc`: `nix`'s
/// `read` takes an initialised `&mut [u8]`, and zeroing the buffer first
/// would touch every page of it (17 for a file at the limit, + 1 byte),
/// where the kernel touches only those it fills.
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
    Ok(nix::unistd::faccessat(AT_FDCWD, path, AccessFlags::X_OK, nix::fcntl::AtFlags::AT_EACCESS)?)
}

/// `stat(2)`.
pub fn stat(path: &CStr) -> io::Result<libc::stat> {
    Ok(nix::sys::stat::stat(path)?)
}

/// `fchmod(2)`.
pub fn fchmod(fd: BorrowedFd, mode: libc::mode_t) -> io::Result<()> {
    Ok(nix::sys::stat::fchmod(fd, Mode::from_bits_retain(mode))?)
}
