//! Exit codes and the one error type. A message never holds a value: it is
//! built from names, paths, line numbers and JSON paths only.

use std::fmt;

/// Exit codes of envshim and of its converter, kubectl-envshim (sysexits.h
/// where one fits; 126/127 as the shells use them), each number written
/// here once ([`ExitCode::number`]). Both tools exit with these and no
/// other of their own; `run` also ends with the program's code (it becomes
/// the program, or supervises it with `--init`), and 128 + N when signal N
/// ends envshim during its start-up: [`ExitCode::Status`]. What each means
/// to each tool, as their `--help` says it: [`ExitCode::meaning`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    Ok,
    /// `fmt --check`: a file would change; kubectl-envshim `convert --check`: a document would change.
    Changed,
    Usage,
    /// An env file that does not parse, holds an invalid name, or exceeds a
    /// limit; the converter: an input it cannot read or parse.
    DataErr,
    /// A file or key that is missing and not optional.
    NoInput,
    /// A system call envshim needs failed (`--init`: fork, signal set-up).
    OsErr,
    /// `install` could not create its destination; `fmt` could not rewrite a file.
    CantCreat,
    /// Output could not be written (`render`, the converter's stdout: a full disk, an I/O error).
    IoErr,
    /// `--watch --on-change exit`: a change of the sources stopped the program
    /// (EX_TEMPFAIL: the container is to be started again, by its runtime).
    TempFail,
    /// Permission denied reading a file.
    NoPerm,
    /// The manifest or the options are wrong (configuration error); the
    /// converter: a pod it cannot convert.
    Config,
    /// The program was found but cannot be executed, or its argv/env is too large.
    NoExec,
    /// The program was not found.
    NotFound,
    /// A status that is not one of envshim's own: the program's exit code
    /// (`run --init` ends as its program did), or 128 + N for signal N (the
    /// program's, or envshim's own while `--wait` waits).
    Status(u8),
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

    /// The number a process exits with.
    pub const fn number(self) -> i32 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Changed => 1,
            ExitCode::Usage => 2,
            ExitCode::DataErr => 65,
            ExitCode::NoInput => 66,
            ExitCode::OsErr => 71,
            ExitCode::CantCreat => 73,
            ExitCode::IoErr => 74,
            ExitCode::TempFail => 75,
            ExitCode::NoPerm => 77,
            ExitCode::Config => 78,
            ExitCode::NoExec => 126,
            ExitCode::NotFound => 127,
            ExitCode::Status(n) => n as i32,
        }
    }

    /// What the code means to `tool`, as its `--help` says it (None: it
    /// never exits with it). A line break is where the help wraps the line.
    pub const fn meaning(self, tool: Tool) -> Option<&'static str> {
        self.meanings()[tool as usize]
    }

    /// [`ExitCode::meaning`] to each [`Tool`], in its order.
    const fn meanings(self) -> [Option<&'static str>; 3] {
        match self {
            ExitCode::Ok => [
                Some("success (run: the program's own code, as envshim becomes the program;\nwith --init, also a code given to --success-exit)"),
                Some("done: every file is in the form (with --check: none would change)"),
                Some("done"),
            ],
            ExitCode::Changed => [
                None,
                Some("--check: a line the kubelet reads otherwise or cannot read (each one\nlisted on stdout), or a file that would change"),
                Some("convert --check: a document would change; fmt --check: a line to fix"),
            ],
            ExitCode::Usage => {
                [Some("usage error: a bad option or configuration variable, no program line"), Some("usage error"), Some("usage error: a bad option or config")]
            }
            ExitCode::DataErr => [
                Some("an env file does not parse, has an invalid name or exceeds a limit;\nan --env-dir or NAME_FILE value is too large or holds a NUL"),
                Some("a file does not parse, or holds values the kubelet's grammar cannot\nhold (each line named); the file is left as it was"),
                Some("an input that cannot be read or parsed"),
            ],
            ExitCode::NoInput => [
                Some("a file, directory or key is missing and not optional (with --wait:\nafter waiting)"),
                Some("a file is missing"),
                Some("fmt: a file is missing"),
            ],
            ExitCode::OsErr => [Some("with --init: a system call envshim needs failed; --listen: an address\ncannot be bound"), None, None],
            ExitCode::CantCreat => [
                Some("install cannot create DEST"),
                Some("a file cannot be rewritten (its directory, its owner, its extended\nattributes), or changed while fmt ran; the file is left as it was"),
                Some("fmt cannot rewrite a file"),
            ],
            ExitCode::IoErr => [Some("render cannot write its output"), None, Some("the output cannot be written")],
            ExitCode::TempFail => [Some("with --watch --on-change exit: a change stopped the program"), None, None],
            ExitCode::NoPerm => {
                [Some("permission denied reading a file"), Some("permission denied reading a file"), Some("fmt: permission denied reading a file")]
            }
            ExitCode::Config => [
                Some("configuration: the manifest, a volume, a path, an env name; with\ncheck --strict, a warning"),
                Some("a file is not a regular file"),
                Some("a pod that cannot be converted; fmt: a file is not a regular file"),
            ],
            ExitCode::NoExec => [Some("the program cannot be executed, or argv/env too large for execve"), None, None],
            ExitCode::NotFound => [Some("the program was not found"), None, None],
            // The help's last row, `128+N`, says what it is.
            ExitCode::Status(_) => [None; 3],
        }
    }
}

/// Whose help a table of exit codes ends: envshim's (and its `run`,
/// `check` and `render`'s), `kubectl envshim fmt`'s, kubectl-envshim's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Envshim,
    Fmt,
    Converter,
}

/// `intro` (a paragraph, then a blank line; none when empty) and `tool`'s
/// [`exit_code_help`], as one `&'static str` made at compile time.
macro_rules! with_exit_codes {
    ($intro:expr, $tool:expr) => {{
        const LEN: usize = $crate::error::help_text(&mut [], $intro, $tool);
        const BYTES: [u8; LEN] = $crate::error::help_bytes($intro, $tool);
        $crate::error::utf8(&BYTES)
    }};
}

/// The end of `tool`'s `--help`: `Exit codes:` and a line a code
/// ([`ExitCode::meaning`]); envshim's ends with the codes of signals. Made
/// at compile time: clap takes a help at every start, and formatting the
/// table then would cost each run.
pub const fn exit_code_help(tool: Tool) -> &'static str {
    match tool {
        Tool::Envshim => with_exit_codes!("", Tool::Envshim),
        Tool::Fmt => with_exit_codes!("", Tool::Fmt),
        Tool::Converter => with_exit_codes!("", Tool::Converter),
    }
}

/// [`help_text`] into an array of its length.
pub(crate) const fn help_bytes<const N: usize>(intro: &str, tool: Tool) -> [u8; N] {
    let mut bytes = [0; N];
    help_text(&mut bytes, intro, tool);
    bytes
}

/// Text made of `&str`s at compile time, UTF-8 as they are.
pub(crate) const fn utf8(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(_) => panic!("the help is made of &str"),
    }
}

/// Writes `intro` and `tool`'s table into `buf` as far as it fits; its
/// length (with an empty `buf`: the length to make it).
pub(crate) const fn help_text(buf: &mut [u8], intro: &str, tool: Tool) -> usize {
    let mut out = Text { buf, len: 0 };
    if !intro.is_empty() {
        out.push(intro.as_bytes());
        out.push(b"\n\n");
    }
    out.push(b"Exit codes:");
    let mut i = 0;
    while i < ExitCode::ALL.len() {
        let code = ExitCode::ALL[i];
        if let Some(meaning) = code.meaning(tool) {
            // Left-aligned in 7 columns: the codes have at most 3 digits.
            let (mut column, mut n, mut digits) = ([b' '; 7], code.number(), 1);
            while n >= 10_i32.pow(digits) {
                digits += 1;
            }
            while digits > 0 {
                digits -= 1;
                column[digits as usize] = b'0' + (n % 10) as u8;
                n /= 10;
            }
            out.row(&column, meaning);
        }
        i += 1;
    }
    if matches!(tool, Tool::Envshim) {
        out.row(b"128+N  ", "signal N: the program's, with --init; or envshim's own during start-up");
    }
    out.len
}

/// Bytes written at compile time: what fits into `buf` is written, every
/// byte counted, so that a first pass without a buffer measures the text.
struct Text<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Text<'_> {
    const fn push(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.len < self.buf.len() {
                self.buf[self.len] = bytes[i];
            }
            self.len += 1;
            i += 1;
        }
    }

    /// A row of the table: `column` (7 wide), then each line of `meaning`
    /// (the next ones under the first, `column` left blank).
    const fn row(&mut self, column: &[u8; 7], meaning: &str) {
        let mut rest = meaning.as_bytes();
        let mut first = true;
        loop {
            let mut end = 0;
            while end < rest.len() && rest[end] != b'\n' {
                end += 1;
            }
            self.push(b"\n  ");
            self.push(if first { column } else { b"       " });
            let (line, after) = rest.split_at(end);
            self.push(line);
            match after.split_first() {
                Some((_, next)) => rest = next,
                None => break,
            }
            first = false;
        }
    }
}

/// One failure: an exit code, what it is about, where, and what is wrong;
/// its one-line message (without the `envshim: ` prefix) is made only when
/// it is shown ([`fmt::Display`]): `SUBJECT: PATH: WHAT`, each part there
/// when it is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ExitCode,
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
/// the root for the whole document), `file` a file as `render` names it,
/// `line` its line (0: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct At {
    pub path: Option<JsonPath>,
    pub file: Option<String>,
    pub line: usize,
}

/// A JSON path in a manifest or a document, step by step; joined only when
/// shown ([`fmt::Display`]: `env[3].valueFrom`, nothing for the root).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(pub Vec<Segment>);

/// A step of a [`JsonPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A field, its key as a message shows it (a key read from a manifest
    /// [`escape`]d by its reader).
    Key(String),
    /// An item of an array.
    Index(usize),
}

impl JsonPath {
    /// `key[i]`: an item of a top-level list (`env[3]`).
    pub fn item(key: &str, i: usize) -> Self {
        JsonPath(vec![Segment::Key(key.to_string()), Segment::Index(i)])
    }
    /// The path to the field `key` below this one.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.0.push(Segment::Key(key.into()));
        self
    }
    /// The path to the item `i` below this one.
    pub fn index(mut self, i: usize) -> Self {
        self.0.push(Segment::Index(i));
        self
    }
    /// This path, then `below` (a path relative to it).
    pub fn join(mut self, below: JsonPath) -> Self {
        self.0.extend(below.0);
        self
    }
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
    /// The item of a top-level list the path starts at (`env`, 3 for
    /// `env[3].valueFrom`).
    pub fn item_of(&self) -> Option<(&str, usize)> {
        match self.0.as_slice() {
            [Segment::Key(key), Segment::Index(i), ..] => Some((key, *i)),
            _ => None,
        }
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, segment) in self.0.iter().enumerate() {
            match segment {
                Segment::Key(key) if n == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl Error {
    /// An error whose message is `what`, in one piece.
    pub fn new(code: ExitCode, what: impl Into<String>) -> Self {
        Error { code, subject: String::new(), what: what.into(), at: None }
    }
    /// An error about `subject` at the manifest's JSON `path` (the root:
    /// the whole document), in `file` when there is one: `SUBJECT: PATH: WHAT`
    /// (`WHAT` alone without a subject: one the parser names later, or a
    /// message that names the manifest itself).
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn in_manifest(code: ExitCode, subject: &str, path: JsonPath, file: Option<&str>, what: impl Into<String>) -> Self {
        let at = At { path: Some(path), file: file.map(str::to_string), ..At::default() };
        Error { code, subject: subject.to_string(), what: what.into(), at: Some(Box::new(at)) }
    }
    /// The same error, located in `file` at `line` (0: the whole file).
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn at(mut self, file: &str, line: usize) -> Self {
        self.at = Some(Box::new(At { file: Some(file.to_string()), line, ..At::default() }));
        self
    }
    /// The same error, at the manifest's JSON `path` and in `file` (each when
    /// there is one), for `check --format json`.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn located(mut self, path: Option<JsonPath>, file: Option<&dyn fmt::Display>) -> Self {
        self.at = Some(Box::new(At { path, file: file.map(ToString::to_string), ..At::default() }));
        self
    }
    pub fn usage(what: impl Into<String>) -> Self {
        Self::new(ExitCode::Usage, what)
    }
    pub fn config(what: impl Into<String>) -> Self {
        Self::new(ExitCode::Config, what)
    }
    /// The manifest's JSON path where the problem is, if it has one.
    pub fn path(&self) -> Option<&JsonPath> {
        self.at.as_ref().and_then(|a| a.path.as_ref())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.subject.is_empty() {
            f.write_str(&self.subject)?;
            f.write_str(": ")?;
            if let Some(path) = self.path().filter(|p| !p.is_root()) {
                write!(f, "{path}: ")?;
            }
        }
        f.write_str(&self.what)
    }
}

/// An OS error's text without the `(os error N)` std adds (`No such file
/// or directory`, not `No such file or directory (os error 2)`): messages
/// put it in parentheses of their own.
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
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
        let at = |path: JsonPath| Error::in_manifest(ExitCode::Config, "manifest ./m.json", path, Some("./m.json"), "unknown field");
        assert_eq!(at(JsonPath::item("env", 0).key("valueFrom").key("x")).to_string(), "manifest ./m.json: env[0].valueFrom.x: unknown field");
        assert_eq!(at(JsonPath::default()).to_string(), "manifest ./m.json: unknown field");
        // Without a subject the message is `what` alone: the path is for `check --format json`.
        let path = JsonPath::item("env", 0).key("valueFrom").key("fileKeyRef").key("path");
        let located = Error::new(ExitCode::NoInput, "manifest: env[0] (A): file v/a not found").located(Some(path), None);
        assert_eq!(located.to_string(), "manifest: env[0] (A): file v/a not found");
    }

    #[test]
    fn a_json_path_is_joined_when_shown() {
        let doc = JsonPath::default().key("items").index(0).key("spec").key("containers").index(2);
        assert_eq!(doc.to_string(), "items[0].spec.containers[2]");
        assert_eq!(JsonPath::default().index(1).key("a").to_string(), "[1].a");
        let env = JsonPath::item("env", 3).key("valueFrom");
        assert_eq!(env.item_of(), Some(("env", 3)));
        assert_eq!(doc.clone().join(env).to_string(), "items[0].spec.containers[2].env[3].valueFrom");
        assert_eq!(doc.item_of(), Some(("items", 0)));
        assert_eq!(JsonPath::default().key("spec").item_of(), None);
    }

    #[test]
    fn every_exit_code_is_listed_once_in_order_with_a_meaning() {
        let numbers: Vec<i32> = ExitCode::ALL.iter().map(|c| c.number()).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        for c in ExitCode::ALL {
            assert!(c.meanings() != [None; 3], "{c:?} means nothing to any tool");
        }
        let converter = exit_code_help(Tool::Converter);
        assert!(converter.ends_with("\n  78     a pod that cannot be converted; fmt: a file is not a regular file"), "{converter}");
        let envshim = exit_code_help(Tool::Envshim);
        assert!(envshim.contains("\n  126    the program cannot be executed"), "{envshim}");
        // A meaning of two lines: the second under the first.
        assert!(
            envshim.starts_with("Exit codes:\n  0      success (run: the program's own code, as envshim becomes the program;\n         with --init,"),
            "{envshim}"
        );
        assert_eq!(with_exit_codes!("Intro.", Tool::Fmt).strip_prefix("Intro.\n\n"), Some(exit_code_help(Tool::Fmt)));
    }

    #[test]
    fn os_reason_drops_the_error_number() {
        assert_eq!(os_reason(&std::io::Error::from_raw_os_error(libc::ENOENT)), "No such file or directory");
        assert_eq!(os_reason(&std::io::Error::other("plain")), "plain");
    }
}
