//! JSON to block YAML that go-yaml v2 (kubectl, YAML 1.1), PyYAML (1.1) and
//! YAML 1.2 readers all read back as the same JSON. A string is written plain
//! only when it cannot mean anything else to any of them; otherwise as a
//! literal block (multi-line text, when that keeps every character) or
//! double-quoted with escapes.

use std::fmt::Write as _;

use serde_json::{Number, Value};

use super::resolve;

/// The YAML text of `v`, ending in a newline.
pub fn write(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, v, 0),
        Value::Array(a) if !a.is_empty() => sequence(&mut out, v, 0),
        _ => {
            // A root literal block is indented: PyYAML wants one column at least.
            scalar(&mut out, v, 2);
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

/// A non-empty mapping's entries, each at column `at` (the first one where `out` is).
fn mapping(out: &mut String, v: &Value, at: usize) {
    let Value::Object(m) = v else { return };
    for (i, (k, value)) in m.iter().enumerate() {
        if i > 0 {
            indent(out, at);
        }
        let mut key = String::new();
        string(&mut key, k, at, true);
        if key.len() > 1000 {
            // YAML 1.1 readers take a key on one line only up to 1024 characters: an explicit key.
            out.push_str("? ");
            out.push_str(&key);
            out.push('\n');
            indent(out, at);
        } else {
            out.push_str(&key);
        }
        out.push(':');
        entry(out, value, at, true);
    }
}

/// A non-empty sequence's items, each at column `at` (the first one where `out` is).
fn sequence(out: &mut String, v: &Value, at: usize) {
    let Value::Array(a) = v else { return };
    for (i, item) in a.iter().enumerate() {
        if i > 0 {
            indent(out, at);
        }
        out.push('-');
        entry(out, item, at, false);
    }
}

/// What follows `key:` or `-`, for a node at column `at`.
fn entry(out: &mut String, value: &Value, at: usize, after_key: bool) {
    match value {
        Value::Object(m) if !m.is_empty() => {
            if after_key {
                out.push('\n');
                indent(out, at + 2);
            } else {
                out.push(' ');
            }
            mapping(out, value, at + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            // A sequence under a key sits at the key's column, as kubectl writes it.
            if after_key {
                out.push('\n');
                indent(out, at);
                sequence(out, value, at);
            } else {
                out.push(' ');
                sequence(out, value, at + 2);
            }
        }
        _ => {
            out.push(' ');
            scalar(out, value, at + 2);
            out.push('\n');
        }
    }
}

/// A scalar or an empty collection; a literal block's lines at column `at`.
fn scalar(out: &mut String, v: &Value, at: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => number(out, n),
        Value::String(s) => string(out, s, at, false),
        Value::Array(_) => out.push_str("[]"),
        Value::Object(_) => out.push_str("{}"),
    }
}

/// An integer as it is; a float always with a `.` and a signed exponent,
/// which YAML 1.1 (PyYAML) needs to read it as a float.
fn number(out: &mut String, n: &Number) {
    let text = n.to_string();
    if n.is_f64() {
        let (mantissa, exp) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, Some(e)),
            None => (text.as_str(), None),
        };
        out.push_str(mantissa);
        if !mantissa.contains('.') {
            out.push_str(".0");
        }
        if let Some(e) = exp {
            out.push('e');
            if !e.starts_with(['-', '+']) {
                out.push('+');
            }
            out.push_str(e);
        }
    } else {
        out.push_str(&text);
    }
}

fn string(out: &mut String, s: &str, at: usize, key: bool) {
    if plain(s) {
        out.push_str(s);
    } else if !key && literal(s) {
        out.push_str(if s.ends_with('\n') { "|" } else { "|-" });
        for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
            out.push('\n');
            if !line.is_empty() {
                indent(out, at);
                out.push_str(line);
            }
        }
    } else if single_quotable(s) {
        out.push('\'');
        out.push_str(&s.replace('\'', "''"));
        out.push('\'');
    } else {
        quoted(out, s);
    }
}

/// Safe to write plain: printable ASCII; a start that is no indicator (a
/// letter, `/`, `_`, `$`; a digit only with a letter no number or date can
/// hold, as in `4Mi`; `-` or `.` then a letter); no `: `, ` #`, tab, `:` or
/// blank at the end; and go-yaml v2 reads it as a string (so not `yes`, `on`,
/// `null`...): the words YAML 1.2 and PyYAML resolve are among go-yaml's.
fn plain(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&first) = b.first() else { return false };
    let second = b.get(1).copied().unwrap_or(b' ');
    let start_ok = match first {
        b'a'..=b'z' | b'A'..=b'Z' | b'/' | b'_' | b'$' => true,
        b'0'..=b'9' => b.iter().any(|c| c.is_ascii_alphabetic() && !b"aAbBcCdDeEfFoOxXtTzZ".contains(c)),
        b'-' | b'.' => second.is_ascii_alphabetic(),
        _ => false,
    };
    start_ok && b.iter().all(|c| (b' '..=b'~').contains(c)) && !s.contains(": ") && !s.contains(" #") && !s.ends_with([' ', ':']) && resolve::plain_is_string(s)
}

/// Single quotes keep every printable character of a one-line text as it is
/// (`'` doubled).
fn single_quotable(s: &str) -> bool {
    s.chars().all(|c| printable(c) && c != '\t')
}

/// Multi-line text a literal block (`|`, `|-`) keeps exactly: printable
/// characters, no tab or carriage return, a first line that starts with no
/// blank, no line of blanks alone, no blank at a line's end, at most one
/// newline at the end.
fn literal(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    body.contains('\n')
        && !body.ends_with('\n')
        && !body.starts_with([' ', '\n'])
        && s.chars().all(|c| c == '\n' || (printable(c) && c != '\t'))
        && body.split('\n').all(|l| !l.ends_with(' '))
}

/// Characters every reader takes as written inside quotes (YAML 1.1's
/// printable set less its line breaks U+0085, U+2028, U+2029 and the BOM).
fn printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..) && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

fn quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_that_mean_something_else_are_quoted() {
        for s in [
            "yes",
            "No",
            "on",
            "OFF",
            "y",
            "N",
            "1_000",
            "0x1F",
            "0o17",
            "030",
            "1:20",
            ".inf",
            "~",
            "null",
            "<<",
            "=",
            "",
            " a",
            "a ",
            "a: b",
            "a #b",
            "2001-12-14",
            "-",
            "é",
            "1e3",
            "0b1",
            "12:30",
            "2001-12-14t1:2:3Z",
            "-1",
            ".5",
            "..",
            "a:",
        ] {
            let mut out = String::new();
            string(&mut out, s, 0, false);
            assert!(out.starts_with(['"', '\'']), "{s:?} written as {out}");
        }
        for s in [
            "envshim",
            "app.kubernetes.io/name",
            "/.envshim/bin/envshim",
            "$(HOME)/x",
            "Yess",
            "nope",
            "a b",
            "4Mi",
            "250m",
            "busybox:1.36",
            "-c",
            "echo 'x' > /a",
            ".env",
            "http://a/b",
        ] {
            assert!(plain(s), "{s:?}");
        }
    }

    #[test]
    fn floats_have_a_point_and_a_signed_exponent() {
        let f = |x: f64| {
            let mut out = String::new();
            number(&mut out, &Number::from_f64(x).unwrap());
            out
        };
        assert_eq!(f(2.0), "2.0");
        assert_eq!(f(1e300), "1.0e+300");
        assert_eq!(f(1.5e-7), "1.5e-7");
        assert_eq!(f(0.25), "0.25");
    }
}
