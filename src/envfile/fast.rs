//! The fast path: the common line, `NAME=VALUE` on one line with a name of
//! printable bytes and a value without blanks or control bytes (or quoted,
//! without escapes), read in one scan over the name and one over the value,
//! with no trimming, `export` or comment handling. Any other line is left
//! to the general parser ([`super::general`]), whose reading of these lines
//! this must equal (the tests compare both with the reference,
//! docs/reference.md §4 read literally).

use super::scan;
use super::{Line, Span};
use crate::limits::{MAX_NAME_BYTES, MAX_VALUE_BYTES};

/// The line starting at `pos` if it is the common line, else None (and the
/// bytes are untouched).
#[inline(always)]
pub(super) fn one_line(data: &mut [u8], pos: usize) -> Option<Line> {
    if data[pos] == b'#' {
        return None;
    }
    // Every byte before `eq` is printable ASCII and not `=` or a blank: the
    // name passes the relaxed rule as it is.
    let eq = scan::not_in_plain_name(data, pos);
    if eq == pos || data.get(eq) != Some(&b'=') || eq - pos > MAX_NAME_BYTES {
        return None;
    }
    match data.get(eq + 1) {
        Some(&quote @ (b'\'' | b'"')) => quoted(data, pos, eq + 1, quote),
        _ => plain(data, pos, eq + 1),
    }
}

/// `NAME=VALUE` from `pos`, the value from `v`: up to the first control
/// byte or blank, if the line ends there (no `#` can start a comment without
/// a blank before it).
#[inline(always)]
fn plain(data: &[u8], pos: usize, v: usize) -> Option<Line> {
    let end = scan::control_or_blank(data, v);
    let next = line_break(data, end)?;
    if end - v > MAX_VALUE_BYTES {
        return None;
    }
    let value = Span { start: v as u32, end: end as u32, in_arena: false };
    Some(Line { name: pos..v - 1, value, checked: true, in_place: end < data.len(), next, lines: 1, cut: false })
}

/// `NAME='VALUE'` from `pos`, the opening quote at `v`, with no escape and
/// nothing after the closing quote. Taken in place: `NAME=` moves one byte
/// right, over the opening quote, so that `NAME=VALUE` stands in the file
/// and the closing quote after it takes the NUL (see `IN_PLACE`).
#[inline(always)]
fn quoted(data: &mut [u8], pos: usize, v: usize, quote: u8) -> Option<Line> {
    let also = if quote == b'"' { b'\\' } else { quote };
    let close = scan::quote_or_control(data, v + 1, quote, also);
    if data.get(close) != Some(&quote) || close - (v + 1) > MAX_VALUE_BYTES {
        return None;
    }
    let next = line_break(data, close + 1)?;
    data.copy_within(pos..v, pos + 1);
    let value = Span { start: v as u32 + 1, end: close as u32, in_arena: false };
    Some(Line { name: pos + 1..v, value, checked: true, in_place: true, next, lines: 1, cut: false })
}

/// Where the next line starts if the line ends at `end` (LF, CRLF, or the
/// end of the file, after a CR or not).
#[inline(always)]
fn line_break(data: &[u8], end: usize) -> Option<usize> {
    match &data[end..] {
        [] | [b'\r'] => Some(data.len()),
        [b'\n', ..] => Some(end + 1),
        [b'\r', b'\n', ..] => Some(end + 2),
        _ => None,
    }
}
