//! The manifest: a subset of the Kubernetes core/v1 `Container` (SPEC §3).
//!
//! The JSON is parsed into a `serde_json::Value` and walked by hand, so every
//! schema error names its JSON path (`env[3].valueFrom.fileKeyRef.key`) and no
//! error ever quotes a value. Unknown top-level fields are ignored (a pasted
//! container spec has many); unknown fields below are typos, hence errors.

use serde_json::{Map, Value};

use crate::error::{escape, Error};

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
    FileKey { file: FileRef, key: String },
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
    let root: Value = serde_json::from_slice(bytes)
        .map_err(|e| vec![Error::config(format!("manifest is not valid JSON: {e}"))])?;
    let mut w = Walker { errors: Vec::new() };
    let manifest = w.manifest(&root);
    if w.errors.is_empty() {
        Ok(manifest)
    } else {
        Err(w.errors)
    }
}

struct Walker {
    errors: Vec<Error>,
}

/// What a JSON value is, for messages (never the value itself).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Walker {
    fn fail(&mut self, path: &str, what: impl std::fmt::Display) {
        self.errors.push(Error::config(format!("manifest: {path}: {what}")));
    }

    fn object<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Map<String, Value>> {
        match v {
            Value::Object(m) => Some(m),
            other => {
                self.fail(path, format_args!("expected an object, found {}", kind(other)));
                None
            }
        }
    }

    /// An optional array field; null counts as absent.
    fn array<'v>(&mut self, m: &'v Map<String, Value>, key: &str, path: &str) -> &'v [Value] {
        match m.get(key) {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                self.fail(&join(path, key), format_args!("expected an array, found {}", kind(other)));
                &[]
            }
        }
    }

    /// Rejects fields not in `known` (typos); `ignored` ones are accepted silently.
    fn known_fields(&mut self, m: &Map<String, Value>, path: &str, known: &[&str]) {
        for key in m.keys() {
            if !known.contains(&key.as_str()) {
                self.fail(&join(path, key), "unknown field");
            }
        }
    }

    fn string(&mut self, m: &Map<String, Value>, key: &str, path: &str, required: bool) -> Option<String> {
        // The path is joined only for a message: joining it for every field
        // was 13% of a start-up's instructions (docs/performance.md).
        match m.get(key) {
            None | Some(Value::Null) => {
                if required {
                    self.fail(&join(path, key), "required field is missing");
                }
                None
            }
            Some(Value::String(s)) => {
                if s.contains('\0') {
                    self.fail(&join(path, key), "contains a NUL byte");
                    None
                } else {
                    Some(s.clone())
                }
            }
            Some(other) => {
                self.fail(&join(path, key), format_args!("expected a string, found {}", kind(other)));
                None
            }
        }
    }

    fn boolean(&mut self, m: &Map<String, Value>, key: &str, path: &str) -> bool {
        match m.get(key) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.fail(&join(path, key), format_args!("expected a boolean, found {}", kind(other)));
                false
            }
        }
    }

    fn strings(&mut self, m: &Map<String, Value>, key: &str) -> Vec<String> {
        let items = self.array(m, key, "");
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("{key}[{i}]");
            match item {
                Value::String(s) if s.contains('\0') => self.fail(&path, "contains a NUL byte"),
                Value::String(s) => out.push(s.clone()),
                other => self.fail(&path, format_args!("expected a string, found {}", kind(other))),
            }
        }
        out
    }

    fn manifest(&mut self, root: &Value) -> Manifest {
        let Value::Object(m) = root else {
            self.errors.push(Error::config(format!(
                "manifest: expected a JSON object (a Kubernetes container spec), found {}",
                kind(root)
            )));
            return Manifest::default();
        };
        let mut out = Manifest::default();
        for (i, v) in self.array(m, "volumeMounts", "").iter().enumerate() {
            if let Some(vm) = self.volume_mount(v, &format!("volumeMounts[{i}]")) {
                out.volume_mounts.push(vm);
            }
        }
        for (i, v) in self.array(m, "envFrom", "").iter().enumerate() {
            if let Some(e) = self.env_from(v, &format!("envFrom[{i}]")) {
                out.env_from.push(e);
            }
        }
        for (i, v) in self.array(m, "env", "").iter().enumerate() {
            if let Some(e) = self.env_var(v, &format!("env[{i}]")) {
                out.env.push(e);
            }
        }
        out.command = self.strings(m, "command");
        out.args = self.strings(m, "args");
        out
    }

    fn volume_mount(&mut self, v: &Value, path: &str) -> Option<VolumeMount> {
        let m = self.object(v, path)?;
        self.known_fields(
            m,
            path,
            &["name", "mountPath", "readOnly", "mountPropagation", "recursiveReadOnly", "subPath", "subPathExpr"],
        );
        for sub in ["subPath", "subPathExpr"] {
            if m.contains_key(sub) {
                self.fail(&join(path, sub), "is not supported (the volume root would be ambiguous)");
            }
        }
        let name = self.string(m, "name", path, true);
        let mount_path = self.string(m, "mountPath", path, true);
        Some(VolumeMount { name: name?, mount_path: mount_path? })
    }

    fn file_ref(&mut self, v: &Value, path: &str, with_key: bool) -> Option<(FileRef, Option<String>)> {
        let m = self.object(v, path)?;
        let known: &[&str] = if with_key {
            &["volumeName", "path", "key", "optional"]
        } else {
            &["volumeName", "path", "optional"]
        };
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

    fn env_from(&mut self, v: &Value, path: &str) -> Option<EnvFrom> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &["fileRef", "configMapRef", "secretRef", "prefix"]);
        let prefix = self.string(m, "prefix", path, false).unwrap_or_default();
        let mut present = ENV_FROM_SOURCES.into_iter().filter(|k| m.contains_key(*k));
        let (Some(source), None) = (present.next(), present.next()) else {
            self.fail(path, "needs exactly one of fileRef, configMapRef, secretRef");
            return None;
        };
        if source != "fileRef" {
            return Some(EnvFrom::Platform);
        }
        let (file, _) = self.file_ref(&m["fileRef"], &join(path, "fileRef"), false)?;
        Some(EnvFrom::File { file, prefix })
    }

    fn env_var(&mut self, v: &Value, path: &str) -> Option<EnvVar> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &["name", "value", "valueFrom"]);
        let name = self.string(m, "name", path, true);
        let value = self.string(m, "value", path, false);
        let value_from = m.get("valueFrom").filter(|v| !v.is_null());
        let source = match (value, value_from) {
            (Some(_), Some(_)) => {
                self.fail(path, "has both value and valueFrom");
                return None;
            }
            (value, None) => EnvSource::Value(value.unwrap_or_default()),
            (None, Some(vf)) => self.value_from(vf, &join(path, "valueFrom"))?,
        };
        Some(EnvVar { name: name?, source })
    }

    fn value_from(&mut self, v: &Value, path: &str) -> Option<EnvSource> {
        let m = self.object(v, path)?;
        self.known_fields(m, path, &VALUE_FROM_SOURCES);
        let mut present = VALUE_FROM_SOURCES.into_iter().filter(|k| m.contains_key(*k));
        let (Some(source), None) = (present.next(), present.next()) else {
            self.fail(path, "needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)");
            return None;
        };
        if source != "fileKeyRef" {
            return Some(EnvSource::Platform);
        }
        let (file, key) = self.file_ref(&m["fileKeyRef"], &join(path, "fileKeyRef"), true)?;
        Some(EnvSource::FileKey { file, key: key? })
    }
}

fn join(path: &str, key: &str) -> String {
    let key = escape(key.as_bytes());
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests;
