//! Telling the user: failures and warnings on stderr, one line each, and the
//! failures in the termination log so `kubectl describe pod` shows them.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use crate::error::{Error, ExitCode};
use crate::limits::{MAX_ERROR_LINES, MAX_MESSAGE_BYTES, MAX_TERMINATION_LOG_BYTES, MAX_WARNING_LINES};

pub const DEFAULT_TERMINATION_LOG: &str = "/dev/termination-log";

/// Prints one warning line (cut at [`MAX_MESSAGE_BYTES`]).
pub fn warn(message: &str) {
    // A closed stderr is not worth failing for: SIGPIPE is caught (lib.rs `start`).
    let _ = std::io::stderr().lock().write_all(line("envshim: warning: ", message).as_bytes());
}

/// Prints one line that is neither a warning nor a failure (`--wait` saying what it waits for).
pub fn say(message: &str) {
    let _ = std::io::stderr().lock().write_all(line("envshim: ", message).as_bytes());
}

/// Writes `bytes` to stdout, flushed. A reader that stopped early (`| head`)
/// got what it wanted: not an error; any other failure is an IOERR (both
/// tools: `render`, the converter's output).
pub fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    stdout_written(out.write_all(bytes).and_then(|()| out.flush()))
}

/// What a write to stdout that ended with `written` means ([`write_stdout`]).
pub fn stdout_written(written: std::io::Result<()>) -> Result<(), Error> {
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::new(ExitCode::IoErr, format!("cannot write to stdout ({})", crate::error::os_reason(&e))))
        }
        _ => Ok(()),
    }
}

/// The warnings of a start-up, kept for printing: the first
/// [`MAX_WARNING_LINES`], and a count of the rest, so that a manifest that
/// repeats a bad source can make envshim neither hold nor print more.
///
/// `check --strict` turns every one into a failure ([`Warnings::into_errors`]):
/// a warning pushed here is one that `--strict` fails on, with the exit code
/// given by [`Warnings::push_code`] (78 by default).
#[derive(Debug, Default)]
pub struct Warnings {
    kept: Vec<String>,
    /// The exit code of each kept warning under `check --strict`.
    codes: Vec<ExitCode>,
    more: usize,
}

impl Warnings {
    /// A warning that `check --strict` fails on with 78 (a configuration to fix).
    pub fn push(&mut self, message: String) {
        self.push_code(ExitCode::Config, message)
    }

    /// A warning that `check --strict` fails on with `code`.
    pub fn push_code(&mut self, code: ExitCode, message: String) {
        if self.kept.len() < MAX_WARNING_LINES {
            self.kept.push(message);
            self.codes.push(code);
        } else {
            self.more += 1;
        }
    }

    /// `check --strict`: each warning as a failure, and one more line
    /// counting those not kept (with the first one's code).
    pub fn into_errors(self) -> Vec<Error> {
        let first = self.codes.first().copied().unwrap_or(ExitCode::Config);
        let mut errors: Vec<Error> = self.kept.into_iter().zip(self.codes).map(|(m, c)| Error::new(c, format!("{m} (check --strict)"))).collect();
        if self.more > 0 {
            errors.push(Error::new(first, format!("{} more warnings not shown (check --strict)", self.more)));
        }
        errors
    }

    /// Prints them, then one line counting those not kept.
    pub fn print(&self) {
        for w in &self.kept {
            warn(w);
        }
        if self.more > 0 {
            warn(&format!("{} more warnings not shown", self.more));
        }
    }

    /// `check` with errors: the unresolved-reference warnings are left out, as
    /// a variable an error left unset (a missing volume) makes them all follow-ons.
    pub fn drop_unresolved(&mut self) {
        let (kept, codes) = (std::mem::take(&mut self.kept), std::mem::take(&mut self.codes));
        for (w, c) in kept.into_iter().zip(codes) {
            if !w.ends_with(" not defined there: left as written") {
                self.kept.push(w);
                self.codes.push(c);
            }
        }
    }

    #[cfg(test)]
    pub fn kept(&self) -> &[String] {
        &self.kept
    }
}

/// What `check`'s `ok:` line says: the variables, how many from files, the program (None: no program line).
pub struct Summary {
    pub variables: usize,
    pub from_files: usize,
    pub program: Option<String>,
}

/// `check --format json`: one document on stdout (docs/reference.md §12.3, "check --format
/// json"), the failures also in the termination log; returns the exit code
/// of the first error (0 when none). Bounded as the lines are: at most
/// [`MAX_ERROR_LINES`] errors and [`MAX_WARNING_LINES`] warnings, each cut
/// as a line is, and counts of those left out.
#[cfg_attr(envshim_size, optimize(size))]
pub fn json(errors: &[Error], warnings: &Warnings, summary: Option<&Summary>, termination_log: Option<&OsStr>) -> ExitCode {
    use crate::error::json_string;
    let code = errors.first().map_or(ExitCode::Ok, |e| e.code);
    // A string, cut as a line is, or null.
    let text = |out: &mut String, m: Option<&str>| match m {
        Some(m) => json_string(out, line("", m).trim_end_matches('\n')),
        None => out.push_str("null"),
    };
    let mut out = format!("{{\n  \"ok\": {},\n  \"exit_code\": {},\n  \"errors\": [", errors.is_empty(), code.number());
    let mut log = String::new();
    for (i, e) in errors.iter().take(MAX_ERROR_LINES).enumerate() {
        let message = e.to_string();
        log.push_str(&line("envshim: ", &message));
        let at = e.at.as_deref().cloned().unwrap_or_default();
        out.push_str(&format!("{}\n    {{\"code\": {}, \"message\": ", if i == 0 { "" } else { "," }, e.code.number()));
        text(&mut out, Some(&message));
        out.push_str(", \"path\": ");
        text(&mut out, at.path.map(|p| p.to_string()).as_deref());
        out.push_str(", \"file\": ");
        text(&mut out, at.file.as_deref());
        out.push_str(", \"line\": ");
        out.push_str(&if at.line == 0 { "null".to_string() } else { at.line.to_string() });
        out.push('}');
    }
    out.push_str(&format!(
        "{}],\n  \"errors_not_shown\": {},\n  \"warnings\": [",
        if errors.is_empty() { "" } else { "\n  " },
        errors.len().saturating_sub(MAX_ERROR_LINES)
    ));
    for (i, w) in warnings.kept.iter().enumerate() {
        out.push_str(if i == 0 { "\n    {\"message\": " } else { ",\n    {\"message\": " });
        text(&mut out, Some(w));
        out.push('}');
    }
    out.push_str(&format!("{}],\n  \"warnings_not_shown\": {},\n  \"variables\": ", if warnings.kept.is_empty() { "" } else { "\n  " }, warnings.more));
    // As the text's `ok:` line: null when there are errors.
    match summary {
        Some(s) => out.push_str(&format!("{},\n  \"from_files\": {},\n  \"program\": ", s.variables, s.from_files)),
        None => out.push_str("null,\n  \"from_files\": null,\n  \"program\": "),
    }
    text(&mut out, summary.and_then(|s| s.program.as_deref()));
    out.push_str("\n}\n");
    if !errors.is_empty() {
        write_termination_log(&log, termination_log);
    }
    // A reader that went away: the exit code still tells.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    code
}

/// Writes the termination log, then prints `first` and the `more` that
/// follow it (at most [`MAX_ERROR_LINES`] in all, and a line counting the
/// rest), and returns the exit code of the first. The log comes first:
/// stderr may be a closed pipe or a terminal that blocks, and the log is
/// what `kubectl describe` shows.
#[cfg_attr(envshim_size, optimize(size))]
pub fn fail(first: &Error, more: &[Error], termination_log: Option<&OsStr>) -> ExitCode {
    let mut text = String::new();
    for e in std::iter::once(first).chain(more).take(MAX_ERROR_LINES) {
        text.push_str(&line("envshim: ", &e.to_string()));
    }
    if more.len() >= MAX_ERROR_LINES {
        let not_shown = format!("{} more errors not shown (the exit code is the first one's)", more.len() + 1 - MAX_ERROR_LINES);
        text.push_str(&line("envshim: ", &not_shown));
    }
    write_termination_log(&text, termination_log);
    // EPIPE and the like are ignored: the exit code still tells.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    first.code
}

/// `prefix` + `message` + newline, cut to [`MAX_MESSAGE_BYTES`] (newline
/// excluded) at a character, saying so, when longer.
#[cfg_attr(envshim_size, optimize(size))]
fn line(prefix: &str, message: &str) -> String {
    const CUT: &str = " [... cut]";
    let mut text = String::with_capacity((prefix.len() + message.len()).min(MAX_MESSAGE_BYTES) + 1);
    text.push_str(prefix);
    if prefix.len() + message.len() <= MAX_MESSAGE_BYTES {
        text.push_str(message);
    } else {
        let keep = floor_char_boundary(message, MAX_MESSAGE_BYTES - prefix.len() - CUT.len());
        text.push_str(&message[..keep]);
        text.push_str(CUT);
    }
    text.push('\n');
    text
}

/// Truncates and rewrites the log with at most 4,096 bytes, cut at a line end
/// when it is longer. A named log is created; the default one only if it exists.
#[cfg_attr(envshim_size, optimize(size))]
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
    // The default log is used only when it exists and is writable: not being able to open it is not news.
    let cannot = |e: std::io::Error| {
        use std::os::unix::ffi::OsStrExt;
        let shown = crate::error::escape(named.unwrap_or(OsStr::new(DEFAULT_TERMINATION_LOG)).as_bytes());
        warn(&format!("cannot write the termination log {shown} ({})", crate::error::os_reason(&e)));
    };
    let mut file = match options.open(path) {
        Ok(file) => file,
        Err(e) if named.is_some() => return cannot(e),
        Err(_) => return,
    };
    if let Err(e) = file.write_all(log_part(text).as_bytes()) {
        cannot(e);
    }
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
    fn lines_are_cut_at_the_limit_at_a_character() {
        assert_eq!(line("envshim: ", "short"), "envshim: short\n");
        let long = format!("x{}", "\u{e9}".repeat(MAX_MESSAGE_BYTES));
        let cut = line("envshim: warning: ", &long);
        assert!(cut.len() <= MAX_MESSAGE_BYTES + 1 && cut.len() > MAX_MESSAGE_BYTES - 4, "{}", cut.len());
        assert!(cut.ends_with(" [... cut]\n") && cut.starts_with("envshim: warning: x\u{e9}"));
    }

    #[test]
    fn warnings_keep_a_bounded_number_and_count_the_rest() {
        let mut w = Warnings::default();
        for i in 0..MAX_WARNING_LINES + 5 {
            w.push(format!("w{i}"));
        }
        assert_eq!(w.kept().len(), MAX_WARNING_LINES);
        assert_eq!(w.more, 5);
    }

    #[test]
    fn strict_turns_every_warning_into_an_error_with_its_code() {
        let mut w = Warnings::default();
        w.push("a".into());
        w.push_code(ExitCode::DataErr, "b".into());
        for i in 0..MAX_WARNING_LINES {
            w.push(format!("m{i}"));
        }
        let errors = w.into_errors();
        assert_eq!(errors.len(), MAX_WARNING_LINES + 1);
        assert_eq!((errors[0].code, errors[0].what.as_str()), (ExitCode::Config, "a (check --strict)"));
        assert_eq!((errors[1].code, errors[1].what.as_str()), (ExitCode::DataErr, "b (check --strict)"));
        assert_eq!(errors[MAX_WARNING_LINES].what, "2 more warnings not shown (check --strict)");
        assert!(Warnings::default().into_errors().is_empty());
    }

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
