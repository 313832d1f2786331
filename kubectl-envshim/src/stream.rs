//! A YAML or JSON stream, document by document: a document the conversion
//! does not change is copied as the text it was read from.

use serde_json::Value;

use envshim::converter::Error;

use crate::input::data_error;
use crate::settings::Settings;
use crate::warn::Note;
use crate::yaml;

pub struct Output {
    pub text: String,
    pub json: bool,
    /// Each object that changed, with its document's number (none: nothing changed).
    pub notes: Vec<(usize, Note)>,
}

/// What each document goes through: the conversion, or `unconvert`'s undoing
/// of it. Ok: each object it changed (none: the document is copied as it came).
pub type Step<'s> = &'s (dyn Fn(&mut Value) -> Result<Vec<Note>, Vec<Error>> + Sync);

/// Every document of the stream `text` (from `shown`) through `s`. Err: every problem.
pub fn each(text: &str, shown: &str, s: Step) -> Result<Output, Vec<Error>> {
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if start.starts_with('{') || start.starts_with('[') {
        if let Some(out) = json(text, shown, s) {
            return out;
        }
        // Not a JSON stream: a YAML flow document (`{kind: Pod, ...}`) is read as YAML.
    }
    yaml(text, shown, s)
}

/// Where each problem is: `FILE: document N (Kind/name): PATH: MESSAGE`
/// (each problem's subject is its object, `Kind/name`).
fn located(shown: &str, n: usize, problems: Vec<Error>) -> Vec<Error> {
    problems.into_iter().map(|p| Error { subject: format!("{shown}: document {n} ({})", p.subject), ..p }).collect()
}

/// None when the text is not a stream of JSON values.
fn json(text: &str, shown: &str, s: Step) -> Option<Result<Output, Vec<Error>>> {
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
                errors.push(data_error(&format!("{shown}: document {}", n + 1), format!("not valid JSON: {e}")));
                break;
            }
        };
        n += 1;
        let end = values.byte_offset();
        let start = before + text[before..end].len() - text[before..end].trim_start().len();
        match s(&mut doc) {
            Ok(changed) if changed.is_empty() => {}
            Ok(changed) => match serde_json::to_string_pretty(&doc) {
                Ok(t) => {
                    notes.extend(changed.into_iter().map(|c| (n, c)));
                    out.push_str(&text[copied..start]);
                    out.push_str(&t);
                    copied = end;
                }
                Err(e) => errors.push(data_error(&format!("{shown}: document {n}"), format!("cannot be written as JSON ({e})"))),
            },
            Err(problems) => errors.extend(located(shown, n, problems)),
        }
    }
    out.push_str(&text[copied..]);
    Some(if errors.is_empty() { Ok(Output { text: out, json: true, notes }) } else { Err(errors) })
}

/// The stack the YAML path runs on: reading, converting and writing recurse
/// once per level of nesting, up to the reader's depth limit (10,000).
const YAML_STACK_BYTES: usize = 256 << 20;

fn yaml(text: &str, shown: &str, s: Step) -> Result<Output, Vec<Error>> {
    on_yaml_stack(|| yaml_documents(text, shown, s))
}

/// `f` run on a thread with [`YAML_STACK_BYTES`] of stack (`manifest` and
/// `krm` read and walk whole trees too).
pub fn on_yaml_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    let f = std::sync::Mutex::new(Some(f));
    let take = || f.lock().map_or(None, |mut f| f.take());
    std::thread::scope(|scope| {
        let run = std::thread::Builder::new().stack_size(YAML_STACK_BYTES).spawn_scoped(scope, || take().map(|f| f()));
        match run.map(|t| t.join()) {
            Ok(Ok(Some(out))) => return out,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            _ => {}
        }
        // No thread (the system refused one): on this one (the thread never took `f`).
        match take() {
            Some(f) => f(),
            None => unreachable!("f is taken once, by a thread that returned its result"),
        }
    })
}

/// Each document read as kubectl reads it; one the conversion changes is
/// written anew in its place (the `---` line, directives and the comments
/// around it stay), every other byte is copied.
fn yaml_documents(text: &str, shown: &str, s: Step) -> Result<Output, Vec<Error>> {
    let docs = yaml::read_stream(text).map_err(|e| vec![data_error(shown, e.to_string())])?;
    let (mut out, mut errors, mut notes, mut copied) = (String::with_capacity(text.len()), Vec::new(), Vec::new(), 0usize);
    for (i, mut doc) in docs.into_iter().enumerate() {
        match s(&mut doc.value) {
            Ok(changed) if changed.is_empty() => {}
            Ok(changed) => {
                notes.extend(changed.into_iter().map(|c| (i + 1, c)));
                let line_start = text[..doc.span.start].rfind('\n').map_or(0, |i| i + 1);
                let shares_line = !text[line_start..doc.span.start].trim().is_empty();
                // An indented root is rewritten from its line's start; one after `--- ` on a line of its own.
                let start = if shares_line { doc.span.start } else { line_start };
                out.push_str(&text[copied..start]);
                if shares_line {
                    out.push('\n');
                }
                out.push_str(&yaml::write(&doc.value));
                copied = doc.span.end;
            }
            Err(problems) => errors.extend(located(shown, i + 1, problems)),
        }
    }
    out.push_str(&text[copied..]);
    if errors.is_empty() {
        Ok(Output { text: out, json: false, notes })
    } else {
        Err(errors)
    }
}

/// Each input's name and its conversion.
pub type Converted<'i> = Vec<(&'i String, Output)>;

/// Every input converted; Err: every problem of every input.
pub fn convert_all<'i>(inputs: &'i crate::input::Texts, settings: &Settings) -> Result<Converted<'i>, Vec<Error>> {
    each_input(inputs, &|doc| crate::convert::document(doc, settings))
}

/// Every document of every input through `step`; Err: every problem of every input.
pub fn each_input<'i>(inputs: &'i crate::input::Texts, step: Step) -> Result<Converted<'i>, Vec<Error>> {
    let mut errors = Vec::new();
    let mut outputs = Vec::new();
    for (shown, text) in inputs {
        match text {
            Ok(text) => match each(text, shown, step) {
                Ok(out) => outputs.push((shown, out)),
                Err(mut es) => errors.append(&mut es),
            },
            Err(e) => errors.push(e.clone()),
        }
    }
    if errors.is_empty() {
        Ok(outputs)
    } else {
        Err(errors)
    }
}

/// The outputs as one stream: several files' YAML documents separated by
/// `---`, JSON values one after the other (a stream kubectl reads).
pub fn joined(outputs: &Converted) -> String {
    let mut all = String::new();
    let any_yaml = outputs.iter().any(|(_, o)| !o.json);
    for (i, (_, out)) in outputs.iter().enumerate() {
        if i > 0 {
            if !all.is_empty() && !all.ends_with('\n') {
                all.push('\n');
            }
            if any_yaml && !out.text.trim_start().starts_with("---") {
                all.push_str("---\n");
            }
        }
        all.push_str(&out.text);
    }
    all
}
