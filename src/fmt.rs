//! `envshim fmt FILE...`: env files rewritten in place in the portable form
//! ([`crate::envfile::portable`]), which the kubelet's grammar and envshim's
//! read alike. Each file on its own: one that cannot be read, parsed or
//! written in that form is left as it was, one line says why, and the
//! others are still done. A file is replaced atomically (a temporary file
//! beside it, written, synced and closed, then renamed over it), with its
//! mode and owner; one already in the form is not touched.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::envfile::portable;
use crate::error::{escape, Error, ExitCode};
use crate::files::{read_error, read_path};
use crate::limits::MAX_ENV_FILE_BYTES;
use crate::report;
use crate::sys;

/// Formats each of `files` (`-`: stdin to stdout); with `check`, changes
/// nothing and lists on stdout the files that would change. The exit code:
/// the first failure's, else 1 when `check` found a file to change, else 0.
// Not inlined into `main`: its frame would be probed at every start.
#[inline(never)]
pub fn fmt(files: &[OsString], check: bool) -> ExitCode {
    let (mut failed, mut changed) = (None, false);
    for file in files {
        match one(file, check) {
            Ok(c) => changed |= c,
            Err(e) => {
                let code = report::fail(&e, &[], None);
                failed.get_or_insert(code);
            }
        }
    }
    failed.unwrap_or(if check && changed { ExitCode::Changed } else { ExitCode::Ok })
}

/// One file: whether it is (or, with `check`, would be) changed.
fn one(file: &OsStr, check: bool) -> Result<bool, Error> {
    let stdin = file == "-";
    let shown = escape(file.as_bytes());
    let data = if stdin { read_stdin()? } else { read_path(file, MAX_ENV_FILE_BYTES).map_err(|e| read_error(e, &shown))? };
    let at = |line: u32, what: String| {
        let line_part = if line == 0 { String::new() } else { format!(":{line}") };
        Error::new(ExitCode::DataErr, format!("{shown}{line_part}: {what}")).at(&shown, line as usize)
    };
    let portable = portable::rewrite(&data).map_err(|e| at(e.line as u32, e.problem.to_string()))?;
    if let Some((line, why)) = portable.refused() {
        return Err(at(line, format!("cannot be written in the kubelet's grammar: {why}")));
    }
    let changed = portable.text != data;
    if check {
        if changed {
            report::write_stdout(format!("{shown}\n").as_bytes())?;
        }
    } else if stdin {
        report::write_stdout(&portable.text)?;
    } else if changed {
        replace(Path::new(file), &portable.text).map_err(|e| Error::new(ExitCode::CantCreat, format!("{shown}: cannot be rewritten ({})", crate::error::os_reason(&e))))?;
    }
    Ok(changed)
}

/// Stdin, at most the limit of an env file.
fn read_stdin() -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    let read = io::stdin().lock().take(MAX_ENV_FILE_BYTES as u64 + 1).read_to_end(&mut data);
    if let Err(e) = read {
        return Err(Error::new(ExitCode::DataErr, format!("-: cannot be read ({})", crate::error::os_reason(&e))));
    }
    if data.len() > MAX_ENV_FILE_BYTES {
        return Err(Error::new(ExitCode::DataErr, format!("- is larger than {MAX_ENV_FILE_BYTES} bytes")));
    }
    Ok(data)
}

/// Replaces the file `path` resolves to (a symlink stays, its target is
/// replaced) with `text`: a temporary file in its directory with its owner
/// and mode, written, synced and closed, then renamed over it.
fn replace(path: &Path, text: &[u8]) -> io::Result<()> {
    let path = fs::canonicalize(path)?;
    let meta = fs::metadata(&path)?;
    let dir = path.parent().map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
    let (tmp, mut out) = temporary(&dir, path.file_name().unwrap_or_default())?;
    let written = (|| {
        out.write_all(text)?;
        let file_owner = (meta.uid(), meta.gid());
        if out.metadata().map(|m| (m.uid(), m.gid()))? != file_owner {
            std::os::unix::fs::fchown(&out, Some(file_owner.0), Some(file_owner.1))?;
        }
        sys::fchmod(out.as_fd(), meta.mode() & 0o7777)?;
        out.sync_all()?;
        // Closed before the rename: no moment where the file is open for writing under its name.
        drop(out);
        fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Makes the rename durable; failing to is not worth an error.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new temporary file beside `name` in `dir`, readable by its owner only until its mode is set.
fn temporary(dir: &Path, name: &OsStr) -> io::Result<(PathBuf, File)> {
    let mut n = 0;
    loop {
        let mut tmp = OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".envshim-fmt-{}-{n}.tmp", std::process::id()));
        let tmp = dir.join(tmp);
        match OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 16 => n += 1,
            Err(e) => return Err(e),
        }
    }
}
