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
