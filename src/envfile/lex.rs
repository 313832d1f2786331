//! The env-file grammar's tokens (docs/reference.md §4), one function a rule:
//! what a blank is, where a line ends, which lines hold no entry, `export`,
//! where an unquoted value ends (its ` #` comment), what may follow a closing
//! quote, the double quotes' escapes, and the form a value is written in.
//!
//! envshim's grammar ([`super::general`]), the kubelet's ([`super::kubelet`],
//! for the rules the two share), the reference the tests hold them to and the
//! portable writer ([`super::portable`]) read lines with these; the fast path
//! ([`super::fast`]) takes only lines that none of them changes, and its tests
//! compare it with the general parser. A rule changes here, in the table
//! tests/data/envfile-grammar.json and in docs/reference.md §4.

use memchr::{memchr, memchr3, memchr_iter};

pub(super) fn is_blank(b: u8) -> bool {
    // Not `b" \t".contains(&b)`: for bytes that is a call to memchr, for every byte trimmed.
    b == b' ' || b == b'\t'
}

// Inlined, and the first byte tested first: called six times a line, mostly
// on text that starts and ends with no blank, where the call cost more than
// the trimming.
#[inline(always)]
pub(super) fn trim_start(s: &[u8]) -> &[u8] {
    match s.first() {
        Some(&b) if is_blank(b) => &s[s.iter().take_while(|&&b| is_blank(b)).count()..],
        _ => s,
    }
}

#[inline(always)]
pub(super) fn trim_end(s: &[u8]) -> &[u8] {
    match s.last() {
        Some(&b) if is_blank(b) => &s[..s.len() - s.iter().rev().take_while(|&&b| is_blank(b)).count()],
        _ => s,
    }
}

/// End of the physical line starting at `pos`: (content end without the
/// line ending, start of the next line). A line ends in LF or CRLF; a CR
/// right before the end of the file is a line ending too.
#[inline(always)]
pub(super) fn line_end(data: &[u8], pos: usize) -> (usize, usize) {
    let (mut end, next) = match memchr(b'\n', &data[pos..]) {
        Some(i) => (pos + i, pos + i + 1),
        None => (data.len(), data.len()),
    };
    if end > pos && data[end - 1] == b'\r' {
        end -= 1;
    }
    (end, next)
}

pub(super) fn count_lines(s: &[u8]) -> usize {
    memchr_iter(b'\n', s).count()
}

/// A line, from its first non-blank byte, that holds no entry: a blank line
/// or a comment.
#[inline(always)]
pub(super) fn holds_nothing(text: &[u8]) -> bool {
    text.first().is_none_or(|&b| b == b'#')
}

/// What follows a closing quote on its line is allowed: only blanks or a `#` comment.
#[inline(always)]
pub(super) fn only_comment(rest: &[u8]) -> bool {
    holds_nothing(trim_start(rest))
}

/// `export` followed by blanks before a name is ignored (but `export=1` and
/// `export = 1` set a variable named `export`).
pub(super) fn strip_export(text: &[u8]) -> &[u8] {
    if starts_with_export(text) {
        let name = trim_start(&text[6..]);
        if !name.is_empty() && name[0] != b'=' {
            return name;
        }
    }
    text
}

/// `text` starts with `export` and a blank (a name that envshim's grammar
/// reads without it, and the kubelet's with it).
pub(super) fn starts_with_export(text: &[u8]) -> bool {
    text.strip_prefix(b"export").is_some_and(|rest| rest.first().is_some_and(|&b| is_blank(b)))
}

/// An unquoted value, from what follows its `=` to the end of its line: up
/// to a `#` that follows a blank (the blank may be the one right after `=`),
/// blanks trimmed on both sides. Returns the value and the comment that
/// ended it (from its `#`; empty when none did).
pub(super) fn unquoted(after_eq: &[u8]) -> (&[u8], &[u8]) {
    let mut from = 0;
    let mut end = after_eq.len();
    while let Some(i) = memchr(b'#', &after_eq[from..]) {
        let at = from + i;
        if at > 0 && is_blank(after_eq[at - 1]) {
            end = at;
            break;
        }
        from = at + 1;
    }
    (trim_end(trim_start(&after_eq[..end])), &after_eq[end..])
}

/// What `\` and `b` stand for in double quotes, if they are an escape.
pub(super) fn escaped(b: u8) -> Option<u8> {
    match b {
        b'\\' | b'"' | b'$' => Some(b),
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'r' => Some(b'\r'),
        _ => None,
    }
}

/// The text of a double-quoted value from `i` (after the opening quote)
/// rewritten into `arena`: escapes resolved, any other backslash kept, the
/// CR of a CRLF dropped. The closing quote's place, or None if there is none.
pub(super) fn unescape(data: &[u8], mut i: usize, arena: &mut Vec<u8>) -> Option<usize> {
    loop {
        let j = i + memchr3(b'"', b'\\', b'\r', &data[i..])?;
        arena.extend_from_slice(&data[i..j]);
        i = j + 1;
        match data[j] {
            b'"' => return Some(j),
            b'\r' if data.get(j + 1) == Some(&b'\n') => {}
            b'\r' => arena.push(b'\r'),
            _ => match data.get(j + 1).and_then(|&b| escaped(b)) {
                Some(b) => {
                    arena.push(b);
                    i = j + 2;
                }
                None => arena.push(b'\\'),
            },
        }
    }
}

/// A value as envshim's grammar reads it back (`render`'s env output): bare
/// when [`unquoted`] reads it whole, else double-quoted with the
/// `\\ \" \n \t \r \$` escapes.
pub fn written(value: &[u8]) -> Vec<u8> {
    let needs_quotes = value.iter().any(|b| matches!(b, b'\n' | b'\r' | b'\t' | b'"' | b'\'' | b'\\' | b'$')) || unquoted(value).0.len() != value.len();
    if !needs_quotes {
        return value.to_vec();
    }
    let mut out = Vec::with_capacity(value.len() + 2);
    out.push(b'"');
    for &b in value {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'$' => out.extend_from_slice(b"\\$"),
            _ => out.push(b),
        }
    }
    out.push(b'"');
    out
}

/// Each rule, row by row: input, then what the rule makes of it.
#[cfg(test)]
mod tests {
    use super::*;

    fn s(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    #[test]
    fn line_end_rows() {
        for (data, pos, want) in [
            (&b"A=1\nB"[..], 0, (3, 4)),
            (b"A=1\r\nB", 0, (3, 5)),
            (b"A=1\r", 0, (3, 4)),
            (b"A=1", 0, (3, 3)),
            (b"A=x\ry\n", 0, (5, 6)),
            (b"\n\n", 1, (1, 2)),
            (b"\r\n", 0, (0, 2)),
        ] {
            assert_eq!(line_end(data, pos), want, "{:?} from {pos}", s(data));
        }
    }

    #[test]
    fn blank_and_trim_rows() {
        assert!(is_blank(b' ') && is_blank(b'\t') && !is_blank(b'\r') && !is_blank(b'\n') && !is_blank(0x0b));
        for (text, start, end) in [(&b" \t a b \t"[..], &b"a b \t"[..], &b" \t a b"[..]), (b"", b"", b""), (b"  ", b"", b""), (b"x", b"x", b"x")] {
            assert_eq!((trim_start(text), trim_end(text)), (start, end), "{:?}", s(text));
        }
    }

    #[test]
    fn holds_nothing_rows() {
        for (text, want) in [(&b""[..], true), (b"# c", true), (b"#", true), (b"A=1", false), (b"A=#x", false), (b"=", false)] {
            assert_eq!(holds_nothing(text), want, "{:?}", s(text));
        }
    }

    #[test]
    fn only_comment_after_a_quote_rows() {
        for (rest, want) in
            [(&b""[..], true), (b"   ", true), (b" # c", true), (b"#c", true), (b"\t#", true), (b"x", false), (b" 'b'", false), (b"  x # c", false)]
        {
            assert_eq!(only_comment(rest), want, "{:?}", s(rest));
        }
    }

    #[test]
    fn export_rows() {
        for (text, name, starts) in [
            (&b"export A=1"[..], &b"A=1"[..], true),
            (b"export\tB=2", b"B=2", true),
            (b"export   C = 3", b"C = 3", true),
            (b"export=1", b"export=1", false),
            (b"export = 2", b"export = 2", true),
            (b"exportX=3", b"exportX=3", false),
            (b"export ", b"export ", true),
            (b"export export A=1", b"export A=1", true),
        ] {
            assert_eq!((strip_export(text), starts_with_export(text)), (name, starts), "{:?}", s(text));
        }
    }

    #[test]
    fn unquoted_rows() {
        for (after_eq, value, comment) in [
            (&b"v"[..], &b"v"[..], &b""[..]),
            (b"v  \t", b"v", b""),
            (b"  v", b"v", b""),
            (b"a b  c", b"a b  c", b""),
            (b"v # comment", b"v", b"# comment"),
            (b"v\t# tab comment", b"v", b"# tab comment"),
            (b"v#x", b"v#x", b""),
            (b"#x", b"#x", b""),
            (b" #x", b"", b"#x"),
            (b"a#b #c #d", b"a#b", b"#c #d"),
            (b"it's \"q\"", b"it's \"q\"", b""),
            (b"", b"", b""),
        ] {
            assert_eq!(unquoted(after_eq), (value, comment), "{:?}", s(after_eq));
        }
    }

    #[test]
    fn escape_rows() {
        for (b, want) in [(b'\\', Some(b'\\')), (b'"', Some(b'"')), (b'$', Some(b'$')), (b'n', Some(b'\n')), (b't', Some(b'\t')), (b'r', Some(b'\r'))] {
            assert_eq!(escaped(b), want, "{}", b as char);
        }
        for b in [b'a', b'x', b'\'', b'\n', b'0', b'(', b'e'] {
            assert_eq!(escaped(b), None, "{}", b as char);
        }
        for (data, value, close) in [
            (&b"\"abc\" x"[..], &b"abc"[..], Some(4)),
            (b"\"q\\\"b\\\\n\\nt\\tr\\rd\\$\"", b"q\"b\\n\nt\tr\rd$", Some(19)),
            (b"\"\\a\\x\\'\"", b"\\a\\x\\'", Some(7)),
            (b"\"x\r\ny\"", b"x\ny", Some(5)),
            (b"\"x\ry\"", b"x\ry", Some(4)),
            (b"\"x\\\ny\"", b"x\\\ny", Some(5)),
        ] {
            let mut arena = Vec::new();
            assert_eq!(unescape(data, 1, &mut arena), close, "{:?}", s(data));
            assert_eq!(arena, value, "{:?}", s(data));
        }
        assert_eq!(unescape(b"\"never closed\\\"", 1, &mut Vec::new()), None);
    }

    #[test]
    fn written_rows() {
        for (value, want) in [
            (&b"plain"[..], &b"plain"[..]),
            (b"", b""),
            (b"a b", b"a b"),
            (b"#x", b"#x"),
            (b"x#c", b"x#c"),
            (b"x #c", b"\"x #c\""),
            (b" lead", b"\" lead\""),
            (b"trail ", b"\"trail \""),
            (b"q\"q", b"\"q\\\"q\""),
            (b"s'q", b"\"s'q\""),
            (b"$(VAR)", b"\"\\$(VAR)\""),
            (b"multi\nline\r\ttab\\", b"\"multi\\nline\\r\\ttab\\\\\""),
        ] {
            assert_eq!(written(value), want, "{:?}", s(value));
        }
    }
}
