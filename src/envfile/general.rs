//! The general parser: any line of the grammar (docs/reference.md §4), one
//! function per part of it. It defines what the fast path ([`super::fast`])
//! must agree with.

use memchr::{memchr, memchr3, memchr_iter};

use super::{Line, ParseError, Problem, Span};
use crate::limits::MAX_NAME_BYTES;
use crate::names::is_relaxed;

/// What one physical line (or a quoted value's lines) holds.
pub(super) enum Read {
    Entry(Line),
    /// A blank line or a comment: where the next line starts.
    Skip(usize),
}

/// The line (or lines, for a quoted value spanning them) starting at `pos`,
/// line number `line`. Rewritten values (escapes, CRLF inside quotes) go to `arena`.
pub(super) fn line(data: &[u8], pos: usize, line: usize, arena: &mut Vec<u8>) -> Result<Read, ParseError> {
    let err = |problem| Err(ParseError { line, problem });
    let (end, next) = line_end(data, pos);
    let text = trim_start(&data[pos..end]);
    if text.is_empty() || text[0] == b'#' {
        return Ok(Read::Skip(next));
    }
    let text = strip_export(text);
    let Some(eq) = memchr(b'=', text) else { return err(Problem::NoEquals) };
    let name = name(&text[..eq], line)?;
    let name_start = offset(data, name);
    let name = name_start..name_start + name.len();

    let after_eq = &text[eq + 1..];
    let value_text = trim_start(after_eq);
    let value_start = offset(data, value_text);
    let mut cut = false;
    let (value, consumed_to) = match value_text.first() {
        Some(b'\'') => single_quoted(data, value_start + 1, line, arena)?,
        Some(b'"') => double_quoted(data, value_start + 1, line, arena)?,
        _ => {
            let (v, ended) = unquoted(after_eq);
            cut = ended;
            let start = offset(data, v);
            (Span { start: start as u32, end: (start + v.len()) as u32, in_arena: false }, next)
        }
    };
    let in_place = !value.in_arena
        && name.end == offset(data, text) + eq
        && value.start as usize == name.end + 1
        && (value.end as usize) < data.len();
    // An entry that ends on its first line consumed one line (or the last
    // one, without a newline: then the parse ends); only a quoted value
    // spanning lines needs counting.
    let lines = if consumed_to == next { 1 } else { count_lines(&data[pos..consumed_to]) };
    Ok(Read::Entry(Line { name, value, checked: false, in_place, next: consumed_to, lines, cut }))
}

/// The name: the text before `=`, blanks trimmed, checked.
fn name(before_eq: &[u8], line: usize) -> Result<&[u8], ParseError> {
    let err = |problem| Err(ParseError { line, problem });
    let name = trim_end(trim_start(before_eq));
    if name.is_empty() {
        return err(Problem::EmptyName);
    }
    if name.len() > MAX_NAME_BYTES {
        return err(Problem::NameTooLong);
    }
    if !is_relaxed(name) {
        return err(Problem::InvalidName);
    }
    Ok(name)
}

/// `export` followed by blanks before a name is ignored (but `export=1` and
/// `export = 1` set a variable named `export`).
pub(super) fn strip_export(text: &[u8]) -> &[u8] {
    if let Some(rest) = text.strip_prefix(b"export") {
        if rest.first().is_some_and(|&b| is_blank(b)) {
            let name = trim_start(rest);
            if !name.is_empty() && name[0] != b'=' {
                return name;
            }
        }
    }
    text
}

/// An unquoted value: up to a `#` that follows a blank (the blank may be the
/// one right after `=`), blanks trimmed on both sides; true when such a `#` cut it.
fn unquoted(after_eq: &[u8]) -> (&[u8], bool) {
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
    (trim_end(trim_start(&after_eq[..end])), end < after_eq.len())
}

/// `'…'` from `start`, after the opening quote: literal, may span lines;
/// the CR of a CRLF inside is dropped. Returns the value and where the next
/// line starts.
fn single_quoted(data: &[u8], start: usize, line: usize, arena: &mut Vec<u8>) -> Result<(Span, usize), ParseError> {
    let Some(len) = memchr(b'\'', &data[start..]) else {
        return Err(ParseError { line, problem: Problem::UnclosedSingleQuote });
    };
    let close = start + len;
    let raw = &data[start..close];
    let span = if memchr(b'\r', raw).is_some() {
        let a = arena.len();
        let mut rest = raw;
        while let Some(i) = memchr(b'\r', rest) {
            let keep_cr = rest.get(i + 1) != Some(&b'\n');
            arena.extend_from_slice(&rest[..i + keep_cr as usize]);
            rest = &rest[i + 1..];
        }
        arena.extend_from_slice(rest);
        Span { start: a as u32, end: arena.len() as u32, in_arena: true }
    } else {
        Span { start: start as u32, end: close as u32, in_arena: false }
    };
    after_quote(data, start, close, line).map(|next| (span, next))
}

/// `"…"` from `start`, after the opening quote: may span lines; escapes
/// `\\ \" \n \t \r \$`, any other backslash is kept; the CR of a CRLF inside
/// is dropped, as in single quotes.
fn double_quoted(data: &[u8], start: usize, line: usize, arena: &mut Vec<u8>) -> Result<(Span, usize), ParseError> {
    let unclosed = ParseError { line, problem: Problem::UnclosedDoubleQuote };
    // No escape and no CR before the closing quote: the value as written.
    let first = memchr3(b'"', b'\\', b'\r', &data[start..]).ok_or(unclosed)? + start;
    if data[first] == b'"' {
        let span = Span { start: start as u32, end: first as u32, in_arena: false };
        return after_quote(data, start, first, line).map(|next| (span, next));
    }
    let a = arena.len();
    let Some(close) = unescape(data, start, arena) else {
        arena.truncate(a);
        return Err(unclosed);
    };
    let span = Span { start: a as u32, end: arena.len() as u32, in_arena: true };
    after_quote(data, start, close, line).map(|next| (span, next))
}

/// The text of a double-quoted value from `i` rewritten into `arena`; the
/// closing quote's place, or None if there is none.
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

/// What `\` and `b` stand for in double quotes, if they are an escape.
fn escaped(b: u8) -> Option<u8> {
    match b {
        b'\\' | b'"' | b'$' => Some(b),
        b'n' => Some(b'\n'),
        b't' => Some(b'\t'),
        b'r' => Some(b'\r'),
        _ => None,
    }
}

/// Checks the rest of the line holding the closing quote at `close` (the
/// quote opened at `start` - 1 on `line`): only blanks or a comment may
/// follow. Returns where the next line starts.
fn after_quote(data: &[u8], start: usize, close: usize, line: usize) -> Result<usize, ParseError> {
    let (end, next) = line_end(data, close + 1);
    let rest = trim_start(&data[close + 1..end]);
    if rest.is_empty() || rest[0] == b'#' {
        Ok(next)
    } else {
        let line = line + count_lines(&data[start..close]);
        Err(ParseError { line, problem: Problem::TextAfterQuote })
    }
}

/// End of the physical line starting at `pos`: (content end without the
/// line ending, start of the next line).
#[inline(always)]
pub(super) fn line_end(data: &[u8], pos: usize) -> (usize, usize) {
    let (mut end, next) = match memchr(b'\n', &data[pos..]) {
        Some(i) => (pos + i, pos + i + 1),
        None => (data.len(), data.len()),
    };
    // CRLF, or a CR right before the end of the file.
    if end > pos && data[end - 1] == b'\r' {
        end -= 1;
    }
    (end, next)
}

pub(super) fn count_lines(s: &[u8]) -> usize {
    memchr_iter(b'\n', s).count()
}

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

/// Offset of `sub` (a subslice of `whole`) inside `whole`.
fn offset(whole: &[u8], sub: &[u8]) -> usize {
    sub.as_ptr() as usize - whole.as_ptr() as usize
}

/// A value as this grammar reads it back (`render`'s env output): bare
/// when that is exact, else double-quoted with the `\\ \" \n \t \r \$` escapes.
pub fn written(value: &[u8]) -> Vec<u8> {
    let blank = |b: &u8| *b == b' ' || *b == b'\t';
    let needs_quotes = value.iter().any(|b| matches!(b, b'\n' | b'\r' | b'\t' | b'"' | b'\'' | b'\\' | b'$'))
        || value.first().is_some_and(blank)
        || value.last().is_some_and(blank)
        || value.windows(2).any(|w| w[0] == b' ' && w[1] == b'#');
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
