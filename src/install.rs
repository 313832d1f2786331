//! `envshim install DEST`: copies this binary to DEST atomically, so an
//! initContainer built `FROM scratch` can ship envshim into a shared volume.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{escape, Error, ExitCode};
use crate::sys;

pub const SELF_EXE: &str = "/proc/self/exe";

/// What marks a file as an envshim binary (docs/reference.md §12.5: only one is replaced).
/// It is the needle of the search below, so every envshim binary holds it;
/// no other file is likely to, let alone an ELF executable.
const MARKER: &[u8] = b"\x7fenvshim-binary:replaceable-by-envshim-install\x7f";

/// How much of an existing DEST is searched for [`MARKER`]: more than any
/// envshim binary, shipped or a debug build.
const MAX_SEARCH_BYTES: u64 = 64 << 20;

/// Whether `file` is an envshim binary: an ELF file holding [`MARKER`] within
/// its first [`MAX_SEARCH_BYTES`], read 64 KiB at a time.
#[cfg_attr(envshim_size, optimize(size))]
fn is_envshim(file: &mut File) -> io::Result<bool> {
    use io::Read;
    let mut buf = vec![0u8; (64 << 10) + MARKER.len()];
    let (mut kept, mut read_total) = (0, 0u64);
    // memchr for the first byte, then a comparison: `memmem` is much more code.
    let holds = |hay: &[u8]| memchr::memchr_iter(MARKER[0], hay).any(|i| hay[i..].starts_with(MARKER));
    loop {
        let n = file.read(&mut buf[kept..])?;
        if read_total == 0 && !buf[..kept + n].starts_with(b"\x7fELF") && (kept + n >= 4 || n == 0) {
            return Ok(false);
        }
        if n == 0 {
            return Ok(false);
        }
        read_total += n as u64;
        let end = kept + n;
        if holds(&buf[..end]) {
            return Ok(true);
        }
        if read_total >= MAX_SEARCH_BYTES {
            return Ok(false);
        }
        // Keep the tail that could hold the start of the marker.
        kept = (MARKER.len() - 1).min(end);
        buf.copy_within(end - kept..end, 0);
    }
}

/// Whether an install may replace what is at `dest`: nothing there, an
/// envshim binary, or anything with `force`.
#[cfg_attr(envshim_size, optimize(size))]
fn may_replace(dest: &Path, force: bool) -> Result<(), String> {
    if force || fs::symlink_metadata(dest).is_err() {
        return Ok(());
    }
    // A DEST that cannot be read is not known to be envshim, nor is one that
    // is not a regular file. Opened without blocking: a FIFO would wait for
    // a writer forever.
    let open = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(dest);
    let regular = |f: File| match f.metadata() {
        Ok(m) if m.is_file() => Ok(f),
        Ok(_) => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        Err(e) => Err(e),
    };
    match open.and_then(regular).and_then(|mut f| is_envshim(&mut f)) {
        Ok(true) => Ok(()),
        _ => Err("exists and is not an envshim binary (give --force to replace it)".into()),
    }
}

/// Copies `source` to `dest` through a temporary file in DEST's directory
/// (fsync, mode 0755, rename); a DEST that is a directory gets `envshim` in
/// it. An existing DEST is replaced only when it is an envshim binary, or with `force`.
#[cfg_attr(envshim_size, optimize(size))]
pub fn install(source: &Path, dest: &Path, force: bool) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    let shown = |p: &Path| escape(p.as_os_str().as_bytes());
    let dest = if dest.is_dir() { dest.join("envshim") } else { dest.to_path_buf() };
    let fail = |what: &str, e: io::Error| Error::new(ExitCode::CantCreat, format!("install: {what} {} ({})", shown(&dest), crate::error::os_reason(&e)));
    may_replace(&dest, force).map_err(|why| Error::new(ExitCode::CantCreat, format!("install: {} {why}", shown(&dest))))?;
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = dest.file_name().ok_or_else(|| fail("cannot install to", io::Error::from_raw_os_error(libc::EINVAL)))?;
    let tmp_name = |n: u32| {
        let mut name = OsString::from(".");
        name.push(file_name);
        name.push(format!(".envshim-{}", std::process::id()));
        if n > 0 {
            name.push(format!("-{n}"));
        }
        name.push(".tmp");
        dir.join(name)
    };

    let mut src =
        File::open(source).map_err(|e| Error::new(ExitCode::CantCreat, format!("install: cannot read {} ({})", shown(source), crate::error::os_reason(&e))))?;
    let mut n = 0;
    let (tmp, mut out) = loop {
        let tmp = tmp_name(n);
        match OpenOptions::new().write(true).create_new(true).mode(0o700).open(&tmp) {
            Ok(out) => break (tmp, out),
            // Left by an install that was killed: a restarted initContainer is
            // PID 1 again, so the name repeats. It may also be another
            // installer's (PID 1 of another container), so it is left alone.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 16 => n += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(Error::new(ExitCode::CantCreat, format!("install: the directory {} does not exist (for {})", shown(&dir), shown(&dest))))
            }
            Err(e) => return Err(fail("cannot create a file beside", e)),
        }
    };
    let written = io::copy(&mut src, &mut out).and_then(|_| sys::fchmod(out.as_fd(), 0o755)).and_then(|_| out.sync_all()).and_then(|()| {
        // Closed before the rename: an exec of DEST while a writer has it
        // open fails with ETXTBSY (text file busy).
        drop(out);
        fs::rename(&tmp, &dest)
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(fail("cannot write", e));
    }
    // Make the rename itself durable; failing to is not worth an error.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(dest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn installs_atomically_with_mode_0755() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::write(&src, b"binary").unwrap();
        let dest = install(&src, &d.path().join("out"), false).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"binary");
        assert_eq!(fs::metadata(&dest).unwrap().permissions().mode() & 0o7777, 0o755);
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Into a directory.
        let sub = d.path().join("shim");
        fs::create_dir(&sub).unwrap();
        assert_eq!(install(&src, &sub, false).unwrap(), sub.join("envshim"));
    }

    #[test]
    fn missing_directory_is_73_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::write(&src, b"binary").unwrap();
        let e = install(&src, &d.path().join("nope/out"), false).unwrap_err();
        assert_eq!(e.code, ExitCode::CantCreat);
    }

    /// An install killed mid-copy leaves its temporary file; in a restarted
    /// initContainer the next install is PID 1 again, so the same name.
    #[test]
    fn a_stale_temporary_file_does_not_block_the_next_install() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::write(&src, b"binary").unwrap();
        let stale = d.path().join(format!(".out.envshim-{}.tmp", std::process::id()));
        fs::write(&stale, b"partial").unwrap();
        let dest = install(&src, &d.path().join("out"), false).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"binary");
        assert_eq!(fs::read(&stale).unwrap(), b"partial", "another installer's file is left alone");
    }
}
