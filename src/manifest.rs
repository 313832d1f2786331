//! The manifest: a subset of the Kubernetes core/v1 `Container` (SPEC §3).
//!
//! A small JSON reader (accepting what serde_json accepts; serde_json
//! writes the message of a syntax error) builds a tree of its own, [`Json`],
//! whose strings borrow from the input, and the tree is walked by hand, so
//! every schema error names its JSON path (`env[3].valueFrom.fileKeyRef.key`)
//! and no error ever quotes a value. Unknown top-level fields are ignored (a
//! pasted container spec has many); unknown fields below are typos, hence
//! errors.
//!
//! The reader and tree replaced `serde_json::Value`, whose objects are
//! B-tree maps of owned strings: it was half of a start-up's instructions
//! (docs/performance.md). An object is a list of its fields in input order; a
//! field given twice takes its last value, and unknown fields are reported in
//! sorted order, both as with `Value`.

use std::borrow::Cow;
use std::fmt;

use crate::error::{escape, Error};
use crate::index::same;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: String,
}

/// A file inside a volume: `fileKeyRef` and `fileRef` share these fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    pub volume_name: String,
    pub path: String,
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFrom {
    /// `fileRef`: every key of the file, prefixed.
    File { file: FileRef, prefix: String },
    /// `configMapRef` / `secretRef`: resolved by the platform.
    Platform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource {
    /// A literal, expanded; an entry with neither `value` nor `valueFrom` is `Value("")`.
    Value(String),
    FileKey {
        file: FileRef,
        key: String,
    },
    /// `configMapKeyRef`, `secretKeyRef`, `fieldRef`, `resourceFieldRef`.
    Platform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar {
    pub name: String,
    pub source: EnvSource,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest {
    pub volume_mounts: Vec<VolumeMount>,
    pub env_from: Vec<EnvFrom>,
    pub env: Vec<EnvVar>,
    /// Empty when absent: Kubernetes treats `command: []` as unset too.
    pub command: Vec<String>,
    pub args: Vec<String>,
}

/// The sources of an `envFrom` entry, and of a `valueFrom`: exactly one of each.
const ENV_FROM_SOURCES: [&str; 3] = ["fileRef", "configMapRef", "secretRef"];
const VALUE_FROM_SOURCES: [&str; 5] = ["fileKeyRef", "configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"];

/// Parses a manifest; every schema problem is reported, each naming its path.
pub fn parse(bytes: &[u8]) -> Result<Manifest, Vec<Error>> {
    let root = parse_json(bytes).map_err(|e| vec![Error::config(format!("manifest is not valid JSON: {e}"))])?;
    let mut w = Walker { errors: Vec::new() };
    let manifest = w.manifest(&root);
    if w.errors.is_empty() {
        Ok(manifest)
    } else {
        Err(w.errors)
    }
}

/// A JSON value; strings borrow from the input unless they hold an escape.
/// Numbers are kept only as "a number": no field of the schema is one.
enum Json<'a> {
    Null,
    Bool(bool),
    Number,
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// Parses `bytes` as one JSON document. On a syntax error serde_json parses
/// them again, for its message (line, column, what was expected): the
/// messages are serde_json's, as before this reader.
fn parse_json(bytes: &[u8]) -> Result<Json<'_>, String> {
    // Invalid UTF-8 is an error wherever it is (outside a string, any byte
    // over 0x7f is): checked once here, every string is then a slice of `s`.
    let doc = std::str::from_utf8(bytes).ok().and_then(|s| {
        let mut r = Reader { s, b: bytes, i: 0, depth: 0, items: Vec::new(), fields: Vec::new() };
        let v = r.value()?;
        r.skip_ws();
        (r.i == bytes.len()).then_some(v)
    });
    doc.ok_or_else(|| match serde_json::from_slice::<serde_json::Value>(bytes) {
        Err(e) => e.to_string(),
        // The two readers disagree: a bug, which the tests and the fuzz
        // target look for; the input is still refused.
        Ok(_) => "rejected by envshim's JSON reader".to_string(),
    })
}

/// A JSON reader accepting exactly what serde_json accepts (RFC 8259, at
/// most [`MAX_DEPTH`] nested arrays and objects, numbers finite as `f64`).
/// It only says whether; `parse_json` gets the message from serde_json.
struct Reader<'a> {
    s: &'a str,
    /// `s` as bytes.
    b: &'a [u8],
    i: usize,
    depth: usize,
    /// The items and fields of the arrays and objects being read, nested
    /// ones above their parent's; each is moved to an exact-size `Vec` when
    /// it closes (the allocator reuses nothing, so growing them in place
    /// would leave a copy behind at every doubling).
    items: Vec<Json<'a>>,
    fields: Vec<(Cow<'a, str>, Json<'a>)>,
}

/// serde_json's recursion limit: this many nested arrays and objects are refused.
const MAX_DEPTH: usize = 128;

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// Consumes `c` after optional whitespace.
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn literal(&mut self, word: &[u8], v: Json<'a>) -> Option<Json<'a>> {
        let hit = self.b[self.i..].starts_with(word);
        self.i += word.len();
        hit.then_some(v)
    }

    fn value(&mut self) -> Option<Json<'a>> {
        self.skip_ws();
        match self.peek()? {
            b'"' => self.string().map(Json::Str),
            b'{' => self.nested(Self::object),
            b'[' => self.nested(Self::array),
            b't' => self.literal(b"true", Json::Bool(true)),
            b'f' => self.literal(b"false", Json::Bool(false)),
            b'n' => self.literal(b"null", Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => None,
        }
    }

    fn nested(&mut self, f: fn(&mut Self) -> Option<Json<'a>>) -> Option<Json<'a>> {
        self.depth += 1;
        if self.depth >= MAX_DEPTH {
            return None;
        }
        self.i += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn array(&mut self) -> Option<Json<'a>> {
        let start = self.items.len();
        if !self.eat(b']') {
            loop {
                let v = self.value()?;
                self.items.push(v);
                if self.eat(b']') {
                    break;
                }
                self.eat(b',').then_some(())?;
            }
        }
        Some(Json::Array(self.items.drain(start..).collect()))
    }

    fn object(&mut self) -> Option<Json<'a>> {
        let start = self.fields.len();
        if !self.eat(b'}') {
            loop {
                self.skip_ws();
                (self.peek() == Some(b'"')).then_some(())?;
                let key = self.string()?;
                self.eat(b':').then_some(())?;
                let v = self.value()?;
                self.fields.push((key, v));
                if self.eat(b'}') {
                    break;
                }
                self.eat(b',').then_some(())?;
            }
        }
        Some(Json::Object(self.fields.drain(start..).collect()))
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, finite as an `f64`:
    /// serde_json refuses `1e400`, and decides the rounding at the edge.
    fn number(&mut self) -> Option<Json<'a>> {
        let start = self.i;
        self.i += usize::from(self.peek() == Some(b'-'));
        let int = self.i;
        match self.digits() {
            0 => return None,
            n if n > 1 && self.b[int] == b'0' => return None,
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
        (plain || serde_json::from_slice::<f64>(&self.b[start..self.i]).is_ok()).then_some(Json::Number)
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
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.i += 1;
        let mut owned: Option<String> = None;
        let mut run = self.i;
        loop {
            self.i += self.b[self.i..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
            let c = self.b[self.i];
            if c < 0x20 {
                return None;
            }
            // `run` and `i` are at ASCII bytes: character boundaries.
            let piece = &self.s[run..self.i];
            self.i += 1;
            if c == b'"' {
                return Some(match owned {
                    None => Cow::Borrowed(piece),
                    Some(mut s) => {
                        s.push_str(piece);
                        Cow::Owned(s)
                    }
                });
            }
            let s = owned.get_or_insert_with(String::new);
            s.push_str(piece);
            let e = self.peek()?;
            self.i += 1;
            s.push(match e {
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
                self.b[self.i..].starts_with(b"\\u").then_some(())?;
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
        let digits = self.b.get(self.i..self.i + 4)?;
        self.i += 4;
        digits.iter().try_fold(0, |n, &d| Some(n * 16 + char::from(d).to_digit(16)?))
    }
}

type Object<'a> = [(Cow<'a, str>, Json<'a>)];

/// A field's value; a field given twice has its last value.
fn get<'v, 'a>(m: &'v Object<'a>, key: &str) -> Option<&'v Json<'a>> {
    m.iter().rev().find(|(k, _)| same(k.as_bytes(), key.as_bytes())).map(|(_, v)| v)
}

/// A field's value, a null counting as absent.
fn get_some<'v, 'a>(m: &'v Object<'a>, key: &str) -> Option<&'v Json<'a>> {
    get(m, key).filter(|v| !matches!(v, Json::Null))
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

struct Walker {
    errors: Vec<Error>,
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

impl Walker {
    fn fail(&mut self, path: &Path, what: impl fmt::Display) {
        self.errors.push(Error::config(format!("manifest: {path}: {what}")));
    }

    fn object<'v, 'a>(&mut self, v: &'v Json<'a>, path: &Path) -> Option<&'v Object<'a>> {
        match v {
            Json::Object(m) => Some(m),
            other => {
                self.fail(path, format_args!("expected an object, found {}", kind(other)));
                None
            }
        }
    }

    /// An optional array field; null counts as absent.
    fn array<'v, 'a>(&mut self, m: &'v Object<'a>, key: &str, path: &Path) -> &'v [Json<'a>] {
        match get_some(m, key) {
            None => &[],
            Some(Json::Array(a)) => a,
            Some(other) => {
                self.fail(&path.field(key), format_args!("expected an array, found {}", kind(other)));
                &[]
            }
        }
    }

    /// Rejects fields not in `known` (typos), in sorted order, each once.
    fn known_fields(&mut self, m: &Object, path: &Path, known: &[&str]) {
        let mut unknown: Vec<&str> =
            m.iter().map(|(k, _)| &**k).filter(|k| !known.iter().any(|n| same(n.as_bytes(), k.as_bytes()))).collect();
        unknown.sort_unstable();
        unknown.dedup();
        for key in unknown {
            self.fail(&path.field(key), "unknown field");
        }
    }

    fn string(&mut self, m: &Object, key: &str, path: &Path, required: bool) -> Option<String> {
        match get_some(m, key) {
            None => {
                if required {
                    self.fail(&path.field(key), "required field is missing");
                }
                None
            }
            Some(Json::Str(s)) => {
                if s.contains('\0') {
                    self.fail(&path.field(key), "contains a NUL byte");
                    None
                } else {
                    Some(s.to_string())
                }
            }
            Some(other) => {
                self.fail(&path.field(key), format_args!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    fn boolean(&mut self, m: &Object, key: &str, path: &Path) -> bool {
        match get_some(m, key) {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => {
                self.fail(&path.field(key), format_args!("expected a boolean, found {}", kind(other)));
                false
            }
        }
    }

    fn strings(&mut self, m: &Object, key: &'static str) -> Vec<String> {
        let items = self.array(m, key, &Path::Root);
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = Path::Item(key, i);
            match item {
                Json::Str(s) if s.contains('\0') => self.fail(&path, "contains a NUL byte"),
                Json::Str(s) => out.push(s.to_string()),
                other => self.fail(&path, format_args!("expected a string, found {}", kind(other))),
            }
        }
        out
    }

    fn manifest(&mut self, root: &Json) -> Manifest {
        let Json::Object(m) = root else {
            self.errors.push(Error::config(format!(
                "manifest: expected a JSON object (a Kubernetes container spec), found {}",
                kind(root)
            )));
            return Manifest::default();
        };
        let mut out = Manifest::default();
        let items = self.array(m, "volumeMounts", &Path::Root);
        out.volume_mounts.reserve_exact(items.len());
        for (i, v) in items.iter().enumerate() {
            if let Some(vm) = self.volume_mount(v, &Path::Item("volumeMounts", i)) {
                out.volume_mounts.push(vm);
            }
        }
        let items = self.array(m, "envFrom", &Path::Root);
        out.env_from.reserve_exact(items.len());
        for (i, v) in items.iter().enumerate() {
            if let Some(e) = self.env_from(v, &Path::Item("envFrom", i)) {
                out.env_from.push(e);
            }
        }
        let items = self.array(m, "env", &Path::Root);
        out.env.reserve_exact(items.len());
        for (i, v) in items.iter().enumerate() {
            if let Some(e) = self.env_var(v, &Path::Item("env", i)) {
                out.env.push(e);
            }
        }
        out.command = self.strings(m, "command");
        out.args = self.strings(m, "args");
        out
    }

    fn volume_mount(&mut self, v: &Json, path: &Path) -> Option<VolumeMount> {
        let m = self.object(v, path)?;
        self.known_fields(
            m,
            path,
            &["name", "mountPath", "readOnly", "mountPropagation", "recursiveReadOnly", "subPath", "subPathExpr"],
        );
        for sub in ["subPath", "subPathExpr"] {
            if get(m, sub).is_some() {
                self.fail(&path.field(sub), "is not supported (the volume root would be ambiguous)");
            }
        }
        let name = self.string(m, "name", path, true);
        let mount_path = self.string(m, "mountPath", path, true);
        Some(VolumeMount { name: name?, mount_path: mount_path? })
    }

    fn file_ref(&mut self, v: &Json, path: &Path, with_key: bool) -> Option<(FileRef, Option<String>)> {
        let m = self.object(v, path)?;
        let known: &[&str] =
            if with_key { &["volumeName", "path", "key", "optional"] } else { &["volumeName", "path", "optional"] };
        self.known_fields(m, path, known);
        let volume_name = self.string(m, "volumeName", path, true);
        let file_path = self.string(m, "path", path, true);
        let key = if with_key { self.string(m, "key", path, true) } else { None };
        let optional = self.boolean(m, "optional", path);
        let file = FileRef { volume_name: volume_name?, path: file_path?, optional };
        if with_key {
            Some((file, Some(key?)))
        } else {
            Some((file, None))
        }
    }

    fn env_from(&mut self, v: &Json, path: &Path) -> Option<EnvFrom> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &["fileRef", "configMapRef", "secretRef", "prefix"]);
        let prefix = self.string(m, "prefix", path, false).unwrap_or_default();
        let mut present = ENV_FROM_SOURCES.into_iter().filter(|k| get(m, k).is_some());
        let (Some(source), None) = (present.next(), present.next()) else {
            self.fail(path, "needs exactly one of fileRef, configMapRef, secretRef");
            return None;
        };
        if source != "fileRef" {
            return Some(EnvFrom::Platform);
        }
        let (file, _) = self.file_ref(get(m, source)?, &path.field(source), false)?;
        Some(EnvFrom::File { file, prefix })
    }

    fn env_var(&mut self, v: &Json, path: &Path) -> Option<EnvVar> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &["name", "value", "valueFrom"]);
        let name = self.string(m, "name", path, true);
        let value = self.string(m, "value", path, false);
        let source = match (value, get_some(m, "valueFrom")) {
            (Some(_), Some(_)) => {
                self.fail(path, "has both value and valueFrom");
                return None;
            }
            (value, None) => EnvSource::Value(value.unwrap_or_default()),
            (None, Some(vf)) => self.value_from(vf, &path.field("valueFrom"))?,
        };
        Some(EnvVar { name: name?, source })
    }

    fn value_from(&mut self, v: &Json, path: &Path) -> Option<EnvSource> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &VALUE_FROM_SOURCES);
        let mut present = VALUE_FROM_SOURCES.into_iter().filter(|k| get(m, k).is_some());
        let (Some(source), None) = (present.next(), present.next()) else {
            self.fail(
                path,
                "needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)",
            );
            return None;
        };
        if source != "fileKeyRef" {
            return Some(EnvSource::Platform);
        }
        let (file, key) = self.file_ref(get(m, source)?, &path.field(source), true)?;
        Some(EnvSource::FileKey { file, key: key? })
    }
}

#[cfg(test)]
mod tests;
