//! The kubelet's env-file grammar, exactly (`--env-grammar kubelet`,
//! docs/reference.md §4), as the 1.35 kubelet reads a file for one key: line
//! by line (a line ends at LF; one CR before it, or before the end of the
//! file, is dropped), blanks before a line's first character skipped, blank
//! and `#` lines skipped; then `NAME='VALUE'` with nothing between the name
//! and `=`, the value single-quoted, literal, and allowed to span lines;
//! after the closing quote only blanks or a `#` comment. `NAME= …` (a blank
//! after `=`) is the empty value, and the line is not read further; an empty
//! value is a key the kubelet does not find. There is no `export` and no
//! name check: the name is what is before `=`. Its line endings, blanks,
//! comment lines and what may follow a closing quote are the rules it shares
//! with envshim's grammar (`super::lex`).
//!
//! [`lint`] lists every line of a file that this grammar rejects or reads
//! otherwise than envshim's own (the portability lint of `check`).

use std::fmt;
use std::ops::Range;

use memchr::memchr;

use super::lex::{self, count_lines, is_blank, line_end, trim_end, trim_start};
use super::{ParseError, Problem, Span};
use crate::index::NameIndex;
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_NAME_BYTES, MAX_VALUE_BYTES};

/// The longest line the kubelet's reader takes, its line ending included
/// (Go's `bufio.Scanner` with its default buffer, `MaxScanTokenSize`): a
/// longer one, or a last line without a line feed as long, fails the read
/// ("token too long").
pub const SCANNER_MAX_TOKEN: usize = 64 * 1024;

// Only the first physical line of an entry is measured: a later one (of a
// quoted value) follows a line feed, so within the file's limit it is shorter.
const _: () = assert!(MAX_ENV_FILE_BYTES <= SCANNER_MAX_TOKEN);

/// Whether the physical line from `pos` to `next` (where the next starts) is
/// one the kubelet's reader refuses: its bytes with the line feed fill more
/// than its buffer, or fill it without a line feed (the scanner asks for more
/// room before it sees the end of the file).
pub(super) fn too_long(data: &[u8], pos: usize, next: usize) -> bool {
    let n = next - pos;
    n > SCANNER_MAX_TOKEN || (n == SCANNER_MAX_TOKEN && data[next - 1] != b'\n')
}

/// A line holding a name, as the kubelet reads it.
pub(super) struct Line {
    pub name: Range<usize>,
    /// None: a key the kubelet does not find (`K=''`, or a blank after `=`).
    pub value: Option<Span>,
    /// `K= …`: a blank after `=` (the rest of the line is not read).
    pub blank_after_equals: bool,
    /// The physical lines it took (a quoted value may span several).
    pub lines: usize,
}

/// The line starting at `pos`, number `line`: None for a blank or comment
/// line. Returns where the next line starts too (after an unclosed quote,
/// the end of the file: the kubelet reads no further). A value rewritten
/// (a CRLF inside quotes) goes to `arena`.
pub(super) fn line(data: &[u8], pos: usize, line: usize, arena: &mut Vec<u8>) -> (Result<Option<Line>, ParseError>, usize) {
    let fail = |problem, next| (Err(ParseError { line, problem }), next);
    let (end, next) = line_end(data, pos);
    if too_long(data, pos, next) {
        return fail(Problem::LineTooLong, next);
    }
    let text = trim_start(&data[pos..end]);
    if lex::holds_nothing(text) {
        return (Ok(None), next);
    }
    let start = end - text.len();
    let Some(eq) = memchr(b'=', text) else { return fail(Problem::NoEquals, next) };
    let name = start..start + eq;
    if trim_end(&text[..eq]).is_empty() {
        return fail(Problem::EmptyName, next);
    }
    if is_blank(text[eq - 1]) {
        return fail(Problem::BlankBeforeEquals, next);
    }
    if eq > MAX_NAME_BYTES {
        return fail(Problem::NameTooLong, next);
    }
    let found = |value, blank_after_equals, lines| Ok(Some(Line { name: name.clone(), value, blank_after_equals, lines }));
    match text.get(eq + 1) {
        Some(&b) if is_blank(b) => return (found(None, true, 1), next),
        Some(b'\'') => {}
        _ => return fail(Problem::NotSingleQuoted, next),
    }
    let open = start + eq + 2;
    let Some(len) = memchr(b'\'', &data[open..]) else { return fail(Problem::UnclosedSingleQuote, data.len()) };
    let close = open + len;
    let lines = count_lines(&data[open..close]);
    let (end, next) = line_end(data, close + 1);
    if !lex::only_comment(&data[close + 1..end]) {
        return (Err(ParseError { line: line + lines, problem: Problem::TextAfterQuote }), next);
    }
    let raw = &data[open..close];
    if raw.is_empty() {
        return (found(None, false, lines + 1), next);
    }
    if memchr(0, raw).is_some() {
        return fail(Problem::NulInValue, next);
    }
    // A CR ending a line inside the value is dropped with the line ending.
    let value = if memchr(b'\r', raw).is_some() && lines > 0 {
        let a = arena.len();
        for (i, part) in raw.split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                arena.push(b'\n');
            }
            arena.extend_from_slice(part.strip_suffix(b"\r").filter(|_| i < lines).unwrap_or(part));
        }
        Span { start: a as u32, end: arena.len() as u32, in_arena: true }
    } else {
        Span { start: open as u32, end: close as u32, in_arena: false }
    };
    if value.end - value.start > MAX_VALUE_BYTES as u32 {
        return fail(Problem::ValueTooLong, next);
    }
    (found(Some(value), false, lines + 1), next)
}

/// What the portability lint finds on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// The kubelet fails here (for any key it has not found before).
    Fails(Problem),
    /// A byte-order mark, which the kubelet reads as part of the first name.
    ByteOrderMark,
    /// `export NAME=…`: the kubelet's name is `export NAME`.
    Export,
    /// `K= …`: the kubelet reads the empty value and finds no key.
    BlankAfterEquals,
    /// `K=''`: the kubelet finds no key.
    Empty,
    /// The name was given before, on this line: the kubelet reads the first.
    Again(u32),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Fails(problem) => problem.fmt(f),
            Finding::ByteOrderMark => f.write_str("starts with a byte-order mark, which the kubelet reads as part of the first name"),
            Finding::Export => f.write_str("'export' is part of the name for the kubelet (remove it)"),
            Finding::BlankAfterEquals => f.write_str("a blank after '=': the kubelet reads an empty value and does not find the key (write NAME='value')"),
            Finding::Empty => f.write_str("an empty value: the kubelet does not find the key"),
            Finding::Again(first) => write!(f, "the name is given again (first on line {first}): the kubelet reads the first, envshim's grammar the last"),
        }
    }
}

/// Every line of `data` that the kubelet rejects or reads otherwise than
/// envshim's grammar, in order: (line, finding); line 0 is the whole file.
/// Unlike a read, it goes on after a line that fails.
pub fn lint(data: &[u8]) -> Vec<(u32, Finding)> {
    if data.len() > MAX_ENV_FILE_BYTES {
        return vec![(0, Finding::Fails(Problem::TooLarge))];
    }
    let mut found = Vec::new();
    if data.starts_with(b"\xEF\xBB\xBF") {
        found.push((1, Finding::ByteOrderMark));
    }
    // Each name's first line: (where the name is, its line), found by name.
    let mut first: Vec<(Range<usize>, u32)> = Vec::new();
    let mut names = NameIndex::default();
    let mut arena = Vec::new();
    let (mut pos, mut n) = (0, 1);
    while pos < data.len() {
        let (read, next) = line(data, pos, n, &mut arena);
        arena.clear();
        let at = n as u32;
        match read {
            Err(e) => found.push((e.line as u32, Finding::Fails(e.problem))),
            Ok(None) => {}
            Ok(Some(l)) => {
                let name = &data[l.name.clone()];
                if lex::starts_with_export(name) {
                    found.push((at, Finding::Export));
                }
                match (l.blank_after_equals, l.value) {
                    (true, _) => found.push((at, Finding::BlankAfterEquals)),
                    (false, None) => found.push((at, Finding::Empty)),
                    _ => {}
                }
                match names.get_or_insert(name, first.len() as u32, |i| &data[first[i as usize].0.clone()]) {
                    Ok(i) => found.push((at, Finding::Again(first[i as usize].1))),
                    Err(_) => first.push((l.name.clone(), at)),
                }
            }
        }
        n += count_lines(&data[pos..next]).max(1);
        pos = next;
    }
    found
}
