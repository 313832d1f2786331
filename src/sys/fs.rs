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
    let how =
        OpenHow::new().flags(OFlag::from_bits_retain(flags) | OFlag::O_CLOEXEC).resolve(ResolveFlag::RESOLVE_IN_ROOT | ResolveFlag::RESOLVE_NO_MAGICLINKS);
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

/// `openat(2)` with `O_TMPFILE`: an unnamed regular file in the directory
/// `dir`, open for writing, mode `0600` (before the umask); `linkat` names it.
pub fn open_unnamed(dir: BorrowedFd) -> io::Result<OwnedFd> {
    let flags = OFlag::O_TMPFILE | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    Ok(nix::fcntl::openat(dir, c".", flags, Mode::from_bits_retain(0o600))?)
}

/// `openat(2)` with `O_CREAT|O_EXCL|O_NOFOLLOW`: a new file `name` in `dir`, open for writing, mode `0600` (before the umask).
pub fn create_at(dir: BorrowedFd, name: &CStr) -> io::Result<OwnedFd> {
    let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_WRONLY | OFlag::O_CLOEXEC;
    Ok(nix::fcntl::openat(dir, name, flags, Mode::from_bits_retain(0o600))?)
}

/// Names the unnamed file `fd` ([`open_unnamed`]) `name` in `dir`:
/// `linkat(AT_EMPTY_PATH)`, which needs `CAP_DAC_READ_SEARCH`, else through
/// `/proc/self/fd` (`AT_SYMLINK_FOLLOW`), which needs procfs.
pub fn link_unnamed(fd: BorrowedFd, dir: BorrowedFd, name: &CStr) -> io::Result<()> {
    use nix::fcntl::AtFlags;
    match nix::unistd::linkat(fd, c"", dir, name, AtFlags::AT_EMPTY_PATH) {
        Err(nix::errno::Errno::ENOENT | nix::errno::Errno::EPERM) => {
            let proc = format!("/proc/self/fd/{}", fd.as_raw_fd());
            Ok(nix::unistd::linkat(AT_FDCWD, proc.as_str(), dir, name, AtFlags::AT_SYMLINK_FOLLOW)?)
        }
        other => Ok(other?),
    }
}

/// `fstatat(2)` of `name` in `dir`, a symbolic link itself (`AT_SYMLINK_NOFOLLOW`).
pub fn lstat_at(dir: BorrowedFd, name: &CStr) -> io::Result<libc::stat> {
    Ok(nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)?)
}

/// `readlinkat(2)`: the target of the symbolic link `name` in `dir`.
pub fn readlink_at(dir: BorrowedFd, name: &CStr) -> io::Result<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    Ok(nix::fcntl::readlinkat(dir, name)?.into_vec())
}

/// `renameat(2)` within the directory `dir`.
pub fn rename_at(dir: BorrowedFd, from: &CStr, to: &CStr) -> io::Result<()> {
    Ok(nix::fcntl::renameat(dir, from, dir, to)?)
}

/// `unlinkat(2)` of the file `name` in `dir`.
pub fn unlink_at(dir: BorrowedFd, name: &CStr) -> io::Result<()> {
    Ok(nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?)
}

/// `flistxattr(2)`: the names of the extended attributes of `fd` (the POSIX
/// ACL `system.posix_acl_access` among them); none where the file system
/// has none. Raw `libc`, as the three below: `nix` offers no xattr calls.
pub fn xattr_names(fd: BorrowedFd) -> io::Result<Vec<Vec<u8>>> {
    let list = xattr_read(|buf, len| {
        // SAFETY: `buf` is writable for `len` bytes (null with 0: the size is asked for).
        unsafe { libc::flistxattr(fd.as_raw_fd(), buf.cast(), len) }
    });
    match list {
        Ok(list) => Ok(list.split(|&b| b == 0).filter(|n| !n.is_empty()).map(<[u8]>::to_vec).collect()),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// `fgetxattr(2)`: the value of the extended attribute `name` of `fd`.
pub fn xattr_get(fd: BorrowedFd, name: &CStr) -> io::Result<Vec<u8>> {
    xattr_read(|buf, len| {
        // SAFETY: `name` is NUL-terminated; `buf` is writable for `len` bytes (null with 0: the size is asked for).
        unsafe { libc::fgetxattr(fd.as_raw_fd(), name.as_ptr(), buf.cast(), len) }
    })
}

/// A list or value of unknown size: its size asked for, then read; again
/// if it grew in between (ERANGE).
fn xattr_read(call: impl Fn(*mut u8, usize) -> isize) -> io::Result<Vec<u8>> {
    loop {
        let size = call(std::ptr::null_mut(), 0);
        if size <= 0 {
            return if size == 0 { Ok(Vec::new()) } else { Err(io::Error::last_os_error()) };
        }
        let mut buf = vec![0u8; size as usize];
        let n = call(buf.as_mut_ptr(), buf.len());
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
    }
}

/// `fsetxattr(2)`: sets the extended attribute `name` of `fd` to `value`.
pub fn xattr_set(fd: BorrowedFd, name: &CStr, value: &[u8]) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated, `value` readable for its length.
    let r = unsafe { libc::fsetxattr(fd.as_raw_fd(), name.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
    super::cvt(r).map(drop)
}

/// `fremovexattr(2)`: removes the extended attribute `name` of `fd`.
pub fn xattr_remove(fd: BorrowedFd, name: &CStr) -> io::Result<()> {
    // SAFETY: `name` is NUL-terminated.
    let r = unsafe { libc::fremovexattr(fd.as_raw_fd(), name.as_ptr()) };
    super::cvt(r).map(drop)
}

/// `renameat2(2)` with `RENAME_EXCHANGE`: the names `a` and `b` in `dir`
/// trade their files, at once. Raw: `nix` offers `renameat2` with glibc only.
pub fn exchange_at(dir: BorrowedFd, a: &CStr, b: &CStr) -> io::Result<()> {
    // SAFETY: both names are NUL-terminated and outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_renameat2, dir.as_raw_fd(), a.as_ptr(), dir.as_raw_fd(), b.as_ptr(), libc::RENAME_EXCHANGE) };
    super::cvt(r as libc::c_int).map(drop)
}
