//! Fuzzes the env-file parser (docs/reference.md §4) with arbitrary bytes.
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
//!   line and problem) equals a plain line-by-line reading of docs/reference.md §4;
//! - `--env-grammar kubelet`: for every name the input gives, the kubelet's
//!   reading (the value, not found, or the failing line) equals a plain reading
//!   of docs/reference.md §4.1.
#![no_main]

use envshim::internals::is_relaxed;
use envshim::internals::reference::{self, reference, Entries};
use envshim::internals::{EnvFile, Problem};
use envshim::internals::{MAX_NAME_BYTES, MAX_VALUE_BYTES};
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
        BlankBeforeEquals => "has a blank before '=', which the kubelet's grammar does not allow (write NAME='value')",
        LineTooLong => "is a line of 65536 bytes or more without a line feed, which the kubelet's reader refuses (token too long)",
        NotSingleQuoted => {
            "has a value not enclosed in single quotes, which the kubelet's grammar requires (write NAME='value'; \
             --env-grammar envshim also reads unquoted and double-quoted values)"
        }
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

/// `--env-grammar kubelet`: for every name the file gives (and a few
/// more), `parse_kubelet` and `get` give what the literal reading of
/// docs/reference.md §4.1 gives; the lint lists lines of the file only.
fn kubelet(data: &[u8]) {
    let parsed = EnvFile::parse_kubelet(data.to_vec());
    let mut keys: Vec<&[u8]> = vec![b"K", b"A"];
    keys.extend(data.split(|&b| b == b'\n').filter_map(|l| l.iter().position(|&b| b == b'=').map(|eq| &l[..eq])).take(64));
    for key in keys {
        let got = match &parsed {
            Ok(f) => f.get(key).map(|v| v.map(|(v, _)| v.to_vec())).map_err(|e| e.line),
            Err(e) => Err(e.line),
        };
        assert_eq!(got, reference::kubelet_value(data, key), "the kubelet's grammar differs from the reference reading of docs/reference.md §4.1");
    }
    for (line, _) in envshim::internals::kubelet::lint(data) {
        assert!(line as usize <= physical_lines(data));
    }
}

fuzz_target!(|data: &[u8]| {
    kubelet(data);
    if data.len() <= envshim::internals::MAX_ENV_FILE_BYTES && !data.starts_with(b"\xEF\xBB\xBF") && std::str::from_utf8(data).is_ok() {
        let got = EnvFile::parse(data.to_vec())
            .map(|f| f.iter().map(|(n, v, l)| (n.to_vec(), v.to_vec(), l as usize)).collect::<Entries>())
            .map_err(|e| (e.line, e.problem));
        assert_eq!(got, reference(data), "differs from the reference reading of docs/reference.md §4");
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
                let (got, got_line) = file.get(name).ok().flatten().expect("a parsed name is found");
                let (want, want_line) = file.iter().filter(|(n, _, _)| *n == name).map(|(_, v, l)| (v, l)).last().unwrap();
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
                assert_eq!(file.get(name), Ok(Some((value, line))), "unique: the last occurrence");
            }
            let rendered = render(&file);
            if rendered.len() <= envshim::internals::MAX_ENV_FILE_BYTES {
                let again = EnvFile::parse(rendered).expect("a rendered file parses");
                let a: Vec<_> = file.iter().map(|(n, v, _)| (n, v)).collect();
                let b: Vec<_> = again.iter().map(|(n, v, _)| (n, v)).collect();
                assert_eq!(a, b, "render/parse round trip");
            }
        }
    }
});
