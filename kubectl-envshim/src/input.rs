//! The inputs as kubectl takes them: `-f FILE`, `-f -` (stdin), `-f DIR`
//! (its `.yaml`, `.yml` and `.json` files in name order; `-R`: its
//! subdirectories too, each where its name falls), never a URL.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use envshim::converter::{escape, os_reason, Error, ExitCode};

use crate::cli::Input;

/// No input is read past this (all inputs together): a stream of workloads is far smaller.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// Each input, as messages name it, with its text or why it cannot be read.
pub type Texts = Vec<(String, Result<String, Error>)>;

/// Reads every input (at most [`MAX_INPUT_BYTES`] in all). Err: the
/// inputs cannot be listed (a URL, stdin twice, a directory without files).
pub fn read_all(input: &Input) -> Result<Texts, Error> {
    let files = if input.files.is_empty() { vec![OsString::from("-")] } else { input.files.clone() };
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return Err(Error::usage("stdin (-f -) can be read only once"));
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    for file in &files {
        let text = file.to_string_lossy();
        if ["http://", "https://"].iter().any(|s| text.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s))) {
            // The URL is not shown: it may hold a token.
            return Err(Error::usage(
                "-f URL: kubectl-envshim never reaches the network; download the file and give it with -f (curl -fsSL URL | kubectl envshim convert -f -)",
            ));
        }
        let path = PathBuf::from(file);
        if file != "-" && path.is_dir() {
            let before = paths.len();
            let shown = shown(&path);
            directory(&path, input.recursive, &mut paths).map_err(|e| unreadable(&shown, &e))?;
            if paths.len() == before {
                let what = if input.recursive { "nor under it" } else { "(-R reads its subdirectories)" };
                return Err(data_error(&shown, format!("no .yaml, .yml or .json file in it {what}")));
            }
        } else {
            paths.push(path);
        }
    }
    let mut left = MAX_INPUT_BYTES;
    let mut texts = Vec::new();
    for path in paths {
        let shown = if path.as_os_str() == "-" { "stdin".to_string() } else { shown(&path) };
        let text = read(&path, &shown, left);
        if let Ok(t) = &text {
            left -= t.len() as u64;
        }
        texts.push((shown, text));
    }
    Ok(texts)
}

/// The files of `dir` kubectl reads, in name order, appended to `out`.
fn directory(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries = std::fs::read_dir(dir)?.collect::<Result<Vec<_>, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        // Not followed: a link to a directory (kubectl's walk does not follow it either).
        if entry.file_type()?.is_dir() {
            if recursive {
                directory(&path, recursive, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// One input, at most `limit` bytes, as UTF-8 text; messages name it `shown`.
pub fn read(path: &Path, shown: &str, limit: u64) -> Result<String, Error> {
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().lock().take(limit + 1).read_to_end(&mut bytes)
    } else {
        match std::fs::File::open(path) {
            Ok(f) => {
                if f.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err(data_error(shown, "is a directory"));
                }
                f.take(limit + 1).read_to_end(&mut bytes)
            }
            Err(e) => return Err(unreadable(shown, &e)),
        }
    };
    read.map_err(|e| unreadable(shown, &e))?;
    if bytes.len() as u64 > limit {
        return Err(data_error(
            shown,
            match limit {
                MAX_INPUT_BYTES => format!("is larger than {MAX_INPUT_BYTES} bytes"),
                _ => format!("takes the inputs together past {MAX_INPUT_BYTES} bytes"),
            },
        ));
    }
    String::from_utf8(bytes).map_err(|e| data_error(shown, format!("is not UTF-8 (byte {})", e.utf8_error().valid_up_to())))
}

/// A file as messages name it: [`escape`]d, as envshim names its files.
pub fn shown(path: &Path) -> String {
    escape(path.as_os_str().as_bytes())
}

/// An input that cannot be read or parsed: `SHOWN: WHAT`.
pub fn data_error(shown: &str, what: impl Into<String>) -> Error {
    Error { subject: shown.to_string(), ..Error::new(ExitCode::DataErr, what) }
}

/// An input the system does not let be read, with the system's reason (as envshim words it).
fn unreadable(shown: &str, e: &std::io::Error) -> Error {
    data_error(shown, format!("cannot be read ({})", os_reason(e)))
}
