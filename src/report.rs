//! Telling the user: failures and warnings on stderr, one line each, and the
//! failures in the termination log so `kubectl describe pod` shows them.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use crate::error::Error;
use crate::limits::MAX_TERMINATION_LOG_BYTES;

pub const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";

pub fn warn(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "envshim: warning: {message}");
}

/// Prints every error, writes the termination log, and returns the exit code
/// of the first error.
pub fn fail(errors: &[Error], termination_log: Option<&OsStr>) -> i32 {
    let mut text = String::new();
    for e in errors {
        text.push_str("envshim: ");
        text.push_str(&e.message);
        text.push('\n');
    }
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    write_termination_log(&text, termination_log);
    errors.first().map_or(1, |e| e.code)
}

/// Truncates and rewrites the log with at most 4,096 bytes, cut at a line end
/// when it is longer. A named log is created; the default one only if it exists.
fn write_termination_log(text: &str, named: Option<&OsStr>) {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).truncate(true).custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK);
    let path = match named {
        Some(p) => {
            options.create(true).mode(0o644);
            PathBuf::from(p)
        }
        None => PathBuf::from(DEFAULT_TERMINATION_LOG),
    };
    let Ok(mut file) = options.open(path) else { return };
    let _ = file.write_all(log_part(text).as_bytes());
}

/// The start of `text` that fits in the log: all of it, or up to the last
/// line end within the limit (a single longer line is cut at a character).
fn log_part(text: &str) -> &str {
    if text.len() <= MAX_TERMINATION_LOG_BYTES {
        return text;
    }
    let end = floor_char_boundary(text, MAX_TERMINATION_LOG_BYTES);
    &text[..text[..end].rfind('\n').map_or(end, |i| i + 1)]
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_part_keeps_whole_lines_within_the_limit() {
        let short = "envshim: a\nenvshim: b\n";
        assert_eq!(log_part(short), short);
        let lines = "envshim: 0123456789\n".repeat(400);
        let part = log_part(&lines);
        assert!(part.len() <= MAX_TERMINATION_LOG_BYTES && part.ends_with('\n') && lines.starts_with(part));
    }

    /// A usage line quoting a long non-ASCII argument: byte 4,096 falls inside
    /// a character and no line ends before it.
    #[test]
    fn log_part_of_one_long_line_cuts_at_a_character() {
        let text = format!("envshim: unexpected argument 'x{}' found\n", "\u{e9}".repeat(3000));
        assert!(!text.is_char_boundary(MAX_TERMINATION_LOG_BYTES));
        let part = log_part(&text);
        assert!(part.len() <= MAX_TERMINATION_LOG_BYTES && part.len() > MAX_TERMINATION_LOG_BYTES - 4);
        assert!(text.starts_with(part));
    }
}
