//! `--env-dir DIR` (docs/reference.md §12.1): every regular file directly in a directory
//! becomes a variable named after the file, its value the file's bytes
//! exactly: Kubernetes Secret and ConfigMap volumes, Docker/Compose
//! `/run/secrets`, daemontools' `envdir`.
//!
//! Paths are resolved with DIR as `/` (symlinks may point anywhere inside it,
//! never out), and each file is read with the rules of every file envshim
//! reads: regular files only, never more than the limit + 1 byte.
//!
//! A Kubernetes volume is updated by the kubelet's atomic writer: the files
//! are written into a new timestamped directory (`..2026_01_02_03_04_05.678`),
//! the symlink `..data` is swapped to it by a rename, the keys (`KEY ->
//! ..data/KEY`) are adjusted, and the old directory is removed. A
//! timestamped directory is never changed once `..data` names it. So when
//! DIR has `..data`, its target is read once and every file is listed and read
//! through that target, never through `..data` or the keys' links again:
//! all the values come from one directory, one version of the set. The only
//! way that read can fail half-way is the old directory being removed
//! meanwhile (a file listed is then missing); then `..data` is read again and
//! the whole directory read again, once ([`ENV_DIR_TRIES`]). When `..data`
//! names another directory after a complete read, the set is read again from
//! it too (the newest set is taken when there is time to take it), but a
//! complete read of the older set is as good as the newer one: never a mix.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use crate::error::{escape, Error, ExitCode};
use crate::files::{self, read_error, ReadError};
use crate::limits::{ENV_DIR_TRIES, MAX_ENV_DIR_ENTRIES, MAX_READ_BYTES, MAX_VALUE_BYTES};
use crate::sys;

/// A file of the directory: its name (the variable's) and its bytes.
pub struct DirFile {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
}

pub enum DirRead {
    /// The files, in byte order of their names.
    Files(Vec<DirFile>),
    /// DIR does not exist (`--wait` waits for it).
    Missing,
    /// Failed; the errors are reported.
    Failed,
}

/// The kubelet's link to the current version of a volume's files.
const DATA: &[u8] = b"..data";

/// Reads every file directly in `path`; `shown` names DIR in messages;
/// `read` counts the bytes read (with the env files': [`MAX_READ_BYTES`]).
#[inline(never)]
pub fn read(path: &OsStr, shown: &str, read: &mut usize, errors: &mut Vec<Error>) -> DirRead {
    let dir = match CString::new(path.as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))
        .and_then(|c| sys::openat(None, &c, libc::O_RDONLY | libc::O_DIRECTORY))
    {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return DirRead::Missing,
        Err(e) => {
            let e = match e.raw_os_error() {
                Some(libc::ENOTDIR) => ReadError::NotRegular,
                _ => ReadError::from(e),
            };
            errors.push(match e {
                ReadError::NotRegular => {
                    Error::config(format!("--env-dir {shown} is not a directory (for an env file of NAME=VALUE lines: --env-file {shown})"))
                }
                e => read_error(e, &format!("--env-dir {shown}")),
            });
            return DirRead::Failed;
        }
    };
    let mut tries = 0;
    loop {
        tries += 1;
        let last = tries == ENV_DIR_TRIES;
        let data = match data_target(dir.as_fd()) {
            Ok(data) => data,
            Err(e) => {
                errors.push(read_error(e.into(), &format!("--env-dir {shown}/..data")));
                return DirRead::Failed;
            }
        };
        // The problems of a read that is abandoned (the version read was removed) are not reported.
        let mut found = Vec::new();
        let once = read_once(dir.as_fd(), data.as_deref(), shown, read, &mut found);
        if !matches!(once, Once::Vanished) {
            errors.append(&mut found);
        }
        match once {
            Once::Read(files) => {
                // The set read is whole; the newer one is taken when there was a swap.
                if !last && data.is_some() && data_target(dir.as_fd()).ok().flatten() != data {
                    continue;
                }
                return DirRead::Files(files);
            }
            Once::Vanished if !last => continue,
            Once::Vanished => {
                errors.push(Error::new(
                    ExitCode::NoInput,
                    format!("--env-dir {shown}: its files were replaced while being read, {ENV_DIR_TRIES} times (an update of the volume); not read"),
                ));
                return DirRead::Failed;
            }
            Once::Failed => return DirRead::Failed,
        }
    }
}

enum Once {
    Read(Vec<DirFile>),
    /// A file listed was gone when read: the version read was removed (an update).
    Vanished,
    Failed,
}

/// The target of `..data` when DIR has it (a directory of that name counts
/// as its own target).
fn data_target(dir: BorrowedFd) -> std::io::Result<Option<Vec<u8>>> {
    let fd = match sys::openat(Some(dir), c"..data", libc::O_PATH | libc::O_NOFOLLOW) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    if sys::fstat(fd.as_fd())?.st_mode & libc::S_IFMT == libc::S_IFLNK {
        sys::readlink_fd(fd.as_fd()).map(Some)
    } else {
        Ok(Some(DATA.to_vec()))
    }
}

/// Whether `..data` names another target than `data` now (or is gone): the
/// set read was replaced by an update, not broken. Asked only on a failure.
#[cold]
fn swapped(dir: BorrowedFd, data: Option<&[u8]>) -> bool {
    data_target(dir).ok().flatten().as_deref() != data
}

/// One read of the directory: listed and read through `data` (the target of
/// `..data`) when there is one, else DIR itself.
fn read_once(dir: BorrowedFd, data: Option<&[u8]>, shown: &str, read: &mut usize, errors: &mut Vec<Error>) -> Once {
    let names = match list(dir, data, shown, errors) {
        Ok(names) => names,
        Err(once) => return once,
    };
    // Kubernetes' `..data` and timestamped directories, and hidden files, are
    // skipped; the others in byte order.
    let mut sorted: Vec<&[u8]> = names.iter().map(Vec::as_slice).filter(|n| !n.starts_with(b".")).collect();
    crate::sort::sort(&mut sorted);
    read_files(dir, data, shown, &sorted, read, errors)
}

/// The names of the directory's entries (through `data`, when there is
/// one); `Err`: what the read comes to instead (its error pushed).
fn list(dir: BorrowedFd, data: Option<&[u8]>, shown: &str, errors: &mut Vec<Error>) -> Result<Vec<Vec<u8>>, Once> {
    let listed: std::io::Result<OwnedFd> = match data {
        Some(target) => files::open_dir_in_root(dir, target),
        None => sys::openat(Some(dir), c".", libc::O_RDONLY | libc::O_DIRECTORY),
    };
    match listed.and_then(|fd| sys::dir_names(fd.as_fd(), MAX_ENV_DIR_ENTRIES)) {
        Ok(Some(names)) => Ok(names),
        // `..data` named a directory that has been removed since.
        Err(e) if data.is_some() && matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
            if swapped(dir, data) {
                return Err(Once::Vanished);
            }
            // `..data` still names it: no update, a broken layout.
            let what = if e.raw_os_error() == Some(libc::ENOENT) {
                "a link to nothing (its target is not in the directory)"
            } else {
                "not a directory nor a link to one (Kubernetes' ..data links to the current set of files)"
            };
            errors.push(Error::new(ExitCode::NoInput, format!("--env-dir {shown}/..data: {what}; not read")));
            Err(Once::Failed)
        }
        Ok(None) => {
            errors.push(Error::new(ExitCode::DataErr, format!("--env-dir {shown} has more than {MAX_ENV_DIR_ENTRIES} entries")));
            Err(Once::Failed)
        }
        Err(e) => {
            errors.push(read_error(e.into(), &format!("--env-dir {shown}")));
            Err(Once::Failed)
        }
    }
}

/// The files `sorted` of the directory (through `data`), each a variable;
/// every file that cannot be one is an error.
fn read_files(dir: BorrowedFd, data: Option<&[u8]>, shown: &str, sorted: &[&[u8]], read: &mut usize, errors: &mut Vec<Error>) -> Once {
    let mut files = Vec::with_capacity(sorted.len());
    let mut failed = false;
    let mut path = Vec::new();
    for &name in sorted {
        path.clear();
        if let Some(target) = data {
            path.extend_from_slice(target);
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let problem = match read_file(dir, &path) {
            // A subdirectory.
            Ok(None) => continue,
            Ok(Some(value)) => {
                *read += value.len();
                if *read > MAX_READ_BYTES {
                    Ok((ExitCode::DataErr, "the files read pass 16 MiB in all; no more are read"))
                } else if value.contains(&0) {
                    Ok((ExitCode::DataErr, "holds a NUL byte"))
                } else {
                    files.push(DirFile { name: name.to_vec(), value });
                    continue;
                }
            }
            Err(ReadError::NotFound) if data.is_some() && swapped(dir, data) => return Once::Vanished,
            // A timestamped directory never changes while `..data` names it.
            Err(ReadError::NotFound) if data.is_some() => {
                Ok((ExitCode::NoInput, "a link to nothing, or out of the directory (links are read with it as /); not read"))
            }
            Err(ReadError::NotFound) => Ok((ExitCode::NoInput, "not found (removed since it was listed, or a link to nothing)")),
            Err(e) => Err(e),
        };
        failed = true;
        let file = format!("--env-dir {shown}/{}", escape(name));
        errors.push(match problem {
            Ok((code, what)) => Error::new(code, format!("{file}: {what}")),
            Err(e) => read_error(e, &file),
        });
        // Past the bytes read in all, no more is read.
        if *read > MAX_READ_BYTES {
            return Once::Failed;
        }
    }
    if failed {
        Once::Failed
    } else {
        Once::Read(files)
    }
}

/// The bytes of the file `path` inside `dir` (as `/`); None for a directory.
fn read_file(dir: BorrowedFd, path: &[u8]) -> Result<Option<Vec<u8>>, ReadError> {
    let fd = match files::open_in_root(dir, path) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::EISDIR) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if sys::fstat(fd.as_fd())?.st_mode & libc::S_IFMT == libc::S_IFDIR {
        return Ok(None);
    }
    files::read_bounded(fd.as_fd(), MAX_VALUE_BYTES).map(Some)
}
