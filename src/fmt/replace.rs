//! Replacing a file `fmt` read, and that file only. The path is resolved
//! once: its directory opened, then its name in it, a symbolic link
//! followed by hand to its target's directory and name; everything after
//! is relative to that directory (`openat`, `linkat`, `renameat`). The new
//! text goes to an unnamed file in the directory (`O_TMPFILE`), given the
//! file's owner, extended attributes (its POSIX ACL among them) and mode,
//! synced, then linked under a short name (not derived from the file's, so
//! any name fits) and renamed over the name, with the termination signals
//! held back between the two: a signal never leaves the temporary file
//! behind. Right before the rename, the name must still be the file read
//! (device, inode, size, times) with the text read: otherwise another
//! writer or a re-pointed name is at work, and nothing is replaced.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;

use memchr::memrchr;

use crate::files::{read_bounded, ReadError};
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_SYMLINKS};
use crate::sys;

/// A file opened for `fmt`: the directory it is in, its name there, and what it was when read.
pub struct Opened {
    dir: OwnedFd,
    name: CString,
    file: File,
    stat: libc::stat,
    pub data: Vec<u8>,
}

/// Why a file was not replaced (it is left as it was).
pub enum Failed {
    Io(io::Error),
    /// This extended attribute of the file cannot be given to the new one.
    Xattr(Vec<u8>, io::Error),
    /// The name no longer names the file read as it was read.
    Changed,
}

impl From<io::Error> for Failed {
    fn from(e: io::Error) -> Self {
        Failed::Io(e)
    }
}

/// A path's directory and last component; a path whose last component is
/// a directory's (`/`, `dir/`, `..`) is that directory itself, `.` in it.
fn split(path: &[u8]) -> (&[u8], &[u8]) {
    let (dir, name) = match memrchr(b'/', path) {
        None => (&b"."[..], path),
        Some(0) => (&b"/"[..], &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
    };
    match name {
        b"" | b"." | b".." => (path, b"."),
        _ => (dir, name),
    }
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from_raw_os_error(libc::ENOENT))
}

/// Opens and reads `path` (at most the env-file limit), following symbolic links.
pub fn open(path: &OsStr) -> Result<Opened, ReadError> {
    let (dir, name) = split(path.as_bytes());
    let mut dir = sys::openat(None, &c_string(dir)?, libc::O_PATH | libc::O_DIRECTORY)?;
    let mut name = c_string(name)?;
    for _ in 0..=MAX_SYMLINKS {
        let flags = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW;
        match sys::openat(Some(dir.as_fd()), &name, flags) {
            Ok(fd) => {
                let file = File::from(fd);
                let stat = sys::fstat(file.as_fd())?;
                let data = read_bounded(file.as_fd(), MAX_ENV_FILE_BYTES)?;
                return Ok(Opened { dir, name, file, stat, data });
            }
            // The name is a symbolic link: its target, from the link's directory.
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                let target = match sys::readlink_at(dir.as_fd(), &name) {
                    Ok(target) => target,
                    // No longer a link: opened again.
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => continue,
                    Err(e) => return Err(e.into()),
                };
                let (d, n) = split(&target);
                dir = sys::openat(Some(dir.as_fd()), &c_string(d)?, libc::O_PATH | libc::O_DIRECTORY)?;
                name = c_string(n)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ReadError::Loop)
}

/// The termination signals (whose handler ends envshim at once) held back
/// while it lives: one that comes is delivered when it ends.
struct Held(Option<sys::SigSet>);

impl Held {
    fn new() -> Held {
        let mut set = sys::SigSet::empty();
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
            let _ = set.add(sig);
        }
        Held(sys::block_signals(&set).ok())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(before) = self.0 {
            let _ = sys::set_signal_mask(&before);
        }
    }
}

/// Replaces the file `f` with `text`.
pub fn replace(f: &Opened, text: &[u8]) -> Result<(), Failed> {
    let unnamed = match sys::open_unnamed(f.dir.as_fd()) {
        Ok(fd) => File::from(fd),
        // A file system (or kernel) without O_TMPFILE.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => return replace_named(f, text),
        Err(e) => return Err(e.into()),
    };
    let new = fill(f, &unnamed, text)?;
    let _held = Held::new();
    match temporary(|name| sys::link_unnamed(unnamed.as_fd(), f.dir.as_fd(), name)) {
        Ok((name, ())) => {
            drop(unnamed);
            finish(f, &name, Ok(new))
        }
        // No way to name it (no procfs, and no CAP_DAC_READ_SEARCH).
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => replace_named(f, text),
        Err(e) => Err(e.into()),
    }
}

/// [`replace`] through a named temporary file, the termination signals held back while it exists.
fn replace_named(f: &Opened, text: &[u8]) -> Result<(), Failed> {
    let _held = Held::new();
    let (name, fd) = temporary(|name| sys::create_at(f.dir.as_fd(), name))?;
    let out = File::from(fd);
    let filled = fill(f, &out, text);
    // Closed before the rename: no moment where the file is open for writing under its name.
    drop(out);
    finish(f, &name, filled)
}

/// A new temporary name in the directory, `make` it.
fn temporary<T>(mut make: impl FnMut(&CStr) -> io::Result<T>) -> io::Result<(CString, T)> {
    let mut n = 0;
    loop {
        let name = c_string(format!(".envshim-fmt-{}-{n}", std::process::id()).as_bytes())?;
        match make(&name) {
            Ok(made) => return Ok((name, made)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 16 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `text` to `out` and gives it `f`'s owner, extended attributes and
/// mode; then syncs it. Its device and inode.
fn fill(f: &Opened, out: &File, text: &[u8]) -> Result<(u64, u64), Failed> {
    let mut writer = out;
    writer.write_all(text)?;
    let owner = (f.stat.st_uid, f.stat.st_gid);
    let made = sys::fstat(out.as_fd())?;
    if (made.st_uid, made.st_gid) != owner {
        std::os::unix::fs::fchown(out, Some(owner.0), Some(owner.1))?;
    }
    copy_xattrs(f.file.as_fd(), out.as_fd())?;
    // After the ACL (its mask is the mode's group bits, the same).
    sys::fchmod(out.as_fd(), f.stat.st_mode & 0o7777)?;
    out.sync_all()?;
    Ok((made.st_dev, made.st_ino))
}

/// Gives `to` exactly the extended attributes of `from`: each set to
/// `from`'s value, and those it got at its creation that `from` has not (a
/// default ACL of the directory) removed.
fn copy_xattrs(from: BorrowedFd, to: BorrowedFd) -> Result<(), Failed> {
    let names = sys::xattr_names(from)?;
    for name in &names {
        let failed = |e| Failed::Xattr(name.clone(), e);
        let c = c_string(name)?;
        let value = sys::xattr_get(from, &c).map_err(failed)?;
        if sys::xattr_get(to, &c).ok().as_ref() != Some(&value) {
            sys::xattr_set(to, &c, &value).map_err(failed)?;
        }
    }
    for name in sys::xattr_names(to)? {
        if !names.contains(&name) {
            match sys::xattr_remove(to, &c_string(&name)?) {
                Err(e) if e.raw_os_error() != Some(libc::ENODATA) => return Err(Failed::Xattr(name, e)),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Puts the temporary file `tmp` in place of the name, if `filled` and
/// the file read is still as it was read and still under the name; else
/// removes it.
fn finish(f: &Opened, tmp: &CStr, filled: Result<(u64, u64), Failed>) -> Result<(), Failed> {
    let new = match filled.and_then(|new| unchanged(f, false).map(|()| new)) {
        Ok(new) => new,
        Err(e) => {
            let _ = sys::unlink_at(f.dir.as_fd(), tmp);
            return Err(e);
        }
    };
    swap(f, tmp, new)?;
    // Makes the rename durable; failing to is not worth an error.
    if let Ok(dir) = sys::openat(Some(f.dir.as_fd()), c".", libc::O_RDONLY | libc::O_DIRECTORY) {
        let _ = File::from(dir).sync_all();
    }
    Ok(())
}

/// Whether the file is no longer as it was read (a writer at work: what was
/// read may end in a line cut short).
pub fn changed(f: &Opened) -> bool {
    matches!(unchanged(f, false), Err(Failed::Changed))
}

/// Whether the file read is as it was read: its size, times and text
/// (not its change time once `renamed`: a rename sets it).
fn unchanged(f: &Opened, renamed: bool) -> Result<(), Failed> {
    let now = sys::fstat(f.file.as_fd())?;
    let ctime = |s: &libc::stat| if renamed { (0, 0) } else { (s.st_ctime, s.st_ctime_nsec) };
    let id = |s: &libc::stat| (s.st_size, s.st_mtime, s.st_mtime_nsec, ctime(s));
    if id(&now) != id(&f.stat) {
        return Err(Failed::Changed);
    }
    // A write within the clock's tick leaves the times as they were.
    let mut text = vec![0; f.data.len() + 1];
    let mut n = 0;
    while n < text.len() {
        match f.file.read_at(&mut text[n..], n as u64)? {
            0 => break,
            got => n += got,
        }
    }
    if text[..n] != f.data[..] {
        return Err(Failed::Changed);
    }
    Ok(())
}

/// The file `name` names, `(device, inode)`; None when it names nothing.
fn file_at(f: &Opened, name: &CStr) -> io::Result<Option<(u64, u64)>> {
    match sys::lstat_at(f.dir.as_fd(), name) {
        Ok(s) => Ok(Some((s.st_dev, s.st_ino))),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How many times a writer's files that keep coming are put back under the
/// name (each a rename of the writer's within one exchange of ours) before
/// the newest is left under the temporary name and said so.
const MAX_PUT_BACK: usize = 64;

/// Puts `tmp` in place of the name when the name still names the file read,
/// and removes `tmp` (`new`, the new file). Exchanged with it
/// (`RENAME_EXCHANGE`), then the file that left the name checked: a
/// writer's that took the place in between goes back ([`put_back`]), so
/// its update is never lost; on a file system without the exchange,
/// checked, then renamed over it.
fn swap(f: &Opened, tmp: &CStr, new: (u64, u64)) -> Result<(), Failed> {
    let dir = f.dir.as_fd();
    let read = (f.stat.st_dev, f.stat.st_ino);
    let placed = match sys::exchange_at(dir, tmp, &f.name) {
        // The file read out, as it was read: replaced. Written in place
        // between the check and the exchange: back under the name.
        Ok(()) if file_at(f, tmp).ok().flatten() == Some(read) => match unchanged(f, true) {
            Ok(()) => Ok(()),
            Err(_) => {
                put_back(f, tmp, new)?;
                Err(Failed::Changed)
            }
        },
        Ok(()) => {
            // Were that to fail, the writer's newest file stays under `tmp`, not removed.
            put_back(f, tmp, new)?;
            Err(Failed::Changed)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(Failed::Changed),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => match file_at(f, &f.name) {
            Ok(at) if at == Some(read) => return sys::rename_at(dir, tmp, &f.name).map_err(|e| removed(f, tmp, e.into())),
            Ok(_) => Err(Failed::Changed),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    };
    // Under `tmp` now: the file read (replaced), the new one (refused), or
    // a writer's version that a newer one of its own replaced (refused).
    let _ = sys::unlink_at(dir, tmp);
    placed
}

/// A writer's file is under `tmp` (it took the name before our exchange,
/// or wrote the file read in place), and `placed` under the name: exchanged back. When `placed` comes out,
/// the writer's file is under the name again. When another comes out, the
/// writer renamed a newer file over `placed` meanwhile: that one goes back
/// in its turn, and the older one comes out (the writer's own rename would
/// have removed it). Ok: what is under `tmp` may be removed.
fn put_back(f: &Opened, tmp: &CStr, mut placed: (u64, u64)) -> Result<(), Failed> {
    for _ in 0..MAX_PUT_BACK {
        let held = file_at(f, tmp)?;
        match sys::exchange_at(f.dir.as_fd(), tmp, &f.name) {
            // The writer removed the name, and with it (it meant to) the file under `tmp`.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
            r => r?,
        }
        match (file_at(f, tmp)?, held) {
            (Some(out), _) if out == placed => return Ok(()),
            (Some(_), Some(held)) => placed = held,
            _ => return Err(Failed::Changed),
        }
    }
    Err(Failed::Changed)
}

/// `e`, once `tmp` is removed.
fn removed(f: &Opened, tmp: &CStr, e: Failed) -> Failed {
    let _ = sys::unlink_at(f.dir.as_fd(), tmp);
    e
}
