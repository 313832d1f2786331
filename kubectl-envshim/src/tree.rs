//! A stream read into document trees, and a tree written as YAML, for the
//! commands that need every document as a tree (`manifest`, `krm`): kubectl's
//! reading (`yaml.rs`), JSON first as `convert` reads it.

use serde_json::Value;

/// The documents of a YAML or JSON stream (empty ones left out). Err: why it
/// is not one, as a message naming the document (no text of it).
pub fn read(text: &str) -> Result<Vec<Value>, String> {
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if start.starts_with('{') || start.starts_with('[') {
        let docs: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text).into_iter::<Value>().collect();
        if let Ok(docs) = docs {
            return Ok(docs);
        }
        // Not a JSON stream: a YAML flow document (`{kind: Pod, ...}`) is read as YAML.
    }
    let docs = crate::yaml::read_stream(text).map_err(|e| e.to_string())?;
    Ok(docs.into_iter().map(|d| d.value).filter(|v| !v.is_null()).collect())
}

/// `doc` as a YAML document (no `---`), read back the same by YAML 1.1 and 1.2 readers.
pub fn write(doc: &Value) -> String {
    crate::yaml::write(doc)
}

/// A node of a document, as envshim's container walk reads it.
#[derive(Clone, Copy)]
struct Node<'v>(&'v Value);

impl<'v> envshim::converter::Tree<'v> for Node<'v> {
    fn fields(self) -> Option<impl Iterator<Item = (&'v str, Self)>> {
        Some(self.0.as_object()?.iter().map(|(k, v)| (k.as_str(), Node(v))))
    }
    fn items(self) -> Option<impl Iterator<Item = Self>> {
        Some(self.0.as_array()?.iter().map(Node))
    }
}

/// Each container under `v`: envshim's walk (`--container` chooses among the same ones).
pub fn containers<'v>(v: &'v Value, found: &mut impl FnMut(&'v Value)) {
    envshim::converter::containers(Node(v), &mut |_, c: Node<'v>| found(c.0));
}
