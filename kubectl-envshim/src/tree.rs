//! A stream read into document trees, and a tree written as YAML: for the
//! commands that need every document as a tree (`manifest`, `krm`). Kept in
//! this one place so that a better YAML reader and writer replace them here.

use serde::Deserialize;
use serde_json::Value;

/// The documents of a YAML or JSON stream (empty ones left out). Err: why it
/// is not one, as a message naming the document.
pub fn read(text: &str) -> Result<Vec<Value>, String> {
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if start.starts_with('{') || start.starts_with('[') {
        let docs: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(text).into_iter::<Value>().collect();
        if let Ok(docs) = docs {
            return Ok(docs);
        }
        // Not a JSON stream: a YAML flow document (`{kind: Pod, ...}`) is read as YAML.
    }
    let mut docs = Vec::new();
    // kubectl's YAML 1.1 file modes (`0644`), as `convert` reads them.
    let text = crate::stream::octal_modes(text);
    for (i, d) in serde_norway::Deserializer::from_str(&text).enumerate() {
        let mut yaml = serde_norway::Value::deserialize(d).map_err(|e| format!("document {}: not valid YAML: {e}", i + 1))?;
        let _ = yaml.apply_merge();
        let doc = serde_json::to_value(&yaml).map_err(|e| format!("document {}: not a JSON document ({e})", i + 1))?;
        if !doc.is_null() {
            docs.push(doc);
        }
    }
    Ok(docs)
}

/// `doc` as a YAML document (no `---`).
pub fn write(doc: &Value) -> Result<String, String> {
    serde_norway::to_string(doc).map_err(|e| format!("cannot be written as YAML ({e})"))
}
