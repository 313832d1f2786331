//! The inputs as kubectl takes them: `-f FILE`, `-f -` (stdin), `-f DIR`
//! (its `.yaml`, `.yml` and `.json` files in name order; `-R`: its
//! subdirectories too, each where its name falls), never a URL.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::cli::Input;
use crate::{code, MAX_INPUT_BYTES};

/// Each input, as messages name it, with its text or why it cannot be read.
pub type Texts = Vec<(String, Result<String, String>)>;

/// Reads every input (at most [`MAX_INPUT_BYTES`] in all). Err: the
/// inputs cannot be listed (a URL, stdin twice, a directory without files).
pub fn read_all(input: &Input) -> Result<Texts, (i32, String)> {
    let files = if input.files.is_empty() { vec![OsString::from("-")] } else { input.files.clone() };
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return Err((code::USAGE, "stdin (-f -) can be read only once".into()));
    }
    let mut paths: Vec<PathBuf> = Vec::new();
    for file in &files {
        let text = file.to_string_lossy();
        if ["http://", "https://"].iter().any(|s| text.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s))) {
            // The URL is not shown: it may hold a token.
            return Err((
                code::USAGE,
                "-f URL: kubectl-envshim never reaches the network; download the file and give it with -f (curl -fsSL URL | kubectl envshim convert -f -)".into(),
            ));
        }
        let path = PathBuf::from(file);
        if file != "-" && path.is_dir() {
            let before = paths.len();
            directory(&path, input.recursive, &mut paths).map_err(|e| (code::DATAERR, format!("{}: cannot be read ({})", path.display(), io_reason(&e))))?;
            if paths.len() == before {
                let what = if input.recursive { "nor under it" } else { "(-R reads its subdirectories)" };
                return Err((code::DATAERR, format!("{}: no .yaml, .yml or .json file in it {what}", path.display())));
            }
        } else {
            paths.push(path);
        }
    }
    let mut left = MAX_INPUT_BYTES;
    let mut texts = Vec::new();
    for path in paths {
        let shown = if path.as_os_str() == "-" { "stdin".to_string() } else { path.to_string_lossy().into_owned() };
        let text = read(&path, left);
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

/// One input, at most `limit` bytes, as UTF-8 text.
pub fn read(path: &Path, limit: u64) -> Result<String, String> {
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin().lock().take(limit + 1).read_to_end(&mut bytes)
    } else {
        match std::fs::File::open(path) {
            Ok(f) => {
                if f.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err("is a directory".into());
                }
                f.take(limit + 1).read_to_end(&mut bytes)
            }
            Err(e) => return Err(format!("cannot be read ({})", io_reason(&e))),
        }
    };
    read.map_err(|e| format!("cannot be read ({})", io_reason(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(match limit {
            MAX_INPUT_BYTES => format!("is larger than {MAX_INPUT_BYTES} bytes"),
            _ => format!("takes the inputs together past {MAX_INPUT_BYTES} bytes"),
        });
    }
    String::from_utf8(bytes).map_err(|e| format!("is not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// An I/O error without the "(os error N)" suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}
