//! A YAML or JSON stream, document by document: a document the conversion
//! does not change is copied as the text it was read from.

use serde_json::Value;

use crate::code;
use crate::convert::{self, Problem, Settings};
use crate::warn::Note;

pub struct Output {
    pub text: String,
    pub json: bool,
    /// Each object that changed, with its document's number (none: nothing changed).
    pub notes: Vec<(usize, Note)>,
}

/// Converts the stream `text` (from `shown`). Err: every problem, as (exit code, message).
pub fn convert(text: &str, shown: &str, s: &Settings) -> Result<Output, Vec<(u8, String)>> {
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if start.starts_with('{') || start.starts_with('[') {
        if let Some(out) = json(text, shown, s) {
            return out;
        }
        // Not a JSON stream: a YAML flow document (`{kind: Pod, ...}`) is read as YAML.
    }
    yaml(text, shown, s)
}

/// Where each problem is: `FILE: document N (Kind/name): PATH: MESSAGE`.
fn located(shown: &str, n: usize, problems: Vec<Problem>) -> Vec<(u8, String)> {
    problems.into_iter().map(|p| (p.code, format!("{shown}: document {n} ({}): {}: {}", p.object, p.path, p.message))).collect()
}

/// None when the text is not a stream of JSON values.
fn json(text: &str, shown: &str, s: &Settings) -> Option<Result<Output, Vec<(u8, String)>>> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let (mut out, mut errors, mut notes, mut copied, mut n) = (String::new(), Vec::new(), Vec::new(), 0usize, 0usize);
    loop {
        let before = values.byte_offset();
        let next = values.next();
        let Some(next) = next else { break };
        let mut doc = match next {
            Ok(doc) => doc,
            Err(_) if n == 0 => return None,
            Err(e) => {
                errors.push((code::DATAERR, format!("{shown}: document {}: not valid JSON: {e}", n + 1)));
                break;
            }
        };
        n += 1;
        let end = values.byte_offset();
        let start = before + text[before..end].len() - text[before..end].trim_start().len();
        match convert::document(&mut doc, s) {
            Ok(changed) if changed.is_empty() => {}
            Ok(changed) => match serde_json::to_string_pretty(&doc) {
                Ok(t) => {
                    notes.extend(changed.into_iter().map(|c| (n, c)));
                    out.push_str(&text[copied..start]);
                    out.push_str(&t);
                    copied = end;
                }
                Err(e) => errors.push((code::DATAERR, format!("{shown}: document {n}: cannot be written as JSON ({e})"))),
            },
            Err(problems) => errors.extend(located(shown, n, problems)),
        }
    }
    out.push_str(&text[copied..]);
    Some(if errors.is_empty() { Ok(Output { text: out, json: true, notes }) } else { Err(errors) })
}

/// Is `line` a document marker (`---` or `...` at the start of a line, then a blank or the end)?
fn marker(line: &str, m: &str) -> bool {
    line.strip_prefix(m).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// A blank line or a comment.
fn nothing(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

fn yaml(text: &str, shown: &str, s: &Settings) -> Result<Output, Vec<(u8, String)>> {
    // The documents' texts, each from its `---` line (or the start) to the next.
    // A line starting with `---` is always a marker: YAML allows it in no scalar.
    let mut chunks: Vec<(usize, &str)> = Vec::new(); // (first line number, text)
    let (mut begin, mut begin_line, mut offset) = (0usize, 1usize, 0usize);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if marker(line, "---") && offset > begin {
            let prev = &text[begin..offset];
            // Directives (`%YAML`) before a `---` belong to the document it starts.
            if !prev.lines().all(|l| nothing(l) || l.starts_with('%')) || !prev.lines().any(|l| l.starts_with('%')) {
                chunks.push((begin_line, prev));
                begin = offset;
                begin_line = i + 1;
            }
        }
        offset += line.len();
    }
    if begin < text.len() || chunks.is_empty() {
        chunks.push((begin_line, &text[begin..]));
    }
    let (mut out, mut errors, mut notes, mut n) = (String::with_capacity(text.len()), Vec::new(), Vec::new(), 0usize);
    for (line, chunk) in chunks {
        let content = chunk.lines().any(|l| !nothing(l) && !marker(l, "---") && !marker(l, "...") && !l.starts_with('%'))
            || chunk.lines().any(|l| marker(l, "---") && !nothing(&l[3..]));
        if !content {
            out.push_str(chunk);
            continue;
        }
        n += 1;
        let mut yaml: serde_norway::Value = match serde_norway::from_str(&octal_modes(chunk)) {
            Ok(doc) => doc,
            Err(e) => {
                let at = e.location().map(|l| format!(" (line {})", line + l.line() - 1)).unwrap_or_default();
                errors.push((code::DATAERR, format!("{shown}: document {n}{at}: not valid YAML: {}", strip_location(&e.to_string()))));
                continue;
            }
        };
        let _ = yaml.apply_merge();
        let mut doc: Value = match serde_json::to_value(&yaml) {
            Ok(doc) => doc,
            Err(e) => {
                errors.push((code::DATAERR, format!("{shown}: document {n}: not a JSON document ({e})")));
                continue;
            }
        };
        match convert::document(&mut doc, s) {
            Ok(changed) if changed.is_empty() => out.push_str(chunk),
            Ok(changed) => match serde_norway::to_string(&doc) {
                Ok(t) => {
                    notes.extend(changed.into_iter().map(|c| (n, c)));
                    // Keep the marker line (when it holds nothing else) and the comments above the document.
                    let mut kept = 0;
                    for l in chunk.split_inclusive('\n') {
                        if nothing(l) || (marker(l, "---") && nothing(&l[3..])) || l.starts_with('%') {
                            kept += l.len();
                        } else {
                            break;
                        }
                    }
                    let head = &chunk[..kept];
                    if head.is_empty() && marker(chunk, "---") {
                        out.push_str("---\n");
                    }
                    out.push_str(head);
                    out.push_str(&t);
                }
                Err(e) => errors.push((code::DATAERR, format!("{shown}: document {n}: cannot be written as YAML ({e})"))),
            },
            Err(problems) => errors.extend(located(shown, n, problems)),
        }
    }
    if errors.is_empty() {
        Ok(Output { text: out, json: false, notes })
    } else {
        Err(errors)
    }
}

/// The file modes of volumes (`defaultMode: 0400`, `mode: 0644`) in decimal.
/// kubectl reads YAML 1.1, where a plain number with a leading 0 is octal; the
/// parser reads YAML 1.2, where it is a string, which would be written back
/// quoted, and refused by the API server. Only these two keys hold modes.
pub fn octal_modes(chunk: &str) -> std::borrow::Cow<'_, str> {
    if !chunk.contains("ode:") {
        return chunk.into();
    }
    let mut out = String::with_capacity(chunk.len());
    for line in chunk.split_inclusive('\n') {
        let mut line = line.to_string();
        while let Some(fixed) = octal_mode(&line) {
            line = fixed;
        }
        out.push_str(&line);
    }
    out.into()
}

fn octal_mode(line: &str) -> Option<String> {
    for key in ["defaultMode:", "mode:"] {
        let mut from = 0;
        while let Some(i) = line[from..].find(key).map(|i| i + from) {
            from = i + key.len();
            let before = line[..i].chars().next_back();
            if !before.is_none_or(|c| c.is_whitespace() || c == '{' || c == ',' || c == '-') {
                continue;
            }
            let rest = &line[from..];
            let digits_at = from + (rest.len() - rest.trim_start_matches([' ', '\t']).len());
            let digits: &str = &line[digits_at..];
            let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
            let (number, after) = digits.split_at(end);
            let ends = after.is_empty() || after.starts_with([' ', '\t', '\r', '\n', ',', '}']);
            if digits_at > from && number.len() > 1 && number.starts_with('0') && number.bytes().all(|b| (b'0'..=b'7').contains(&b)) && ends {
                let value = u32::from_str_radix(number, 8).ok()?;
                return Some(format!("{}{value}{after}", &line[..digits_at]));
            }
        }
    }
    None
}

/// The parser's message without its ` at line L column C` (the caller gives the line in the stream).
fn strip_location(message: &str) -> &str {
    match message.find(" at line ") {
        Some(i) => &message[..i],
        None => message,
    }
}
