//! What a scalar means to kubectl: YAML 1.1 resolution as go-yaml v2 does it
//! (`resolve.go`), which is what sigs.k8s.io/yaml and so kubectl read.
//! Written from go-yaml v2's rules, not its code:
//! - a scalar that is not plain (quoted, block) and has no tag is a string;
//! - a plain one is looked up by its first character: `yYnNtTfFoO~` may be a
//!   word of the table below, a digit or a sign a number, `.` a float;
//! - numbers: `_` is dropped anywhere, then Go's `ParseInt(s, 0, 64)` (decimal,
//!   `0x`, `0o`, `0b`, a leading `0` for octal, a sign), then unsigned 64-bit,
//!   then a float of the form `[-+]?(\.D+|D+(\.D*)?)([eE][-+]?D+)?`; an
//!   out-of-range float stays a string; there is no sexagesimal (go-yaml v2
//!   dropped it);
//! - a date (`2001-12-14`) is a timestamp, which go-yaml gives kubectl as its
//!   text: a string;
//! - a plain scalar starting with `.` is Go's `ParseFloat` of its text, which
//!   takes `_` between digits (`.5_0` is 0.5) and no other;
//! - a tag asks for a kind: `!!str` and unknown tags take the text as it is,
//!   `!!binary` is base64 (decoded by the reader), `!!int`, `!!bool`,
//!   `!!float`, `!!null` and `!!timestamp` must resolve to that kind (an int
//!   is accepted as a float), or the document is refused. A tag is its whole
//!   name: `!!int`, `!<tag:yaml.org,2002:int>` and a `%TAG` handle naming
//!   that prefix are one tag.

use serde_json::{Number, Value};

/// The words of YAML 1.1 that go-yaml v2 resolves (any other spelling is a string).
pub const WORDS: &[(&str, Word)] = &[
    ("y", Word::Bool(true)),
    ("Y", Word::Bool(true)),
    ("yes", Word::Bool(true)),
    ("Yes", Word::Bool(true)),
    ("YES", Word::Bool(true)),
    ("true", Word::Bool(true)),
    ("True", Word::Bool(true)),
    ("TRUE", Word::Bool(true)),
    ("on", Word::Bool(true)),
    ("On", Word::Bool(true)),
    ("ON", Word::Bool(true)),
    ("n", Word::Bool(false)),
    ("N", Word::Bool(false)),
    ("no", Word::Bool(false)),
    ("No", Word::Bool(false)),
    ("NO", Word::Bool(false)),
    ("false", Word::Bool(false)),
    ("False", Word::Bool(false)),
    ("FALSE", Word::Bool(false)),
    ("off", Word::Bool(false)),
    ("Off", Word::Bool(false)),
    ("OFF", Word::Bool(false)),
    ("", Word::Null),
    ("~", Word::Null),
    ("null", Word::Null),
    ("Null", Word::Null),
    ("NULL", Word::Null),
    (".nan", Word::Float),
    (".NaN", Word::Float),
    (".NAN", Word::Float),
    (".inf", Word::Float),
    (".Inf", Word::Float),
    (".INF", Word::Float),
    ("+.inf", Word::Float),
    ("+.Inf", Word::Float),
    ("+.INF", Word::Float),
    ("-.inf", Word::Float),
    ("-.Inf", Word::Float),
    ("-.INF", Word::Float),
];

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Word {
    Bool(bool),
    Null,
    /// `.inf`, `.nan`: floats JSON cannot hold (kubectl refuses them).
    Float,
}

/// The kind a tag asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tag {
    /// No tag: plain scalars are resolved, others are strings.
    None,
    Str,
    Binary,
    Bool,
    Int,
    Float,
    Null,
    Timestamp,
    /// `!!merge`, `!foo`, `!`: go-yaml v2 does not resolve them: the text.
    Other,
}

impl Tag {
    pub fn of(handle: &str, suffix: &str) -> Tag {
        match core(handle, suffix) {
            Some("str") => Tag::Str,
            Some("binary") => Tag::Binary,
            Some("bool") => Tag::Bool,
            Some("int") => Tag::Int,
            Some("float") => Tag::Float,
            Some("null") => Tag::Null,
            Some("timestamp") => Tag::Timestamp,
            _ => Tag::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Tag::Bool => "!!bool",
            Tag::Int => "!!int",
            Tag::Float => "!!float",
            Tag::Null => "!!null",
            Tag::Timestamp => "!!timestamp",
            _ => "!!str",
        }
    }
}

/// The name in YAML's core schema (`int` of `tag:yaml.org,2002:int`) of the
/// tag a parser gives as `handle` (a `%TAG` prefix, or empty when verbatim)
/// and `suffix`: go-yaml v2 compares whole tags, however they were written.
pub fn core<'a>(handle: &str, suffix: &'a str) -> Option<&'a str> {
    const CORE: &str = "tag:yaml.org,2002:";
    match CORE.strip_prefix(handle) {
        Some(rest) => suffix.strip_prefix(rest),
        None => None,
    }
}

/// What a scalar resolved to.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Null,
    Bool(bool),
    Int(Number),
    Float(f64),
    /// `.inf`, `.nan`.
    NotJson,
    /// A timestamp: kubectl gets the text.
    Timestamp,
    Str,
}

/// Resolves `text` (a plain scalar when `plain`) under `tag`. Err: the kind it
/// resolved to, which the tag does not accept (never the text: it may be a secret).
pub fn resolve(tag: Tag, plain: bool, text: &str) -> Result<Scalar, String> {
    if tag == Tag::None && !plain {
        return Ok(Scalar::Str);
    }
    if matches!(tag, Tag::Str | Tag::Binary | Tag::Other) {
        return Ok(Scalar::Str);
    }
    let found = implicit(text, tag);
    let fits = match (tag, &found) {
        (Tag::None, _) => true,
        (Tag::Bool, Scalar::Bool(_)) | (Tag::Int, Scalar::Int(_)) | (Tag::Float, Scalar::Float(_) | Scalar::NotJson) => true,
        (Tag::Timestamp, Scalar::Timestamp) | (Tag::Null, Scalar::Null) => true,
        (Tag::Float, Scalar::Int(n)) => return Ok(Scalar::Float(n.as_f64().unwrap_or(0.0))),
        _ => false,
    };
    if fits {
        Ok(found)
    } else {
        let kind = match found {
            Scalar::Null => "a null",
            Scalar::Bool(_) => "a boolean",
            Scalar::Int(_) => "an integer",
            Scalar::Float(_) | Scalar::NotJson => "a float",
            Scalar::Timestamp => "a timestamp",
            Scalar::Str => "a string",
        };
        Err(format!("a value tagged {} reads as {kind}", tag.name()))
    }
}

/// go-yaml v2's implicit resolution of a plain scalar (`tag`: None or Timestamp
/// allow a timestamp).
fn implicit(text: &str, tag: Tag) -> Scalar {
    let Some(first) = text.bytes().next() else { return Scalar::Null };
    let hint = match first {
        b'+' | b'-' | b'0'..=b'9' => 'D',
        b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~' => 'M',
        b'.' => '.',
        _ => return Scalar::Str,
    };
    if let Some((_, word)) = WORDS.iter().find(|(w, _)| *w == text) {
        return match word {
            Word::Bool(b) => Scalar::Bool(*b),
            Word::Null => Scalar::Null,
            Word::Float => Scalar::NotJson,
        };
    }
    match hint {
        '.' => go_underscores(text).and_then(|t| float(&t)).map_or(Scalar::Str, Scalar::Float),
        'D' => {
            if matches!(tag, Tag::None | Tag::Timestamp) && timestamp(text) {
                return Scalar::Timestamp;
            }
            let plain: String = text.chars().filter(|&c| c != '_').collect();
            if let Some(n) = go_parse_int(&plain) {
                return Scalar::Int(n);
            }
            if let Some(f) = float(&plain) {
                return Scalar::Float(f);
            }
            // go-yaml's own binary form, whose digits Go's ParseInt(s, 2) reads with a sign.
            let binary = plain.strip_prefix("0b").map(|d| (false, d)).or_else(|| plain.strip_prefix("-0b").map(|d| (true, d)));
            if let Some((negative, digits)) = binary {
                let (sign, digits) = match digits.as_bytes().first() {
                    Some(b'+') if !negative => (false, &digits[1..]),
                    Some(b'-') if !negative => (true, &digits[1..]),
                    _ => (negative, digits),
                };
                if let Some(n) = magnitude(digits, 2).and_then(|m| signed(sign, m)) {
                    return Scalar::Int(n);
                }
            }
            Scalar::Str
        }
        _ => Scalar::Str,
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`, then `ParseUint(s, 0, 64)` (no sign).
fn go_parse_int(s: &str) -> Option<Number> {
    let (negative, body) = match s.as_bytes().first()? {
        b'+' => (false, &s[1..]),
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    let lower = body.get(..2).map(str::to_ascii_lowercase);
    let (radix, digits) = match lower.as_deref() {
        Some("0x") => (16, &body[2..]),
        Some("0o") => (8, &body[2..]),
        Some("0b") => (2, &body[2..]),
        _ if body.len() > 1 && body.starts_with('0') => (8, &body[1..]),
        _ => (10, body),
    };
    let m = magnitude(digits, radix)?;
    signed(negative, m).or_else(|| if s.starts_with(['+', '-']) { None } else { Some(Number::from(m)) })
}

/// The digits (no sign, at least one) in `radix`, within 64 bits.
fn magnitude(digits: &str, radix: u32) -> Option<u64> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// A signed 64-bit integer, or None when out of range.
fn signed(negative: bool, m: u64) -> Option<Number> {
    if negative {
        if m <= i64::MAX as u64 + 1 {
            return Some(Number::from((m as i128).wrapping_neg() as i64));
        }
        None
    } else {
        i64::try_from(m).ok().map(Number::from)
    }
}

/// `text` without its `_`, if each one is between two digits (Go's `ParseFloat`
/// refuses any other: `._5`, `.5_`, `.5__0`).
fn go_underscores(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let digit = |i: Option<usize>| i.and_then(|i| b.get(i)).is_some_and(u8::is_ascii_digit);
    let between = (0..b.len()).filter(|&i| b[i] == b'_').all(|i| digit(i.checked_sub(1)) && digit(Some(i + 1)));
    between.then(|| text.replace('_', ""))
}

/// `[-+]?(\.D+|D+(\.D*)?)([eE][-+]?D+)?`, finite (Go refuses an overflow).
fn float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let from = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return None;
        }
    } else {
        if digits(&mut i) == 0 {
            return None;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// go-yaml v2's timestamp forms: `YYYY-M-D`, then optionally `T`, `t` or
/// blanks, a time `H:M:S(.F)`, and a zone (`Z` or `±HH:MM`) unless blanks.
fn timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let number = |i: &mut usize, min: usize, max: usize| {
        let from = *i;
        while *i - from < max && b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - from >= min
    };
    let byte = |i: &mut usize, c: u8| {
        let ok = b.get(*i) == Some(&c);
        *i += usize::from(ok);
        ok
    };
    if !(number(&mut i, 4, 4) && byte(&mut i, b'-') && number(&mut i, 1, 2) && byte(&mut i, b'-') && number(&mut i, 1, 2)) {
        return false;
    }
    if i == b.len() {
        return valid_date(s);
    }
    let spaced = b[i] == b' ' || b[i] == b'\t';
    if spaced {
        while matches!(b.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
    } else if !(byte(&mut i, b'T') || byte(&mut i, b't')) {
        return false;
    }
    if !(number(&mut i, 1, 2) && byte(&mut i, b':') && number(&mut i, 1, 2) && byte(&mut i, b':') && number(&mut i, 1, 2)) {
        return false;
    }
    if byte(&mut i, b'.') && !number(&mut i, 1, 9) {
        return false;
    }
    if spaced {
        return i == b.len() && valid_date(s);
    }
    let zone = if byte(&mut i, b'Z') {
        true
    } else if byte(&mut i, b'+') || byte(&mut i, b'-') {
        number(&mut i, 2, 2) && byte(&mut i, b':') && number(&mut i, 2, 2)
    } else {
        false
    };
    zone && i == b.len() && valid_date(s)
}

/// Month 1..12, day 1..31 (Go's time.Parse checks the day against the month;
/// a 31st of a short month is then a string to go-yaml, as here).
fn valid_date(s: &str) -> bool {
    let mut parts = s.splitn(3, '-');
    let year: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let month: u32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let day: u32 = parts.next().map(|p| p.bytes().take_while(u8::is_ascii_digit).fold(0, |a, d| a * 10 + u32::from(d - b'0'))).unwrap_or(0);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// The value kubectl's JSON holds for a resolved scalar of text `text`.
pub fn to_json(s: Scalar, text: &str) -> Value {
    match s {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(n) => Value::Number(n),
        Scalar::Float(f) => Number::from_f64(f).map_or(Value::Null, Value::Number),
        Scalar::NotJson | Scalar::Timestamp | Scalar::Str => Value::String(text.to_string()),
    }
}

/// Does a plain `text` stay a string for go-yaml v2 (so for kubectl)?
pub fn plain_is_string(text: &str) -> bool {
    matches!(implicit(text, Tag::None), Scalar::Str | Scalar::Timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(text: &str) -> Scalar {
        resolve(Tag::None, true, text).unwrap()
    }
    fn int(n: i64) -> Scalar {
        Scalar::Int(Number::from(n))
    }

    /// The table: plain text, and what go-yaml v2 (kubectl) makes of it.
    #[test]
    fn plain_scalars_resolve_as_go_yaml_v2() {
        let table: Vec<(&str, Scalar)> = vec![
            ("yes", Scalar::Bool(true)),
            ("Y", Scalar::Bool(true)),
            ("On", Scalar::Bool(true)),
            ("n", Scalar::Bool(false)),
            ("OFF", Scalar::Bool(false)),
            ("yEs", Scalar::Str),
            ("oN", Scalar::Str),
            ("", Scalar::Null),
            ("~", Scalar::Null),
            ("Null", Scalar::Null),
            ("nULL", Scalar::Str),
            ("030", int(24)),
            ("0600", int(384)),
            ("08080", Scalar::Float(8080.0)),
            ("1_000", int(1000)),
            ("0x1F", int(31)),
            ("-0x1F", int(-31)),
            ("0o17", int(15)),
            ("0b101", int(5)),
            ("0b+101", int(5)),
            ("+12", int(12)),
            ("0", int(0)),
            ("-0", int(0)),
            ("9223372036854775807", int(i64::MAX)),
            ("-9223372036854775808", int(i64::MIN)),
            ("18446744073709551615", Scalar::Int(Number::from(u64::MAX))),
            ("18446744073709551616", Scalar::Float(18446744073709551616.0)),
            ("1.5", Scalar::Float(1.5)),
            ("1e3", Scalar::Float(1000.0)),
            (".5", Scalar::Float(0.5)),
            (".5_0", Scalar::Float(0.5)),
            (".5e1_0", Scalar::Float(5e9)),
            ("._5", Scalar::Str),
            (".5_", Scalar::Str),
            (".5__0", Scalar::Str),
            ("1e400", Scalar::Str),
            ("1:20", Scalar::Str),
            ("190:20:30", Scalar::Str),
            (".inf", Scalar::NotJson),
            ("-.Inf", Scalar::NotJson),
            (".NaN", Scalar::NotJson),
            (".nan0", Scalar::Str),
            ("2001-12-14", Scalar::Timestamp),
            ("2001-12-14T21:59:43.10Z", Scalar::Timestamp),
            ("2001-12-14 21:59:43.10", Scalar::Timestamp),
            ("2001-02-30", Scalar::Str),
            ("0x", Scalar::Str),
            ("1__0", int(10)),
            ("_1", Scalar::Str),
            ("+", Scalar::Str),
            ("-", Scalar::Str),
            ("<<", Scalar::Str),
            ("=", Scalar::Str),
            ("0.1.2", Scalar::Str),
        ];
        for (text, want) in table {
            assert_eq!(plain(text), want, "{text:?}");
        }
    }

    #[test]
    fn quoted_scalars_are_strings_and_tags_ask_for_a_kind() {
        assert_eq!(resolve(Tag::None, false, "yes").unwrap(), Scalar::Str);
        assert_eq!(resolve(Tag::Str, true, "030").unwrap(), Scalar::Str);
        assert_eq!(resolve(Tag::Int, false, "0x1F").unwrap(), int(31));
        assert_eq!(resolve(Tag::Float, true, "3").unwrap(), Scalar::Float(3.0));
        assert_eq!(resolve(Tag::Bool, false, "on").unwrap(), Scalar::Bool(true));
        assert_eq!(resolve(Tag::Other, true, "12").unwrap(), Scalar::Str);
        let e = resolve(Tag::Int, false, "s3cret-sentinel").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(resolve(Tag::Bool, true, "1").is_err());
        assert_eq!(resolve(Tag::Null, true, "~").unwrap(), Scalar::Null);
        assert_eq!(resolve(Tag::Null, false, "").unwrap(), Scalar::Null);
        assert!(resolve(Tag::Null, true, "text").is_err());
    }

    #[test]
    fn a_tag_is_its_whole_name() {
        assert_eq!(Tag::of("tag:yaml.org,2002:", "int"), Tag::Int);
        assert_eq!(Tag::of("", "tag:yaml.org,2002:binary"), Tag::Binary);
        assert_eq!(Tag::of("tag:", "yaml.org,2002:null"), Tag::Null);
        assert_eq!(Tag::of("!", "int"), Tag::Other);
        assert_eq!(Tag::of("", "!"), Tag::Other);
        assert_eq!(core("", "tag:yaml.org,2002:merge"), Some("merge"));
    }
}
