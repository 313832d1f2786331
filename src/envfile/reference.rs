//! docs/reference.md §4 read literally, one physical line at a time: the
//! reference the env-file parse is compared with by the unit tests
//! (src/envfile/tests.rs) and the fuzz target (fuzz/fuzz_targets/envfile.rs).
//! Compiled for those alone (`cfg(any(test, fuzzing))`). The tokens (blanks,
//! comments, `export`, the unquoted value's end, escapes) are read by the
//! grammar's rules ([`super::lex`]); this reads the lines and the values
//! they make up as the text says.

use super::lex::{self, trim_end, trim_start};
use super::Problem;
use crate::limits::{MAX_NAME_BYTES, MAX_VALUE_BYTES};
use crate::names::is_relaxed;

fn trim(s: &[u8]) -> &[u8] {
    trim_end(trim_start(s))
}

pub type Entries = Vec<(Vec<u8>, Vec<u8>, usize)>;

/// docs/reference.md §4 read literally, one physical line at a time, for UTF-8 input within
/// the size limit (the checks before that are compared separately). Returns
/// the entries or the (line, problem) of the first error.
pub fn reference(data: &[u8]) -> Result<Entries, (usize, Problem)> {
    // Physical lines: content without its LF, and without a CR right before the LF or the end.
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") {
        lines.pop();
    }
    let lines: Vec<&[u8]> = lines.into_iter().map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line_no = i + 1;
        let text = trim_start(lines[i]);
        if lex::holds_nothing(text) {
            i += 1;
            continue;
        }
        let (name, after) = name_and_rest(text).map_err(|p| (line_no, p))?;
        let v = trim_start(after);
        let value: Vec<u8> = match v.first() {
            Some(&q @ (b'\'' | b'"')) => {
                let (value, last) = quoted(&lines, i, &v[1..], q)?;
                i = last;
                value
            }
            _ => lex::unquoted(after).0.to_vec(),
        };
        if value.len() > MAX_VALUE_BYTES {
            return Err((line_no, Problem::ValueTooLong));
        }
        if value.contains(&0) {
            return Err((line_no, Problem::NulInValue));
        }
        out.push((name.to_vec(), value, line_no));
        i += 1;
    }
    Ok(out)
}

/// docs/reference.md §4.1 read literally: the kubelet's reading of `data`
/// for `key`, one physical line at a time. Ok(None): the key is not found
/// (its value empty included); Err: the line the read fails on (0: the whole
/// file). What [`super::EnvFile::parse_kubelet`] and its `get` must give.
pub fn kubelet_value(data: &[u8], key: &[u8]) -> Result<Option<Vec<u8>>, usize> {
    if data.len() > crate::limits::MAX_ENV_FILE_BYTES {
        return Err(0);
    }
    // Go's line scanner takes at most 64 KiB a line, its line feed
    // included: within the file's limit, only a file of one line that long fails.
    if data.len() >= super::kubelet::SCANNER_MAX_TOKEN && !data.contains(&b'\n') {
        return Err(1);
    }
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if data.ends_with(b"\n") {
        lines.pop();
    }
    let lines: Vec<&[u8]> = lines.iter().map(|l| l.strip_suffix(b"\r").unwrap_or(l)).collect();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = (i + 1, trim_start(lines[i]));
        i += 1;
        if lex::holds_nothing(line) {
            continue;
        }
        let eq = line.iter().position(|&b| b == b'=').ok_or(n)?;
        let name = &line[..eq];
        if trim(name).len() != name.len() || name.is_empty() || name.len() > MAX_NAME_BYTES {
            return Err(n);
        }
        let value = &line[eq + 1..];
        if value.first().is_some_and(|&b| lex::is_blank(b)) {
            if name == key {
                return Ok(None);
            }
            continue;
        }
        if value.first() != Some(&b'\'') {
            return Err(n);
        }
        let (mut rest, mut v) = (&value[1..], Vec::new());
        loop {
            if let Some(close) = rest.iter().position(|&b| b == b'\'') {
                v.extend_from_slice(&rest[..close]);
                if !lex::only_comment(&rest[close + 1..]) {
                    return Err(i);
                }
                break;
            }
            v.extend_from_slice(rest);
            v.push(b'\n');
            rest = lines.get(i).ok_or(n)?;
            i += 1;
        }
        if v.len() > MAX_VALUE_BYTES || v.contains(&0) {
            return Err(n);
        }
        if name == key {
            return Ok(Some(v).filter(|v| !v.is_empty()));
        }
    }
    Ok(None)
}

/// A line's name (after an `export `) and what follows its `=`.
fn name_and_rest(text: &[u8]) -> Result<(&[u8], &[u8]), Problem> {
    let text = lex::strip_export(text);
    let eq = text.iter().position(|&b| b == b'=').ok_or(Problem::NoEquals)?;
    let name = trim(&text[..eq]);
    if name.is_empty() {
        return Err(Problem::EmptyName);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(Problem::NameTooLong);
    }
    if !is_relaxed(name) {
        return Err(Problem::InvalidName);
    }
    Ok((name, &text[eq + 1..]))
}

/// A value quoted with `q`, starting at `cur` on line index `i`: the quoted
/// text runs over the following lines, joined with LF (a CR that ended a
/// line, CRLF, is not part of it). The value and the index of its last line.
fn quoted<'a>(lines: &[&'a [u8]], i: usize, mut cur: &'a [u8], q: u8) -> Result<(Vec<u8>, usize), (usize, Problem)> {
    let mut value = Vec::new();
    let mut at = i;
    let unclosed = if q == b'\'' { Problem::UnclosedSingleQuote } else { Problem::UnclosedDoubleQuote };
    let rest_of_line = loop {
        if let Some(k) = quoted_part(cur, q, &mut value) {
            break &cur[k + 1..];
        }
        // A backslash at the very end of a line escapes nothing; the line break follows.
        at += 1;
        if at >= lines.len() {
            return Err((i + 1, unclosed));
        }
        value.push(b'\n');
        cur = lines[at];
    };
    if !lex::only_comment(rest_of_line) {
        return Err((at + 1, Problem::TextAfterQuote));
    }
    Ok((value, at))
}

/// One line's part of a quoted value, pushed to `value` (escapes resolved in
/// double quotes); the index of the closing quote, if the line has it.
fn quoted_part(cur: &[u8], q: u8, value: &mut Vec<u8>) -> Option<usize> {
    let mut k = 0;
    while k < cur.len() {
        match cur[k] {
            c if c == q => return Some(k),
            b'\\' if q == b'"' => match cur.get(k + 1).and_then(|&b| lex::escaped(b)) {
                Some(b) => {
                    value.push(b);
                    k += 2;
                }
                None => {
                    value.push(b'\\');
                    k += 1;
                }
            },
            c => {
                value.push(c);
                k += 1;
            }
        }
    }
    None
}
