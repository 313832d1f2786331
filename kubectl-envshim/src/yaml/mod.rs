//! YAML as kubectl reads it, and YAML that kubectl and YAML 1.2 readers read
//! back the same. kubectl reads YAML 1.1 (go-yaml v2 under sigs.k8s.io/yaml)
//! and sends JSON: `read_stream` gives each document as that JSON; `write`
//! gives block YAML whose every scalar means the same to both readers.

mod read;
mod resolve;
mod write;

use std::fmt;
use std::ops::Range;

use serde_json::Value;

pub use read::read_stream;
pub use write::write;

/// One document of a stream, with content.
pub struct Document {
    /// What kubectl sends for it.
    pub value: Value,
    /// Its content's bytes in the stream: from the root node's first character
    /// to where `...` or the next document starts (the `---` line, directives
    /// and comments before the root are outside; comments after it inside).
    pub span: Range<usize>,
    /// The line (1-based) where its content starts (for messages of readers built on this one).
    #[allow(dead_code)]
    pub line: usize,
}

/// Why a stream cannot be read. The message never holds text from the stream.
#[derive(Debug)]
pub struct Error {
    /// The document (1-based, counting documents with content).
    pub document: usize,
    pub line: usize,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "document {} (line {}): {}", self.document, self.line, self.message)
    }
}

#[cfg(test)]
mod tests;
