//! The manifest's JSON reader: syntax only (strings, escapes, numbers,
//! literals, whitespace eight bytes at a time, nesting), as serde_json
//! accepts it. What the fields mean is `schema.rs`'s.

use std::borrow::Cow;

use crate::names::{HIGH, ONES};

/// A JSON value, as [`Reader::value`] reads it; strings borrow from the input
/// unless they hold an escape. Numbers are kept only as "a number": no field
/// of the schema is one. A whole tree is kept by the tests and by
/// `--container`'s look into a Pod (`select.rs`); otherwise a value is read
/// this way only to skip it (an unknown top-level field, a value of the
/// wrong kind), and keeps its kind, for a message.
#[allow(dead_code)] // the payloads: envshim reads only some of them
pub(super) enum Json<'a> {
    Null,
    Bool(bool),
    Number,
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    /// The fields, and where the object starts in the input (its `{`).
    Object(Vec<(Cow<'a, str>, Json<'a>)>, usize),
}

/// One JSON document, as a tree: what the tests compare with serde_json.
#[cfg(test)]
pub(super) fn parse_json(bytes: &[u8]) -> Result<Json<'_>, String> {
    read(bytes, |r| r.value(true)).map_err(|(e, _)| e)
}

/// Reads `bytes` as one JSON document with `f`. A syntax error is described
/// by where the reader stopped: its line and column (in bytes), not by
/// serde_json parsing the document again for its message (more code).
pub(super) fn read<'a, T>(bytes: &'a [u8], f: impl FnOnce(&mut Reader<'a>) -> Option<T>) -> Result<T, (String, usize)> {
    // Invalid UTF-8 is an error wherever it is (outside a string, any byte
    // over 0x7f is): checked once here, every string is then a slice of `s`.
    let (at, what) = match std::str::from_utf8(bytes) {
        Err(e) => (e.valid_up_to(), "invalid UTF-8"),
        Ok(s) => {
            let mut r = reader_at(s, 0);
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

/// A reader of `s` from its byte `i` (the start of a value).
pub(super) fn reader_at(s: &str, i: usize) -> Reader<'_> {
    Reader { s, i, depth: 0, items: Vec::new(), fields: Vec::new() }
}

/// `WHAT at line L column C` for byte `at` of `bytes`, and L.
#[cold]
pub(super) fn syntax_at(bytes: &[u8], at: usize, what: &str) -> (String, usize) {
    let before = &bytes[..at];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + at - before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    (format!("{what} at line {line} column {column}"), line)
}

/// A JSON reader accepting exactly what serde_json accepts (RFC 8259, at
/// most [`MAX_DEPTH`] nested arrays and objects, numbers finite as `f64`).
/// Every method returns None on a syntax error; `read` tells where.
pub(super) struct Reader<'a> {
    pub(super) s: &'a str,
    pub(super) i: usize,
    pub(super) depth: usize,
    /// The items and fields of the arrays and objects being read into a
    /// tree (the tests only), nested ones above their parent's; each is moved
    /// to an exact-size `Vec` when it closes.
    pub(super) items: Vec<Json<'a>>,
    pub(super) fields: Vec<(Cow<'a, str>, Json<'a>)>,
}

/// serde_json's recursion limit: this many nested arrays and objects are refused.
pub(super) const MAX_DEPTH: usize = 128;

/// A field's value as read: null, a value of the kind wanted, or the kind of
/// another one. A field not given is None.
pub(super) enum Got<T> {
    Null,
    Is(T),
    Not(&'static str),
}

// The helpers every token goes through (`skip_ws`, `blanks`, `eat`, `more`,
// `literal`, `named`, `plain_run`) are `#[inline(always)]`: the release build
// inlines `#[inline]` only up to a small cost (musl-build.sh, src/lib.rs), and
// called, not inlined, they cost `run` ~60 K instructions (+5%; docs/performance.md,
// binary size).
impl<'a> Reader<'a> {
    /// The input as bytes: derived from `s`, so that the compiler knows
    /// them the same (a slice of `s` between two quotes found in them needs
    /// fewer checks).
    #[inline(always)]
    pub(super) fn b(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    #[inline(always)]
    pub(super) fn peek(&self) -> Option<u8> {
        self.b().get(self.i).copied()
    }

    /// Skips whitespace: inline only a single space (`"key": value`) and
    /// the test for none (the next byte is above a space), the common cases
    /// between tokens (a call for the space costs more than the test).
    #[inline(always)]
    pub(super) fn skip_ws(&mut self) {
        self.i += usize::from(self.peek() == Some(b' '));
        if !matches!(self.peek(), Some(c) if c > b' ') {
            self.blanks();
        }
    }

    /// Whitespace. The usual run, a line end and an indentation of fewer
    /// than eight spaces, in one word (under half a byte loop's
    /// instructions); the others in [`Reader::more_blanks`].
    #[inline(always)]
    pub(super) fn blanks(&mut self) {
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
    pub(super) fn more_blanks(&mut self) {
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
    pub(super) fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    /// After an item or a field: a comma (true) or `close` (false).
    #[inline(always)]
    pub(super) fn more(&mut self, close: u8) -> Option<bool> {
        self.skip_ws();
        let c = self.peek()?;
        self.i += 1;
        (c == b',' || c == close).then_some(c == b',')
    }

    #[inline(always)]
    pub(super) fn literal<T>(&mut self, word: &[u8], v: T) -> Option<T> {
        let hit = self.b().get(self.i..self.i + word.len()).is_some_and(|s| crate::index::same(s, word));
        self.i += word.len();
        hit.then_some(v)
    }

    /// Any value; a tree if `keep` (the tests), else only its kind (arrays
    /// and objects empty).
    pub(super) fn value(&mut self, keep: bool) -> Option<Json<'a>> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string().map(Json::Str),
            b'{' => {
                let (at, start) = (self.i, self.fields.len());
                self.fields(|r, key| {
                    let v = r.value(keep)?;
                    if keep {
                        r.fields.push((key, v));
                    }
                    Some(())
                })?;
                Some(Json::Object(self.fields.drain(start..).collect(), at))
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

    pub(super) fn skip(&mut self) -> Option<()> {
        self.value(false).map(drop)
    }

    /// At `{` or `[`: one level deeper, if that is allowed.
    #[inline]
    pub(super) fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        self.i += 1;
        (self.depth < MAX_DEPTH).then_some(())
    }

    /// An object, at its `{`: `f` reads each field's value (at its first
    /// byte), given the key.
    pub(super) fn fields(&mut self, mut f: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
        self.object(|r| {
            let key = r.string()?;
            r.colon()?;
            f(r, key)
        })
    }

    /// An object, at its `{`: `f` reads each field, from its key's opening quote.
    pub(super) fn object(&mut self, mut f: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
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
    #[inline]
    pub(super) fn colon(&mut self) -> Option<()> {
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
    #[inline]
    pub(super) fn field(&mut self, mut f: impl FnMut(&mut Self, Option<&[u8]>) -> Option<bool>) -> Option<Option<Cow<'a, str>>> {
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

    /// A string value, read where size matters more than speed.
    #[inline(never)]
    pub(super) fn read_string(&mut self) -> Option<Cow<'a, str>> {
        self.string()
    }

    /// A key that is not one of the names tried (or has an escape), and its colon.
    #[inline(never)]
    pub(super) fn read_key(&mut self) -> Option<Cow<'a, str>> {
        let key = self.string()?;
        self.colon()?;
        Some(key)
    }

    /// Whether the field's key is `quoted`, a name of the schema and its
    /// closing quote. With no `key`, tested on the input at the key's
    /// opening quote, and if so the key and its colon are consumed: the
    /// name holds no quote, backslash or control character, so the bytes
    /// `name"` there are that key and no other. This test costs a few
    /// instructions per name, far less than a key's scan and a match on its bytes.
    #[inline(always)]
    pub(super) fn named(&mut self, key: Option<&[u8]>, quoted: &'static [u8]) -> Option<bool> {
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
    pub(super) fn items(&mut self, mut f: impl FnMut(&mut Self, usize) -> Option<()>) -> Option<()> {
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
    pub(super) fn number(&mut self) -> Option<Json<'a>> {
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
        (plain || finite_as_serde_json(&self.b()[start..self.i])).then_some(Json::Number)
    }

    pub(super) fn digits(&mut self) -> usize {
        let from = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - from
    }

    /// A string, at its opening quote; borrowed from the input unless it has
    /// an escape. Control characters, unknown escapes, lone surrogates and
    /// invalid UTF-8 are refused, as by serde_json.
    #[inline]
    pub(super) fn string(&mut self) -> Option<Cow<'a, str>> {
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
    pub(super) fn escaped(&mut self, mut run: usize, i: usize) -> Option<Cow<'a, str>> {
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
    pub(super) fn unicode_escape(&mut self) -> Option<char> {
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

    pub(super) fn hex4(&mut self) -> Option<u32> {
        let digits = self.b().get(self.i..self.i + 4)?;
        self.i += 4;
        digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
    }

    /// A value that is not of the kind wanted: null, or its kind.
    pub(super) fn other<T>(&mut self) -> Option<Got<T>> {
        Some(match self.value(false)? {
            Json::Null => Got::Null,
            v => Got::Not(kind(&v)),
        })
    }

    pub(super) fn got_string(&mut self) -> Option<Got<Cow<'a, str>>> {
        match self.peek() {
            Some(b'"') => self.string().map(Got::Is),
            _ => self.other(),
        }
    }

    pub(super) fn got_bool(&mut self) -> Option<Got<bool>> {
        match self.peek() {
            Some(b't') => self.literal(b"true", Got::Is(true)),
            Some(b'f') => self.literal(b"false", Got::Is(false)),
            _ => self.other(),
        }
    }
}

/// The length of the plain run at the start of a string's bytes `b`: the
/// position of the first `"`, `\\` or control character, eight bytes at a
/// time (a byte loop was the reader's largest cost; strings are too short
/// for memchr's set-up to pay).
#[inline(always)]
pub(super) fn plain_run(b: &[u8]) -> Option<usize> {
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

/// Whether serde_json reads the number `n` (valid JSON) as a finite `f64`,
/// as its default reading does (without `float_roundtrip`): the leading
/// digits while they fit a `u64` (further integer digits raise the
/// exponent, further fraction digits are dropped), times the power of ten of
/// the exponent, refused when infinite. A negative exponent only divides,
/// never refused; the product can be infinite only from 10^289 on (a
/// significand is below 2^64, 10^288 times it below `f64::MAX`), so only
/// those powers are needed, the same literals as serde_json's table.
#[cold]
fn finite_as_serde_json(n: &[u8]) -> bool {
    const POW10: [f64; 20] =
        [1e289, 1e290, 1e291, 1e292, 1e293, 1e294, 1e295, 1e296, 1e297, 1e298, 1e299, 1e300, 1e301, 1e302, 1e303, 1e304, 1e305, 1e306, 1e307, 1e308];
    let push = |sig: &mut u64, c: u8| sig.checked_mul(10).and_then(|s| s.checked_add(u64::from(c - b'0'))).map(|s| *sig = s).is_some();
    let (mut sig, mut exp) = (0u64, 0i32);
    let mut i = usize::from(n[0] == b'-');
    let mut full = false;
    while let Some(&c @ b'0'..=b'9') = n.get(i) {
        full = full || !push(&mut sig, c);
        exp += i32::from(full);
        i += 1;
    }
    if n.get(i) == Some(&b'.') {
        i += 1;
        let mut full = false;
        while let Some(&c @ b'0'..=b'9') = n.get(i) {
            full = full || !push(&mut sig, c);
            exp -= i32::from(!full);
            i += 1;
        }
    }
    if let Some(b'e' | b'E') = n.get(i) {
        let negative = n.get(i + 1) == Some(&b'-');
        i += 1 + usize::from(matches!(n.get(i + 1), Some(b'+' | b'-')));
        let mut e = 0i32;
        for &c in &n[i..] {
            match e.checked_mul(10).and_then(|e| e.checked_add(i32::from(c - b'0'))) {
                Some(v) => e = v,
                // An exponent beyond an i32: infinite unless it is zero's or negative.
                None => return sig == 0 || negative,
            }
        }
        exp = if negative { exp.saturating_sub(e) } else { exp.saturating_add(e) };
    }
    sig == 0 || exp < 289 || (exp <= 308 && (sig as f64 * POW10[(exp - 289) as usize]).is_finite())
}

/// What a JSON value is, for messages (never the value itself).
pub(super) fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number => "a number",
        Json::Str(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(..) => "an object",
    }
}
