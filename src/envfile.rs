//! The env-file grammar (docs/reference.md §4): a superset of the kubelet's.
//!
//! A parsed file keeps its bytes; names and the values that need no rewriting
//! are spans of them, and values that do (escapes, CRLF inside quotes) go to
//! one arena, so parsing allocates a handful of buffers, not one per entry.

use std::fmt;

use memchr::{memchr, memchr3, memchr_iter};

use crate::index::{SmallIndex, SMALL_MAX};
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_NAME_BYTES, MAX_VALUE_BYTES};
use crate::names::{is_relaxed, HIGH, ONES};

/// Why a file does not parse. No variant carries file content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    TooLarge,
    ByteOrderMark,
    InvalidUtf8,
    NoEquals,
    EmptyName,
    InvalidName,
    NameTooLong,
    ValueTooLong,
    NulInValue,
    UnclosedSingleQuote,
    UnclosedDoubleQuote,
    TextAfterQuote,
}

/// A parse failure: what and on which line (1-based; 0 for the whole file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub problem: Problem,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Problem::*;
        let what = match self.problem {
            TooLarge => return write!(f, "is larger than {MAX_ENV_FILE_BYTES} bytes"),
            ByteOrderMark => "starts with a UTF-8 byte-order mark (save the file without a BOM)",
            InvalidUtf8 => "is not valid UTF-8",
            NoEquals => "has no '=' (expected NAME=VALUE)",
            EmptyName => "has an empty name",
            InvalidName => "has an invalid name (allowed: printable ASCII except '=')",
            NameTooLong => return write!(f, "line {}: name is longer than {MAX_NAME_BYTES} bytes", self.line),
            ValueTooLong => return write!(f, "line {}: value is longer than {MAX_VALUE_BYTES} bytes", self.line),
            NulInValue => "has a value containing a NUL byte",
            UnclosedSingleQuote => "opens a single quote that is never closed",
            UnclosedDoubleQuote => "opens a double quote that is never closed",
            TextAfterQuote => "has text after a closing quote (only blanks or a # comment may follow)",
        };
        write!(f, "line {}: {what}", self.line)
    }
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
    in_arena: bool,
}

/// One line's entry, in 16 bytes (a 64 KiB file has up to 32,768 of them:
/// with two `Span`s it took 32 bytes, 8 pages for 1,000 keys).
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// The name, always in the file's bytes.
    name_start: u32,
    /// The value, in the file's bytes or ([`IN_ARENA`]) in the arena.
    value_start: u32,
    line: u32,
    value_len: u16,
    name_len: u8,
    /// [`IN_ARENA`] and [`IN_PLACE`].
    flags: u8,
}

/// The value was rewritten into the arena (escapes, CRLF inside quotes).
const IN_ARENA: u8 = 1;
/// The file's bytes from the name to the value are `NAME=VALUE`, and a NUL
/// was written over the byte after them (see [`EnvFile::raw`]).
const IN_PLACE: u8 = 2;

const _: () = assert!(std::mem::size_of::<Entry>() == 16);
const _: () = assert!(MAX_NAME_BYTES <= u8::MAX as usize && MAX_VALUE_BYTES <= u16::MAX as usize);
// A file's entries (each `A=` and a line ending, the last without: at most
// `MAX_ENV_FILE_BYTES / 3 + 1` of them) fit its key table.
const _: () = assert!(MAX_ENV_FILE_BYTES / 3 < SMALL_MAX);

/// One key of a file's final key set (see [`EnvFile::unique_keys`]).
pub struct Key<'f> {
    pub name: &'f [u8],
    /// The [`crate::index::hash`] of the name.
    pub hash: u32,
    pub value: &'f [u8],
    pub line: u32,
    /// Where `NAME=VALUE` followed by a NUL is in [`EnvFile::raw`], when it is there.
    pub in_place: Option<usize>,
}

/// A parsed env file.
#[derive(Debug)]
pub struct EnvFile {
    data: Vec<u8>,
    arena: Vec<u8>,
    entries: Vec<Entry>,
    /// The final key set (see [`EnvFile::unique`]) and name -> its place in
    /// it; built once the entries are known (each name hashed once).
    keys: Keys,
}

/// An env file's distinct names: `order[k]` is the last entry of the `k`th
/// distinct name (in order of first occurrence); `index` maps a name to its `k`.
/// One table serves the imports and the `fileKeyRef` lookups.
#[derive(Debug)]
struct Keys {
    index: SmallIndex,
    /// (Entry numbers fit 16 bits: see the assertion on `SMALL_MAX`; 2 KiB for 1,000 keys, not 4.)
    order: Vec<u16>,
    /// The [`crate::index::hash`] of each distinct name, for the environment's table.
    hashes: Vec<u32>,
    /// The bytes of the names and values of the final key set.
    bytes: usize,
    /// The names given more than once: how many times a name was given
    /// again, and the first time, its two lines (the one before, this one).
    duplicates: (u32, Option<(u32, u32)>),
}

impl Keys {
    /// The final key set of `entries`, a table sized once for all of them
    /// (built while parsing, it had to be sized before: from a count of the
    /// file's lines, a pass over the file).
    fn new(data: &[u8], entries: &[Entry]) -> Keys {
        let n = entries.len();
        let mut keys = Keys { index: SmallIndex::with_capacity(n), order: Vec::with_capacity(n), hashes: Vec::with_capacity(n), bytes: 0, duplicates: (0, None) };
        let Keys { index, order, hashes, bytes, duplicates } = &mut keys;
        let name_of = |e: &Entry| &data[e.name_start as usize..e.name_start as usize + e.name_len as usize];
        let hash_keys = crate::index::keys();
        for (i, e) in entries.iter().enumerate() {
            // A name seen before now points at this entry.
            let name = name_of(e);
            let hash = hash_keys.hash(name);
            let (hash_of, key_name) = (|k: u32| hashes[k as usize], |k: u32| name_of(&entries[order[k as usize] as usize]));
            match index.get_or_insert_hashed(name, hash, order.len() as u32, hash_of, key_name) {
                Ok(k) => {
                    let before = &entries[order[k as usize] as usize];
                    *bytes = *bytes + e.value_len as usize - before.value_len as usize;
                    duplicates.0 += 1;
                    duplicates.1.get_or_insert((before.line, e.line));
                    order[k as usize] = i as u16;
                }
                // (Err(u32::MAX), a full table, cannot happen: it has room for every entry.)
                Err(_) => {
                    *bytes += name.len() + e.value_len as usize;
                    order.push(i as u16);
                    hashes.push(hash);
                }
            }
        }
        keys
    }
}

/// The average bytes of a line that [`EnvFile::parse`] makes room for (its
/// entries' vector grows past that): generated files of long keys and values
/// (the benchmark's lines are 65 bytes) fit, and a file of shorter lines costs
/// a copy or two of its entries: as few page faults as counting the lines first.
const BYTES_PER_ENTRY: usize = 64;

const BLANKS: [u8; 2] = [b' ', b'\t'];

fn is_blank(b: u8) -> bool {
    // Not `BLANKS.contains(&b)`: for bytes that is a call to memchr, for
    // every byte trimmed (docs/performance.md).
    b == BLANKS[0] || b == BLANKS[1]
}

// Inlined: called six times a line, mostly on text that starts and ends
// with no blank, where the call cost more than the trimming (docs/performance.md).
#[inline(always)]
fn trim_start(s: &[u8]) -> &[u8] {
    match s.first() {
        Some(&b) if is_blank(b) => &s[s.iter().take_while(|&&b| is_blank(b)).count()..],
        _ => s,
    }
}

#[inline(always)]
fn trim_end(s: &[u8]) -> &[u8] {
    match s.last() {
        Some(&b) if is_blank(b) => &s[..s.len() - s.iter().rev().take_while(|&&b| is_blank(b)).count()],
        _ => s,
    }
}

/// Offset of `sub` (a subslice of `whole`) inside `whole`.
fn offset(whole: &[u8], sub: &[u8]) -> usize {
    sub.as_ptr() as usize - whole.as_ptr() as usize
}

fn count_lines(s: &[u8]) -> usize {
    memchr_iter(b'\n', s).count()
}

/// End of the physical line starting at `pos`: (content end without the
/// line ending, start of the next line).
#[inline(always)]
fn line_end(data: &[u8], pos: usize) -> (usize, usize) {
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

/// One entry as a line's parse found it, before it is checked and stored.
struct Line {
    /// The name's bytes in the file.
    name: std::ops::Range<usize>,
    value: Span,
    /// The value is known to be within the limit and without NUL.
    checked: bool,
    /// Written `NAME=VALUE` and followed by a byte no span holds (see [`IN_PLACE`]).
    in_place: bool,
    /// Where the next line starts.
    next: usize,
    /// The physical lines the entry took.
    lines: usize,
}

/// The high bit of each byte of `w` (eight bytes, the first in the low
/// byte) that is a control byte or a blank (at most 0x20: NUL, TAB, LF, CR,
/// space). A byte's borrow can only mark bytes after a marked one, so the
/// lowest marked byte is exact.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn control_or_blank(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x21) & !w & HIGH
}

/// [`control_or_blank`], `=`, and the bytes from 0x7f: what cannot be in a
/// name written without blanks (what is left is the relaxed rule's set).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn not_in_plain_name(w: u64) -> u64 {
    let eq = w ^ (ONES * u64::from(b'='));
    control_or_blank(w) | ((w.wrapping_add(ONES) | w) & HIGH) | (eq.wrapping_sub(ONES) & !eq & HIGH)
}

/// The high bit of each byte of `w` that is a control byte (below 0x20),
/// `quote` or `also` (eight bytes, the first in the low byte; as in
/// [`control_or_blank`], the lowest marked byte is exact).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn quote_or_control(w: u64, quote: u8, also: u8) -> u64 {
    let (q, a) = (w ^ (ONES * u64::from(quote)), w ^ (ONES * u64::from(also)));
    (w.wrapping_sub(ONES * 0x20) & !w & HIGH) | (q.wrapping_sub(ONES) & !q & HIGH) | (a.wrapping_sub(ONES) & !a & HIGH)
}

/// The end of a plain name from `i` (the first byte [`not_in_plain_name`]
/// marks), or `data.len()`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::sys::sse2::not_in_plain_name as plain_name_end;
/// The end of a plain value from `i` (the first byte [`control_or_blank`]
/// marks), or `data.len()`: sixteen bytes at a time with SSE2 on x86_64
/// (checked against [`scan`] by the tests).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::sys::sse2::control_or_blank as plain_value_end;

/// The end of a quoted value's plain part from `i`, the byte after the
/// opening quote: the first `quote`, `also` (a backslash in double quotes,
/// else the quote again) or control byte ([`quote_or_control`]), or `data.len()`.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::sys::sse2::quote_or_control as quoted_value_end;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::sys::sse2::is_ascii;

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn is_ascii(data: &[u8]) -> bool {
    data.is_ascii()
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn plain_name_end(data: &[u8], i: usize) -> usize {
    scan(data, i, not_in_plain_name)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn plain_value_end(data: &[u8], i: usize) -> usize {
    scan(data, i, control_or_blank)
}

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
fn quoted_value_end(data: &[u8], i: usize, quote: u8, also: u8) -> usize {
    scan(data, i, |w| quote_or_control(w, quote, also))
}

/// The first byte from `i` that `marks` marks, or `data.len()`: eight bytes
/// at a time, then the last ones one by one (each as the low byte of a word).
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
#[inline(always)]
fn scan(data: &[u8], mut i: usize, marks: impl Fn(u64) -> u64) -> usize {
    while let Some(w) = data.get(i..i + 8) {
        let m = marks(u64::from_le_bytes(w.try_into().unwrap_or_default()));
        if m != 0 {
            return i + (m.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < data.len() && marks(u64::from(data[i])) & 0x80 == 0 {
        i += 1;
    }
    i
}

/// Room for more entries when `entries` is full and `left` bytes of the file
/// are still to parse: doubled, but never past room for every line left (3
/// bytes at least each), so never more than counting the lines first gave.
/// Out of the parse loop: inlined, it cost instructions even where it never runs.
#[cold]
#[inline(never)]
fn grow(entries: &mut Vec<Entry>, left: usize) {
    entries.reserve_exact(entries.len().min(left / 3 + 1));
}

/// A quoted value on one line with no escape and nothing after the closing
/// quote (`NAME='VALUE'` from `pos`, the opening quote at `v`), read as a
/// plain value is: one scan, no rewriting, taken in place, by moving `NAME=`
/// one byte right, over the opening quote, so that `NAME=VALUE` and (written
/// by the caller) a NUL over the closing quote stand in the file. Returns
/// where the closing quote is and where the next line starts; None for any
/// other quoted value (the bytes are then untouched). Without it, such a
/// value takes the general path: a search for the quote, one for a CR, one
/// for the line end, a count of the lines and one for NUL, and a copy of the
/// entry.
#[inline(always)]
fn one_line_quoted(data: &mut [u8], pos: usize, v: usize, quote: u8) -> Option<(usize, usize)> {
    let also = if quote == b'"' { b'\\' } else { quote };
    let close = quoted_value_end(data, v + 1, quote, also);
    if data.get(close) != Some(&quote) || close - (v + 1) > MAX_VALUE_BYTES {
        return None;
    }
    let next = match data.get(close + 1..) {
        Some([] | [b'\r']) => data.len(),
        Some([b'\n', ..]) => close + 2,
        Some([b'\r', b'\n', ..]) => close + 3,
        _ => return None,
    };
    data.copy_within(pos..v, pos + 1);
    Some((close, next))
}

/// After a closing quote only blanks or a comment may follow.
fn only_comment(rest: &[u8]) -> bool {
    let rest = trim_start(rest);
    rest.is_empty() || rest[0] == b'#'
}

impl EnvFile {
    /// Parses a whole file; an error on any line fails the file.
    pub fn parse(data: Vec<u8>) -> Result<EnvFile, ParseError> {
        let err = |line: usize, problem| Err(ParseError { line, problem });
        if data.len() > MAX_ENV_FILE_BYTES {
            return err(0, Problem::TooLarge);
        }
        if data.starts_with(b"\xEF\xBB\xBF") {
            return err(1, Problem::ByteOrderMark);
        }
        // ASCII first (most env files): a quicker loop than the UTF-8 check's.
        if !is_ascii(&data) {
            if let Err(e) = std::str::from_utf8(&data) {
                return err(1 + count_lines(&data[..e.valid_up_to()]), Problem::InvalidUtf8);
            }
        }

        // Room for the entries of a file of lines of BYTES_PER_ENTRY bytes
        // on average (it grows past that): no pass over the file to count its
        // lines first.
        let mut file = EnvFile {
            arena: Vec::new(),
            entries: Vec::with_capacity(data.len() / BYTES_PER_ENTRY + 16),
            keys: Keys { index: SmallIndex::default(), order: Vec::new(), hashes: Vec::new(), bytes: 0, duplicates: (0, None) },
            data: Vec::new(),
        };
        let mut data = data;
        let len = data.len();
        let mut pos = 0;
        let mut line = 1;
        'lines: while pos < len {
            let first = data[pos];
            // The common line, `NAME=VALUE` with a name of printable bytes and
            // no blanks, read in one pass over the name and one over the value
            // (sixteen or eight bytes at a time, no other search): was a
            // `memchr` for the line end, one for `=`, one for `#`, trimming,
            // `export` and the name rule on every line, and a pass for NUL.
            // Anything else on the line (blanks, `export`, a comment, a control
            // byte, a long name or value) goes to `general`, which reads it
            // from the start.
            let parsed = 'fast: {
                if !(b'!'..=b'~').contains(&first) || first == b'#' || first == b'=' {
                    match first {
                        b'\n' => {
                            pos += 1;
                            line += 1;
                            continue 'lines;
                        }
                        b'#' => {
                            pos = memchr(b'\n', &data[pos..]).map_or(len, |i| pos + i + 1);
                            line += 1;
                            continue 'lines;
                        }
                        _ => break 'fast None,
                    }
                }
                // Every byte before `eq` is printable ASCII and not `=` or a
                // blank: the name passes the relaxed rule as it is.
                let eq = plain_name_end(&data, pos + 1);
                if eq == len || data[eq] != b'=' || eq - pos > MAX_NAME_BYTES {
                    break 'fast None;
                }
                let v = eq + 1;
                // The value's bytes (start..end), on this line: the next starts at `next`.
                let (name, start, end, next) = match data.get(v) {
                    Some(&quote @ (b'\'' | b'"')) => match one_line_quoted(&mut data, pos, v, quote) {
                        Some((close, next)) => (pos + 1..v, v + 1, close, next),
                        None => {
                            let (value, next) = match quote {
                                b'\'' => file.single_quoted(&data, v + 1, line)?,
                                _ => file.double_quoted(&data, v + 1, line)?,
                            };
                            let lines = count_lines(&data[pos..next]);
                            break 'fast Some(Line { name: pos..eq, value, checked: false, in_place: false, next, lines });
                        }
                    },
                    _ => {
                        // Up to the first control byte or blank: a value that
                        // ends there at the line's end is the whole value (no
                        // `#` can start a comment without a blank before it).
                        let end = plain_value_end(&data, v);
                        let next = match data.get(end) {
                            None => len,
                            Some(b'\n') => end + 1,
                            Some(b'\r') if data.get(end + 1) == Some(&b'\n') => end + 2,
                            Some(_) => break 'fast None,
                        };
                        if end - v > MAX_VALUE_BYTES {
                            break 'fast None;
                        }
                        (pos..eq, v, end, next)
                    }
                };
                let value = Span { start: start as u32, end: end as u32, in_arena: false };
                Some(Line { name, value, checked: true, in_place: end < len, next, lines: 1 })
            };
            let parsed = match parsed {
                Some(parsed) => parsed,
                None => match file.general(&data, pos, line)? {
                    Ok(parsed) => parsed,
                    Err(next) => {
                        pos = next;
                        line += 1;
                        continue;
                    }
                },
            };
            let Line { name, value, checked, in_place, next, lines } = parsed;
            let value_len = value.end as usize - value.start as usize;
            if !checked {
                if value_len > MAX_VALUE_BYTES {
                    return err(line, Problem::ValueTooLong);
                }
                if memchr(0, file.span_bytes(&data, value)).is_some() {
                    return err(line, Problem::NulInValue);
                }
            }
            if file.entries.len() == file.entries.capacity() {
                grow(&mut file.entries, len - pos);
            }
            file.entries.push(Entry {
                name_start: name.start as u32,
                value_start: value.start,
                line: line as u32,
                value_len: value_len as u16,
                name_len: name.len() as u8,
                flags: if value.in_arena { IN_ARENA } else if in_place { IN_PLACE } else { 0 },
            });
            // `NAME=VALUE` as written, with a byte after it that no span holds
            // (a blank, CR or LF ending an unquoted value): a NUL goes there,
            // and `execve` can take the string in place. The parse reads
            // nothing before `next` again.
            if in_place {
                data[value.end as usize] = 0;
            }
            line += lines;
            pos = next;
        }
        file.keys = Keys::new(&data, &file.entries);
        file.data = data;
        Ok(file)
    }

    /// Any line that does not start `NAME=` with a plain name (see
    /// [`EnvFile::parse`]), from `pos`, its start; for a blank line or a
    /// comment, Err(where the next line starts).
    fn general(&mut self, data: &[u8], pos: usize, line: usize) -> Result<Result<Line, usize>, ParseError> {
        let err = |problem| Err(ParseError { line, problem });
        let (end, next) = line_end(data, pos);
        let text = trim_start(&data[pos..end]);
        if text.is_empty() || text[0] == b'#' {
            return Ok(Err(next));
        }
        let text = strip_export(text);
        let Some(eq) = memchr(b'=', text) else { return err(Problem::NoEquals) };
        let name = trim_end(trim_start(&text[..eq]));
        if name.is_empty() {
            return err(Problem::EmptyName);
        }
        if name.len() > MAX_NAME_BYTES {
            return err(Problem::NameTooLong);
        }
        if !is_relaxed(name) {
            return err(Problem::InvalidName);
        }
        let name_start = offset(data, name);
        let name = name_start..name_start + name.len();

        let after_eq = &text[eq + 1..];
        let value_text = trim_start(after_eq);
        let value_start = offset(data, value_text);
        let (value, consumed_to) = match value_text.first() {
            Some(b'\'') => self.single_quoted(data, value_start + 1, line)?,
            Some(b'"') => self.double_quoted(data, value_start + 1, line)?,
            _ => {
                let v = unquoted(after_eq);
                let start = offset(data, v);
                (Span { start: start as u32, end: (start + v.len()) as u32, in_arena: false }, next)
            }
        };
        let in_place = !value.in_arena
            && name.end == offset(data, text) + eq
            && value.start as usize == name.end + 1
            && (value.end as usize) < data.len();
        // An entry that ends on its first line consumed one line (or the
        // last one, without a newline: then the loop ends); only a quoted
        // value spanning lines needs counting (docs/performance.md).
        let lines = if consumed_to == next { 1 } else { count_lines(&data[pos..consumed_to]) };
        Ok(Ok(Line { name, value, checked: false, in_place, next: consumed_to, lines }))
    }

    /// `'…'`: literal, may span lines; the CR of a CRLF inside is dropped.
    /// Returns the value and where the next line starts.
    fn single_quoted(&mut self, data: &[u8], start: usize, line: usize) -> Result<(Span, usize), ParseError> {
        let Some(len) = memchr(b'\'', &data[start..]) else {
            return Err(ParseError { line, problem: Problem::UnclosedSingleQuote });
        };
        let close = start + len;
        let raw = &data[start..close];
        let span = if memchr(b'\r', raw).is_some() {
            let a = self.arena.len();
            let mut rest = raw;
            while let Some(i) = memchr(b'\r', rest) {
                let keep_cr = rest.get(i + 1) != Some(&b'\n');
                self.arena.extend_from_slice(&rest[..i + keep_cr as usize]);
                rest = &rest[i + 1..];
            }
            self.arena.extend_from_slice(rest);
            Span { start: a as u32, end: self.arena.len() as u32, in_arena: true }
        } else {
            Span { start: start as u32, end: close as u32, in_arena: false }
        };
        self.after_quote(data, start, close, line).map(|next| (span, next))
    }

    /// `"…"`: may span lines; escapes `\\ \" \n \t \r \$`, any other backslash
    /// is kept; the CR of a CRLF inside is dropped, as in single quotes.
    fn double_quoted(&mut self, data: &[u8], start: usize, line: usize) -> Result<(Span, usize), ParseError> {
        let unclosed = ParseError { line, problem: Problem::UnclosedDoubleQuote };
        // Fast path: no escape and no CR before the closing quote.
        let first = memchr3(b'"', b'\\', b'\r', &data[start..]).ok_or(unclosed)? + start;
        if data[first] == b'"' {
            let span = Span { start: start as u32, end: first as u32, in_arena: false };
            return self.after_quote(data, start, first, line).map(|next| (span, next));
        }
        let a = self.arena.len();
        let mut i = start;
        let close = loop {
            let Some(j) = memchr3(b'"', b'\\', b'\r', &data[i..]) else {
                self.arena.truncate(a);
                return Err(unclosed);
            };
            let j = i + j;
            self.arena.extend_from_slice(&data[i..j]);
            match data[j] {
                b'"' => break j,
                b'\r' => {
                    if data.get(j + 1) != Some(&b'\n') {
                        self.arena.push(b'\r');
                    }
                    i = j + 1;
                }
                _ => {
                    let mapped = match data.get(j + 1) {
                        Some(b'\\') => Some(b'\\'),
                        Some(b'"') => Some(b'"'),
                        Some(b'n') => Some(b'\n'),
                        Some(b't') => Some(b'\t'),
                        Some(b'r') => Some(b'\r'),
                        Some(b'$') => Some(b'$'),
                        _ => None,
                    };
                    match mapped {
                        Some(b) => {
                            self.arena.push(b);
                            i = j + 2;
                        }
                        None => {
                            self.arena.push(b'\\');
                            i = j + 1;
                        }
                    }
                }
            }
        };
        let span = Span { start: a as u32, end: self.arena.len() as u32, in_arena: true };
        self.after_quote(data, start, close, line).map(|next| (span, next))
    }

    /// Checks the rest of the line holding the closing quote at `close` (the
    /// quote opened at `start` - 1 on `line`); returns where the next line starts.
    fn after_quote(&self, data: &[u8], start: usize, close: usize, line: usize) -> Result<usize, ParseError> {
        let (end, next) = line_end(data, close + 1);
        if only_comment(&data[close + 1..end]) {
            Ok(next)
        } else {
            let line = line + count_lines(&data[start..close]);
            Err(ParseError { line, problem: Problem::TextAfterQuote })
        }
    }

    fn span_bytes<'s>(&'s self, data: &'s [u8], span: Span) -> &'s [u8] {
        let buf = if span.in_arena { &self.arena } else { data };
        &buf[span.start as usize..span.end as usize]
    }

    fn name_of(&self, e: &Entry) -> &[u8] {
        &self.data[e.name_start as usize..e.name_start as usize + e.name_len as usize]
    }

    fn value_of(&self, e: &Entry) -> &[u8] {
        let buf = if e.flags & IN_ARENA != 0 { &self.arena } else { &self.data };
        &buf[e.value_start as usize..e.value_start as usize + e.value_len as usize]
    }

    /// Every entry in file order, duplicates included: (name, value, line).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8], u32)> + '_ {
        self.entries.iter().map(move |e| (self.name_of(e), self.value_of(e), e.line))
    }

    /// The file's final key set: each name once, at the place of its first
    /// occurrence, with the value and line of its last (the last occurrence
    /// wins). Importing this instead of every line bounds the work of an
    /// import by the number of distinct names, however many duplicates the
    /// file holds (docs/security.md).
    pub fn unique(&self) -> impl Iterator<Item = (&[u8], &[u8], u32)> + '_ {
        self.unique_order().iter().map(move |&i| {
            let e = &self.entries[i as usize];
            (self.name_of(e), self.value_of(e), e.line)
        })
    }

    /// [`EnvFile::unique`] with the [`crate::index::hash`] of each name and,
    /// where the file holds it, the place of its `NAME=VALUE\0`.
    pub fn unique_keys(&self) -> impl Iterator<Item = Key<'_>> + '_ {
        let keys = self.keys();
        keys.order.iter().zip(&keys.hashes).map(move |(&i, &hash)| {
            let e = &self.entries[i as usize];
            let in_place = (e.flags & IN_PLACE != 0).then_some(e.name_start as usize);
            Key { name: self.name_of(e), hash, value: self.value_of(e), line: e.line, in_place }
        })
    }

    /// The file's bytes, with a NUL written after each `NAME=VALUE` that
    /// [`Key::in_place`] points at (over a blank or line ending no name or
    /// value holds): the environment's `envp` points there instead of copying
    /// the file (docs/performance.md).
    pub fn raw(&self) -> &[u8] {
        &self.data
    }

    /// The bytes of the names and values of [`EnvFile::unique`] (what an import charges).
    pub fn unique_bytes(&self) -> usize {
        self.keys.bytes
    }

    /// Names given more than once (the last wins): how many times a name
    /// was given again, and the lines of the first such pair.
    pub fn duplicates(&self) -> Option<(u32, u32, u32)> {
        let (count, first) = self.keys.duplicates;
        first.map(|(a, b)| (a, b, count))
    }

    /// How many distinct names the file has.
    pub fn unique_len(&self) -> usize {
        self.unique_order().len()
    }

    /// For each distinct name, in order of first occurrence, the index of its last entry.
    fn unique_order(&self) -> &[u16] {
        &self.keys().order
    }

    fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The bytes its names and values are read from: at least those of its final key set.
    pub fn bytes(&self) -> usize {
        self.data.len() + self.arena.len()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key` and its line; the last occurrence wins.
    pub fn get(&self, key: &[u8]) -> Option<(&[u8], u32)> {
        let Keys { index, order, hashes, .. } = self.keys();
        let k = index.get(key, |k| hashes[k as usize], |k| self.name_of(&self.entries[order[k as usize] as usize]))?;
        let e = &self.entries[order[k as usize] as usize];
        Some((self.value_of(e), e.line))
    }
}

/// `export` followed by blanks before a name is ignored (but `export=1` and
/// `export = 1` set a variable named `export`).
fn strip_export(text: &[u8]) -> &[u8] {
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
/// one right after `=`), blanks trimmed on both sides.
fn unquoted(after_eq: &[u8]) -> &[u8] {
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
    trim_end(trim_start(&after_eq[..end]))
}

#[cfg(test)]
mod tests;
