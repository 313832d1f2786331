//! What the converter says on stderr: one `kubectl-envshim: ` line a
//! message, and the exit code that goes with it.

use std::io::Write;

use envshim::converter::{escape, Error, ExitCode};

/// One `kubectl-envshim: ` line on stderr (a closed stderr is not a reason to panic).
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "kubectl-envshim: {}", one_line(message));
}

/// A message as it is shown: one line, no control character of the input's
/// (a line break that would forge a line, an ESC or OSC sequence the
/// terminal would run). Every input-derived part is [`escape`]d where the
/// message is made, as envshim's are; a control character left over is
/// shown as that very function shows it.
pub fn one_line(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_control() {
            out.push_str(&escape(c.encode_utf8(&mut [0; 4]).as_bytes()));
        } else {
            out.push(c);
        }
    }
    out
}

/// A usage error: its line, and the exit code.
pub fn usage(message: &str) -> ExitCode {
    say(message);
    ExitCode::Usage
}

/// Each error on its own line; the exit code is the first one's.
pub fn fail(errors: &[Error]) -> ExitCode {
    for e in errors {
        say(&e.to_string());
    }
    // Not reached without an error (a step that fails says why); were it
    // reached, the run still fails, with a code of the table, never 0.
    errors.first().map_or(ExitCode::Config, |e| e.code)
}

/// Writes `bytes` to stdout (envshim's own writer: a closed pipe is not an
/// error): OK, or IOERR when it cannot.
pub fn write_stdout(bytes: &[u8]) -> ExitCode {
    match envshim::converter::write_stdout(bytes) {
        Ok(()) => ExitCode::Ok,
        Err(e) => {
            say(&e.to_string());
            e.code
        }
    }
}
