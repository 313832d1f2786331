//! The manifest: a subset of the Kubernetes core/v1 `Container` (SPEC §3).
//!
//! A small JSON reader (accepting what serde_json accepts; a syntax error
//! is told by its line and column) reads the document straight into
//! the typed [`Manifest`], in one pass and with no tree: each object of the
//! schema keeps the last value of each of its fields as it is read, and is
//! checked when it closes, so every schema error names its JSON path
//! (`env[3].valueFrom.fileKeyRef.key`) and no error ever quotes a value.
//! Unknown top-level fields are ignored (a pasted container spec has many);
//! unknown fields below are typos, hence errors.
//!
//! A field given twice takes its last value (what the first held is not
//! checked); an object's errors come in the schema's order, unknown fields
//! first and sorted, then its fields', then those of the object below it
//! (`valueFrom`, `fileRef`), each buffered until its parent knows it is used.
//! Strings are slices of the input (unless they hold an escape), and the
//! `Manifest` keeps them so (`Cow`): 500 copies were 2% of a start-up. A
//! key is first tested against the schema's names on the input, without a
//! scan (`Reader::named`); whitespace, strings and keys are read eight
//! bytes at a time (the reader went from ~570 K to ~280 K instructions on
//! the 24 KiB workload manifest).
//! A tree (first serde_json's `Value`, then one of this reader's) and its
//! walk were half, then a third, of a start-up's instructions
//! (docs/performance.md).

use std::borrow::Cow;
use std::fmt;

use crate::error::{escape, At, Error};
use crate::names::{HIGH, ONES};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount<'a> {
    pub name: Cow<'a, str>,
    pub mount_path: Cow<'a, str>,
}

/// A file inside a volume: `fileKeyRef` and `fileRef` share these fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef<'a> {
    pub volume_name: Cow<'a, str>,
    pub path: Cow<'a, str>,
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFrom<'a> {
    /// `fileRef`: every key of the file, prefixed.
    File { file: FileRef<'a>, prefix: Cow<'a, str> },
    /// `configMapRef` / `secretRef`: resolved by the platform.
    Platform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource<'a> {
    /// A literal, expanded; an entry with neither `value` nor `valueFrom` is `Value("")`.
    Value(Cow<'a, str>),
    FileKey {
        file: FileRef<'a>,
        key: Cow<'a, str>,
    },
    /// `configMapKeyRef`, `secretKeyRef`, `fieldRef`, `resourceFieldRef`.
    Platform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar<'a> {
    pub name: Cow<'a, str>,
    pub source: EnvSource<'a>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest<'a> {
    pub volume_mounts: Vec<VolumeMount<'a>>,
    pub env_from: Vec<EnvFrom<'a>>,
    pub env: Vec<EnvVar<'a>>,
    /// Empty when absent: Kubernetes treats `command: []` as unset too.
    pub command: Vec<Cow<'a, str>>,
    pub args: Vec<Cow<'a, str>>,
}

/// Parses a manifest; every schema problem is reported, each naming its path.
pub fn parse(bytes: &[u8]) -> Result<Manifest<'_>, Vec<Error>> {
    parse_named(bytes, "", None)
}

/// Parses the manifest `shown` (as messages name it: `./m.json`,
/// `--manifest-json`; "" for none): a container spec, or with `container`
/// that container of a Pod, a workload or a `List` (SPEC §3). A container
/// spec pays one test: a whole object reads as a container spec with
/// nothing in it (all its fields are unknown at the top level), and only
/// then is the document looked into again.
#[inline(never)] // called once; a frame of its own for profiles
pub fn parse_named<'a>(bytes: &'a [u8], shown: &str, container: Option<&[u8]>) -> Result<Manifest<'a>, Vec<Error>> {
    let mut errors = Vec::new();
    let manifest = read(bytes, |r| r.manifest(&mut errors)).map_err(|e| vec![syntax_error(bytes, shown, e)])?;
    let m = &manifest;
    let empty = m.volume_mounts.is_empty() && m.env_from.is_empty() && m.env.is_empty() && m.command.is_empty() && m.args.is_empty();
    if container.is_some() || empty {
        return select::select(bytes, shown, container, manifest, errors);
    }
    if errors.is_empty() {
        Ok(manifest)
    } else {
        Err(name_errors(errors, shown, ""))
    }
}

/// How a manifest is named in messages: `manifest ./m.json`, or `manifest` when unnamed.
pub fn display(shown: &str) -> String {
    if shown.is_empty() {
        "manifest".to_string()
    } else {
        format!("manifest {shown}")
    }
}

/// The schema errors, each given the manifest's name and the path of the
/// container they are in (`prefix`, ending in `.`; "" for the document).
#[cold]
fn name_errors(errors: Vec<Error>, shown: &str, prefix: &str) -> Vec<Error> {
    let name = display(shown);
    errors
        .into_iter()
        .map(|mut e| {
            let path = format!("{prefix}{}", e.at.as_ref().and_then(|a| a.path.as_deref()).unwrap_or(""));
            let path = path.strip_suffix('.').unwrap_or(&path).to_string();
            e.message = if path.is_empty() { format!("{name}: {}", e.message) } else { format!("{name}: {path}: {}", e.message) };
            e.at = Some(Box::new(At { path: Some(path), file: (!shown.is_empty()).then(|| shown.to_string()), line: 0 }));
            e
        })
        .collect()
}

/// A manifest that is not JSON: where (`e`), or what to do
/// when it looks like YAML (a key and a colon, or `---`, where JSON has `{`).
#[cold]
fn syntax_error(bytes: &[u8], shown: &str, (e, line): (String, usize)) -> Error {
    let name = display(shown);
    let mut error = if looks_like_yaml(bytes) {
        Error::config(format!(
            "{name} is not valid JSON: it looks like YAML; convert it (yq -o json FILE, or kubectl create --dry-run=client -o json -f FILE for a whole object)"
        ))
    } else {
        Error::config(format!("{name} is not valid JSON: {e}"))
    };
    error.at = Some(Box::new(At { path: None, file: (!shown.is_empty()).then(|| shown.to_string()), line }));
    error
}

/// Whether a document that is not JSON looks like YAML: it does not start
/// with `{` or `[`, and its first line that is not blank or a comment is
/// `---` or starts with `KEY:` or `- `.
fn looks_like_yaml(bytes: &[u8]) -> bool {
    let Some(first) = bytes.split(|&b| b == b'\n').map(|l| l.trim_ascii()).find(|l| !l.is_empty() && !l.starts_with(b"#")) else {
        return false;
    };
    if first.starts_with(b"{") || first.starts_with(b"[") {
        return false;
    }
    let key = first.iter().position(|&b| b == b':').is_some_and(|c| {
        c > 0 && first[..c].iter().all(|&b| b.is_ascii_alphanumeric() || b"_-.\"'/".contains(&b)) && first.get(c + 1).is_none_or(|&b| b == b' ' || b == b'\t')
    });
    key || first.starts_with(b"---") || first.starts_with(b"- ")
}

/// A JSON value, as [`Reader::value`] reads it; strings borrow from the input
/// unless they hold an escape. Numbers are kept only as "a number": no field
/// of the schema is one. Only the tests keep a whole tree: envshim reads a
/// value this way only to skip it (an unknown top-level field, a value of
/// the wrong kind), and keeps its kind, for a message.
#[allow(dead_code)] // the payloads: envshim reads only the kinds, the tests some of them
enum Json<'a> {
    Null,
    Bool(bool),
    Number,
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// One JSON document, as a tree: what the tests compare with serde_json.
#[cfg(test)]
fn parse_json(bytes: &[u8]) -> Result<Json<'_>, String> {
    read(bytes, |r| r.value(true)).map_err(|(e, _)| e)
}

/// Reads `bytes` as one JSON document with `f`. A syntax error is described
/// by where the reader stopped: its line and column (in bytes). (serde_json
/// parsing the document again for its message was 11 KB of the binary.)
fn read<'a, T>(bytes: &'a [u8], f: impl FnOnce(&mut Reader<'a>) -> Option<T>) -> Result<T, (String, usize)> {
    // Invalid UTF-8 is an error wherever it is (outside a string, any byte
    // over 0x7f is): checked once here, every string is then a slice of `s`.
    let (at, what) = match std::str::from_utf8(bytes) {
        Err(e) => (e.valid_up_to(), "invalid UTF-8"),
        Ok(s) => {
            let mut r = Reader { s, i: 0, depth: 0, items: Vec::new(), fields: Vec::new() };
            match f(&mut r) {
                Some(v) => {
                    r.skip_ws();
                    if r.i == bytes.len() {
                        return Ok(v);
                    }
                    (r.i, "text after the document")
                }
                None if r.depth >= MAX_DEPTH => (r.i.saturating_sub(1), "nested too deep"),
                None if r.i >= bytes.len() => (bytes.len(), "the document ends early"),
                None => (r.i, "syntax error"),
            }
        }
    };
    Err(syntax_at(bytes, at.min(bytes.len()), what))
}

/// `WHAT at line L column C` for byte `at` of `bytes`, and L.
#[cold]
fn syntax_at(bytes: &[u8], at: usize, what: &str) -> (String, usize) {
    let before = &bytes[..at];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + at - before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (format!("{what} at line {line} column {column}"), line)
}

/// A JSON reader accepting exactly what serde_json accepts (RFC 8259, at
/// most [`MAX_DEPTH`] nested arrays and objects, numbers finite as `f64`).
/// Every method returns None on a syntax error; `read` tells where.
struct Reader<'a> {
    s: &'a str,
    i: usize,
    depth: usize,
    /// The items and fields of the arrays and objects being read into a
    /// tree (the tests only), nested ones above their parent's; each is moved
    /// to an exact-size `Vec` when it closes.
    items: Vec<Json<'a>>,
    fields: Vec<(Cow<'a, str>, Json<'a>)>,
}

/// serde_json's recursion limit: this many nested arrays and objects are refused.
const MAX_DEPTH: usize = 128;

/// A field's value as read: null, a value of the kind wanted, or the kind of
/// another one. A field not given is None.
enum Got<T> {
    Null,
    Is(T),
    Not(&'static str),
}

type Text<'a> = Option<Got<Cow<'a, str>>>;

/// An object read below another (`valueFrom`, `fileRef`): what it gave, and
/// its errors, reported if its parent uses it.
type Below<T> = (Option<T>, Vec<Error>);

/// How a reader of one item of an array reads it; errors go to the Vec.
type ItemReader<'a, T> = fn(&mut Reader<'a>, &Path, &mut Vec<Error>) -> Option<Option<T>>;

impl<'a> Reader<'a> {
    /// The input as bytes: derived from `s`, so that the compiler knows
    /// them the same (a slice of `s` between two quotes found in them needs
    /// fewer checks).
    #[inline(always)]
    fn b(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b().get(self.i).copied()
    }

    /// Skips whitespace: inline only a single space (`"key": value`) and
    /// the test for none (the next byte is above a space), the common cases
    /// between tokens (a call for the space: ~45 instructions a field).
    #[inline(always)]
    fn skip_ws(&mut self) {
        self.i += usize::from(self.peek() == Some(b' '));
        if !matches!(self.peek(), Some(c) if c > b' ') {
            self.blanks();
        }
    }

    /// Whitespace. The usual run, a line end and an indentation of fewer
    /// than eight spaces, in one word (~20 instructions; a byte loop cost
    /// ~55 a run, 115 K on the 24 KiB workload); the others in [`Reader::more_blanks`].
    fn blanks(&mut self) {
        let i = self.i;
        if let Some(&[b'\n', ref word @ ..]) = self.b().get(i..i + 9) {
            let other = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ (ONES * u64::from(b' '));
            let after = i + 1 + other.trailing_zeros() as usize / 8;
            if other != 0 && self.b().get(after).is_some_and(|&c| c > b' ') {
                self.i = after;
                return;
            }
        }
        self.more_blanks();
    }

    /// Whitespace, eight bytes at a time: spaces and line ends in one word,
    /// a tab or a carriage return one at a time.
    #[inline(never)]
    fn more_blanks(&mut self) {
        const LOW: u64 = ONES * 0x7f;
        // 0x80 in each byte of `x` that is not zero, exactly (no carries across bytes).
        let nonzero = |x: u64| ((x & LOW) + LOW) | x;
        let mut i = self.i;
        while let Some(word) = self.b().get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
            let other = nonzero(w ^ (ONES * u64::from(b' '))) & nonzero(w ^ (ONES * u64::from(b'\n'))) & HIGH;
            if other == 0 {
                i += 8;
                continue;
            }
            i += other.trailing_zeros() as usize / 8;
            if !matches!(self.b().get(i), Some(b'\t' | b'\r')) {
                self.i = i;
                return;
            }
            i += 1;
        }
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b().get(i) {
            i += 1;
        }
        self.i = i;
    }

    /// Consumes `c` after optional whitespace.
    #[inline(always)]
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    /// After an item or a field: a comma (true) or `close` (false).
    #[inline(always)]
    fn more(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let c = self.peek()?;
        self.i += 1;
        (c == b',' || c == close).then_some(c == b',')
    }

    #[inline(always)]
    fn literal<T>(&mut self, word: &[u8], v: T) -> Option<T> {
        let hit = self.b()[self.i..].starts_with(word);
        self.i += word.len();
        hit.then_some(v)
    }

    /// Any value; a tree if `keep` (the tests), else only its kind (arrays
    /// and objects empty).
    fn value(&mut self, keep: bool) -> Option<Json<'a>> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string().map(Json::Str),
            b'{' => {
                let start = self.fields.len();
                self.fields(|r, key| {
                    let v = r.value(keep)?;
                    if keep {
                        r.fields.push((key, v));
                    }
                    Some(())
                })?;
                Some(Json::Object(self.fields.drain(start..).collect()))
            }
            b'[' => {
                let start = self.items.len();
                self.items(|r, _| {
                    let v = r.value(keep)?;
                    if keep {
                        r.items.push(v);
                    }
                    Some(())
                })?;
                Some(Json::Array(self.items.drain(start..).collect()))
            }
            b't' => self.literal(b"true", Json::Bool(true)),
            b'f' => self.literal(b"false", Json::Bool(false)),
            b'n' => self.literal(b"null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn skip(&mut self) -> Option<()> {
        self.value(false).map(drop)
    }

    /// At `{` or `[`: one level deeper, if that is allowed.
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.i += 1;
        (self.depth < MAX_DEPTH).then_some(())
    }

    /// An object, at its `{`: `f` reads each field's value (at its first
    /// byte), given the key.
    fn fields(&mut self, mut f: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
        self.object(|r| {
            let key = r.string()?;
            r.colon()?;
            f(r, key)
        })
    }

    /// An object, at its `{`: `f` reads each field, from its key's opening quote.
    fn object(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.enter()?;
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                (self.peek() == Some(b'"')).then_some(())?;
                f(self)?;
                if !self.more(b'}')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// After a key: the colon, and the whitespace before the value.
    #[inline(always)]
    fn colon(&mut self) -> Option<()> {
        // The usual `: ` before a value, in one test.
        if let Some(&[b':', b' ', c]) = self.b().get(self.i..self.i + 3) {
            if c > b' ' {
                self.i += 2;
                return Some(());
            }
        }
        self.eat(b':').then_some(())?;
        self.skip_ws();
        Some(())
    }

    /// One field of an object of the schema, at its key: `f` reads the
    /// value of a field it knows (true), testing the names it knows with
    /// [`Reader::named`], or leaves it (false). `f` is first given no key,
    /// and tests its names on the input; if none is there as written, the
    /// key is read (it may hold an escape) and given to `f`. Some(the key)
    /// of a field `f` leaves, its value skipped.
    #[inline(always)]
    fn field(&mut self, mut f: impl FnMut(&mut Self, Option<&[u8]>) -> Option<bool>) -> Option<Option<Cow<'a, str>>> {
        // One call of `f` in the code (a loop, not two calls), so that it is inlined.
        let mut key = None;
        loop {
            if f(self, key.as_ref().map(|k: &Cow<str>| k.as_bytes()))? {
                return Some(None);
            }
            if key.is_some() {
                break;
            }
            key = Some(self.read_key()?);
        }
        self.skip()?;
        Some(key)
    }

    /// A key that is not one of the names tried (or has an escape), and its colon.
    #[inline(never)]
    fn read_key(&mut self) -> Option<Cow<'a, str>> {
        let key = self.string()?;
        self.colon()?;
        Some(key)
    }

    /// Whether the field's key is `quoted`, a name of the schema and its
    /// closing quote. With no `key`, tested on the input at the key's
    /// opening quote, and if so the key and its colon are consumed: the
    /// name holds no quote, backslash or control character, so the bytes
    /// `name"` there are that key and no other. A key's scan and a match
    /// on its bytes cost ~100 instructions; this test, a few per name.
    #[inline(always)]
    fn named(&mut self, key: Option<&[u8]>, quoted: &'static [u8]) -> Option<bool> {
        let name = &quoted[..quoted.len() - 1];
        let Some(_) = key else {
            let at = self.i + 1;
            if !self.b().get(at..at + quoted.len()).is_some_and(|b| crate::index::same(b, quoted)) {
                return Some(false);
            }
            self.i = at + quoted.len();
            self.colon()?;
            return Some(true);
        };
        Some(key == Some(name))
    }

    /// An array, at its `[`: `f` reads each item (at its first byte), given its index.
    fn items(&mut self, mut f: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
        self.enter()?;
        if !self.eat(b']') {
            let mut i = 0;
            loop {
                self.skip_ws();
                f(self, i)?;
                i += 1;
                if !self.more(b']')? {
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, finite as an `f64`:
    /// serde_json refuses `1e400`, and decides the rounding at the edge.
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.i;
        self.i += usize::from(self.peek() == Some(b'-'));
        let int = self.i;
        match self.digits() {
            0 => return None,
            n if n > 1 && self.b()[int] == b'0' => return None,
            _ => {}
        }
        let mut plain = self.i - int <= 18;
        if self.peek() == Some(b'.') {
            self.i += 1;
            (self.digits() > 0).then_some(())?;
            plain = false;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            (self.digits() > 0).then_some(())?;
            plain = false;
        }
        (plain || serde_json::from_slice::<f64>(&self.b()[start..self.i]).is_ok()).then_some(Json::Number)
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - from
    }

    /// A string, at its opening quote; borrowed from the input unless it has
    /// an escape. Control characters, unknown escapes, lone surrogates and
    /// invalid UTF-8 are refused, as by serde_json.
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        let start = self.i + 1;
        let end = start + plain_run(self.b().get(start..)?)?;
        if self.b()[end] != b'"' {
            return self.escaped(start, end);
        }
        self.i = end + 1;
        // `start` and `end` are at ASCII bytes: character boundaries.
        self.s.get(start..end).map(Cow::Borrowed)
    }

    /// The rest of a string from `run`, its plain run ending at `i`, at a
    /// byte that is not its closing quote.
    #[inline(never)]
    fn escaped(&mut self, mut run: usize, i: usize) -> Option<Cow<'a, str>> {
        self.i = i;
        let mut owned = String::new();
        loop {
            self.i += plain_run(&self.b()[self.i..])?;
            let c = self.b()[self.i];
            if c < 0x20 {
                return None;
            }
            // `run` and `i` are at ASCII bytes: character boundaries.
            owned.push_str(self.s.get(run..self.i)?);
            self.i += 1;
            if c == b'"' {
                return Some(Cow::Owned(owned));
            }
            let e = self.peek()?;
            self.i += 1;
            owned.push(match e {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\x08',
                b'f' => '\x0c',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => self.unicode_escape()?,
                _ => return None,
            });
            run = self.i;
        }
    }

    /// After `\u`: four hex digits, and a surrogate pair's second half.
    fn unicode_escape(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                self.b()[self.i..].starts_with(b"\\u").then_some(())?;
                self.i += 2;
                let lo = self.hex4()?;
                (0xDC00..=0xDFFF).contains(&lo).then_some(())?;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return None,
            _ => hi,
        };
        char::from_u32(code)
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b().get(self.i..self.i + 4)?;
        self.i += 4;
        digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
    }

    /// A value that is not of the kind wanted: null, or its kind.
    fn other<T>(&mut self) -> Option<Got<T>> {
        Some(match self.value(false)? {
            Json::Null => Got::Null,
            v => Got::Not(kind(&v)),
        })
    }

    fn got_string(&mut self) -> Option<Got<Cow<'a, str>>> {
        match self.peek() {
            Some(b'"') => self.string().map(Got::Is),
            _ => self.other(),
        }
    }

    fn got_bool(&mut self) -> Option<Got<bool>> {
        match self.peek() {
            Some(b't') => self.literal(b"true", Got::Is(true)),
            Some(b'f') => self.literal(b"false", Got::Is(false)),
            _ => self.other(),
        }
    }

    /// An object of the schema: `f` reads the value of each field it knows
    /// (true) or leaves it (false); the others are skipped and reported,
    /// sorted and each once, as unknown fields (typos). False, the value
    /// skipped and the error reported, if the value is not an object.
    fn schema_object(
        &mut self,
        path: &Path,
        errors: &mut Vec<Error>,
        mut f: impl FnMut(&mut Self, Option<&[u8]>) -> Option<bool>,
    ) -> Option<bool> {
        if self.peek() != Some(b'{') {
            let v = self.value(false)?;
            fail(errors, path, format_args!("expected an object, found {}", kind(&v)));
            return Some(false);
        }
        // None until there is one: an empty Vec still cost a call to drop it.
        let mut unknown: Option<Vec<_>> = None;
        self.object(|r| {
            if let Some(key) = r.field(&mut f)? {
                unknown.get_or_insert_with(Vec::new).push(key);
            }
            Some(())
        })?;
        if let Some(mut unknown) = unknown {
            unknown.sort_unstable();
            unknown.dedup();
            for key in unknown {
                fail(errors, &path.field(&key), "unknown field");
            }
        }
        Some(true)
    }

    /// An object read below the current one, its errors kept apart.
    fn below<T>(&mut self, path: &Path, f: ItemReader<'a, T>) -> Option<Below<T>> {
        let mut errors = Vec::new();
        let v = f(self, path, &mut errors)?;
        Some((v, errors))
    }

    /// The document, a container spec.
    fn manifest(&mut self, errors: &mut Vec<Error>) -> Option<Manifest<'a>> {
        self.skip_ws();
        if self.peek() != Some(b'{') {
            let v = self.value(false)?;
            fail(errors, &Path::Root, format_args!("expected a JSON object (a Kubernetes container spec), found {}", kind(&v)));
            return Some(Manifest::default());
        }
        let (mut mounts, mut env_from, mut env, mut command, mut args) = (None, None, None, None, None);
        self.object(|r| {
            r.field(|r, key| {
                if r.named(key, b"volumeMounts\"")? {
                    mounts = Some(r.list("volumeMounts", Self::volume_mount)?);
                } else if r.named(key, b"envFrom\"")? {
                    env_from = Some(r.list("envFrom", Self::env_from)?);
                } else if r.named(key, b"env\"")? {
                    env = Some(r.list("env", Self::env_var)?);
                } else if r.named(key, b"command\"")? {
                    command = Some(r.list("command", Self::word)?);
                } else if r.named(key, b"args\"")? {
                    args = Some(r.list("args", Self::word)?);
                } else {
                    return Some(false);
                }
                Some(true)
            })
            .map(drop)
        })?;
        Some(Manifest {
            volume_mounts: list(errors, mounts, "volumeMounts"),
            env_from: list(errors, env_from, "envFrom"),
            env: list(errors, env, "env"),
            command: list(errors, command, "command"),
            args: list(errors, args, "args"),
        })
    }

    /// An array field of the top level, each item read by `item`: the items
    /// read, and the errors found.
    fn list<T>(&mut self, key: &'static str, item: ItemReader<'a, T>) -> Option<Got<Below<Vec<T>>>> {
        if self.peek() != Some(b'[') {
            return self.other();
        }
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        self.items(|r, i| {
            if let Some(v) = item(r, &Path::Item(key, i), &mut errors)? {
                out.push(v);
            }
            Some(())
        })?;
        Some(Got::Is((Some(out), errors)))
    }

    /// An item of `command` or `args`.
    fn word(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<Cow<'a, str>>> {
        let found = match self.got_string()? {
            // Raw control characters are refused in a string: a NUL comes from an escape.
            Got::Is(Cow::Owned(s)) if s.contains('\0') => {
                fail(errors, path, "contains a NUL byte");
                return Some(None);
            }
            Got::Is(s) => return Some(Some(s)),
            Got::Null => "null",
            Got::Not(k) => k,
        };
        fail(errors, path, format_args!("expected a string, found {found}"));
        Some(None)
    }

    fn volume_mount(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<VolumeMount<'a>>> {
        let (mut name, mut mount_path, mut sub) = (None, None, [false; 2]);
        let object = self.schema_object(path, errors, |r, key| {
            if r.named(key, b"name\"")? {
                name = Some(r.got_string()?);
            } else if r.named(key, b"mountPath\"")? {
                mount_path = Some(r.got_string()?);
            } else if r.named(key, b"readOnly\"")?
                || r.named(key, b"mountPropagation\"")?
                || r.named(key, b"recursiveReadOnly\"")?
            {
                r.skip()?;
            } else if r.named(key, b"subPath\"")? {
                sub[0] = true;
                r.skip()?;
            } else if r.named(key, b"subPathExpr\"")? {
                sub[1] = true;
                r.skip()?;
            } else {
                return Some(false);
            }
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        for (given, key) in sub.into_iter().zip(["subPath", "subPathExpr"]) {
            if given {
                fail(errors, &path.field(key), "is not supported (the volume root would be ambiguous)");
            }
        }
        let name = string(errors, name, path, "name", true);
        let mount_path = string(errors, mount_path, path, "mountPath", true);
        Some(name.zip(mount_path).map(|(name, mount_path)| VolumeMount { name, mount_path }))
    }

    fn file_ref(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<FileRef<'a>>> {
        Some(self.file_key_ref(path, false, errors)?.map(|(file, _)| file))
    }

    fn file_key(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<(FileRef<'a>, Option<Cow<'a, str>>)>> {
        self.file_key_ref(path, true, errors)
    }

    /// `fileRef`, or with `key` `fileKeyRef`.
    fn file_key_ref(
        &mut self,
        path: &Path,
        with_key: bool,
        errors: &mut Vec<Error>,
    ) -> Option<Option<(FileRef<'a>, Option<Cow<'a, str>>)>> {
        let (mut texts, mut optional): ([Text; 3], _) = ([None, None, None], None);
        let object = self.schema_object(path, errors, |r, key| {
            let i = if r.named(key, b"volumeName\"")? {
                0
            } else if r.named(key, b"path\"")? {
                1
            } else if with_key && r.named(key, b"key\"")? {
                2
            } else if r.named(key, b"optional\"")? {
                optional = Some(r.got_bool()?);
                return Some(true);
            } else {
                return Some(false);
            };
            texts[i] = Some(r.got_string()?);
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        let [volume_name, file_path, key] = texts;
        let volume_name = string(errors, volume_name, path, "volumeName", true);
        let file_path = string(errors, file_path, path, "path", true);
        let key = if with_key { string(errors, key, path, "key", true) } else { None };
        let optional = match optional {
            None | Some(Got::Null) => false,
            Some(Got::Is(b)) => b,
            Some(Got::Not(k)) => {
                fail(errors, &path.field("optional"), format_args!("expected a boolean, found {k}"));
                false
            }
        };
        let (Some(volume_name), Some(path)) = (volume_name, file_path) else { return Some(None) };
        let file = FileRef { volume_name, path, optional };
        Some(match key {
            Some(key) => Some((file, Some(key))),
            None if with_key => None,
            None => Some((file, None)),
        })
    }

    fn env_from(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvFrom<'a>>> {
        let (mut prefix, mut sources) = (None, Sources::default());
        let object = self.schema_object(path, errors, |r, key| {
            let source = if r.named(key, b"fileRef\"")? {
                0
            } else if r.named(key, b"prefix\"")? {
                prefix = Some(r.got_string()?);
                return Some(true);
            } else if r.named(key, b"configMapRef\"")? {
                1
            } else if r.named(key, b"secretRef\"")? {
                2
            } else {
                return Some(false);
            };
            sources.read(r, source, "fileRef", path, Self::file_ref)
        })?;
        if !object {
            return Some(None);
        }
        let prefix = string(errors, prefix, path, "prefix", false).unwrap_or_default();
        let Some(file) = sources.one(errors, path, "needs exactly one of fileRef, configMapRef, secretRef") else {
            return Some(None);
        };
        Some(match file {
            None => Some(EnvFrom::Platform),
            Some(file) => file.map(|file| EnvFrom::File { file, prefix }),
        })
    }

    fn env_var(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvVar<'a>>> {
        let (mut name, mut value, mut value_from) = (None, None, None);
        let object = self.schema_object(path, errors, |r, key| {
            if r.named(key, b"name\"")? {
                name = Some(r.got_string()?);
            } else if r.named(key, b"valueFrom\"")? {
                // A null counts as absent.
                if r.peek() == Some(b'n') {
                    value_from = None;
                    r.skip()?
                } else {
                    value_from = Some(r.below(&path.field("valueFrom"), Self::value_from)?);
                }
            } else if r.named(key, b"value\"")? {
                value = Some(r.got_string()?);
            } else {
                return Some(false);
            }
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        let name = string(errors, name, path, "name", true);
        let value = string(errors, value, path, "value", false);
        let source = match (value, value_from) {
            // `"value": ""` beside a valueFrom: the API server accepts it, and `kubectl get -o json` may print it.
            (Some(v), Some(_)) if !v.is_empty() => {
                fail(errors, path, "has both value and valueFrom");
                return Some(None);
            }
            (value, None) => EnvSource::Value(value.unwrap_or_default()),
            (_, Some((source, below))) => {
                report(errors, below);
                let Some(source) = source else { return Some(None) };
                source
            }
        };
        Some(name.map(|name| EnvVar { name, source }))
    }

    fn value_from(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvSource<'a>>> {
        let mut sources = Sources::default();
        let object = self.schema_object(path, errors, |r, key| {
            let source = if r.named(key, b"fileKeyRef\"")? {
                0
            } else if r.named(key, b"configMapKeyRef\"")? {
                1
            } else if r.named(key, b"secretKeyRef\"")? {
                2
            } else if r.named(key, b"fieldRef\"")? {
                3
            } else if r.named(key, b"resourceFieldRef\"")? {
                4
            } else {
                return Some(false);
            };
            sources.read(r, source, "fileKeyRef", path, Self::file_key)
        })?;
        if !object {
            return Some(None);
        }
        let what =
            "needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)";
        let Some(file) = sources.one(errors, path, what) else { return Some(None) };
        Some(match file {
            None => Some(EnvSource::Platform),
            Some(file) => file.and_then(|(file, key)| Some(EnvSource::FileKey { file, key: key? })),
        })
    }
}

/// The sources of an `envFrom` entry or a `valueFrom` (source 0 is the
/// file, read below; the others are the platform's and not looked into):
/// which were given, and the file's last value.
struct Sources<T> {
    /// Bit `i` for source `i` given (not the file's).
    given: u8,
    file: Option<Below<T>>,
}

impl<T> Default for Sources<T> {
    fn default() -> Self {
        Sources { given: 0, file: None }
    }
}

impl<T> Sources<T> {
    /// Reads the value of source `i` (0 is the file, named `key`).
    fn read<'a>(&mut self, r: &mut Reader<'a>, i: usize, key: &str, path: &Path, file: ItemReader<'a, T>) -> Option<bool> {
        if i == 0 {
            self.file = Some(r.below(&path.field(key), file)?);
        } else {
            r.skip()?;
            self.given |= 1 << i;
        }
        Some(true)
    }

    /// Exactly one source, or the error `what`: Some(None) for the
    /// platform's, Some(Some(the file's value)) for the file, its errors reported.
    fn one(self, errors: &mut Vec<Error>, path: &Path, what: &str) -> Option<Option<Option<T>>> {
        if self.given.count_ones() + u32::from(self.file.is_some()) != 1 {
            fail(errors, path, what);
            return None;
        }
        Some(self.file.map(|(v, below)| {
            report(errors, below);
            v
        }))
    }
}

/// The length of the plain run at the start of a string's bytes `b`: the
/// position of the first `"`, `\\` or control character, eight bytes at a
/// time (a byte loop was the reader's largest cost; strings are too short
/// for memchr's set-up to pay).
#[inline(always)]
fn plain_run(b: &[u8]) -> Option<usize> {
    // The bytes of `v` below `n` (at most 0x80) get 0x80: exact up to the
    // first one, the borrow may mark some above it (only the first counts).
    let below = |v: u64, n: u64| v.wrapping_sub(ONES * n) & !v;
    let mut at = 0;
    while let Some(word) = b.get(at..at + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let hits = (below(w ^ (ONES * u64::from(b'"')), 1) | below(w ^ (ONES * u64::from(b'\\')), 1) | below(w, 0x20)) & HIGH;
        if hits != 0 {
            return Some(at + hits.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    b[at..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|n| at + n)
}

/// Where a value is in the manifest, rendered only for a message.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    /// `key[index]`, for the arrays of the top level.
    Item(&'static str, usize),
    Field(&'p Path<'p>, &'p str),
}

impl Path<'_> {
    fn field<'p>(&'p self, key: &'p str) -> Path<'p> {
        Path::Field(self, key)
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Item(key, i) => write!(f, "{key}[{i}]"),
            Path::Field(Path::Root, key) => f.write_str(&escape(key.as_bytes())),
            Path::Field(parent, key) => write!(f, "{parent}.{}", escape(key.as_bytes())),
        }
    }
}

/// What a JSON value is, for messages (never the value itself).
fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number => "a number",
        Json::Str(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

/// The errors of an object below, now that its parent uses it.
#[inline(always)]
fn report(errors: &mut Vec<Error>, below: Vec<Error>) {
    if below.capacity() == 0 {
        // Usually none, and nothing allocated to free: dropping it still cost a call.
        std::mem::forget(below);
    } else {
        errors.extend(below);
    }
}

/// A schema error: `what`, at `path` (the message is made by [`name_errors`]).
fn fail(errors: &mut Vec<Error>, path: &Path, what: impl fmt::Display) {
    let mut e = Error::config(what.to_string());
    e.at = Some(Box::new(At { path: Some(path.to_string()), ..At::default() }));
    errors.push(e);
}

/// A string field; null counts as absent. A slice of the input (the usual
/// case) inline, the rest in [`checked`] (a call each was 23 K instructions).
#[inline(always)]
fn string<'a>(errors: &mut Vec<Error>, got: Text<'a>, path: &Path, key: &str, required: bool) -> Option<Cow<'a, str>> {
    match got {
        Some(Got::Is(Cow::Borrowed(s))) => Some(Cow::Borrowed(s)),
        None if !required => None,
        got => checked(errors, got, path, key, required),
    }
}

fn checked<'a>(errors: &mut Vec<Error>, got: Text<'a>, path: &Path, key: &str, required: bool) -> Option<Cow<'a, str>> {
    match got {
        None | Some(Got::Null) => {
            if required {
                fail(errors, &path.field(key), "required field is missing");
            }
            None
        }
        Some(Got::Is(Cow::Owned(s))) if s.contains('\0') => {
            fail(errors, &path.field(key), "contains a NUL byte");
            None
        }
        Some(Got::Is(s)) => Some(s),
        Some(Got::Not(k)) => {
            fail(errors, &path.field(key), format_args!("expected a string, found {k}"));
            None
        }
    }
}

/// An array field of the top level (null counts as absent): its items, its errors reported.
fn list<T>(errors: &mut Vec<Error>, got: Option<Got<Below<Vec<T>>>>, key: &str) -> Vec<T> {
    match got {
        None | Some(Got::Null) => Vec::new(),
        Some(Got::Is((items, below))) => {
            report(errors, below);
            items.unwrap_or_default()
        }
        Some(Got::Not(k)) => {
            fail(errors, &Path::Root.field(key), format_args!("expected an array, found {k}"));
            Vec::new()
        }
    }
}

mod select;

#[cfg(test)]
mod tests;
