//! Fuzzes the env-file parser (SPEC §4) with arbitrary bytes.
//!
//! Invariants checked on every input:
//! - no panic, whatever the bytes;
//! - an error's message is `line N: ` plus one of a fixed set of texts (or the
//!   whole-file size message): it never carries a byte of the input;
//! - the error's line exists in the input;
//! - every accepted entry obeys the limits (relaxed name of at most 128 bytes,
//!   value of at most 32 KiB without NUL, valid UTF-8), entries come in line
//!   order, `get` returns the last occurrence;
//! - rendering the entries as `export NAME="escaped"` lines and parsing that
//!   again gives the same names and values (what `render --show-values` relies on);
//! - for UTF-8 input within the limit, the result (entries, or the error's
//!   line and problem) equals a plain line-by-line reading of SPEC §4.
#![no_main]

use envshim::envfile::{EnvFile, Problem};
use envshim::limits::{MAX_NAME_BYTES, MAX_VALUE_BYTES};
use envshim::names::is_relaxed;
use libfuzzer_sys::fuzz_target;

/// The text after `line N: ` for each problem. Exhaustive on purpose: a new
/// variant must be added here, with a message that holds no input.
fn expected_text(p: Problem) -> &'static str {
    use Problem::*;
    match p {
        TooLarge => "",
        ByteOrderMark => "starts with a UTF-8 byte-order mark (save the file without a BOM)",
        InvalidUtf8 => "is not valid UTF-8",
        NoEquals => "has no '=' (expected NAME=VALUE)",
        EmptyName => "has an empty name",
        InvalidName => "has an invalid name (allowed: printable ASCII except '=')",
        NameTooLong => "name is longer than 128 bytes",
        ValueTooLong => "value is longer than 32768 bytes",
        NulInValue => "has a value containing a NUL byte",
        UnclosedSingleQuote => "opens a single quote that is never closed",
        UnclosedDoubleQuote => "opens a double quote that is never closed",
        TextAfterQuote => "has text after a closing quote (only blanks or a # comment may follow)",
    }
}

fn physical_lines(data: &[u8]) -> usize {
    data.iter().filter(|&&b| b == b'\n').count() + 1
}

fn render(file: &EnvFile) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value, _) in file.iter() {
        // `export ` first: a name may itself start with `export ` (from `export export X=1`).
        out.extend_from_slice(b"export ");
        out.extend_from_slice(name);
        out.extend_from_slice(b"=\"");
        for &b in value {
            match b {
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'"' => out.extend_from_slice(b"\\\""),
                b'$' => out.extend_from_slice(b"\\$"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\t' => out.extend_from_slice(b"\\t"),
                _ => out.push(b),
            }
        }
        out.extend_from_slice(b"\"\n");
    }
    out
}

const BLANK: &[u8] = b" \t";

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| BLANK.contains(b)).count();
    &s[n..]
}

fn trim(s: &[u8]) -> &[u8] {
    let s = trim_start(s);
    let n = s.iter().rev().take_while(|b| BLANK.contains(b)).count();
    &s[..s.len() - n]
}

type Entries = Vec<(Vec<u8>, Vec<u8>, usize)>;

/// SPEC §4 read literally, one physical line at a time, for UTF-8 input within
/// the size limit (the checks before that are compared separately). Returns
/// the entries or the (line, problem) of the first error.
fn reference(data: &[u8]) -> Result<Entries, (usize, Problem)> {
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
        let mut text = trim_start(lines[i]);
        if text.is_empty() || text[0] == b'#' {
            i += 1;
            continue;
        }
        if let Some(rest) = text.strip_prefix(b"export") {
            let name = trim_start(rest);
            if rest.first().is_some_and(|b| BLANK.contains(b)) && !name.is_empty() && name[0] != b'=' {
                text = name;
            }
        }
        let eq = text.iter().position(|&b| b == b'=').ok_or((line_no, Problem::NoEquals))?;
        let name = trim(&text[..eq]);
        if name.is_empty() {
            return Err((line_no, Problem::EmptyName));
        }
        if name.len() > MAX_NAME_BYTES {
            return Err((line_no, Problem::NameTooLong));
        }
        if !is_relaxed(name) {
            return Err((line_no, Problem::InvalidName));
        }
        let after = &text[eq + 1..];
        let v = trim_start(after);
        let value: Vec<u8> = match v.first() {
            Some(&q @ (b'\'' | b'"')) => {
                // The quoted text runs over the following lines, joined with LF;
                // a CR that ended a line (CRLF) is not part of it.
                let mut value = Vec::new();
                let mut cur = &v[1..];
                let mut at = i;
                let unclosed = if q == b'\'' { Problem::UnclosedSingleQuote } else { Problem::UnclosedDoubleQuote };
                let rest_of_line = loop {
                    let mut k = 0;
                    let mut closed = None;
                    while k < cur.len() {
                        match cur[k] {
                            c if c == q => {
                                closed = Some(k);
                                break;
                            }
                            b'\\' if q == b'"' => match cur.get(k + 1) {
                                Some(b'\\') => { value.push(b'\\'); k += 2; }
                                Some(b'"') => { value.push(b'"'); k += 2; }
                                Some(b'n') => { value.push(b'\n'); k += 2; }
                                Some(b't') => { value.push(b'\t'); k += 2; }
                                Some(b'r') => { value.push(b'\r'); k += 2; }
                                Some(b'$') => { value.push(b'$'); k += 2; }
                                _ => { value.push(b'\\'); k += 1; }
                            },
                            c => { value.push(c); k += 1; }
                        }
                    }
                    if let Some(k) = closed {
                        break &cur[k + 1..];
                    }
                    // A backslash at the very end of a line escapes nothing; the line break follows.
                    at += 1;
                    if at >= lines.len() {
                        return Err((line_no, unclosed));
                    }
                    value.push(b'\n');
                    cur = lines[at];
                };
                let r = trim_start(rest_of_line);
                if !(r.is_empty() || r[0] == b'#') {
                    return Err((at + 1, Problem::TextAfterQuote));
                }
                i = at;
                value
            }
            _ => {
                let mut end = after.len();
                for k in 0..after.len() {
                    if after[k] == b'#' && k > 0 && BLANK.contains(&after[k - 1]) {
                        end = k;
                        break;
                    }
                }
                trim(&after[..end]).to_vec()
            }
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

fuzz_target!(|data: &[u8]| {
    if data.len() <= envshim::limits::MAX_ENV_FILE_BYTES
        && !data.starts_with(b"\xEF\xBB\xBF")
        && std::str::from_utf8(data).is_ok()
    {
        let got = EnvFile::parse(data.to_vec())
            .map(|f| f.iter().map(|(n, v, l)| (n.to_vec(), v.to_vec(), l as usize)).collect::<Entries>())
            .map_err(|e| (e.line, e.problem));
        assert_eq!(got, reference(data), "differs from the reference reading of SPEC §4");
    }
    match EnvFile::parse(data.to_vec()) {
        Err(e) => {
            let msg = e.to_string();
            if e.problem == Problem::TooLarge {
                assert_eq!(e.line, 0);
                assert_eq!(msg, "is larger than 65536 bytes");
                return;
            }
            let prefix = format!("line {}: ", e.line);
            let text = msg.strip_prefix(&prefix).unwrap_or_else(|| panic!("no line prefix: {msg:?}"));
            assert_eq!(text, expected_text(e.problem), "message carries more than the line number");
            assert!(e.line >= 1 && e.line <= physical_lines(data), "line {} of {}", e.line, physical_lines(data));
            if e.problem == Problem::InvalidUtf8 {
                let bad = std::str::from_utf8(data).unwrap_err().valid_up_to();
                assert_eq!(e.line, 1 + data[..bad].iter().filter(|&&b| b == b'\n').count());
            }
        }
        Ok(file) => {
            assert!(std::str::from_utf8(data).is_ok());
            let lines = physical_lines(data);
            let mut last_line = 0;
            for (name, value, line) in file.iter() {
                assert!(is_relaxed(name) && name.len() <= MAX_NAME_BYTES);
                assert!(value.len() <= MAX_VALUE_BYTES);
                assert!(!value.contains(&0));
                assert!(std::str::from_utf8(value).is_ok());
                assert!(line as usize > last_line && line as usize <= lines, "line {line} after {last_line}");
                last_line = line as usize;
                let (got, got_line) = file.get(name).expect("a parsed name is found");
                let (want, want_line) =
                    file.iter().filter(|(n, _, _)| *n == name).map(|(_, v, l)| (v, l)).last().unwrap();
                assert_eq!((got, got_line), (want, want_line), "get must return the last occurrence");
            }
            // The final key set: each name once, in order of first occurrence,
            // with the value and line of the last (what an import sets).
            let mut seen = std::collections::HashSet::new();
            let firsts: Vec<&[u8]> = file.iter().map(|(n, _, _)| n).filter(|n| seen.insert(*n)).collect();
            let unique: Vec<_> = file.unique().collect();
            assert_eq!(unique.len(), file.unique_len());
            assert_eq!(unique.iter().map(|(n, _, _)| *n).collect::<Vec<_>>(), firsts, "unique: names in first-occurrence order");
            for (name, value, line) in unique {
                assert_eq!(file.get(name), Some((value, line)), "unique: the last occurrence");
            }
            let rendered = render(&file);
            if rendered.len() <= envshim::limits::MAX_ENV_FILE_BYTES {
                let again = EnvFile::parse(rendered).expect("a rendered file parses");
                let a: Vec<_> = file.iter().map(|(n, v, _)| (n, v)).collect();
                let b: Vec<_> = again.iter().map(|(n, v, _)| (n, v)).collect();
                assert_eq!(a, b, "render/parse round trip");
            }
        }
    }
});
