//! The converter's `kubectl envshim fmt FILE...` (the shim ships only what
//! runs in a container: its binary does not call this): env files rewritten
//! in place in the portable form ([`crate::envfile::portable`]), which the
//! kubelet's grammar and envshim's read alike. Each file on its own: one
//! that cannot be read, parsed or written in that form is left as it was,
//! each line it cannot write is named, and the others are still done. A
//! file is replaced atomically, with its mode, owner and extended
//! attributes, and only if it is still the file read, as it was read
//! ([`replace`]); one already in the form is not touched. `--check` is the
//! lint: every line of every file that the kubelet reads otherwise or
//! cannot read, on stdout.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;

use crate::envfile::portable::{self, Fix};
use crate::error::{escape, os_reason, Error, ExitCode};
use crate::files::read_error;
use crate::limits::MAX_ENV_FILE_BYTES;
use crate::report;

mod replace;

use replace::Failed;

/// Formats each of `files` (`-`: stdin to stdout); with `check`, changes
/// nothing and lists on stdout, `FILE:LINE: why`, each line the kubelet
/// reads otherwise or cannot read. Each failure goes to `fail`, which says
/// it in the caller's voice. The exit code: the first failure's, else 1
/// when `check` found a line (or a file that would change), else 0.
pub fn fmt(files: &[OsString], check: bool, fail: &mut dyn FnMut(&Error)) -> ExitCode {
    let (mut failed, mut found) = (None, false);
    for file in files {
        match one(file, check) {
            Ok(f) => found |= f,
            Err(errors) => {
                errors.iter().for_each(&mut *fail);
                failed.get_or_insert(errors[0].code);
            }
        }
    }
    failed.unwrap_or(if check && found { ExitCode::Changed } else { ExitCode::Ok })
}

/// One file: whether it is (or, with `check`, would be) changed. Err: at
/// least one error, each line it cannot write one.
fn one(file: &std::ffi::OsStr, check: bool) -> Result<bool, Vec<Error>> {
    let stdin = file == "-";
    let shown = escape(file.as_bytes());
    let opened = if stdin { None } else { Some(replace::open(file).map_err(|e| vec![read_error(e, &shown)])?) };
    let data = match &opened {
        Some(f) => &f.data[..],
        None => &read_stdin().map_err(|e| vec![e])?,
    };
    let at = |line: u32, what: String| Error::new(ExitCode::DataErr, format!("{shown}{}: {what}", line_part(line))).at(&shown, line as usize);
    // A file a writer changed while it was read may end in a line cut
    // short: what it said of its lines is not the file's, that it changed is.
    let or_changed = |errors: Vec<Error>| match &opened {
        Some(f) if replace::changed(f) => vec![not_replaced(&shown, Failed::Changed)],
        _ => errors,
    };
    let portable = portable::rewrite(data).map_err(|e| or_changed(vec![at(e.line as u32, e.problem.to_string())]))?;
    let changed = portable.text != data;
    if check {
        let mut listed: String = portable.fixes.iter().map(|f| format!("{shown}{}: {}\n", line_part(f.line), finding(f))).collect();
        if changed && listed.is_empty() {
            listed = format!("{shown}: kubectl envshim fmt would change it (blanks that both grammars read alike)\n");
        }
        report::write_stdout(listed.as_bytes()).map_err(|e| vec![e])?;
        return Ok(!listed.is_empty());
    }
    let cannot: Vec<Error> = portable.fixes.iter().filter(|f| f.cannot.is_some()).map(|f| at(f.line, finding(f))).collect();
    if !cannot.is_empty() {
        return Err(or_changed(cannot));
    }
    if let Some(f) = opened.filter(|_| changed) {
        replace::replace(&f, &portable.text).map_err(|e| vec![not_replaced(&shown, e)])?;
    } else if stdin {
        report::write_stdout(&portable.text).map_err(|e| vec![e])?;
    }
    Ok(changed)
}

/// `:LINE`, or nothing for the whole file (line 0).
fn line_part(line: u32) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}

/// What is said of a line: why it cannot be written, or every change it takes.
fn finding(f: &Fix) -> String {
    match f.cannot {
        Some(why) => format!("cannot be written in the kubelet's grammar: {why}"),
        None => f.to_string(),
    }
}

/// The error for a file left as it was (73).
fn not_replaced(shown: &str, e: Failed) -> Error {
    let why = match e {
        Failed::Io(e) => format!("cannot be rewritten ({})", os_reason(&e)),
        Failed::Xattr(name, e) => format!("cannot be rewritten with its extended attribute {} ({}): it is left as it was", escape(&name), os_reason(&e)),
        Failed::Changed => {
            "changed while kubectl envshim fmt read it (written again, or its name re-pointed to another file): it is left as it was; run it again".into()
        }
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
