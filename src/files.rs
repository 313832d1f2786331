//! Reading files safely: opening a path inside a volume as if the volume were
//! `/`, and reading at most a limit + 1 bytes of a regular file.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, ExitCode};
use crate::limits::{MAX_SYMLINKS, OPENAT2_TRIES};
use crate::sys;

/// Why a file could not be read. Carries no content.
#[derive(Debug)]
pub enum ReadError {
    /// The file (or a directory on its way) does not exist.
    NotFound,
    PermissionDenied,
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// Larger than the limit (the payload).
    TooLarge(usize),
    /// Too many symbolic links.
    Loop,
    Other(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) => ReadError::NotFound,
            Some(libc::EACCES) | Some(libc::EPERM) => ReadError::PermissionDenied,
            Some(libc::ELOOP) => ReadError::Loop,
            Some(libc::ENXIO) | Some(libc::EISDIR) => ReadError::NotRegular,
            _ => ReadError::Other(e),
        }
    }
}

const READ_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;

/// Opens a directory to resolve paths in (a volume's root).
pub fn open_dir(path: &OsStr) -> io::Result<OwnedFd> {
    let c = CString::new(path.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    sys::openat(None, &c, libc::O_PATH | libc::O_DIRECTORY)
}

/// Reads the file at `path` (relative to the working directory, symlinks followed).
pub fn read_path(path: &OsStr, limit: usize) -> Result<Vec<u8>, ReadError> {
    let c = CString::new(path.as_bytes()).map_err(|_| ReadError::NotFound)?;
    let fd = sys::openat(None, &c, READ_FLAGS)?;
    read_bounded(fd.as_fd(), limit)
}

/// Reads `path` inside the directory `root`, which acts as `/`: absolute
/// paths and symlinks resolve inside it and can never lead out.
pub fn read_in_root(root: BorrowedFd, path: &[u8], limit: usize) -> Result<Vec<u8>, ReadError> {
    let fd = open_in_root(root, path)?;
    read_bounded(fd.as_fd(), limit)
}

/// A file that was missing, to look for again (`--wait`): `path` inside the
/// volume mounted at `root` (resolved as the read resolves it), or as given
/// when `root` is None.
pub struct Awaited<'a> {
    /// The volume's mountPath, opened afresh at every look: a writer may
    /// re-point it while envshim waits (a symlink flipped to a new directory,
    /// a directory renamed over the one that was there).
    pub root: Option<&'a OsStr>,
    pub path: Vec<u8>,
    /// How messages name it.
    pub display: Rc<str>,
}

impl Awaited<'_> {
    /// False while opening it still fails as missing (the file, or the
    /// mountPath itself while it is being re-pointed); any other outcome (it
    /// is there, or fails otherwise) ends the wait for it.
    pub fn exists(&self) -> bool {
        let opened = match self.root {
            Some(mount_path) => open_dir(mount_path).and_then(|root| open_in_root(root.as_fd(), &self.path)),
            None => match CString::new(self.path.as_slice()) {
                // O_PATH: looks the path up without opening what it names (a FIFO, a device).
                Ok(c) => sys::openat(None, &c, libc::O_PATH),
                Err(_) => return true,
            },
        };
        !matches!(opened.map_err(ReadError::from), Err(ReadError::NotFound))
    }
}

/// Set once `openat2` turned out to be unavailable (old kernel, or a seccomp
/// profile that refuses it), so later opens go straight to the fallback.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

pub fn open_in_root(root: BorrowedFd, path: &[u8]) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let mut tries = 0;
        loop {
            match sys::openat2_in_root(root, &c, READ_FLAGS) {
                // The kernel refuses a `..` step whenever a rename happened
                // anywhere on the system during the lookup (it cannot prove
                // the step stayed inside). On a busy host it may never
                // succeed: after a few tries, the resolver below decides.
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    tries += 1;
                    if tries == OPENAT2_TRIES {
                        break;
                    }
                }
                // ENOSYS: kernel before 5.6; EPERM: seccomp profiles that predate openat2;
                // E2BIG/EINVAL: a kernel that does not know these flags.
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM | libc::E2BIG | libc::EINVAL)) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                other => return other,
            }
        }
    }
    open_in_root_fallback(root, path)
}

/// Opens the directory `path` inside `root` (which acts as `/`, as for
/// [`open_in_root`]) for listing.
pub fn open_dir_in_root(root: BorrowedFd, path: &[u8]) -> io::Result<OwnedFd> {
    const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY;
    let c = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))?;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        for _ in 0..OPENAT2_TRIES {
            match sys::openat2_in_root(root, &c, DIR_FLAGS) {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM | libc::E2BIG | libc::EINVAL)) => break,
                other => return other,
            }
        }
    }
    let fd = resolve_in_root(root, path, true)?;
    sys::openat(Some(fd.as_fd()), c".", DIR_FLAGS)
}

/// `RESOLVE_IN_ROOT` by hand: walks the path one component at a time with
/// `O_PATH|O_NOFOLLOW`, keeping its own stack of directories so that `..`
/// (from a symlink target) never climbs above `root`, and restarting at
/// `root` for absolute symlink targets.
pub fn open_in_root_fallback(root: BorrowedFd, path: &[u8]) -> io::Result<OwnedFd> {
    resolve_in_root(root, path, false)
}

/// [`open_in_root_fallback`]; with `dir`, for a directory: the `O_PATH`
/// descriptor of the directory the path names (a regular file is then ENOTDIR).
fn resolve_in_root(root: BorrowedFd, path: &[u8], dir: bool) -> io::Result<OwnedFd> {
    let err = |n| io::Error::from_raw_os_error(n);
    let mut dirs: Vec<OwnedFd> = Vec::new();
    let mut pending: Vec<Vec<u8>> = components(path).rev().map(<[u8]>::to_vec).collect();
    let mut links = 0;
    while let Some(name) = pending.pop() {
        if name == b".." {
            dirs.pop();
            continue;
        }
        // Pushed after a link target that ends in `/`: what came before must
        // be a directory (a file there has failed with ENOTDIR, as in the kernel).
        if name == b"." {
            continue;
        }
        let cur = dirs.last().map_or(root, |d| d.as_fd());
        let cname = CString::new(name).map_err(|_| err(libc::ENOENT))?;
        let fd = sys::openat(Some(cur), &cname, libc::O_PATH | libc::O_NOFOLLOW)?;
        match sys::fstat(fd.as_fd())?.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(err(libc::ELOOP));
                }
                let target = sys::readlink_fd(fd.as_fd())?;
                if target.first() == Some(&b'/') {
                    dirs.clear();
                }
                if target.ends_with(b"/") || target.ends_with(b"/.") {
                    pending.push(b".".to_vec());
                }
                pending.extend(components(&target).rev().map(<[u8]>::to_vec));
            }
            libc::S_IFDIR => dirs.push(fd),
            _ if dir => return Err(err(libc::ENOTDIR)),
            libc::S_IFREG if pending.is_empty() => {
                // Reopen for reading; O_NOFOLLOW fails if it was swapped for a link meanwhile.
                return sys::openat(Some(cur), &cname, READ_FLAGS | libc::O_NOFOLLOW);
            }
            _ if pending.is_empty() => return Err(err(libc::ENXIO)),
            _ => return Err(err(libc::ENOTDIR)),
        }
    }
    // The path named a directory (or the root itself).
    match dirs.pop() {
        Some(fd) if dir => Ok(fd),
        None if dir => sys::openat(Some(root), c".", libc::O_PATH),
        _ => Err(err(libc::EISDIR)),
    }
}

/// The components of a path, without empty ones and `.`.
fn components(path: &[u8]) -> impl DoubleEndedIterator<Item = &[u8]> {
    path.split(|&b| b == b'/').filter(|c| !c.is_empty() && *c != b".")
}

/// Reads a regular file, never holding more than `limit` + 1 bytes: a FIFO,
/// a device or a huge file fails without being read.
pub fn read_bounded(fd: BorrowedFd, limit: usize) -> Result<Vec<u8>, ReadError> {
    let st = sys::fstat(fd)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(ReadError::NotRegular);
    }
    let size = st.st_size.max(0) as usize;
    if size > limit {
        return Err(ReadError::TooLarge(limit));
    }
    // One byte more than the limit tells a file that grew from one at the
    // limit. Read into capacity that is not zeroed first: the kernel's copy
    // is the first touch of each page the file fills.
    let mut buf = Vec::with_capacity(size.min(limit) + 1);
    loop {
        if buf.len() == buf.capacity() {
            if buf.len() > limit {
                return Err(ReadError::TooLarge(limit));
            }
            buf.reserve_exact((buf.len() * 2).max(4096).min(limit + 1) - buf.len());
        }
        if sys::read_spare(fd, &mut buf)? == 0 {
            break;
        }
        // Exactly the size fstat reported, with room left in the buffer: the
        // end of the file, without the read that would return 0 (one system
        // call per file at start-up). A file that grew fills the extra byte
        // and is read on; procfs-style files report size 0 and are read to
        // their end.
        if size > 0 && buf.len() == size && buf.len() < buf.capacity() {
            break;
        }
    }
    if buf.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(buf)
}

/// The error for a file that exists but cannot be read.
#[cfg_attr(envshim_size, optimize(size))]
pub fn read_error(e: ReadError, display: &str) -> Error {
    match e {
        ReadError::NotFound => Error::new(ExitCode::NoInput, format!("{display} not found")),
        ReadError::PermissionDenied => Error::new(ExitCode::NoPerm, format!("{display}: permission denied (uid {})", sys::uid())),
        ReadError::NotRegular => Error::config(format!("{display} is not a regular file")),
        ReadError::TooLarge(limit) => Error::new(ExitCode::DataErr, format!("{display} is larger than {limit} bytes")),
        ReadError::Loop => Error::config(format!("{display}: too many levels of symbolic links")),
        ReadError::Other(e) => Error::new(ExitCode::DataErr, format!("{display}: cannot be read ({})", crate::error::os_reason(&e))),
    }
}

#[cfg(test)]
mod tests;
