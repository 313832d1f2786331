//! Files: opening (inside a volume too), reading, metadata, permissions.
//! Through `nix`, except `dir_names` and `read_spare` (each says why).

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

/// The names in the directory open (`O_RDONLY|O_DIRECTORY`) as `fd`,
/// without `.` and `..`, in the order `getdents64(2)` gives them; None when
/// there are more than `max` (the listing stops there). Raw `libc`: `nix`'s
/// `Dir` takes the descriptor over and reads through libc's `DIR`, a second
/// buffer, where this reads the records once into one.
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
