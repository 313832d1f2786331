//! One document: find its pod specs (by structure, in any kind), convert the
//! containers that have a `fileKeyRef`, and add the install initContainer
//! and its volume.
//!
//! A converted container gives its program what the kubelet would have given
//! it with native `fileKeyRef` (docs/reference.md, "Converted containers"):
//! the kubelet still runs the container's `env` list up to the first
//! `fileKeyRef` entry, and records there, in private variables, what it sees
//! of every name the rest of the list or the program line refers to; envshim
//! runs the rest of the list on that view, as the kubelet would have.

use std::borrow::Cow;
use std::collections::HashSet;

use envshim::converter::{SEEN_PREFIX, VALUE_PREFIX};
use serde_json::{Map, Value};

use envshim::converter::{escape, Error, ExitCode, JsonPath, Segment};

use crate::installer::{SHIM_DIR, SHIM_VOLUME};
use crate::settings::Settings;

mod again;
mod refs;
pub(crate) mod slots;
use again::{installer_image, undone};
use refs::{volume_mounts, Mounts};
use slots::Indexed;

/// A mapping of the document tree (kubectl's reading of it: JSON, keys in their order).
pub(crate) type Mapping = Map<String, Value>;
pub(crate) type Sequence = Vec<Value>;

/// Where a volume a `fileKeyRef` names is mounted when the container does not mount it.
pub(crate) const VOLUMES_DIR: &str = "/.envshim/volumes";
/// The variable envshim reads its manifest's text from (`--manifest-json`'s).
pub use envshim::converter::MANIFEST_VAR;
/// envshim reads every `ENVSHIM_*` variable as its own configuration.
pub(crate) const RESERVED: &str = "ENVSHIM_";
/// The platform-resolved sources of `valueFrom` (the kubelet resolves them).
const PLATFORM_SOURCES: [&str; 4] = ["configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"];

/// Where a node is in the document, on the walk's stack: made a [`JsonPath`]
/// only for a problem (building a path at every node would make the walk
/// quadratic in the depth).
#[derive(Clone, Copy)]
enum At<'p> {
    Root,
    Key(&'p At<'p>, &'p str),
    Index(&'p At<'p>, usize),
}

impl At<'_> {
    fn json(&self) -> JsonPath {
        match self {
            At::Root => JsonPath::default(),
            At::Key(parent, k) => parent.json().key(escape(k.as_bytes())),
            At::Index(parent, i) => parent.json().index(*i),
        }
    }
}

/// Converts a document in place. Ok: each object that changed, with its
/// containers and warnings (none: the document is unchanged).
/// Err: each problem, about its object (`Kind/name`), at its JSON path from the document's root.
pub fn document(doc: &mut Value, s: &Settings) -> Result<Vec<crate::warn::Note>, Vec<Error>> {
    let before = doc.clone();
    let mut walk = Walk { s, problems: Vec::new(), changed: false };
    walk.node(doc, &At::Root, "", None);
    // A document without a kind (a bare container spec: envshim's own
    // manifest) is not an object kubectl applies.
    if walk.problems.is_empty() && doc.get("kind").is_some() {
        leftover(doc, &At::Root, &object_name(doc, ""), &mut walk.problems);
    }
    if !walk.problems.is_empty() {
        Err(walk.problems)
    } else if walk.changed {
        Ok(crate::warn::notes(&before, doc))
    } else {
        Ok(Vec::new())
    }
}

struct Walk<'s> {
    s: &'s Settings,
    problems: Vec<Error>,
    changed: bool,
}

/// `Kind/name` of an object (a mapping with a `kind`), else `outer`; as messages show it ([`escape`]d).
pub(crate) fn object_name<'o>(v: &Value, outer: &'o str) -> Cow<'o, str> {
    let Some(kind) = v.get("kind").and_then(Value::as_str) else { return Cow::Borrowed(outer) };
    let name = v.get("metadata").and_then(|m| m.get("name").or_else(|| m.get("generateName"))).and_then(Value::as_str).unwrap_or("(no name)");
    Cow::Owned(format!("{}/{}", escape(kind.as_bytes()), escape(name.as_bytes())))
}

impl Walk<'_> {
    /// Every pod spec below `v`: a mapping whose `containers` is a list. A
    /// Pod's `spec`, a workload's `template.spec`, a `List`'s items', and
    /// those of kinds the converter has never heard of (an Argo Rollout, a
    /// Knative Service) alike. `indexed`: the workload above, when its pods
    /// have an index.
    fn node(&mut self, v: &mut Value, at: &At, outer: &str, indexed: Option<Indexed>) {
        // Borrowed from `outer` unless `v` names an object: a copy at every
        // node made the walk quadratic under a long name.
        let object = object_name(v, outer);
        match v {
            Value::Object(map) if map.get("containers").is_some_and(Value::is_array) => match pod(map, at, &object, self.s, indexed) {
                Ok(changed) => self.changed |= changed,
                Err(p) => self.problems.extend(p),
            },
            Value::Object(map) => {
                let indexed = slots::of(map).unwrap_or(indexed);
                for (k, child) in map.iter_mut() {
                    self.node(child, &At::Key(at, k), &object, indexed);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter_mut().enumerate() {
                    self.node(child, &At::Index(at, i), &object, indexed);
                }
            }
            _ => {}
        }
    }
}

/// A `valueFrom.fileKeyRef` that no conversion reached (a container list
/// other than `containers`/`initContainers`, an entry that is not in an
/// `env` list): never left in the output, where an old cluster drops it.
fn leftover(v: &Value, at: &At, object: &str, problems: &mut Vec<Error>) {
    match v {
        Value::Object(map) => {
            let object = object_name(v, object);
            for (k, child) in map {
                let here = At::Key(at, k);
                if k == "valueFrom" && child.get("fileKeyRef").is_some_and(|f| !f.is_null()) {
                    problems.push(Error::in_manifest(
                        ExitCode::Config,
                        &object,
                        here.json().key("fileKeyRef"),
                        None,
                        "a fileKeyRef outside the env of a pod's containers or initContainers: the converter cannot convert it",
                    ));
                } else {
                    leftover(child, &here, &object, problems);
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                leftover(child, &At::Index(at, i), object, problems);
            }
        }
        _ => {}
    }
}

/// Whether a container has a `fileKeyRef` entry in its `env` (one to convert).
pub fn has_file_key_ref(container: &Value) -> bool {
    container.get("env").and_then(Value::as_array).is_some_and(|env| env.iter().any(is_file_key_ref))
}

/// A null field is absent to kubectl (`fileKeyRef: null` beside a
/// `secretKeyRef`, as a template may render it).
pub(crate) fn is_file_key_ref(entry: &Value) -> bool {
    entry.get("valueFrom").and_then(|v| v.get("fileKeyRef")).is_some_and(|f| !f.is_null())
}

/// `v` without its null fields, at any depth: what kubectl sends of it, and so what envshim's manifest holds.
pub(crate) fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect()),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// The platform source of an entry (`secretKeyRef`, ...), if it has one.
pub(crate) fn platform_source(entry: &Value) -> Option<&Value> {
    let from = entry.get("valueFrom")?.as_object()?;
    PLATFORM_SOURCES.iter().find_map(|s| from.get(*s).filter(|v| !v.is_null()))
}

pub(crate) fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

pub(crate) fn mapping<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

pub(crate) fn strings(words: &[&str]) -> Value {
    Value::Array(words.iter().map(|w| string(w)).collect())
}

/// A list field that Kubernetes treats as unset when null or empty (`command: []`, as Helm renders it).
fn words(c: &Mapping, key: &str) -> Option<Sequence> {
    c.get(key).and_then(Value::as_array).filter(|l| !l.is_empty()).cloned()
}

/// Converts a pod spec in place; Ok: whether it changed.
fn pod(spec: &mut Mapping, at: &At, object: &str, s: &Settings, indexed: Option<Indexed>) -> Result<bool, Vec<Error>> {
    const LISTS: [&str; 2] = ["initContainers", "containers"];
    let lists = LISTS.iter().filter_map(|l| spec.get(*l).and_then(Value::as_array));
    s.met(lists.flatten().filter_map(|c| Some(c.get("name")?.as_str()?.to_string())));
    let located = |path: JsonPath, what: String| Error::in_manifest(ExitCode::Config, object, path, None, what);
    let before = undone(spec).map_err(|p| {
        p.into_iter().map(|p| Error { code: p.code, ..located(at.json().join(p.at.and_then(|a| a.path).unwrap_or_default()), p.what) }).collect::<Vec<_>>()
    })?;
    foreign(spec, at, &located)?;
    let wanted = LISTS.iter().any(|l| spec.get(*l).and_then(Value::as_array).is_some_and(|cs| cs.iter().any(has_file_key_ref)));
    if !wanted {
        return Ok(false);
    }
    if spec.get("os").and_then(|o| o.get("name")).and_then(Value::as_str) == Some("windows") {
        return Err(vec![located(
            at.json().key("os").key("name"),
            "a Windows pod: envshim runs Linux programs only, so its fileKeyRef entries cannot be converted".into(),
        )]);
    }
    let volumes: HashSet<String> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(|v| v.get("name").and_then(Value::as_str)).map(str::to_string).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for list in LISTS {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        let list_at = At::Key(at, list);
        for (i, c) in containers.iter_mut().enumerate() {
            if !has_file_key_ref(c) {
                continue;
            }
            let name = container_name(c);
            let c_at = At::Index(&list_at, i);
            if let Some(c) = c.as_object_mut() {
                let found = container(c, &volumes, s, indexed);
                problems.extend(
                    found
                        .into_iter()
                        .map(|p| located(c_at.json().join(p.at.and_then(|a| a.path).unwrap_or_default()), format!("container {name}: {}", p.what))),
                );
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    install(spec, s, before.as_ref());
    match before {
        // The same settings: nothing changes (the pod as it came, key order included).
        Some(before) if *spec == before => {
            *spec = before;
            Ok(false)
        }
        _ => Ok(true),
    }
}

/// Adds the installer when envshim is not in the image (`--shim-image`):
/// with the image given or found, else the one the pod's installer had
/// (`before`, the pod as converted before), if it had one.
fn install(spec: &mut Mapping, s: &Settings, before: Option<&Mapping>) {
    let Some(image) = &s.shim_image else { return };
    let image = match before.and_then(installer_image) {
        Some(carried) if s.image_missing.is_some() => carried,
        _ => {
            s.image_written();
            image.clone()
        }
    };
    crate::installer::add(spec, &image, s);
}

/// What no container of a pod may have (envshim's own fields, [`crate::validate::every`]), converted or not.
fn foreign(spec: &Mapping, at: &At, located: &impl Fn(JsonPath, String) -> Error) -> Result<(), Vec<Error>> {
    let mut found = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in spec.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let name = c.get("name").and_then(Value::as_str).unwrap_or("(no name)");
            let problems = c.as_object().map(crate::validate::every).unwrap_or_default();
            found.extend(
                problems
                    .into_iter()
                    .map(|p| located(at.json().key(list).index(i).join(p.path().cloned().unwrap_or_default()), format!("container {name}: {}", p.what))),
            );
        }
    }
    if found.is_empty() {
        Ok(())
    } else {
        Err(found)
    }
}

/// A container's name as messages show it ([`escape`]d).
pub(crate) fn container_name(c: &Value) -> String {
    c.get("name").and_then(Value::as_str).map_or_else(|| "(no name)".to_string(), |n| escape(n.as_bytes()))
}

/// A problem of a container, at `path` relative to it: [`pod`] names the
/// container and puts the path below it.
pub(crate) fn problem(path: JsonPath, what: impl Into<String>) -> Error {
    Error::in_manifest(ExitCode::Config, "", path, None, what)
}

/// `env[i]` of a container, the path of many of its problems.
pub(crate) fn env_entry(i: usize) -> JsonPath {
    JsonPath::item("env", i)
}

/// Names in the order they were first added, each once.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    known: HashSet<String>,
}

impl Names {
    /// Adds the names `text` refers to (`$(NAME)`, as the expansion reads them).
    /// Each name is looked up by hash (`unresolved` keeps its names in a
    /// list: 100,000 names in one word took a minute).
    fn references(&mut self, text: &str) {
        let names = std::cell::RefCell::new(self);
        envshim::converter::expand_capped(
            text.as_bytes(),
            |n| {
                let n = String::from_utf8_lossy(n).into_owned();
                let names = &mut *names.borrow_mut();
                if names.known.insert(n.clone()) {
                    names.list.push(n);
                }
                None
            },
            &mut Vec::new(),
            0,
        );
    }
}

/// Converts one container; the problems, each at its path relative to the container ([`problem`]).
fn container(c: &mut Mapping, volumes: &HashSet<String>, s: &Settings, indexed: Option<Indexed>) -> Vec<Error> {
    let env: Sequence = c.get("env").and_then(Value::as_array).cloned().unwrap_or_default();
    // What the API server would refuse, about to leave its sight: refused alone.
    let invalid = crate::validate::converted(c, volumes);
    if !invalid.is_empty() {
        return invalid;
    }
    let mut problems = reserved_names(c, &env, s);
    // The program line. A command (or the image's ENTRYPOINT and CMD, which
    // `--entrypoint` stands for) and args; `[]` and null are unset.
    let args = words(c, "args");
    let own_command = words(c, "command");
    let command = program(c, own_command.clone(), s, &mut problems);
    // The list from the first fileKeyRef on is envshim's to run; what comes before, the kubelet's alone.
    let first = env.iter().position(is_file_key_ref).unwrap_or(env.len());
    let rest = &env[first..];
    let seen = seen_names(rest, own_command.iter().chain(&args).flatten());
    problems.extend(late_references(c, rest, &seen));
    let mounts = match volume_mounts(c, rest, first, volumes) {
        Ok(m) => m,
        Err(p) => {
            problems.extend(p);
            return problems;
        }
    };
    if !problems.is_empty() {
        return problems;
    }
    let mut own = engine::own_entries(&env, first, c);
    // `--entrypoint` gave the program: the manifest keeps what the container had (for `unconvert`).
    if own_command.is_none() {
        own.insert("entrypoint".into(), Value::Object(c.get("command").map_or_else(Mapping::new, |v| Mapping::from_iter([("command".into(), v.clone())]))));
    }
    let text = match manifest_text(rest, command, args, &mounts, &seen, own, first) {
        Ok(text) => text,
        Err(problems) => return problems,
    };
    rewrite(c, &env, first, &seen, &text, &mounts, s, indexed);
    Vec::new()
}

/// Every `ENVSHIM_*` variable is envshim's configuration: in a converted
/// container one would configure envshim, or be taken for its private state.
fn reserved_names(c: &Mapping, env: &Sequence, s: &Settings) -> Vec<Error> {
    let mut problems = Vec::new();
    for (i, e) in env.iter().enumerate() {
        let Some(n) = e.get("name").and_then(Value::as_str).filter(|n| n.starts_with(RESERVED)) else { continue };
        let shown = escape(n.as_bytes());
        // One the converter sets: the option to give instead.
        let what = match s.settable.iter().find(|(var, _)| var == n) {
            Some((_, long)) => format!("{shown} is envshim's configuration: set it with {}", s.naming.setting(long)),
            None => format!("{shown} is envshim's configuration (every {RESERVED}* name is): a converted container would read it as envshim's own; rename it"),
        };
        problems.push(problem(env_entry(i).key("name"), what));
    }
    for (i, e) in c.get("envFrom").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if e.get("prefix").and_then(Value::as_str).is_some_and(|p| p.starts_with(RESERVED)) {
            problems.push(problem(
                JsonPath::item("envFrom", i).key("prefix"),
                format!("starts with {RESERVED}: every {RESERVED}* variable is envshim's configuration, removed from the program's environment"),
            ));
        }
    }
    problems
}

/// The command: the container's own, else the image's words given by
/// `--entrypoint` (none: a problem, and an empty command).
fn program(c: &Mapping, own_command: Option<Sequence>, s: &Settings, problems: &mut Vec<Error>) -> Sequence {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    match own_command {
        Some(command) => command,
        None => match s.entrypoints.iter().find(|(n, _)| *n == name) {
            // The runtime runs the image's words as written: `$` doubled, envshim's expansion gives them back.
            Some((_, program)) => program.iter().map(|w| Value::String(double_dollars(w))).collect(),
            None => {
                problems.push(problem(
                    JsonPath::default().key("command"),
                    format!(
                        "no command: the image's ENTRYPOINT cannot be known without asking a registry, which the converter never does; \
                         set command, or {}",
                        s.naming.add_line("entrypoint", &format!("{}=PROGRAM", escape(name.as_bytes())))
                    ),
                ));
                Vec::new()
            }
        },
    }
}

/// What the manifest's part of the list (`rest`) and the program line's
/// `words` refer to: the kubelet's view of each name is recorded where `rest` starts.
fn seen_names<'w>(rest: &[Value], words: impl Iterator<Item = &'w Value>) -> Vec<String> {
    let mut seen = Names::default();
    for e in rest {
        if let Some(v) = e.get("value").and_then(Value::as_str).filter(|v| !v.is_empty()) {
            seen.references(v);
        }
    }
    // The image's words are not expanded (nor written here): the pod's own command and args are.
    for w in words.filter_map(Value::as_str) {
        seen.references(w);
    }
    seen.list
}

/// References the conversion would change the meaning of: to envshim's
/// configuration, and from a mount's subPathExpr to a name `rest` defines.
fn late_references(c: &Mapping, rest: &[Value], seen: &[String]) -> Vec<Error> {
    let mut problems = Vec::new();
    if let Some(n) = seen.iter().find(|n| n.starts_with(RESERVED)) {
        problems.push(problem(
            JsonPath::default().key("env"),
            format!(
                "$({}) refers to envshim's configuration (every {RESERVED}* name is), which a converted container keeps from the program",
                escape(n.as_bytes())
            ),
        ));
    }
    // The kubelet expands a mount's subPathExpr with the container's final
    // variables: one defined by envshim's part of the list would differ.
    let defined_late: HashSet<&str> = rest.iter().filter_map(|e| e.get("name").and_then(Value::as_str)).collect();
    for (i, m) in c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let mut refs = Names::default();
        refs.references(m.get("subPathExpr").and_then(Value::as_str).unwrap_or(""));
        if let Some(n) = refs.list.iter().find(|n| defined_late.contains(n.as_str())) {
            problems.push(problem(
                JsonPath::item("volumeMounts", i).key("subPathExpr"),
                format!(
                    "refers to $({}), which is defined at or after the first fileKeyRef entry: the kubelet would expand it without the value envshim sets",
                    escape(n.as_bytes())
                ),
            ));
        }
    }
    problems
}

/// The manifest: the list from the first fileKeyRef on, the program line,
/// where the volumes are, the names seen; as JSON, checked by envshim's own
/// parser now, not at the pod's start, and within the limit of one variable.
fn manifest_text(
    rest: &[Value],
    command: Sequence,
    args: Option<Sequence>,
    mounts: &Mounts,
    seen: &[String],
    own: Mapping,
    first: usize,
) -> Result<String, Vec<Error>> {
    let mut manifest = Mapping::new();
    manifest.insert("env".into(), Value::Array(rest.iter().map(without_nulls).collect()));
    manifest.insert("command".into(), Value::Array(command));
    if let Some(args) = args {
        manifest.insert("args".into(), Value::Array(args));
    }
    let entries = mounts.iter().map(|(v, p, _)| mapping([("name", string(v)), ("mountPath", string(p))])).collect();
    manifest.insert("volumeMounts".into(), Value::Array(entries));
    let mut converted = Mapping::from_iter([("seen".to_string(), Value::Array(seen.iter().map(|n| string(n)).collect()))]);
    converted.extend(own);
    manifest.insert("converted".into(), Value::Object(converted));
    let text = match serde_json::to_string(&Value::Object(manifest)) {
        Ok(t) => t,
        Err(e) => return Err(vec![problem(JsonPath::default(), format!("cannot be written as JSON ({e})"))]),
    };
    // What envshim will read: checked by envshim's own parser now, not at the pod's start.
    if let Err(errors) = envshim::converter::parse_manifest(text.as_bytes()) {
        return Err(errors.into_iter().map(|e| manifest_problem(e, first)).collect());
    }
    // The kubelet turns `$$` back into `$`: the variable holds `text` as written.
    let size = MANIFEST_VAR.len() + 1 + text.len();
    if size > envshim::converter::MAX_EXEC_STRING_BYTES {
        return Err(vec![problem(
            env_entry(first),
            format!(
                "the manifest envshim needs (the env list from the first fileKeyRef on, and the program line) is {size} bytes as \
                 {MANIFEST_VAR}=..., over Linux's limit of {} bytes for one variable: the pod could not start; \
                 move large literal values before the first fileKeyRef entry, or into a ConfigMap",
                envshim::converter::MAX_EXEC_STRING_BYTES
            ),
        )]);
    }
    Ok(text)
}

/// The container converted: the new env (the kubelet's part, the view it
/// records, the rest as it was, without fileKeyRef entries, with each
/// platform entry's copies, the manifest, the settings, the splay's slot),
/// the shim's command, its mounts.
#[allow(clippy::too_many_arguments)]
fn rewrite(c: &mut Mapping, env: &Sequence, first: usize, seen: &[String], text: &str, mounts: &Mounts, s: &Settings, indexed: Option<Indexed>) {
    let rest = &env[first..];
    let mut new_env: Sequence = env[..first].to_vec();
    new_env.extend(
        seen.iter().enumerate().map(|(j, n)| mapping([("name", Value::String(format!("{SEEN_PREFIX}{j}"))), ("value", Value::String(format!("$({n})")))])),
    );
    for (i, e) in rest.iter().enumerate() {
        if is_file_key_ref(e) {
            continue;
        }
        new_env.push(e.clone());
        if let Some(source) = platform_source(e) {
            new_env.extend(copies(i, e, source));
        }
    }
    new_env.push(mapping([("name", string(MANIFEST_VAR)), ("value", Value::String(double_dollars(text)))]));
    new_env.extend(s.shim_env.iter().map(|(name, value)| mapping([("name", string(name)), ("value", string(value))])));
    new_env.extend(slots::entries(indexed, s));
    // Last: `$$` here means no kubelet expanded the list (envshim then does its part).
    new_env.push(mapping([("name", string(envshim::converter::MARKER)), ("value", string("$$"))]));
    let command: &[&str] = if s.watch { &[&s.shim_path, "run", "--watch"] } else { &[&s.shim_path, "run"] };
    c.insert("command".into(), strings(command));
    // `args: []` and `args: null` are unset: they stay as written (for `unconvert`).
    let _ = words(c, "args").and_then(|_| c.shift_remove("args"));
    c.insert("env".into(), Value::Array(new_env));
    let mut added = Vec::new();
    if s.shim_image.is_some() {
        added.push(mapping([("name", string(SHIM_VOLUME)), ("mountPath", string(SHIM_DIR)), ("readOnly", Value::Bool(true))]));
    }
    for (v, p, _) in mounts.iter().filter(|m| m.2) {
        added.push(mapping([("name", string(v)), ("mountPath", string(p)), ("readOnly", Value::Bool(true))]));
    }
    if !added.is_empty() {
        match c.get_mut("volumeMounts").and_then(Value::as_array_mut) {
            Some(ms) => ms.extend(added),
            None => {
                c.insert("volumeMounts".into(), Value::Array(added));
            }
        }
    }
}

/// An error of envshim's manifest parser, at its path relative to the
/// container: the manifest's `env` starts at the container's entry
/// `first`, so its item `env[i]` (the error says which, as data) is the
/// container's `env[first + i]`.
fn manifest_problem(e: Error, first: usize) -> Error {
    let mut path = e.at.and_then(|a| a.path).unwrap_or_default();
    // The path starts with the item, `env[i]`: what follows is below it.
    if let [Segment::Key(key), Segment::Index(i), ..] = path.0.as_mut_slice() {
        if key == "env" {
            *i += first;
        }
    }
    problem(path, e.what)
}

mod engine;
pub(crate) use engine::copies;
pub use engine::double_dollars;
