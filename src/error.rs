//! Exit codes and the one error type. A message never holds a value: it is
//! built from names, paths, line numbers and JSON paths only.

use std::fmt;

/// Exit codes of envshim and of its converter, kubectl-envshim (sysexits.h
/// where one fits; 126/127 as the shells use them), each number written
/// here once. Both tools exit with these and no other of their own; `run`
/// also ends with the program's code (it becomes the program, or
/// supervises it with `--init`), and 128 + N when signal N ends envshim
/// during its start-up. What each means to each tool, as their `--help`
/// says it: [`ExitCode::meaning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum ExitCode {
    Ok = 0,
    /// `fmt --check`: a file would change; kubectl-envshim `convert --check`: a document would change.
    Changed = 1,
    Usage = 2,
    /// An env file that does not parse, holds an invalid name, or exceeds a
    /// limit; the converter: an input it cannot read or parse.
    DataErr = 65,
    /// A file or key that is missing and not optional.
    NoInput = 66,
    /// A system call envshim needs failed (`--init`: fork, signal set-up).
    OsErr = 71,
    /// `install` could not create its destination; `fmt` could not rewrite a file.
    CantCreat = 73,
    /// Output could not be written (`render`, the converter's stdout: a full disk, an I/O error).
    IoErr = 74,
    /// `--watch --on-change exit`: a change of the sources stopped the program
    /// (EX_TEMPFAIL: the container is to be started again, by its runtime).
    TempFail = 75,
    /// Permission denied reading a file.
    NoPerm = 77,
    /// The manifest or the options are wrong (configuration error); the
    /// converter: a pod it cannot convert.
    Config = 78,
    /// The program was found but cannot be executed, or its argv/env is too large.
    NoExec = 126,
    /// The program was not found.
    NotFound = 127,
}

impl ExitCode {
    /// Every code, in the order the help lists them.
    pub const ALL: [ExitCode; 13] = [
        ExitCode::Ok,
        ExitCode::Changed,
        ExitCode::Usage,
        ExitCode::DataErr,
        ExitCode::NoInput,
        ExitCode::OsErr,
        ExitCode::CantCreat,
        ExitCode::IoErr,
        ExitCode::TempFail,
        ExitCode::NoPerm,
        ExitCode::Config,
        ExitCode::NoExec,
        ExitCode::NotFound,
    ];

    /// What the code means to envshim and to kubectl-envshim, as their
    /// `--help` says it (None: that tool never exits with it). A line
    /// break is where the help wraps the line.
    pub const fn meaning(self) -> (Option<&'static str>, Option<&'static str>) {
        match self {
            ExitCode::Ok => (Some("success (run: the program's own code, as envshim becomes the program;\nwith --init, also a code given to --success-exit)"), Some("done")),
            ExitCode::Changed => (Some("fmt --check: a file would change"), Some("convert --check: a document would change")),
            ExitCode::Usage => (Some("usage error: a bad option or configuration variable, no program line"), Some("usage error: a bad option or config")),
            ExitCode::DataErr => (
                Some("an env file does not parse, has an invalid name or exceeds a limit;\nan --env-dir or NAME_FILE value is too large or holds a NUL"),
                Some("an input that cannot be read or parsed"),
            ),
            ExitCode::NoInput => (Some("a file, directory or key is missing and not optional (with --wait:\nafter waiting)"), None),
            ExitCode::OsErr => (Some("with --init: a system call envshim needs failed"), None),
            ExitCode::CantCreat => (Some("install cannot create DEST; fmt cannot rewrite a file"), None),
            ExitCode::IoErr => (Some("render cannot write its output"), Some("the output cannot be written")),
            ExitCode::TempFail => (Some("with --watch --on-change exit: a change stopped the program"), None),
            ExitCode::NoPerm => (Some("permission denied reading a file"), None),
            ExitCode::Config => (Some("configuration: the manifest, a volume, a path, an env name; with\ncheck --strict, a warning"), Some("a pod that cannot be converted")),
            ExitCode::NoExec => (Some("the program cannot be executed, or argv/env too large for execve"), None),
            ExitCode::NotFound => (Some("the program was not found"), None),
        }
    }
}

/// The exit codes as the numbers a process exits with (the library's
/// functions return them): [`ExitCode`]'s, named as sysexits.h names them.
pub mod code {
    use super::ExitCode;
    pub const OK: i32 = ExitCode::Ok as i32;
    pub const CHANGED: i32 = ExitCode::Changed as i32;
    pub const USAGE: i32 = ExitCode::Usage as i32;
    pub const DATAERR: i32 = ExitCode::DataErr as i32;
    pub const NOINPUT: i32 = ExitCode::NoInput as i32;
    pub const OSERR: i32 = ExitCode::OsErr as i32;
    pub const IOERR: i32 = ExitCode::IoErr as i32;
    pub const TEMPFAIL: i32 = ExitCode::TempFail as i32;
    pub const CANTCREAT: i32 = ExitCode::CantCreat as i32;
    pub const NOPERM: i32 = ExitCode::NoPerm as i32;
    pub const CONFIG: i32 = ExitCode::Config as i32;
    pub const NOEXEC: i32 = ExitCode::NoExec as i32;
    pub const NOTFOUND: i32 = ExitCode::NotFound as i32;
}

/// The end of each tool's `--help`: `Exit codes:` and a line a code
/// ([`ExitCode::meaning`]), envshim's or with `converter` kubectl-envshim's;
/// envshim's ends with the codes of signals. envshim's help is this text
/// as a literal (`cli::EXIT_CODES`: clap takes it at every start, where
/// formatting it would cost each run), tested to be it.
pub fn exit_code_help(converter: bool) -> String {
    let mut out = String::from("Exit codes:");
    let mut row = |code: &str, meaning: &str| {
        for (i, line) in meaning.lines().enumerate() {
            out.push_str(&format!("\n  {:<7}{line}", if i == 0 { code } else { "" }));
        }
    };
    for c in ExitCode::ALL {
        let (envshim, kubectl_envshim) = c.meaning();
        if let Some(meaning) = if converter { kubectl_envshim } else { envshim } {
            row(&(c as i32).to_string(), meaning);
        }
    }
    if !converter {
        row("128+N", "signal N: the program's, with --init; or envshim's own during start-up");
    }
    out
}

/// One failure: an exit code, what it is about, where, and what is wrong;
/// its one-line message (without the `envshim: ` prefix) is made only when
/// it is shown ([`fmt::Display`]): `SUBJECT: PATH: WHAT`, each part there
/// when it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: i32,
    /// What the problem is about, as the message names it first: `manifest
    /// ./m.json`, `--manifest-json`. Empty for a message in one piece (`what`
    /// names its subject itself, if it has one).
    pub subject: String,
    /// What is wrong: the message after the subject and the path.
    pub what: String,
    /// Where the problem is, for `check --format json`; with a subject, its
    /// `path` is shown in the message too. Boxed, so that the many errors
    /// without one cost one word.
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
    /// The item of a top-level list the path starts at, as data (`env`, 3
    /// for `env[3].valueFrom`): the converter, whose manifest's `env` is a
    /// part of a container's, numbers it as the container's entry.
    pub item: Option<(&'static str, usize)>,
}

impl Error {
    /// An error whose message is `what`, in one piece.
    pub fn new(code: i32, what: impl Into<String>) -> Self {
        Error { code, subject: String::new(), what: what.into(), at: None }
    }
    /// An error about `subject` at the manifest's JSON `path` (`""`: the
    /// whole document), in `file` when there is one: `SUBJECT: PATH: WHAT`
    /// (`WHAT` alone without a subject: one the parser names later, or a
    /// message that names the manifest itself).
    pub fn in_manifest(code: i32, subject: &str, path: String, file: Option<&str>, what: impl Into<String>) -> Self {
        let at = At { path: Some(path), file: file.map(str::to_string), ..At::default() };
        Error { code, subject: subject.to_string(), what: what.into(), at: Some(Box::new(at)) }
    }
    /// The same error, located in `file` at `line` (0: the whole file).
    pub fn at(mut self, file: &str, line: usize) -> Self {
        self.at = Some(Box::new(At { file: Some(file.to_string()), line, ..At::default() }));
        self
    }
    /// The same error, at the manifest's JSON `path` and in `file` (each when
    /// there is one), for `check --format json`.
    pub fn located(mut self, path: Option<String>, file: Option<&dyn fmt::Display>) -> Self {
        self.at = Some(Box::new(At { path, file: file.map(ToString::to_string), ..At::default() }));
        self
    }
    pub fn usage(what: impl Into<String>) -> Self {
        Self::new(code::USAGE, what)
    }
    pub fn config(what: impl Into<String>) -> Self {
        Self::new(code::CONFIG, what)
    }
    /// The manifest's JSON path where the problem is, if it has one.
    pub fn path(&self) -> Option<&str> {
        self.at.as_ref().and_then(|a| a.path.as_deref())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.subject.is_empty() {
            f.write_str(&self.subject)?;
            f.write_str(": ")?;
            if let Some(path) = self.path().filter(|p| !p.is_empty()) {
                f.write_str(path)?;
                f.write_str(": ")?;
            }
        }
        f.write_str(&self.what)
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
    fn a_message_is_its_parts_joined() {
        let at = |path: &str| Error::in_manifest(code::CONFIG, "manifest ./m.json", path.into(), Some("./m.json"), "unknown field");
        assert_eq!(at("env[0].valueFrom.x").to_string(), "manifest ./m.json: env[0].valueFrom.x: unknown field");
        assert_eq!(at("").to_string(), "manifest ./m.json: unknown field");
        // Without a subject the message is `what` alone: the path is for `check --format json`.
        let located = Error::new(code::NOINPUT, "manifest: env[0] (A): file v/a not found").located(Some("env[0].valueFrom.fileKeyRef.path".into()), None);
        assert_eq!(located.to_string(), "manifest: env[0] (A): file v/a not found");
    }

    #[test]
    fn every_exit_code_is_listed_once_in_order_with_a_meaning() {
        let numbers: Vec<i32> = ExitCode::ALL.iter().map(|&c| c as i32).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        for c in ExitCode::ALL {
            assert!(c.meaning() != (None, None), "{c:?} means nothing to either tool");
        }
        assert!(exit_code_help(true).ends_with("\n  78     a pod that cannot be converted"), "{}", exit_code_help(true));
        assert!(exit_code_help(false).contains("\n  126    the program cannot be executed"), "{}", exit_code_help(false));
    }

    #[test]
    fn os_reason_drops_the_error_number() {
        assert_eq!(os_reason(&std::io::Error::from_raw_os_error(libc::ENOENT)), "No such file or directory");
        assert_eq!(os_reason(&std::io::Error::other("plain")), "plain");
    }
}
