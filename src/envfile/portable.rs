//! The portable form of an env file (`kubectl envshim fmt`, and the portability lint
//! of `check --env-grammar kubelet`): the file rewritten so that the
//! kubelet's grammar and envshim's both read from it exactly the variables
//! envshim's grammar reads from the original. Each entry becomes
//! `NAME='VALUE'` (no `export`, no blanks around the name or after `=`),
//! followed by the comment it had; a name given more than once is written
//! once, where it is first given (its place in the environment envshim's
//! grammar gives), with the entry envshim's grammar reads (the last: the
//! kubelet reads the first); blank and comment lines stay as they are. Read
//! with envshim's own parser, entry by entry, so a `#` line inside a quoted
//! value stays in it.
//!
//! Some values have no form in the kubelet's grammar: one holding `'` (its
//! single quotes have no escape), the empty value (`K=''` is a key it does
//! not find), one holding CR LF (its reader ends a line there); nor has a
//! name that `export` hid (`export #A=1`, `export export A=1`: without it, a
//! comment, or another name). Those lines
//! are reported ([`Inexpressible`]), and so is a result its reader or
//! envshim's limit refuses. Never a value in a message.

use std::fmt;
use std::ops::Range;

use memchr::{memchr, memmem, memrchr};

use super::general::{self, Read};
use super::kubelet;
use super::lex::{self, is_blank, line_end, trim_start};
use super::{EnvFile, Line, ParseError};
use crate::index::NameIndex;
use crate::limits::MAX_ENV_FILE_BYTES;

/// A line's changes ([`Fix::changes`], bits): `export` dropped.
pub const EXPORT: u8 = 1;
/// The blanks between the name and `=` removed.
pub const BLANK_BEFORE: u8 = 2;
/// The blanks between `=` and the value removed.
pub const BLANK_AFTER: u8 = 4;
/// The value put in single quotes (it was unquoted or double-quoted).
pub const QUOTES: u8 = 8;

/// Why a file cannot be written in the kubelet's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inexpressible {
    /// A value holding `'`.
    Quote,
    /// The empty value.
    Empty,
    /// A value holding a CR right before a line feed.
    CrLf,
    /// A name (after `export`) that, written first on its line, reads
    /// otherwise: starting with `#` (a comment) or `export` and a blank.
    Name,
    /// The result would be a line the kubelet's reader refuses.
    LongLine,
    /// The result would be over the file limit (quotes added).
    TooLarge,
}

impl fmt::Display for Inexpressible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inexpressible::Quote => f.write_str(
                "the value holds a single quote ('), which the kubelet's grammar cannot express (its quotes have no escape): \
                 keep the value out of this file (a key of its own in a Secret or ConfigMap, or a file of its own read with \
                 --file-env NAME, NAME_FILE), or store it base64-encoded",
            ),
            Inexpressible::Empty => f.write_str(
                "the value is empty, which the kubelet's grammar cannot express (it reads NAME='' as a key it does not find): \
                 give it a value, set it in the pod's env instead (value: \"\"), or remove the line if the program treats an unset variable as empty",
            ),
            Inexpressible::CrLf => f.write_str(
                "the value holds a carriage return before a line feed, which the kubelet's reader takes for a line ending: \
                 keep the value in a file of its own (--file-env NAME, NAME_FILE), or store it base64-encoded",
            ),
            Inexpressible::Name => f.write_str(
                "the name (after 'export') starts with '#' or with 'export' and a blank, so that written alone it reads as a \
                 comment or as another name: give the variable another name",
            ),
            Inexpressible::LongLine => write!(
                f,
                "a line of {} bytes or more without a line feed, which the kubelet's reader refuses (token too long): end it with a line feed, or split the file",
                kubelet::SCANNER_MAX_TOKEN
            ),
            Inexpressible::TooLarge => write!(f, "with its values in single quotes the file is larger than {MAX_ENV_FILE_BYTES} bytes: split it"),
        }
    }
}

/// A line the rewriting changes, or cannot write (line 0: the whole file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fix {
    pub line: u32,
    /// [`EXPORT`], [`BLANK_BEFORE`], [`BLANK_AFTER`], [`QUOTES`].
    pub changes: u8,
    /// The name's first line, given again: the line envshim's grammar reads
    /// (the last), whose entry is written here (the later ones are removed).
    pub again: Option<u32>,
    pub cannot: Option<Inexpressible>,
}

/// What the lint says of a line: every change it needs, or why it cannot be written.
impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = self.cannot {
            return why.fmt(f);
        }
        if let Some(last) = self.again {
            return write!(
                f,
                "the name is given again on line {last} (its last): the kubelet reads this line, envshim's grammar line {last} \
                 (kubectl envshim fmt writes line {last}'s entry here and removes the later lines of the name)"
            );
        }
        let needs: Vec<&str> = [
            (EXPORT, "no 'export' (it reads it as part of the name)"),
            (BLANK_BEFORE, "no blank before '='"),
            (BLANK_AFTER, "no blank after '=' (it reads an empty value there and does not find the key)"),
            (QUOTES, "the value in single quotes, NAME='value'"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.changes & bit != 0)
        .map(|(_, what)| what)
        .collect();
        write!(f, "the kubelet's grammar needs {} (kubectl envshim fmt makes these changes)", needs.join("; "))
    }
}

/// A file in the portable form, and the lines that took changes.
pub struct Portable {
    pub text: Vec<u8>,
    pub fixes: Vec<Fix>,
}

impl Portable {
    /// The first line that cannot be written in the kubelet's grammar, and why.
    pub fn refused(&self) -> Option<(u32, Inexpressible)> {
        self.fixes.iter().find_map(|f| Some((f.line, f.cannot?)))
    }
}

/// Where each line goes when a name is given more than once: a file's
/// entries are written one by one, then put in order.
#[derive(Default)]
struct Order {
    /// The rewritten text's pieces, in order.
    pieces: Vec<Piece>,
    /// The entries envshim's grammar reads of the names given more than once
    /// (their lines, and where they were written), in the order of their lines.
    last: Vec<(u32, Range<usize>)>,
    /// Where each name is first, found by name.
    first: Vec<Range<usize>>,
    names: NameIndex,
}

/// What an entry is to its name.
enum Role {
    /// Its only line.
    Once,
    /// Its first line, given again: the line of its last.
    First(u32),
    /// A line between its first and its last.
    Between,
    /// Its last line, after its first (whose place it takes).
    Last,
}

enum Piece {
    /// Kept as written: a blank or comment line, the entry of a name given once.
    Kept(Range<usize>),
    /// A name's first line when it is given again: the entry of line `from`
    /// is written in its place, followed by this line's ending.
    Last { from: u32, ending: Range<usize> },
}

/// The portable form of `data`, an env file in envshim's grammar. Err: it
/// does not parse in envshim's grammar (as a read would fail).
pub fn rewrite(data: &[u8]) -> Result<Portable, ParseError> {
    // Which line each name's value comes from (its index answers).
    let file = EnvFile::parse(data.to_vec())?;
    let mut out = Portable { text: Vec::with_capacity(data.len() + data.len() / 8), fixes: Vec::new() };
    // Only for a file that gives a name more than once.
    let mut order = file.duplicates().map(|_| Order::default());
    let (mut arena, mut scratch) = (Vec::new(), Vec::new());
    let (mut pos, mut n, mut last) = (0, 1, 1);
    while pos < data.len() {
        arena.clear();
        let at = out.text.len();
        // (It cannot fail: the whole file parsed.)
        match general::line(data, pos, n, &mut arena)? {
            Read::Skip(next) => {
                out.text.extend_from_slice(&data[pos..next]);
                if let Some(o) = &mut order {
                    o.pieces.push(Piece::Kept(at..out.text.len()));
                }
                (pos, last, n) = (next, n, n + 1);
            }
            Read::Entry(l) => {
                let value = if l.value.in_arena { &arena[..] } else { data };
                let value = &value[l.value.start as usize..l.value.end as usize];
                let read_at = file.get(&data[l.name.clone()]).ok().flatten().map_or(n as u32, |(_, line)| line);
                let (mut fix, ending) = entry(data, pos, &l, value, &mut scratch, &mut out.text, read_at == n as u32);
                fix.line = n as u32;
                let role = match &mut order {
                    Some(o) => o.place(data, l.name.clone(), (n as u32, read_at), at..out.text.len() - ending, ending),
                    None => Role::Once,
                };
                match role {
                    Role::First(last) => fix.again = Some(last),
                    // Removed, and read by neither grammar: nothing to say of it.
                    Role::Between => fix = Fix { line: n as u32, changes: 0, again: None, cannot: None },
                    Role::Once | Role::Last => {}
                }
                if fix.changes != 0 || fix.again.is_some() || fix.cannot.is_some() {
                    out.fixes.push(fix);
                }
                if fix.again.is_none() {
                    last = n;
                }
                (pos, n) = (l.next, n + l.lines);
            }
        }
    }
    if let Some(o) = order {
        out.text = o.assemble(&out.text);
    }
    // Within the file's limit only the last line can be too long for the
    // kubelet's reader (one without a line feed), and only when it is the
    // only line: the line of what was written last.
    let last_line = memrchr(b'\n', &out.text).map_or(0, |i| i + 1);
    let whole = if out.text.len() > MAX_ENV_FILE_BYTES {
        Some((0, Inexpressible::TooLarge))
    } else {
        kubelet::too_long(&out.text, last_line, out.text.len()).then_some((last as u32, Inexpressible::LongLine))
    };
    if let Some((line, why)) = whole {
        out.fixes.push(Fix { line, changes: 0, again: None, cannot: Some(why) });
    }
    Ok(out)
}

impl Order {
    /// Places the entry of line `n` (its name at `name`, read from line
    /// `read_at`), written as `body` then `ending` bytes.
    fn place(&mut self, data: &[u8], name: Range<usize>, (n, read_at): (u32, u32), body: Range<usize>, ending: usize) -> Role {
        let new = self.first.len() as u32;
        let first = &self.first;
        if self.names.get_or_insert(&data[name.clone()], new, |i| &data[first[i as usize].clone()]).is_ok() {
            if read_at != n {
                return Role::Between;
            }
            self.last.push((n, body));
            return Role::Last;
        }
        self.first.push(name);
        if read_at == n {
            self.pieces.push(Piece::Kept(body.start..body.end + ending));
            return Role::Once;
        }
        self.pieces.push(Piece::Last { from: read_at, ending: body.end..body.end + ending });
        Role::First(read_at)
    }

    /// The text in order, from the entries written in `text`.
    fn assemble(self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        for piece in self.pieces {
            match piece {
                Piece::Kept(r) => out.extend_from_slice(&text[r]),
                Piece::Last { from, ending } => {
                    // Every name's last line was placed (it follows its first).
                    if let Ok(i) = self.last.binary_search_by_key(&from, |(line, _)| *line) {
                        out.extend_from_slice(&text[self.last[i].1.clone()]);
                    }
                    out.extend_from_slice(&text[ending]);
                }
            }
        }
        out
    }
}

/// Writes the entry `l` (starting at `pos`, its value `value`) to `out` in
/// the portable form: what it took (its line left 0 for the caller), and the
/// bytes of its line ending, written last. `read`: envshim's grammar reads
/// this line (not a later one of its name), whose value must have a form.
fn entry(data: &[u8], pos: usize, l: &Line, value: &[u8], scratch: &mut Vec<u8>, out: &mut Vec<u8>, read: bool) -> (Fix, usize) {
    let (end, _) = line_end(data, pos);
    let text = trim_start(&data[pos..end]);
    let blanks_from = |i: usize| data[i..end].iter().take_while(|&&b| is_blank(b)).count();
    let mut changes = if lex::strip_export(text).len() != text.len() { EXPORT } else { 0 };
    // The parse found `=` after the name and its blanks, then the value after blanks.
    let eq = l.name.end + blanks_from(l.name.end);
    let v = eq + 1 + blanks_from(eq + 1);
    changes |= if eq > l.name.end { BLANK_BEFORE } else { 0 } | if v > eq + 1 { BLANK_AFTER } else { 0 };
    // What follows the value on its last line (blanks, a comment), and that line's ending.
    let (tail, ending): (&[u8], &[u8]) = match data.get(v) {
        Some(&q @ (b'\'' | b'"')) => {
            changes |= if q == b'"' { QUOTES } else { 0 };
            scratch.clear();
            let close = match q {
                b'\'' => memchr(b'\'', &data[v + 1..]).map(|i| v + 1 + i),
                _ => lex::unescape(data, v + 1, scratch),
            };
            let close = close.unwrap_or(l.next - 1);
            let (tail_end, next) = line_end(data, close + 1);
            (&data[close + 1..tail_end], &data[tail_end..next])
        }
        _ => {
            changes |= QUOTES;
            // The comment that ended the value, if one did.
            (lex::unquoted(&data[eq + 1..end]).1, &data[end..l.next])
        }
    };
    let name = &data[l.name.clone()];
    let cannot = if !read {
        None
    } else if lex::holds_nothing(name) || lex::starts_with_export(name) {
        Some(Inexpressible::Name)
    } else if value.is_empty() {
        Some(Inexpressible::Empty)
    } else if memchr(b'\'', value).is_some() {
        Some(Inexpressible::Quote)
    } else if memmem::find(value, b"\r\n").is_some() {
        Some(Inexpressible::CrLf)
    } else {
        None
    };
    out.extend_from_slice(name);
    out.extend_from_slice(b"='");
    out.extend_from_slice(value);
    out.push(b'\'');
    if !tail.is_empty() && changes & QUOTES != 0 && !is_blank(tail[0]) {
        // An unquoted value's comment, cut from it by a blank: one blank before it.
        out.push(b' ');
    }
    out.extend_from_slice(tail);
    out.extend_from_slice(ending);
    (Fix { line: 0, changes, again: None, cannot }, ending.len())
}

/// Whether a value looks like an env file (a hint's test, not a parse:
/// src/hints.rs): every line that is not blank or a comment is `NAME=...`
/// (`export NAME=...`), and there is one.
pub fn looks_like_env_file(value: &[u8]) -> bool {
    let mut any = false;
    for line in value.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let line = line.strip_prefix(b"export ").unwrap_or(line);
        let name = line.iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        if name == 0 || line[0].is_ascii_digit() || line.get(name) != Some(&b'=') {
            return false;
        }
        any = true;
    }
    any
}
