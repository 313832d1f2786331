//! YAML text to documents, each as kubectl reads it (go-yaml v2 under
//! sigs.k8s.io/yaml): the parser's events are composed into a tree that
//! shares what aliases name (Rc: linear in the input), then each document is
//! built into JSON as go-yaml v2 decodes it: merge keys, aliases counted
//! against its "excessive aliasing" ratio, keys turned into JSON keys.

use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Value};

use super::resolve::{self, Scalar, Tag};
use super::{Document, Error};

/// Deeper nesting is refused, as go-yaml v2 ("exceeded max depth of 10000")
/// and the API server's JSON decoder refuse it.
pub const MAX_DEPTH: usize = 10_000;
/// Text that aliases repeat, at most (go-yaml shares strings; a JSON copy of
/// each repetition would not fit in memory long before its node count stops it).
pub const MAX_ALIASED_BYTES: usize = 64 * 1024 * 1024;

enum Node {
    /// A resolved scalar; `merge`: a `<<` go-yaml v2 takes as a merge key.
    Scalar {
        value: Leaf,
        merge: bool,
    },
    Seq(Vec<Rc<Node>>),
    Map(Vec<(Rc<Node>, Rc<Node>)>),
    Alias(Rc<Node>),
}

enum Leaf {
    Json(Value),
    /// `.inf`, `.nan`: a key's text to go-yaml (`.inf`, `-.inf`, `.nan`); JSON cannot hold the value.
    NotJson(&'static str),
}

/// A collection being composed.
struct Open {
    items: Vec<Rc<Node>>,
    mapping: bool,
    anchor: usize,
    height: usize,
}

/// The documents with content of `text`, each as kubectl reads it. Building
/// and dropping a document recurses once per level of nesting (at most
/// MAX_DEPTH): a caller that may meet deep input runs it on a thread with a
/// large stack, as `stream.rs` does.
pub fn read_stream(text: &str) -> Result<Vec<Document>, Error> {
    markers(text)?;
    let mut composer = Composer::new(text);
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| composer.fail(e.marker().line(), parser_message(e.info())))?;
        composer.event(event, span)?;
    }
    Ok(composer.docs)
}

/// The parser's events composed into trees, one document at a time; each
/// document with content is built as it ends.
struct Composer<'t> {
    docs: Vec<Document>,
    offsets: Offsets<'t>,
    /// Documents with content before this one.
    number: usize,
    stack: Vec<Open>,
    anchors: HashMap<usize, (Rc<Node>, usize)>,
    root: Option<Rc<Node>>,
    /// The root's first event, and whether any of its events covers text (an empty document's do not).
    first: Option<Span>,
    covers: bool,
}

impl<'t> Composer<'t> {
    fn new(text: &'t str) -> Self {
        Composer {
            docs: Vec::new(),
            offsets: Offsets::new(text),
            number: 0,
            stack: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            first: None,
            covers: false,
        }
    }

    /// An error at `line` of the current document.
    fn fail(&self, line: usize, message: String) -> Error {
        Error { document: self.number + 1, line, message }
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Error> {
        let at = span.start.line();
        let of_root = self.root.is_none()
            && matches!(
                event,
                Event::Alias(_) | Event::Scalar(..) | Event::SequenceStart(..) | Event::SequenceEnd | Event::MappingStart(..) | Event::MappingEnd
            );
        if of_root {
            self.first.get_or_insert(span);
            if span.start.index() != span.end.index() {
                self.covers = true;
            }
        }
        // The node this event completes: (node, its height, its anchor).
        let done: Option<(Rc<Node>, usize, usize)> = match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => None,
            Event::DocumentStart(_) => {
                self.anchors.clear();
                (self.root, self.first, self.covers) = (None, None, false);
                None
            }
            Event::DocumentEnd => {
                self.end_document(span)?;
                None
            }
            Event::Alias(id) => Some(self.alias(id, at)?),
            Event::Scalar(value, style, anchor, tag) => {
                let plain = style == ScalarStyle::Plain;
                // go-yaml v2 merges at a `<<` that is implicit (plain and untagged, or
                // tagged `!`, whatever its style) or tagged `!!merge`.
                let merge = value == "<<"
                    && tag.as_deref().map_or(plain, |t| (t.handle.is_empty() && t.suffix == "!") || resolve::core(&t.handle, &t.suffix) == Some("merge"));
                let tag = tag.as_deref().map_or(Tag::None, |t| Tag::of(&t.handle, &t.suffix));
                let leaf = scalar(&value, tag, plain).map_err(|m| self.fail(at, m))?;
                Some((Rc::new(Node::Scalar { value: leaf, merge }), 0, anchor))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(self.fail(at, format!("nesting deeper than {MAX_DEPTH} levels")));
                }
                let mapping = matches!(event, Event::MappingStart(..));
                self.stack.push(Open { items: Vec::new(), mapping, anchor, height: 0 });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => Some(self.close(at)?),
        };
        if let Some((node, height, anchor)) = done {
            self.attach(node, height, anchor);
        }
        Ok(())
    }

    /// Builds the document that ends at `end`, if it has content.
    fn end_document(&mut self, end: Span) -> Result<(), Error> {
        // An empty document (markers, comments) has a root that covers no text.
        // The document's text ends where `...` or the next document starts.
        if let (Some(node), Some(first), true) = (self.root.take(), self.first, self.covers) {
            let line = first.start.line();
            let value = Builder::default().build(&node).map_err(|message| self.fail(line, message))?;
            self.number += 1;
            self.docs.push(Document { value, span: self.offsets.span(first.start.index(), end.start.index()), line });
        }
        Ok(())
    }

    /// The node an alias completes: (node, its height, no anchor).
    fn alias(&self, id: usize, at: usize) -> Result<(Rc<Node>, usize, usize), Error> {
        let (node, height) = self.anchors.get(&id).ok_or_else(|| self.fail(at, "an alias to an anchor not defined before it".into()))?;
        if self.stack.len() + height > MAX_DEPTH {
            return Err(self.fail(at, format!("an alias makes the nesting deeper than {MAX_DEPTH} levels")));
        }
        Ok((Rc::new(Node::Alias(node.clone())), *height, 0))
    }

    /// The collection a SequenceEnd or MappingEnd completes: (node, its height, its anchor).
    fn close(&mut self, at: usize) -> Result<(Rc<Node>, usize, usize), Error> {
        let open = self.stack.pop().ok_or_else(|| self.fail(at, "not valid YAML: an unbalanced collection".into()))?;
        let node = if open.mapping {
            let mut items = open.items.into_iter();
            let mut pairs = Vec::with_capacity(items.len() / 2);
            while let (Some(k), Some(v)) = (items.next(), items.next()) {
                pairs.push((k, v));
            }
            Node::Map(pairs)
        } else {
            Node::Seq(open.items)
        };
        Ok((Rc::new(node), open.height + 1, open.anchor))
    }

    /// Records a completed node under its anchor and gives it to its parent (or makes it the root).
    fn attach(&mut self, node: Rc<Node>, height: usize, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, (node.clone(), height));
        }
        match self.stack.last_mut() {
            Some(parent) => {
                parent.height = parent.height.max(height);
                parent.items.push(node);
            }
            None => self.root = Some(node),
        }
    }
}

/// kubectl splits a stream into documents at each line starting `---`, before
/// any YAML reader sees it, and refuses one with more than a comment after
/// the dashes (`--- !!map`, `--- {a: 1}`, `----`): refused here too, as
/// kubectl would refuse the input.
fn markers(text: &str) -> Result<(), Error> {
    let (mut document, mut content) = (1, false);
    for (i, line) in text.lines().enumerate() {
        if let Some(rest) = line.strip_prefix("---") {
            if content {
                (document, content) = (document + 1, false);
            }
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                let message = "text after a document marker (---) on its line, which kubectl refuses".into();
                return Err(Error { document, line: i + 1, message });
            }
        } else if !matches!(line.trim_start().bytes().next(), None | Some(b'#' | b'%')) {
            content = true;
        }
    }
    Ok(())
}

/// The parser's message, cut before any quoted input (it may quote a character).
fn parser_message(info: &str) -> String {
    let cut = info.find(['`', '\'']).unwrap_or(info.len());
    let message = info[..cut].trim_end_matches([':', ' ']);
    if message == "recursion limit exceeded" {
        "collections nested too deep for the parser (recursion limit exceeded)".into()
    } else {
        format!("not valid YAML: {message}")
    }
}

/// One scalar as go-yaml v2 resolves it. Err: why (never the text).
fn scalar(text: &str, tag: Tag, plain: bool) -> Result<Leaf, String> {
    if tag == Tag::Binary {
        let bytes = base64(text).ok_or("a !!binary value that is not valid base64")?;
        return Ok(Leaf::Json(Value::String(String::from_utf8_lossy(&bytes).into_owned())));
    }
    Ok(match resolve::resolve(tag, plain, text)? {
        Scalar::NotJson => Leaf::NotJson(match text.trim_start_matches('+') {
            t if t.ends_with(['n', 'N']) && t.contains(['a', 'A']) => ".nan",
            t if t.starts_with('-') => "-.inf",
            _ => ".inf",
        }),
        s => Leaf::Json(resolve::to_json(s, text)),
    })
}

/// Go's base64.StdEncoding.DecodeString: padded, `\r` and `\n` ignored.
fn base64(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !matches!(b, b'\r' | b'\n')).collect();
    if digits.len() % 4 != 0 {
        return None;
    }
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(digits.len() / 4 * 3);
    let quads = digits.chunks(4).count();
    for (i, quad) in digits.chunks(4).enumerate() {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && i + 1 != quads) {
            return None;
        }
        let mut n: u32 = 0;
        for &c in &quad[..4 - pad] {
            n = n << 6 | u32::from(value(c)?);
        }
        n <<= 6 * pad as u32;
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..4 - pad]);
    }
    Some(out)
}

/// go-yaml v2's decoding of a composed document into kubectl's JSON.
#[derive(Default)]
struct Builder {
    decodes: usize,
    aliased: usize,
    in_alias: usize,
    aliased_bytes: usize,
}

impl Builder {
    fn build(&mut self, node: &Node) -> Result<Value, String> {
        self.value(node)?.ok_or_else(|| "a float JSON cannot hold (.inf or .nan), which kubectl refuses".into())
    }

    /// The JSON of `node`, or None when it holds a float JSON cannot hold:
    /// that is refused only if no later key of the same name replaces it, as
    /// go-yaml v2 decodes the whole document before kubectl makes it JSON.
    fn value(&mut self, node: &Node) -> Result<Option<Value>, String> {
        self.count()?;
        Ok(match node {
            Node::Scalar { value: Leaf::Json(v), .. } => {
                if self.in_alias > 0 {
                    if let Value::String(s) = v {
                        self.aliased_bytes += s.len();
                        if self.aliased_bytes > MAX_ALIASED_BYTES {
                            return Err(format!("aliases repeat more than {} MiB of text", MAX_ALIASED_BYTES >> 20));
                        }
                    }
                }
                Some(v.clone())
            }
            Node::Scalar { value: Leaf::NotJson(_), .. } => None,
            Node::Seq(items) => {
                let mut values = Vec::with_capacity(items.len());
                for n in items {
                    let Some(v) = self.value(n)? else { return Ok(None) };
                    values.push(v);
                }
                Some(Value::Array(values))
            }
            Node::Map(pairs) => {
                let (mut map, mut unheld) = (Map::with_capacity(pairs.len()), Vec::new());
                self.entries(pairs, &mut map, &mut unheld)?;
                unheld.is_empty().then_some(Value::Object(map))
            }
            Node::Alias(target) => {
                self.in_alias += 1;
                let v = self.value(target);
                self.in_alias -= 1;
                v?
            }
        })
    }

    /// A mapping's pairs into `map`, later keys replacing earlier ones;
    /// `unheld`: the keys whose value JSON cannot hold.
    fn entries(&mut self, pairs: &[(Rc<Node>, Rc<Node>)], map: &mut Map<String, Value>, unheld: &mut Vec<String>) -> Result<(), String> {
        for (k, v) in pairs {
            if matches!(&**k, Node::Scalar { merge: true, .. }) {
                self.count()?;
                self.merge(v, map, unheld)?;
                continue;
            }
            let key = self.key(k)?;
            let value = self.value(v)?;
            unheld.retain(|u| *u != key);
            match value {
                Some(value) => map.insert(key, value),
                None => {
                    unheld.push(key.clone());
                    map.insert(key, Value::Null)
                }
            };
        }
        Ok(())
    }

    /// A merge key's value: a mapping, an alias to one, or a list of those
    /// (earlier ones win). Merged keys replace those before them, as go-yaml v2 does.
    fn merge(&mut self, node: &Node, map: &mut Map<String, Value>, unheld: &mut Vec<String>) -> Result<(), String> {
        let is_map = |n: &Node| match n {
            Node::Map(_) => true,
            Node::Alias(t) => matches!(&**t, Node::Map(_)),
            _ => false,
        };
        let maps: Vec<&Node> = match node {
            Node::Seq(items) if items.iter().all(|n| is_map(n)) => items.iter().rev().map(|n| &**n).collect(),
            n if is_map(n) => vec![n],
            _ => return Err("a merge key (<<) whose value is not a mapping or a list of mappings".into()),
        };
        for m in maps {
            self.merge_one(m, map, unheld)?;
        }
        Ok(())
    }

    /// One merged mapping (or an alias to it), counted as `value` counts it.
    fn merge_one(&mut self, node: &Node, map: &mut Map<String, Value>, unheld: &mut Vec<String>) -> Result<(), String> {
        self.count()?;
        match node {
            Node::Alias(target) => {
                self.in_alias += 1;
                let r = self.merge_one(target, map, unheld);
                self.in_alias -= 1;
                r
            }
            Node::Map(pairs) => self.entries(pairs, map, unheld),
            _ => Ok(()),
        }
    }

    /// One decode, as go-yaml v2 counts them; refused past its alias ratio.
    fn count(&mut self) -> Result<(), String> {
        self.decodes += 1;
        if self.in_alias > 0 {
            self.aliased += 1;
        }
        if self.aliased > 100 && self.decodes > 1000 && self.aliased as f64 / self.decodes as f64 > allowed_alias_ratio(self.decodes) {
            return Err("the document contains excessive aliasing (kubectl refuses it)".into());
        }
        Ok(())
    }

    /// A mapping key as sigs.k8s.io/yaml turns it into a JSON key.
    fn key(&mut self, node: &Node) -> Result<String, String> {
        let mut n = node;
        while let Node::Alias(t) = n {
            self.count()?;
            n = t;
        }
        self.count()?;
        match n {
            Node::Scalar { value: Leaf::NotJson(text), .. } => Ok((*text).to_string()),
            Node::Scalar { value: Leaf::Json(v), .. } => match v {
                Value::String(s) => Ok(s.clone()),
                Value::Bool(b) => Ok(b.to_string()),
                Value::Number(x) if x.is_i64() => Ok(x.to_string()),
                Value::Number(x) if x.is_f64() => Ok(go_float32_g(x.as_f64().unwrap_or(0.0))),
                Value::Number(_) => Err("a mapping key that is an unsigned integer past 2^63 (kubectl refuses it)".into()),
                _ => Err("a null mapping key (kubectl refuses it)".into()),
            },
            _ => Err("a mapping key that is a list or a mapping (kubectl refuses it)".into()),
        }
    }
}

/// go-yaml v2's allowed share of decodes that come from aliases.
fn allowed_alias_ratio(decodes: usize) -> f64 {
    const LOW: usize = 400_000;
    const HIGH: usize = 4_000_000;
    if decodes <= LOW {
        0.99
    } else if decodes >= HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((decodes - LOW) as f64 / (HIGH - LOW) as f64)
    }
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: how sigs.k8s.io/yaml writes a
/// float key; past float32's range it is infinite, which it writes `.inf`.
fn go_float32_g(f: f64) -> String {
    let x = f as f32;
    if x.is_infinite() {
        return if x < 0.0 { "-.inf".into() } else { ".inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Rust's `{:e}` gives the shortest digits that read back as this f32.
    let e = format!("{:e}", x.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if x < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        format!("{sign}{first}{dot}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else if exp < 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        }
    }
}

/// Character indexes (the parser's) to byte offsets, moving forward (linear in the text).
struct Offsets<'a> {
    text: &'a str,
    /// A character index and its byte offset.
    at: (usize, usize),
}

impl<'a> Offsets<'a> {
    fn new(text: &'a str) -> Self {
        Offsets { text, at: (0, 0) }
    }

    fn byte(&mut self, chars: usize) -> usize {
        if chars < self.at.0 {
            self.at = (0, 0);
        }
        let (mut c, mut b) = self.at;
        for ch in self.text[b..].chars() {
            if c == chars {
                break;
            }
            c += 1;
            b += ch.len_utf8();
        }
        self.at = (c, b);
        b
    }

    fn span(&mut self, first: usize, end: usize) -> Range<usize> {
        self.byte(first)..self.byte(end)
    }
}
