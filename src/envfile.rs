//! The env-file grammar (docs/reference.md §4): a superset of the kubelet's.
//!
//! A parsed file keeps its bytes; names and the values that need no rewriting
//! are spans of them, and values that do (escapes, CRLF inside quotes) go to
//! one arena, so parsing allocates a handful of buffers, not one per entry.

use std::fmt;

use memchr::memchr;

use crate::index::{SmallIndex, SMALL_MAX};
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_NAME_BYTES, MAX_VALUE_BYTES};
use keys::Keys;

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
    /// The kubelet's grammar: `NAME =…`.
    BlankBeforeEquals,
    /// The kubelet's grammar: a value that does not start with `'` (`K=v`, `K="v"`, `K=`).
    NotSingleQuoted,
    /// The kubelet's grammar: a line its reader (Go's `bufio.Scanner`) refuses as too long.
    LineTooLong,
}

/// A parse failure: what and on which line (1-based; 0 for the whole file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub problem: Problem,
}

/// What is wrong, as the end of a sentence about the file or its line.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Problem::*;
        let what = match self {
            TooLarge => return write!(f, "is larger than {MAX_ENV_FILE_BYTES} bytes"),
            NameTooLong => return write!(f, "name is longer than {MAX_NAME_BYTES} bytes"),
            ValueTooLong => return write!(f, "value is longer than {MAX_VALUE_BYTES} bytes"),
            ByteOrderMark => "starts with a UTF-8 byte-order mark (save the file without a BOM)",
            InvalidUtf8 => "is not valid UTF-8",
            NoEquals => "has no '=' (expected NAME=VALUE)",
            EmptyName => "has an empty name",
            InvalidName => "has an invalid name (allowed: printable ASCII except '=')",
            NulInValue => "has a value containing a NUL byte",
            UnclosedSingleQuote => "opens a single quote that is never closed",
            UnclosedDoubleQuote => "opens a double quote that is never closed",
            TextAfterQuote => "has text after a closing quote (only blanks or a # comment may follow)",
            BlankBeforeEquals => "has a blank before '=', which the kubelet's grammar does not allow (write NAME='value')",
            LineTooLong => {
                return write!(
                    f,
                    "is a line of {} bytes or more without a line feed, which the kubelet's reader refuses (token too long)",
                    kubelet::SCANNER_MAX_TOKEN
                )
            }
            NotSingleQuoted => {
                "has a value not enclosed in single quotes, which the kubelet's grammar requires (write NAME='value'; \
                 --env-grammar envshim also reads unquoted and double-quoted values)"
            }
        };
        f.write_str(what)
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.problem),
            n => write!(f, "line {n}: {}", self.problem),
        }
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
/// The kubelet's grammar: a key it does not find (`K=''`, `K= …`); it hides
/// the name's later lines all the same.
const ABSENT: u8 = 4;

/// How env files are read (`--env-grammar`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Grammar {
    /// envshim's: a superset of the kubelet's, the whole file checked, the last occurrence of a name wins.
    #[default]
    Envshim,
    /// The kubelet's, exactly ([`kubelet`]).
    Kubelet,
}

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
    /// The kubelet's grammar: the first line it fails on (the entries are
    /// those before it: the kubelet finds a key there and reads no further).
    stop: Option<ParseError>,
    /// `stop` was reported (by [`EnvFile::report_stop`]): once a file, however many entries read it.
    stop_reported: std::cell::Cell<bool>,
    /// Every name passed the relaxed rule (envshim's grammar checks them all; the kubelet's none).
    names_relaxed: bool,
    /// The unquoted values a ` #` comment ended: how many, and the first one's entry.
    cut: (u32, Option<u32>),
}

/// The average bytes of a line that [`EnvFile::parse`] makes room for (its
/// entries' vector grows past that): generated files of long keys and values
/// (the benchmark's lines are 65 bytes) fit, and a file of shorter lines costs
/// a copy or two of its entries: as few page faults as counting the lines first.
const BYTES_PER_ENTRY: usize = 64;

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
    /// An unquoted value that a ` #` comment ended (`PW=abc #def` is `abc`).
    cut: bool,
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

/// The checks of the whole file, before its lines: size, BOM, UTF-8.
fn check_whole(data: &[u8]) -> Result<(), ParseError> {
    let err = |line: usize, problem| Err(ParseError { line, problem });
    if data.len() > MAX_ENV_FILE_BYTES {
        return err(0, Problem::TooLarge);
    }
    if data.starts_with(b"\xEF\xBB\xBF") {
        return err(1, Problem::ByteOrderMark);
    }
    // ASCII first (most env files): a quicker loop than the UTF-8 check's.
    if !data.is_ascii() {
        if let Err(e) = std::str::from_utf8(data) {
            return err(1 + lex::count_lines(&data[..e.valid_up_to()]), Problem::InvalidUtf8);
        }
    }
    Ok(())
}

impl EnvFile {
    /// No entry yet, room for `entries`.
    fn empty(entries: usize) -> EnvFile {
        EnvFile {
            arena: Vec::new(),
            entries: Vec::with_capacity(entries),
            keys: Keys { index: SmallIndex::default(), order: Vec::new(), hashes: Vec::new(), bytes: 0, duplicates: (0, None), absent: 0 },
            data: Vec::new(),
            stop: None,
            stop_reported: std::cell::Cell::new(false),
            names_relaxed: true,
            cut: (0, None),
        }
    }

    /// Parses a whole file with envshim's grammar: an error on any line fails the file.
    pub fn parse(data: Vec<u8>) -> Result<EnvFile, ParseError> {
        EnvFile::parse_as(data, Grammar::Envshim)
    }

    /// Reads a file as the kubelet does ([`kubelet`]): up to the first line
    /// it fails on ([`EnvFile::stop`]), the first occurrence of a name winning.
    /// Err only for a file over the size limit.
    pub fn parse_kubelet(data: Vec<u8>) -> Result<EnvFile, ParseError> {
        EnvFile::parse_as(data, Grammar::Kubelet)
    }

    /// Parses a file as `grammar` says: its entries, then its key set.
    // One place builds the key set: called from two, `Keys::new` was no
    // longer inlined, and a start-up took more instructions
    // (docs/performance.md, the kubelet's grammar).
    pub fn parse_as(mut data: Vec<u8>, grammar: Grammar) -> Result<EnvFile, ParseError> {
        // Room for the entries of a file of lines of BYTES_PER_ENTRY bytes
        // on average (it grows past that): no pass over the file to count its
        // lines first.
        let mut file = EnvFile::empty(data.len() / BYTES_PER_ENTRY + 16);
        match grammar {
            Grammar::Envshim => file.read(&mut data)?,
            Grammar::Kubelet => file.read_kubelet(&data)?,
        }
        file.keys = Keys::new(&data, &file.entries);
        if grammar == Grammar::Kubelet {
            if file.keys.duplicates.0 > 0 {
                file.keys.first_wins(&data, &file.entries);
            }
            file.keys.absent_last(&data, &file.entries);
        }
        file.data = data;
        Ok(file)
    }

    /// The entries of `data` in envshim's grammar. Each line is tried by
    /// the fast path first, then read by the general parser.
    fn read(&mut self, data: &mut [u8]) -> Result<(), ParseError> {
        check_whole(data)?;
        let (mut pos, mut line) = (0, 1);
        while pos < data.len() {
            let parsed = match fast::one_line(data, pos) {
                Some(parsed) => parsed,
                None => match general::line(data, pos, line, &mut self.arena)? {
                    general::Read::Entry(parsed) => {
                        // Kept apart from the entries' flags: a flag set in
                        // every line's store slowed the start-up path
                        // (docs/performance.md, the kubelet's grammar).
                        if parsed.cut {
                            self.cut.0 += 1;
                            self.cut.1.get_or_insert(self.entries.len() as u32);
                        }
                        parsed
                    }
                    general::Read::Skip(next) => {
                        pos = next;
                        line += 1;
                        continue;
                    }
                },
            };
            let (next, lines) = (parsed.next, parsed.lines);
            self.add(data, parsed, line)?;
            (pos, line) = (next, line + lines);
        }
        Ok(())
    }

    /// The entries of `data` as the kubelet reads them, up to the first line it fails on.
    #[inline(never)]
    fn read_kubelet(&mut self, data: &[u8]) -> Result<(), ParseError> {
        if data.len() > MAX_ENV_FILE_BYTES {
            return Err(ParseError { line: 0, problem: Problem::TooLarge });
        }
        let (mut pos, mut line) = (0, 1);
        while pos < data.len() {
            let (read, next) = kubelet::line(data, pos, line, &mut self.arena);
            match read {
                Err(e) => {
                    self.stop = Some(e);
                    break;
                }
                Ok(None) => line += 1,
                Ok(Some(l)) => {
                    let name = &data[l.name.clone()];
                    self.names_relaxed &= crate::names::is_relaxed(name);
                    let (value, flags) = match l.value {
                        Some(v) => (v, if v.in_arena { IN_ARENA } else { 0 }),
                        None => (Span { start: 0, end: 0, in_arena: false }, ABSENT),
                    };
                    self.entries.push(Entry {
                        name_start: l.name.start as u32,
                        value_start: value.start,
                        line: line as u32,
                        value_len: (value.end - value.start) as u16,
                        name_len: name.len() as u8,
                        flags,
                    });
                    line += l.lines;
                }
            }
            pos = next;
        }
        Ok(())
    }

    /// The kubelet's grammar: the first line the kubelet fails on, where it
    /// stopped reading (None: the whole file was read).
    pub fn stop(&self) -> Option<ParseError> {
        self.stop
    }

    /// True the first time it is asked: whether to report [`EnvFile::stop`]
    /// (once a file, as a file that does not parse is).
    pub fn report_stop(&self) -> bool {
        !self.stop_reported.replace(true)
    }

    /// Every name passed the relaxed rule.
    pub fn names_relaxed(&self) -> bool {
        self.names_relaxed
    }

    /// Checks the entry `parsed` found on `line` and stores it.
    fn add(&mut self, data: &mut [u8], parsed: Line, line: usize) -> Result<(), ParseError> {
        let Line { name, value, checked, in_place, next, .. } = parsed;
        let value_len = value.end as usize - value.start as usize;
        if !checked {
            let err = |problem| Err(ParseError { line, problem });
            if value_len > MAX_VALUE_BYTES {
                return err(Problem::ValueTooLong);
            }
            if memchr(0, self.span_bytes(data, value)).is_some() {
                return err(Problem::NulInValue);
            }
        }
        if self.entries.len() == self.entries.capacity() {
            grow(&mut self.entries, data.len() - next);
        }
        self.entries.push(Entry {
            name_start: name.start as u32,
            value_start: value.start,
            line: line as u32,
            value_len: value_len as u16,
            name_len: name.len() as u8,
            flags: if value.in_arena {
                IN_ARENA
            } else if in_place {
                IN_PLACE
            } else {
                0
            },
        });
        // `NAME=VALUE` as written, with a byte after it that no span holds
        // (a blank, CR or LF ending an unquoted value, a closing quote): a
        // NUL goes there, and `execve` can take the string in place. The
        // parse reads nothing before `next` again.
        if in_place {
            data[value.end as usize] = 0;
        }
        Ok(())
    }

    fn span_bytes<'s>(&'s self, data: &'s [u8], span: Span) -> &'s [u8] {
        let buf = if span.in_arena { &self.arena } else { data };
        &buf[span.start as usize..span.end as usize]
    }

    #[inline]
    fn name_of(&self, e: &Entry) -> &[u8] {
        &self.data[e.name_start as usize..e.name_start as usize + e.name_len as usize]
    }

    #[inline]
    fn value_of(&self, e: &Entry) -> &[u8] {
        let buf = if e.flags & IN_ARENA != 0 { &self.arena } else { &self.data };
        &buf[e.value_start as usize..e.value_start as usize + e.value_len as usize]
    }

    /// The entries whose unquoted value a ` #` comment ended: the first one's
    /// name and line, and how many there are.
    pub fn cut_at_comment(&self) -> Option<(&[u8], u32, usize)> {
        let (count, first) = self.cut;
        let first = &self.entries[first? as usize];
        Some((self.name_of(first), first.line, count as usize))
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
        keys.order[..keys.order.len() - keys.absent].iter().zip(&keys.hashes).map(move |(&i, &hash)| {
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

    /// How many distinct names the file gives a value.
    pub fn unique_len(&self) -> usize {
        self.unique_order().len()
    }

    /// For each distinct name, in order of first occurrence, the index of its last entry.
    fn unique_order(&self) -> &[u16] {
        let keys = self.keys();
        &keys.order[..keys.order.len() - keys.absent]
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

    /// The value of `key` and its line (the last occurrence wins; in the
    /// kubelet's grammar the first), or None. Err: the kubelet's grammar, and
    /// the kubelet fails on a line before any holding `key`.
    pub fn get(&self, key: &[u8]) -> Result<Option<(&[u8], u32)>, ParseError> {
        let Keys { index, order, hashes, .. } = self.keys();
        let Some(k) = index.get(key, |k| hashes[k as usize], |k| self.name_of(&self.entries[order[k as usize] as usize])) else {
            return self.stop.map_or(Ok(None), Err);
        };
        let e = &self.entries[order[k as usize] as usize];
        Ok((e.flags & ABSENT == 0).then(|| (self.value_of(e), e.line)))
    }
}

mod fast;
mod general;
mod keys;
pub mod kubelet;
mod lex;
pub use lex::written;
pub mod portable;
#[cfg(any(test, fuzzing))]
pub mod reference;
mod scan;
#[cfg(test)]
mod tests;
