//! `envshim fmt FILE...`: env files rewritten in place in the portable form
//! ([`crate::envfile::portable`]), which the kubelet's grammar and envshim's
//! read alike. Each file on its own: one that cannot be read, parsed or
//! written in that form is left as it was, one line says why, and the
//! others are still done. A file is replaced atomically, with its mode,
//! owner and extended attributes, and only if it is still the file read,
//! as it was read ([`replace`]); one already in the form is not touched.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;

use crate::envfile::portable;
use crate::error::{escape, os_reason, Error, ExitCode};
use crate::files::read_error;
use crate::limits::MAX_ENV_FILE_BYTES;
use crate::report;

mod replace;

use replace::Failed;

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
fn one(file: &std::ffi::OsStr, check: bool) -> Result<bool, Error> {
    let stdin = file == "-";
    let shown = escape(file.as_bytes());
    let opened = if stdin { None } else { Some(replace::open(file).map_err(|e| read_error(e, &shown))?) };
    let data = match &opened {
        Some(f) => &f.data[..],
        None => &read_stdin()?,
    };
    let at = |line: u32, what: String| {
        let line_part = if line == 0 { String::new() } else { format!(":{line}") };
        Error::new(ExitCode::DataErr, format!("{shown}{line_part}: {what}")).at(&shown, line as usize)
    };
    let portable = portable::rewrite(data).map_err(|e| at(e.line as u32, e.problem.to_string()))?;
    if let Some((line, why)) = portable.refused() {
        return Err(at(line, format!("cannot be written in the kubelet's grammar: {why}")));
    }
    let changed = portable.text != data;
    if check {
        if changed {
            report::write_stdout(format!("{shown}\n").as_bytes())?;
        }
    } else if let Some(f) = opened.filter(|_| changed) {
        replace::replace(&f, &portable.text).map_err(|e| not_replaced(&shown, e))?;
    } else if stdin {
        report::write_stdout(&portable.text)?;
    }
    Ok(changed)
}

/// The error for a file left as it was (73).
fn not_replaced(shown: &str, e: Failed) -> Error {
    let why = match e {
        Failed::Io(e) => format!("cannot be rewritten ({})", os_reason(&e)),
        Failed::Xattr(name, e) => format!("cannot be rewritten with its extended attribute {} ({}): it is left as it was", escape(&name), os_reason(&e)),
        Failed::Changed => "changed while envshim fmt read it (written again, or its name re-pointed to another file): it is left as it was; run fmt again".into(),
    };
    Error::new(ExitCode::CantCreat, format!("{shown}: {why}"))
}

/// Stdin, at most the limit of an env file.
fn read_stdin() -> Result<Vec<u8>, Error> {
    let mut data = Vec::new();
    let read = io::stdin().lock().take(MAX_ENV_FILE_BYTES as u64 + 1).read_to_end(&mut data);
    if let Err(e) = read {
        return Err(Error::new(ExitCode::DataErr, format!("-: cannot be read ({})", os_reason(&e))));
    }
    if data.len() > MAX_ENV_FILE_BYTES {
        return Err(Error::new(ExitCode::DataErr, format!("- is larger than {MAX_ENV_FILE_BYTES} bytes")));
    }
    Ok(data)
}
