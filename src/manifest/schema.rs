//! The manifest's schema: the Container subset envshim reads (docs/reference.md §3), read
//! with the JSON reader of `reader.rs` into the typed [`Manifest`], each
//! field checked where it is read, each error with its JSON path.

use std::borrow::Cow;
use std::fmt;

use super::reader::{kind, Got, Reader};
use super::{Converted, EnvFrom, EnvSource, EnvVar, FileRef, Manifest, VolumeMount};
use crate::error::{escape, Error, ExitCode, JsonPath};

pub(super) type Text<'a> = Option<Got<Cow<'a, str>>>;

/// An object read below another (`valueFrom`, `fileRef`): what it gave, and
/// its errors, reported if its parent uses it.
pub(super) type Below<T> = (Option<T>, Vec<Error>);

/// How a reader of one item of an array reads it; errors go to the Vec.
pub(super) type ItemReader<'a, T> = fn(&mut Reader<'a>, &Path, &mut Vec<Error>) -> Option<Option<T>>;

impl<'a> Reader<'a> {
    /// An object of the schema: `f` reads the value of each field it knows
    /// (true) or leaves it (false); the others are skipped and reported,
    /// sorted and each once, as unknown fields (typos). False, the value
    /// skipped and the error reported, if the value is not an object.
    pub(super) fn schema_object(&mut self, path: &Path, errors: &mut Vec<Error>, mut f: impl FnMut(&mut Self, Option<&[u8]>) -> Option<bool>) -> Option<bool> {
        if self.peek() != Some(b'{') {
            let v = self.value(false)?;
            fail(errors, path, format_args!("expected an object, found {}", kind(&v)));
            return Some(false);
        }
        // None until there is one: an empty Vec still cost a call to drop it.
        let mut unknown: Option<Vec<_>> = None;
        self.object(|r| {
            if let Some(key) = r.field(&mut f)? {
                unknown.get_or_insert_with(Vec::new).push(key);
            }
            Some(())
        })?;
        if let Some(mut unknown) = unknown {
            crate::sort::sort(&mut unknown);
            unknown.dedup();
            for key in unknown {
                fail(errors, &path.field(&key), unknown_field(&key));
            }
        }
        Some(true)
    }

    /// An object read below the current one, its errors kept apart.
    pub(super) fn below<T>(&mut self, path: &Path, f: ItemReader<'a, T>) -> Option<Below<T>> {
        let mut errors = Vec::new();
        let v = f(self, path, &mut errors)?;
        Some((v, errors))
    }

    /// The document, a container spec.
    pub(super) fn manifest(&mut self, errors: &mut Vec<Error>) -> Option<Manifest<'a>> {
        self.skip_ws();
        if self.peek() != Some(b'{') {
            let v = self.value(false)?;
            fail(errors, &Path::Root, format_args!("expected a JSON object (a Kubernetes container spec), found {}", kind(&v)));
            return Some(Manifest::default());
        }
        let (mut mounts, mut env_from, mut env, mut command, mut args, mut converted) = (None, None, None, None, None, None);
        let mut unknown = Vec::new();
        self.object(|r| {
            let other = r.field(|r, key| {
                if r.named(key, b"volumeMounts\"")? {
                    mounts = Some(r.list("volumeMounts", Self::volume_mount)?);
                } else if r.named(key, b"envFrom\"")? {
                    env_from = Some(r.list("envFrom", Self::env_from)?);
                } else if r.named(key, b"env\"")? {
                    env = Some(r.list("env", Self::env_var)?);
                } else if r.named(key, b"command\"")? {
                    command = Some(r.list("command", Self::word)?);
                } else if r.named(key, b"args\"")? {
                    args = Some(r.list("args", Self::word)?);
                } else if r.named(key, b"converted\"")? {
                    converted = Some(r.below(&Path::Root.field("converted"), Self::converted)?);
                } else {
                    return Some(false);
                }
                Some(true)
            })?;
            // The Container's other fields are the platform's (image, ports,
            // probes...): a manifest may be a whole container spec.
            unknown.extend(other.filter(|k| !CONTAINER_FIELDS.contains(&&**k)));
            Some(())
        })?;
        crate::sort::sort(&mut unknown);
        unknown.dedup();
        for key in unknown {
            fail(errors, &Path::Root.field(&key), unknown_field(&key));
        }
        Some(Manifest {
            volume_mounts: list(errors, mounts, "volumeMounts"),
            env_from: list(errors, env_from, "envFrom"),
            env: list(errors, env, "env"),
            command: list(errors, command, "command"),
            args: list(errors, args, "args"),
            converted: converted.and_then(|(c, below)| {
                report(errors, below);
                c
            }),
        })
    }

    /// `converted`: `{"seen": [NAME, ...], "before": [...], "values": [...],
    /// "envFrom": BOOL}`, written by the converter ([`Converted`]), and
    /// `entrypoint` (the container's own `command` when `--entrypoint` gave
    /// the program), which only `kubectl envshim unconvert` reads.
    pub(super) fn converted(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<Converted<'a>>> {
        let (mut seen, mut before, mut values, mut env_from) = (None, None, None, None);
        let object = self.schema_object(path, errors, |r, key| {
            if r.named(key, b"seen\"")? {
                seen = Some(r.list("converted.seen", Self::word)?);
            } else if r.named(key, b"entrypoint\"")? {
                r.skip()?;
            } else if r.named(key, b"before\"")? {
                before = Some(r.list("converted.before", Self::word)?);
            } else if r.named(key, b"values\"")? {
                values = Some(r.list("converted.values", Self::word)?);
            } else if r.named(key, b"envFrom\"")? {
                env_from = Some(r.got_bool()?);
            } else {
                return Some(false);
            }
            Some(true)
        })?;
        let env_from = match env_from {
            None | Some(Got::Null) => false,
            Some(Got::Is(b)) => b,
            Some(Got::Not(k)) => {
                fail(errors, &path.field("envFrom"), format_args!("expected a boolean, found {k}"));
                false
            }
        };
        Some(object.then(|| Converted {
            seen: list(errors, seen, "converted.seen"),
            before: before.is_some().then(|| list(errors, before, "converted.before")),
            values: list(errors, values, "converted.values"),
            env_from,
            unexpanded: false,
        }))
    }

    /// An array field of the top level, each item read by `item`: the items
    /// read, and the errors found.
    pub(super) fn list<T>(&mut self, key: &'static str, item: ItemReader<'a, T>) -> Option<Got<Below<Vec<T>>>> {
        if self.peek() != Some(b'[') {
            return self.other();
        }
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        self.items(|r, i| {
            if let Some(v) = item(r, &Path::Item(key, i), &mut errors)? {
                out.push(v);
            }
            Some(())
        })?;
        Some(Got::Is((Some(out), errors)))
    }

    /// An item of `command` or `args`.
    pub(super) fn word(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<Cow<'a, str>>> {
        let found = match self.got_string()? {
            // Raw control characters are refused in a string: a NUL comes from an escape.
            Got::Is(Cow::Owned(s)) if s.contains('\0') => {
                fail(errors, path, "contains a NUL byte");
                return Some(None);
            }
            Got::Is(s) => return Some(Some(s)),
            Got::Null => "null",
            Got::Not(k) => k,
        };
        fail(errors, path, format_args!("expected a string, found {found}"));
        Some(None)
    }

    pub(super) fn volume_mount(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<VolumeMount<'a>>> {
        let (mut name, mut mount_path, mut sub) = (None, None, [false; 2]);
        let object = self.schema_object(path, errors, |r, key| {
            if r.named(key, b"name\"")? {
                name = Some(r.got_string()?);
            } else if r.named(key, b"mountPath\"")? {
                mount_path = Some(r.got_string()?);
            } else if r.named(key, b"readOnly\"")? || r.named(key, b"mountPropagation\"")? || r.named(key, b"recursiveReadOnly\"")? {
                r.skip()?;
            } else if r.named(key, b"subPath\"")? {
                sub[0] = true;
                r.skip()?;
            } else if r.named(key, b"subPathExpr\"")? {
                sub[1] = true;
                r.skip()?;
            } else {
                return Some(false);
            }
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        for (given, key) in sub.into_iter().zip(["subPath", "subPathExpr"]) {
            if given {
                fail(errors, &path.field(key), "is not supported (the volume root would be ambiguous)");
            }
        }
        let name = string(errors, name, path, "name", true);
        let mount_path = string(errors, mount_path, path, "mountPath", true);
        Some(name.zip(mount_path).map(|(name, mount_path)| VolumeMount { name, mount_path }))
    }

    pub(super) fn file_ref(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<FileRef<'a>>> {
        Some(self.file_key_ref(path, false, errors)?.map(|(file, _)| file))
    }

    pub(super) fn file_key(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<(FileRef<'a>, Option<Cow<'a, str>>)>> {
        self.file_key_ref(path, true, errors)
    }

    /// `fileRef`, or with `key` `fileKeyRef`.
    pub(super) fn file_key_ref(&mut self, path: &Path, with_key: bool, errors: &mut Vec<Error>) -> Option<Option<(FileRef<'a>, Option<Cow<'a, str>>)>> {
        let (mut texts, mut optional): ([Text; 3], _) = ([None, None, None], None);
        let object = self.schema_object(path, errors, |r, key| {
            let i = if r.named(key, b"volumeName\"")? {
                0
            } else if r.named(key, b"path\"")? {
                1
            } else if with_key && r.named(key, b"key\"")? {
                2
            } else if r.named(key, b"optional\"")? {
                optional = Some(r.got_bool()?);
                return Some(true);
            } else {
                return Some(false);
            };
            texts[i] = Some(r.got_string()?);
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        let [volume_name, file_path, key] = texts;
        let volume_name = string(errors, volume_name, path, "volumeName", true);
        let file_path = string(errors, file_path, path, "path", true);
        let key = if with_key { string(errors, key, path, "key", true) } else { None };
        let optional = match optional {
            None | Some(Got::Null) => false,
            Some(Got::Is(b)) => b,
            Some(Got::Not(k)) => {
                fail(errors, &path.field("optional"), format_args!("expected a boolean, found {k}"));
                false
            }
        };
        let (Some(volume_name), Some(path)) = (volume_name, file_path) else { return Some(None) };
        let file = FileRef { volume_name, path, optional };
        Some(match key {
            Some(key) => Some((file, Some(key))),
            None if with_key => None,
            None => Some((file, None)),
        })
    }

    pub(super) fn env_from(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvFrom<'a>>> {
        let (mut prefix, mut sources) = (None, Sources::default());
        let object = self.schema_object(path, errors, |r, key| {
            let source = if r.named(key, b"fileRef\"")? {
                0
            } else if r.named(key, b"prefix\"")? {
                prefix = Some(r.got_string()?);
                return Some(true);
            } else if r.named(key, b"configMapRef\"")? {
                1
            } else if r.named(key, b"secretRef\"")? {
                2
            } else {
                return Some(false);
            };
            sources.read(r, source, "fileRef", path, Self::file_ref)
        })?;
        if !object {
            return Some(None);
        }
        let prefix = string(errors, prefix, path, "prefix", false).unwrap_or_default();
        let Some(file) = sources.one(errors, path, "needs exactly one of fileRef, configMapRef, secretRef") else {
            return Some(None);
        };
        Some(match file {
            None => Some(EnvFrom::Platform),
            Some(file) => file.map(|file| EnvFrom::File { file, prefix }),
        })
    }

    pub(super) fn env_var(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvVar<'a>>> {
        let (mut name, mut value, mut value_from) = (None, None, None);
        let object = self.schema_object(path, errors, |r, key| {
            if r.named(key, b"name\"")? {
                name = Some(r.got_string()?);
            } else if r.named(key, b"valueFrom\"")? {
                // A null counts as absent.
                if r.peek() == Some(b'n') {
                    value_from = None;
                    r.skip()?
                } else {
                    value_from = Some(r.below(&path.field("valueFrom"), Self::value_from)?);
                }
            } else if r.named(key, b"value\"")? {
                value = Some(r.got_string()?);
            } else {
                return Some(false);
            }
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        let name = string(errors, name, path, "name", true);
        let value = string(errors, value, path, "value", false);
        let source = match (value, value_from) {
            // `"value": ""` beside a valueFrom: the API server accepts it, and `kubectl get -o json` may print it.
            (Some(v), Some(_)) if !v.is_empty() => {
                fail(errors, path, "has both value and valueFrom");
                return Some(None);
            }
            (value, None) => EnvSource::Value(value.unwrap_or_default()),
            (_, Some((source, below))) => {
                report(errors, below);
                let Some(source) = source else { return Some(None) };
                source
            }
        };
        Some(name.map(|name| EnvVar { name, source }))
    }

    pub(super) fn value_from(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Option<EnvSource<'a>>> {
        let mut sources = Sources::default();
        let mut named = String::new();
        let object = self.schema_object(path, errors, |r, key| {
            // The platform's sources: what each names, in the fields that say it.
            let (source, kind, fields): (usize, &str, &[&str]) = if r.named(key, b"fileKeyRef\"")? {
                return sources.read(r, 0, "fileKeyRef", path, Self::file_key);
            } else if r.named(key, b"configMapKeyRef\"")? {
                (1, "configMapKeyRef", &["name", "key"])
            } else if r.named(key, b"secretKeyRef\"")? {
                (2, "secretKeyRef", &["name", "key"])
            } else if r.named(key, b"fieldRef\"")? {
                (3, "fieldRef", &["fieldPath"])
            } else if r.named(key, b"resourceFieldRef\"")? {
                (4, "resourceFieldRef", &["resource"])
            } else {
                return Some(false);
            };
            named = r.platform_ref(kind, fields)?;
            sources.given |= 1 << source;
            Some(true)
        })?;
        if !object {
            return Some(None);
        }
        let what = "needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)";
        let Some(file) = sources.one(errors, path, what) else { return Some(None) };
        Some(match file {
            None => Some(EnvSource::Platform(named)),
            Some(file) => file.and_then(|(file, key)| Some(EnvSource::FileKey { file, key: key? })),
        })
    }

    /// A platform source (`configMapKeyRef`, ...), not checked (the API
    /// server did): `KIND` and its `fields`' strings joined by `/`
    /// (`configMapKeyRef settings/MODE`), escaped; other fields skipped.
    #[cold]
    pub(super) fn platform_ref(&mut self, kind: &str, fields: &[&str]) -> Option<String> {
        let mut parts: [Option<Cow<'a, str>>; 2] = [None, None];
        if self.peek() == Some(b'{') {
            // The reader's calls that are not inlined: this runs for `render` and `--verbose` only.
            self.object(|r| {
                let key = r.read_key()?;
                match fields.iter().position(|f| *f == key) {
                    Some(i) if r.peek() == Some(b'"') => parts[i] = Some(r.read_string()?),
                    _ => r.skip()?,
                }
                Some(())
            })?;
        } else {
            self.skip()?;
        }
        let mut named = kind.to_string();
        for (i, part) in parts.iter().flatten().enumerate() {
            named.push(if i == 0 { ' ' } else { '/' });
            named.push_str(&escape(part.as_bytes()));
        }
        Some(named)
    }
}

/// The sources of an `envFrom` entry or a `valueFrom` (source 0 is the
/// file, read below; the others are the platform's and not looked into):
/// which were given, and the file's last value.
pub(super) struct Sources<T> {
    /// Bit `i` for source `i` given (not the file's).
    given: u8,
    file: Option<Below<T>>,
}

impl<T> Default for Sources<T> {
    fn default() -> Self {
        Sources { given: 0, file: None }
    }
}

impl<T> Sources<T> {
    /// Reads the value of source `i` (0 is the file, named `key`).
    pub(super) fn read<'a>(&mut self, r: &mut Reader<'a>, i: usize, key: &str, path: &Path, file: ItemReader<'a, T>) -> Option<bool> {
        if i == 0 {
            self.file = Some(r.below(&path.field(key), file)?);
        } else {
            r.skip()?;
            self.given |= 1 << i;
        }
        Some(true)
    }

    /// Exactly one source, or the error `what`: Some(None) for the
    /// platform's, Some(Some(the file's value)) for the file, its errors reported.
    pub(super) fn one(self, errors: &mut Vec<Error>, path: &Path, what: &str) -> Option<Option<Option<T>>> {
        if self.given.count_ones() + u32::from(self.file.is_some()) != 1 {
            fail(errors, path, what);
            return None;
        }
        Some(self.file.map(|(v, below)| {
            report(errors, below);
            v
        }))
    }
}

/// Where a value is in the manifest, on the reader's stack: made a
/// [`JsonPath`] only for an error.
#[derive(Clone, Copy)]
pub(super) enum Path<'p> {
    Root,
    /// `key[index]`, for the arrays of the top level.
    Item(&'static str, usize),
    Field(&'p Path<'p>, &'p str),
}

impl Path<'_> {
    pub(super) fn field<'p>(&'p self, key: &'p str) -> Path<'p> {
        Path::Field(self, key)
    }
    /// The path as an error holds it, each key as a message shows it.
    fn json(&self) -> JsonPath {
        match self {
            Path::Root => JsonPath::default(),
            Path::Item(key, i) => JsonPath::item(key, *i),
            Path::Field(parent, key) => parent.json().key(escape(key.as_bytes())),
        }
    }
}

/// The errors of an object below, now that its parent uses it.
/// (Usually none: an empty vector goes neither through `extend` nor through
/// its drop's call, a cost for each of a manifest's entries:
/// docs/performance-history.md, clap as the one parser.)
#[inline]
pub(super) fn report(errors: &mut Vec<Error>, below: Vec<Error>) {
    if below.capacity() == 0 {
        // Never pushed to, so it holds no allocation: nothing to free.
        std::mem::forget(below);
    } else {
        errors.extend(below);
    }
}

/// A schema error: `what`, at `path` (the message is made by [`name_errors`]).
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn fail(errors: &mut Vec<Error>, path: &Path, what: impl fmt::Display) {
    errors.push(Error::in_manifest(ExitCode::Config, "", path.json(), None, what.to_string()));
}

/// A string field; null counts as absent. A slice of the input (the usual
/// case) inline, the rest in [`checked`] (not a call for every string).
#[inline(always)]
pub(super) fn string<'a>(errors: &mut Vec<Error>, got: Text<'a>, path: &Path, key: &str, required: bool) -> Option<Cow<'a, str>> {
    match got {
        Some(Got::Is(Cow::Borrowed(s))) => Some(Cow::Borrowed(s)),
        None if !required => None,
        got => checked(errors, got, path, key, required),
    }
}

pub(super) fn checked<'a>(errors: &mut Vec<Error>, got: Text<'a>, path: &Path, key: &str, required: bool) -> Option<Cow<'a, str>> {
    match got {
        None | Some(Got::Null) => {
            if required {
                fail(errors, &path.field(key), "required field is missing");
            }
            None
        }
        Some(Got::Is(Cow::Owned(s))) if s.contains('\0') => {
            fail(errors, &path.field(key), "contains a NUL byte");
            None
        }
        Some(Got::Is(s)) => Some(s),
        Some(Got::Not(k)) => {
            fail(errors, &path.field(key), format_args!("expected a string, found {k}"));
            None
        }
    }
}

/// An array field of the top level (null counts as absent): its items, its errors reported.
pub(super) fn list<T>(errors: &mut Vec<Error>, got: Option<Got<Below<Vec<T>>>>, key: &str) -> Vec<T> {
    match got {
        None | Some(Got::Null) => Vec::new(),
        Some(Got::Is((items, below))) => {
            report(errors, below);
            items.unwrap_or_default()
        }
        Some(Got::Not(k)) => {
            fail(errors, &Path::Root.field(key), format_args!("expected an array, found {k}"));
            Vec::new()
        }
    }
}

/// The fields of a Kubernetes Container (core/v1, 1.35) that envshim does
/// not read: accepted and ignored at the manifest's top level, where any
/// other field is refused, as the API server's strict field validation does.
const CONTAINER_FIELDS: &[&str] = &[
    "name",
    "image",
    "workingDir",
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
];

/// "unknown field", with the closest field of the schema when it is a likely misspelling of one.
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn unknown_field(key: &str) -> String {
    const FIELDS: &[&str] = &[
        "args",
        "command",
        "configMapKeyRef",
        "configMapRef",
        "envFrom",
        "env",
        "fieldRef",
        "fileKeyRef",
        "fileRef",
        "key",
        "mountPath",
        "mountPropagation",
        "name",
        "optional",
        "path",
        "prefix",
        "readOnly",
        "recursiveReadOnly",
        "resourceFieldRef",
        "secretKeyRef",
        "secretRef",
        "subPathExpr",
        "subPath",
        "valueFrom",
        "value",
        "volumeMounts",
        "volumeName",
    ];
    // A field of the schema in the wrong object (`key` in a fileRef) gets no guess.
    let known: Vec<&str> = FIELDS.iter().chain(CONTAINER_FIELDS).copied().collect();
    match crate::suggest::closest(key.as_bytes(), &known).filter(|known| *known != key) {
        Some(known) => format!("unknown field (did you mean {known}?)"),
        None => "unknown field".into(),
    }
}
