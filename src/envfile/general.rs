//! The general parser: any line of the grammar (docs/reference.md §4), one
//! function per part of it, its tokens read by the rules of [`super::lex`].
//! It defines what the fast path ([`super::fast`]) must agree with.

use memchr::{memchr, memchr3};

use super::lex::{self, count_lines, line_end, only_comment, trim_end, trim_start};
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
    if lex::holds_nothing(text) {
        return Ok(Read::Skip(next));
    }
    let text = lex::strip_export(text);
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
            let (v, comment) = lex::unquoted(after_eq);
            cut = !comment.is_empty();
            let start = offset(data, v);
            (Span { start: start as u32, end: (start + v.len()) as u32, in_arena: false }, next)
        }
    };
    let in_place = !value.in_arena && name.end == offset(data, text) + eq && value.start as usize == name.end + 1 && (value.end as usize) < data.len();
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
    let Some(close) = lex::unescape(data, start, arena) else {
        arena.truncate(a);
        return Err(unclosed);
    };
    let span = Span { start: a as u32, end: arena.len() as u32, in_arena: true };
    after_quote(data, start, close, line).map(|next| (span, next))
}

/// Checks the rest of the line holding the closing quote at `close` (the
/// quote opened at `start` - 1 on `line`): only blanks or a comment may
/// follow. Returns where the next line starts.
fn after_quote(data: &[u8], start: usize, close: usize, line: usize) -> Result<usize, ParseError> {
    let (end, next) = line_end(data, close + 1);
    if only_comment(&data[close + 1..end]) {
        Ok(next)
    } else {
        let line = line + count_lines(&data[start..close]);
        Err(ParseError { line, problem: Problem::TextAfterQuote })
    }
}

/// Offset of `sub` (a subslice of `whole`) inside `whole`.
fn offset(whole: &[u8], sub: &[u8]) -> usize {
    sub.as_ptr() as usize - whole.as_ptr() as usize
}
