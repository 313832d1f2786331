//! The program line (docs/reference.md §3): the manifest's `command`/`args` or the trailing
//! PROGRAM/ARGS, and their `$(VAR)` expansion against the final environment.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use crate::environment::Environment;
use crate::error::{Error, ExitCode};
use crate::expand::expand_capped;
use crate::limits::{MAX_EXEC_STRING_BYTES, MAX_EXEC_TOTAL_BYTES};
use crate::manifest::Manifest;

/// One word of the program line as written, before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: Vec<u8>,
    pub expand: bool,
    /// Where it came from, for messages: `command[0]`, `args[2]`, `argument 1`.
    pub origin: String,
}

/// The program line: `command` + `args` if the manifest has a command; else
/// the trailing PROGRAM followed by the manifest's `args` if it has some; else
/// the trailing PROGRAM/ARGS. Empty when there is none.
pub fn program_line(manifest: &Manifest<'_>, trailing: &[OsString], expand_trailing: bool) -> Vec<Word> {
    let from_manifest = |list: &[std::borrow::Cow<'_, str>], name: &str| {
        list.iter().enumerate().map(|(i, s)| Word { text: s.as_bytes().to_vec(), expand: true, origin: format!("{name}[{i}]") }).collect::<Vec<_>>()
    };
    let from_trailing = |words: &[OsString]| {
        words
            .iter()
            .enumerate()
            .map(|(i, w)| Word {
                text: w.as_bytes().to_vec(),
                expand: expand_trailing,
                origin: if i == 0 { "the program".into() } else { format!("argument {i}") },
            })
            .collect::<Vec<_>>()
    };
    if !manifest.command.is_empty() {
        let mut line = from_manifest(&manifest.command, "command");
        line.extend(from_manifest(&manifest.args, "args"));
        line
    } else if !manifest.args.is_empty() {
        if trailing.is_empty() {
            return Vec::new();
        }
        let mut line = from_trailing(&trailing[..1]);
        line.extend(from_manifest(&manifest.args, "args"));
        line
    } else {
        from_trailing(trailing)
    }
}

/// Expands every word that takes expansion against the final environment.
/// A word over `execve`'s limit for one string, or a line past the largest
/// total `execve` ever takes, is refused (126) without being held: the
/// expansion stops at the limit, so `$(A)$(A)…` cannot exhaust memory.
pub fn expand_line(line: &[Word], env: &Environment) -> Result<Vec<Vec<u8>>, Vec<Error>> {
    let mut words = Vec::with_capacity(line.len());
    let mut errors = Vec::new();
    let mut total = 0usize;
    for w in line {
        if !w.expand {
            total = total.saturating_add(w.text.len());
            words.push(w.text.clone());
            continue;
        }
        let limit = MAX_EXEC_STRING_BYTES.min(MAX_EXEC_TOTAL_BYTES.saturating_sub(total));
        let mut out = Vec::new();
        let len = expand_capped(&w.text, |n| env.get(n), &mut out, limit);
        if len > MAX_EXEC_STRING_BYTES {
            errors.push(Error::new(
                ExitCode::NoExec,
                format!("{} of the program line is {len} bytes after expansion, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes", w.origin),
            ));
        } else if len > limit {
            errors.push(Error::new(
                ExitCode::NoExec,
                format!("{}: the program line is over {MAX_EXEC_TOTAL_BYTES} bytes after expansion, more than execve ever takes", w.origin),
            ));
            break;
        }
        total = total.saturating_add(len);
        words.push(out);
    }
    if errors.is_empty() {
        Ok(words)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &[Word]) -> Vec<String> {
        line.iter().map(|w| String::from_utf8(w.text.clone()).unwrap()).collect()
    }

    fn m<'a>(command: &[&'a str], args: &[&'a str]) -> Manifest<'a> {
        Manifest { command: command.iter().map(|&s| s.into()).collect(), args: args.iter().map(|&s| s.into()).collect(), ..Manifest::default() }
    }

    #[test]
    fn command_and_args_rules() {
        let trailing: Vec<OsString> = vec!["/bin/prog".into(), "t1".into(), "t2".into()];
        assert_eq!(texts(&program_line(&m(&[], &[]), &trailing, true)), ["/bin/prog", "t1", "t2"]);
        assert_eq!(texts(&program_line(&m(&["/c"], &[]), &trailing, true)), ["/c"]);
        assert_eq!(texts(&program_line(&m(&["/c", "x"], &["a"]), &trailing, true)), ["/c", "x", "a"]);
        assert_eq!(texts(&program_line(&m(&[], &["a", "b"]), &trailing, true)), ["/bin/prog", "a", "b"]);
        assert!(program_line(&m(&[], &["a"]), &[], true).is_empty());
        assert!(program_line(&m(&[], &[]), &[], true).is_empty());
        let line = program_line(&m(&[], &["a"]), &trailing, false);
        assert_eq!(line.iter().map(|w| w.expand).collect::<Vec<_>>(), [false, true]);
        assert_eq!(line[1].origin, "args[0]");
    }
}
