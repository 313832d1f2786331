//! Exit codes and the one error type. A message never holds a value: it is
//! built from names, paths, line numbers and JSON paths only.

use std::fmt;

/// Exit codes (sysexits.h where one fits; 126/127 as the shells use them).
pub mod code {
    pub const OK: i32 = 0;
    pub const USAGE: i32 = 2;
    /// An env file that does not parse, holds an invalid name, or exceeds a limit.
    pub const DATAERR: i32 = 65;
    /// A file or key that is missing and not optional.
    pub const NOINPUT: i32 = 66;
    /// A system call envshim needs failed (`--init`: fork, signal set-up).
    pub const OSERR: i32 = 71;
    /// `render` could not write its output (a full disk, an I/O error).
    pub const IOERR: i32 = 74;
    /// `install` could not create its destination.
    pub const CANTCREAT: i32 = 73;
    /// Permission denied reading a file.
    pub const NOPERM: i32 = 77;
    /// The manifest or the options are wrong (configuration error).
    pub const CONFIG: i32 = 78;
    /// The program was found but cannot be executed, or its argv/env is too large.
    pub const NOEXEC: i32 = 126;
    /// The program was not found.
    pub const NOTFOUND: i32 = 127;
}

/// One failure: an exit code and a one-line message (without the `envshim: ` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    pub message: String,
    /// Where the problem is, for `check --format json` (the message names
    /// it too); boxed, so that the many errors without one cost one word.
    pub at: Option<Box<At>>,
}

/// Where a problem is: `path` a JSON path in the manifest (`env[3].valueFrom`,
/// `""` for the whole document), `file` a file as `render` names it, `line`
/// its line (0: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct At {
    pub path: Option<String>,
    pub file: Option<String>,
    pub line: usize,
}

impl Error {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), at: None }
    }
    /// The same error, located in `file` at `line` (0: the whole file).
    pub fn at(mut self, file: &str, line: usize) -> Self {
        self.at = Some(Box::new(At { path: None, file: Some(file.to_string()), line }));
        self
    }
    /// The same error, at the manifest's JSON `path` and in `file` (each when
    /// there is one), for `check --format json`.
    pub fn located(mut self, path: Option<String>, file: Option<&dyn fmt::Display>) -> Self {
        self.at = Some(Box::new(At { path, file: file.map(ToString::to_string), line: 0 }));
        self
    }
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(code::USAGE, message)
    }
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(code::CONFIG, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// An OS error's text without the `(os error N)` std adds (`No such file
/// or directory`, not `No such file or directory (os error 2)`): messages
/// put it in parentheses of their own.
#[inline(never)]
pub fn os_reason(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => crate::sys::strerror(n).to_string_lossy().into_owned(),
        None => e.to_string(),
    }
}

/// Shows configuration text (a name from the manifest, a path) on one line:
/// printable ASCII as is, every other byte as `\xNN`.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..=0x7e).contains(&b) && b != b'\\' {
            out.push(b as char);
        } else if b == b'\\' {
            out.push_str("\\\\");
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `s` as a JSON string (quoted, escaped) appended to `buf`.
pub fn json_string(buf: &mut String, s: &str) {
    buf.push('"');
    for c in s.chars() {
        match c {
            '"' => buf.push_str("\\\""),
            '\\' => buf.push_str("\\\\"),
            '\n' => buf.push_str("\\n"),
            '\r' => buf.push_str("\\r"),
            '\t' => buf.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => buf.push_str(&format!("\\u{:04x}", c as u32)),
            c => buf.push(c),
        }
    }
    buf.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_keeps_printable_and_hides_the_rest() {
        assert_eq!(escape(b"A:b c"), "A:b c");
        assert_eq!(escape(b"a\nb\x00\xff\\"), "a\\x0ab\\x00\\xff\\\\");
    }

    #[test]
    fn os_reason_drops_the_error_number() {
        assert_eq!(os_reason(&std::io::Error::from_raw_os_error(libc::ENOENT)), "No such file or directory");
        assert_eq!(os_reason(&std::io::Error::other("plain")), "plain");
    }
}
