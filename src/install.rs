//! `envshim install DEST`: copies this binary to DEST atomically, so an
//! initContainer built `FROM scratch` can ship envshim into a shared volume.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{code, escape, Error};
use crate::sys;

pub const SELF_EXE: &str = "/proc/self/exe";

/// Copies `source` to `dest` through a temporary file in DEST's directory
/// (fsync, mode 0755, rename); a DEST that is a directory gets `envshim` in it.
pub fn install(source: &Path, dest: &Path) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    let shown = |p: &Path| escape(p.as_os_str().as_bytes());
    let dest = if dest.is_dir() { dest.join("envshim") } else { dest.to_path_buf() };
    let fail = |what: &str, e: io::Error| Error::new(code::CANTCREAT, format!("install: {what} {}: {e}", shown(&dest)));
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

    let mut src = File::open(source).map_err(|e| Error::new(code::CANTCREAT, format!("install: cannot read {}: {e}", shown(source))))?;
    let mut n = 0;
    let (tmp, mut out) = loop {
        let tmp = tmp_name(n);
        match OpenOptions::new().write(true).create_new(true).mode(0o700).open(&tmp) {
            Ok(out) => break (tmp, out),
            // Left by an install that was killed: a restarted initContainer is
            // PID 1 again, so the name repeats. It may also be another
            // installer's (PID 1 of another container), so it is left alone.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 16 => n += 1,
            Err(e) => return Err(fail("cannot create a file beside", e)),
        }
    };
    let written = io::copy(&mut src, &mut out)
        .and_then(|_| sys::fchmod(out.as_fd(), 0o755))
        .and_then(|_| out.sync_all())
        .and_then(|_| fs::rename(&tmp, &dest));
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
        let dest = install(&src, &d.path().join("out")).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"binary");
        assert_eq!(fs::metadata(&dest).unwrap().permissions().mode() & 0o7777, 0o755);
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Into a directory.
        let sub = d.path().join("shim");
        fs::create_dir(&sub).unwrap();
        assert_eq!(install(&src, &sub).unwrap(), sub.join("envshim"));
    }

    #[test]
    fn missing_directory_is_73_and_leaves_nothing() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::write(&src, b"binary").unwrap();
        let e = install(&src, &d.path().join("nope/out")).unwrap_err();
        assert_eq!(e.code, 73);
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
        let dest = install(&src, &d.path().join("out")).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"binary");
        assert_eq!(fs::read(&stale).unwrap(), b"partial", "another installer's file is left alone");
    }
}
