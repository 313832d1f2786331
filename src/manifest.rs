//! The manifest: a subset of the Kubernetes core/v1 `Container` (docs/reference.md §3).
//! Three parts: `reader.rs` knows JSON's syntax, `schema.rs` the fields
//! of the Container subset and their errors, `select.rs` a container picked
//! out of a Pod, a workload or a `List` (`--container`).
//!
//! A small JSON reader (accepting what serde_json accepts; a syntax error
//! is told by its line and column) reads the document straight into
//! the typed [`Manifest`], in one pass and with no tree: each object of the
//! schema keeps the last value of each of its fields as it is read, and is
//! checked when it closes, so every schema error names its JSON path
//! (`env[3].valueFrom.fileKeyRef.key`) and no error ever quotes a value.
//! Unknown top-level fields are ignored (a pasted container spec has many);
//! unknown fields below are typos, hence errors.
//!
//! A field given twice takes its last value (what the first held is not
//! checked); an object's errors come in the schema's order, unknown fields
//! first and sorted, then its fields', then those of the object below it
//! (`valueFrom`, `fileRef`), each buffered until its parent knows it is used.
//! Strings are slices of the input (unless they hold an escape), and the
//! `Manifest` keeps them so (`Cow`), not copied. A key is first tested
//! against the schema's names on the input, without a scan
//! (`Reader::named`); whitespace, strings and keys are read eight bytes at a
//! time. No tree (above): a tree and its walk were a large part of a
//! start-up's instructions (docs/performance.md).

use std::borrow::Cow;

use crate::error::{At, Error, JsonPath};
use reader::{read, Json};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VolumeMount<'a> {
    pub name: Cow<'a, str>,
    pub mount_path: Cow<'a, str>,
}

/// A file inside a volume: `fileKeyRef` and `fileRef` share these fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef<'a> {
    pub volume_name: Cow<'a, str>,
    pub path: Cow<'a, str>,
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFrom<'a> {
    /// `fileRef`: every key of the file, prefixed.
    File { file: FileRef<'a>, prefix: Cow<'a, str> },
    /// `configMapRef` / `secretRef`: resolved by the platform.
    Platform,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvSource<'a> {
    /// A literal, expanded; an entry with neither `value` nor `valueFrom` is `Value("")`.
    Value(Cow<'a, str>),
    FileKey {
        file: FileRef<'a>,
        key: Cow<'a, str>,
    },
    /// `configMapKeyRef`, `secretKeyRef`, `fieldRef`, `resourceFieldRef`:
    /// what it names, for `render` (`configMapKeyRef settings/MODE`).
    Platform(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvVar<'a> {
    pub name: Cow<'a, str>,
    pub source: EnvSource<'a>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Manifest<'a> {
    pub volume_mounts: Vec<VolumeMount<'a>>,
    pub env_from: Vec<EnvFrom<'a>>,
    pub env: Vec<EnvVar<'a>>,
    /// Empty when absent: Kubernetes treats `command: []` as unset too.
    pub command: Vec<Cow<'a, str>>,
    pub args: Vec<Cow<'a, str>>,
    /// Written by `kubectl envshim convert` (not a Kubernetes field): this
    /// `env` list continues a container's list the kubelet has processed up
    /// to where it starts ([`Converted`]).
    pub converted: Option<Converted<'a>>,
}

/// A converted container (docs/reference.md, "Converted containers"): the
/// kubelet ran the container's `env` list up to its first `fileKeyRef`;
/// envshim runs the rest as the kubelet would have, on what the kubelet saw
/// there. `seen[j]` is a name the rest or the program line refers to; the
/// kubelet's view of it at that point (its `$(NAME)`, expanded by the
/// kubelet) is in the variable `ENVSHIM_SEEN_<j>`. A platform-resolved entry
/// `env[i]` has its value in `ENVSHIM_VALUE_<i>_A` and `_B`: resolved when
/// both are set and equal (each is set to a different literal first, so an
/// optional reference that finds nothing leaves them different). Expansion
/// sees only those names and what the list sets, as the kubelet's does, and
/// no `KUBERNETES_SERVICE_URL` is added.
///
/// For an engine that does not expand `$(VAR)` (docs/reference.md, "Under an
/// engine that does not expand"): `before` lists the container's own entries
/// before the first `fileKeyRef`, each its name after a letter, `l` a
/// literal (its value the variable the engine set, unless a later entry sets
/// the name again: then the next of `values`), `p` a platform reference, `o`
/// an optional one; `env_from`: the container has `envFrom`. `unexpanded` is
/// not read from the manifest: set when the marker says no kubelet expanded
/// the container's `env`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted<'a> {
    pub seen: Vec<Cow<'a, str>>,
    pub before: Option<Vec<Cow<'a, str>>>,
    pub values: Vec<Cow<'a, str>>,
    pub env_from: bool,
    pub unexpanded: bool,
}

impl Converted<'_> {
    /// Where the manifest's `env` starts in the container's own list (None:
    /// a conversion older than `before`).
    pub fn first(&self) -> Option<usize> {
        self.before.as_ref().map(Vec::len)
    }
}

/// The variables a converted container's private values are in (`Converted`).
pub const SEEN_PREFIX: &str = "ENVSHIM_SEEN_";
pub const VALUE_PREFIX: &str = "ENVSHIM_VALUE_";

/// Parses a manifest; every schema problem is reported, each naming its path.
pub fn parse(bytes: &[u8]) -> Result<Manifest<'_>, Vec<Error>> {
    parse_named(bytes, "manifest", None, None)
}

/// Parses a manifest, which messages name `subject` (`manifest ./m.json`,
/// `--manifest-json`, `manifest`) and `check --format json` places in
/// `file` (`./m.json`, `--manifest-json`; None: no file): a container spec,
/// or with `container` that container of a Pod, a workload or a `List`
/// (docs/reference.md §3). A container spec pays one test: a whole object
/// reads as a container spec with nothing in it (all its fields are unknown
/// at the top level), and only then is the document looked into again.
#[inline(never)] // called once; a frame of its own for profiles
pub fn parse_named<'a>(bytes: &'a [u8], subject: &str, file: Option<&str>, container: Option<&[u8]>) -> Result<Manifest<'a>, Vec<Error>> {
    let mut errors = Vec::new();
    let manifest = read(bytes, |r| r.manifest(&mut errors)).map_err(|e| vec![syntax_error(bytes, subject, file, e)])?;
    let m = &manifest;
    let empty = m.volume_mounts.is_empty() && m.env_from.is_empty() && m.env.is_empty() && m.command.is_empty() && m.args.is_empty() && m.converted.is_none();
    if container.is_some() || empty {
        return select::select(bytes, subject, file, container, manifest, errors);
    }
    if errors.is_empty() {
        Ok(manifest)
    } else {
        Err(name_errors(errors, subject, file, &JsonPath::default()))
    }
}

/// The schema errors (each at its path in the container read), given the
/// manifest's subject and file, their paths put below `container`, the
/// container's path in the document (the root for the document itself).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn name_errors(errors: Vec<Error>, subject: &str, file: Option<&str>, container: &JsonPath) -> Vec<Error> {
    errors
        .into_iter()
        .map(|e| {
            let path = container.clone().join(e.at.and_then(|a| a.path).unwrap_or_default());
            Error::in_manifest(e.code, subject, path, file, e.what)
        })
        .collect()
}

/// A manifest that is not JSON: where (`e`), or what to do
/// when it looks like YAML (a key and a colon, or `---`, where JSON has `{`).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn syntax_error(bytes: &[u8], subject: &str, file: Option<&str>, (e, line): (String, usize)) -> Error {
    let mut error = if looks_like_yaml(bytes) {
        Error::config(format!(
            "{subject} is not valid JSON: it looks like YAML; convert it offline: kubectl envshim manifest -f FILE [--container NAME], or yq (Go yq: yq -o json FILE; Python yq: yq . FILE)"
        ))
    } else {
        Error::config(format!("{subject} is not valid JSON: {e}"))
    };
    error.at = Some(Box::new(At { file: file.map(str::to_string), line, ..At::default() }));
    error
}

/// Whether a document that is not JSON looks like YAML: it does not start
/// with `{` or `[`, and its first line that is not blank or a comment is
/// `---` or starts with `KEY:` or `- `.
fn looks_like_yaml(bytes: &[u8]) -> bool {
    let Some(first) = bytes.split(|&b| b == b'\n').map(|l| l.trim_ascii()).find(|l| !l.is_empty() && !l.starts_with(b"#")) else {
        return false;
    };
    if first.starts_with(b"{") || first.starts_with(b"[") {
        return false;
    }
    let key = first.iter().position(|&b| b == b':').is_some_and(|c| {
        c > 0 && first[..c].iter().all(|&b| b.is_ascii_alphanumeric() || b"_-.\"'/".contains(&b)) && first.get(c + 1).is_none_or(|&b| b == b' ' || b == b'\t')
    });
    key || first.starts_with(b"---") || first.starts_with(b"- ")
}

mod reader;
mod schema;
mod select;
mod walk;

pub use walk::{containers, Tree};

#[cfg(test)]
mod tests;
