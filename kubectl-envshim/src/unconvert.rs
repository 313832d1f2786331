//! `kubectl envshim unconvert`: converted workloads turned back into the
//! native `fileKeyRef` ones they were converted from, and a converted
//! container as it was written (`manifest`'s read-back).
//!
//! Everything the conversion added is removed (the `envshim` volume, the
//! `envshim-install` initContainer, the mounts it added, the shim's command,
//! the private `ENVSHIM_*` entries); the container's own `env` list, command
//! and args come back from the manifest it carries in `ENVSHIM_MANIFEST_JSON`.
//! A change made by hand since the conversion that cannot be undone exactly
//! is refused (78) at its path, as `convert` refuses a pod. Names only in
//! messages: never a value.

use envshim::converter::{escape, Error, ExitCode, JsonPath, Segment};
use envshim::converter::{SEEN_PREFIX, VALUE_PREFIX};
use serde_json::Value;

use crate::cli::{UnconvertArgs, DEFAULT_SHIM_PATH};
use crate::convert::{container_name, env_entry, is_file_key_ref, object_name, problem, without_nulls, Mapping, Sequence, MANIFEST_VAR, RESERVED, VOLUMES_DIR};
use crate::installer::{INSTALLER, SHIM_DIR, SHIM_VOLUME};
use crate::report::{fail, say, usage, write_stdout};
use crate::warn::Note;
use crate::{cli, input, stream};

mod carried;

/// What every refusal ends with: the way out.
const UNDO: &str = "changed since the conversion, so it cannot be undone exactly: convert the original again, or edit the native workload";
/// What a refusal of something added, removed or changed in what the converter wrote ends with.
const ADDED: &str = "added after the conversion: edit the original and convert again";
const REMOVED: &str = "removed after the conversion: edit the original and convert again";
const CHANGED: &str = "changed after the conversion: edit the original and convert again";

pub fn command(args: &UnconvertArgs) -> ExitCode {
    if let Some(stray) = args.rewrite.stray.first() {
        return usage(&cli::stray(stray, "unconvert"));
    }
    let inputs = match input::read_all(&args.input) {
        Ok(inputs) => inputs,
        Err(e) => return fail(&[e]),
    };
    let outputs = match stream::each_input(&inputs, &document) {
        Ok(outputs) => outputs,
        Err(errors) => return fail(&errors),
    };
    if args.rewrite.check {
        for (shown, out) in &outputs {
            for (n, note) in &out.notes {
                say(&format!("{shown}: document {n} ({}): would unconvert containers {}", note.object, note.containers.join(", ")));
            }
        }
        let changed = outputs.iter().any(|(_, o)| !o.notes.is_empty());
        return if changed { ExitCode::Changed } else { ExitCode::Ok };
    }
    write_stdout(stream::joined(&outputs).as_bytes())
}

/// Whether a container was converted: it carries a manifest.
pub fn is_converted(c: &Value) -> bool {
    c.get("env").and_then(Value::as_array).is_some_and(|env| env.iter().any(|e| name(e) == Some(MANIFEST_VAR)))
}

/// Undoes the conversion of a document in place. Ok: each object that
/// changed, with its containers (none: the document is unchanged). Err:
/// each problem, about its object (`Kind/name`), at its JSON path.
pub fn document(doc: &mut Value) -> Result<Vec<Note>, Vec<Error>> {
    let mut walk = Walk { notes: Vec::new(), problems: Vec::new() };
    walk.node(doc, &mut JsonPath::default(), "");
    if walk.problems.is_empty() {
        Ok(walk.notes)
    } else {
        Err(walk.problems)
    }
}

struct Walk {
    notes: Vec<Note>,
    problems: Vec<Error>,
}

impl Walk {
    /// Every pod spec below `v` (a mapping whose `containers` is a list, as
    /// `convert` finds them); `at` is the path to `v`, grown and cut back.
    fn node(&mut self, v: &mut Value, at: &mut JsonPath, outer: &str) {
        let object = object_name(v, outer).into_owned();
        match v {
            Value::Object(map) if map.get("containers").is_some_and(Value::is_array) => self.pod(map, at, &object),
            Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    at.0.push(Segment::Key(escape(k.as_bytes())));
                    self.node(child, at, &object);
                    at.0.pop();
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter_mut().enumerate() {
                    at.0.push(Segment::Index(i));
                    self.node(child, at, &object);
                    at.0.pop();
                }
            }
            _ => {}
        }
    }

    fn pod(&mut self, spec: &mut Mapping, at: &JsonPath, object: &str) {
        match undo_pod(spec, false) {
            Ok(done) if done.is_empty() => {}
            Ok(done) => match self.notes.iter_mut().find(|n| n.object == object) {
                Some(note) => note.containers.extend(done),
                None => self.notes.push(Note { object: object.to_string(), containers: done, warnings: Vec::new(), again: false }),
            },
            Err(problems) => self.problems.extend(
                problems
                    .into_iter()
                    .map(|p| Error::in_manifest(ExitCode::Config, object, at.clone().join(p.at.and_then(|a| a.path).unwrap_or_default()), None, p.what)),
            ),
        }
    }
}

/// Undoes the conversion of the pod spec `spec` in place: each converted
/// container as it was written ([`original`]), then the installer and its
/// volume gone. Ok: the containers undone (none: `spec` unchanged). Err:
/// each problem, at its path relative to `spec`, `container NAME: ` first.
/// `ours_only` (convert's converting again): a container wired by hand
/// ([`wired_by_hand`]) is left as it is, not refused.
pub(crate) fn undo_pod(spec: &mut Mapping, ours_only: bool) -> Result<Vec<String>, Vec<Error>> {
    let (mut done, mut problems) = (Vec::new(), Vec::new());
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        for (i, c) in containers.iter_mut().enumerate() {
            if ours_only && wired_by_hand(c) {
                continue;
            }
            let name = container_name(c);
            let Some(c) = c.as_object_mut() else { continue };
            match original(c) {
                Ok(None) => {}
                Ok(Some(o)) => {
                    *c = o;
                    done.push(name);
                }
                Err(found) => problems.extend(found.into_iter().map(|p| {
                    let path = JsonPath::item(list, i).join(p.at.and_then(|a| a.path).unwrap_or_default());
                    Error { code: p.code, ..problem(path, format!("container {name}: {}", p.what)) }
                })),
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if !done.is_empty() {
        remove_installer(spec);
    }
    Ok(done)
}

/// A container given `ENVSHIM_MANIFEST_JSON` by hand (envshim wired
/// without the converter): from a ConfigMap or a Secret, or a JSON object
/// without the converter's `converted` record. `convert` leaves it as it
/// is; `unconvert` and `manifest` refuse it (they cannot undo it).
pub fn wired_by_hand(c: &Value) -> bool {
    let env = c.get("env").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let Some(entry) = env.iter().find(|e| name(e) == Some(MANIFEST_VAR)) else { return false };
    let Some(text) = entry.get("value").and_then(Value::as_str).filter(|_| entry.get("valueFrom").is_none_or(Value::is_null)) else { return true };
    let text = halved(text).unwrap_or_else(|| text.to_string());
    serde_json::from_str::<Value>(&text).ok().and_then(|v| v.as_object().map(|m| !m.contains_key("converted"))).unwrap_or(false)
}

/// The `envshim-install` initContainer and the `envshim` volume, as `convert` adds them.
fn remove_installer(spec: &mut Mapping) {
    let added = |list: &str, v: &Value| match list {
        "initContainers" => name(v) == Some(INSTALLER) && v.get("command") == Some(&serde_json::json!(["/envshim", "install", DEFAULT_SHIM_PATH])),
        _ => name(v) == Some(SHIM_VOLUME) && v.get("emptyDir").is_some(),
    };
    for list in ["initContainers", "volumes"] {
        let Some(items) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        let before = items.len();
        items.retain(|v| !added(list, v));
        if items.is_empty() && before > 0 {
            spec.shift_remove(list);
        }
    }
}

fn name(entry: &Value) -> Option<&str> {
    entry.get("name").and_then(Value::as_str)
}

/// A field of a container, the path of some of its problems.
fn container_field(key: &str) -> JsonPath {
    JsonPath::default().key(key)
}

/// The container `c` as it was written before its conversion; None when it
/// was not converted. Err: what cannot be undone, at paths relative to `c`:
/// a change since the conversion, anything the converter did not write
/// (`carried.rs`), a manifest envshim refuses. The one check of a converted
/// container: `unconvert` and `manifest` call it, each refusal once, with
/// what to do.
pub fn original(c: &Mapping) -> Result<Option<Mapping>, Vec<Error>> {
    let env: &[Value] = c.get("env").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let Some(at) = env.iter().position(|e| name(e) == Some(MANIFEST_VAR)) else { return Ok(None) };
    let manifest = manifest(&env[at], at)?;
    let mut o = c.clone();
    let mut problems = carried::foreign(c, at, &manifest);
    match own_env(env, at, &manifest) {
        Ok(own) => {
            o.insert("env".into(), Value::Array(own));
        }
        Err(e) => problems.push(e),
    }
    problems.extend(program(&mut o, &manifest, at).err());
    remove_mounts(&mut o, &manifest);
    if problems.is_empty() {
        Ok(Some(o))
    } else {
        Err(problems)
    }
}

/// What the converter wrote in the manifest entry `env[at]`, read back.
struct Manifest {
    /// The list from the first `fileKeyRef` on, as written (nulls dropped).
    rest: Sequence,
    seen: Vec<String>,
    map: Mapping,
}

fn manifest(entry: &Value, at: usize) -> Result<Manifest, Vec<Error>> {
    manifest_read(entry, at).map_err(|e| vec![e]).and_then(|(m, text)| match envshim::converter::parse_manifest(text.as_bytes()) {
        Ok(_) => Ok(m),
        // What envshim refuses at the start, as `envshim check` refuses it: its verdict, its words.
        Err(errors) => Err(errors
            .into_iter()
            .map(|e| {
                let below = e.path().filter(|p| !p.is_root()).map_or(String::new(), |p| format!("{p}: "));
                Error {
                    code: e.code,
                    ..problem(env_entry(at).key("value"), format!("the manifest in {MANIFEST_VAR}: {below}{}: envshim refuses it at the start: {UNDO}", e.what))
                }
            })
            .collect()),
    })
}

/// [`manifest`]'s reading of the entry, and the manifest's text as envshim reads it.
fn manifest_read(entry: &Value, at: usize) -> Result<(Manifest, String), Error> {
    let path = env_entry(at).key("value");
    let Some(text) = entry.get("value").and_then(Value::as_str).filter(|_| entry.get("valueFrom").is_none_or(Value::is_null)) else {
        return Err(problem(
            env_entry(at),
            format!("{MANIFEST_VAR} is not a literal value, as the converter writes it: the container was wired by hand; {UNDO}"),
        ));
    };
    let Some(text) = halved(text) else {
        return Err(problem(path.clone(), format!("{MANIFEST_VAR} has a `$` that is not doubled (the converter doubles every one for the kubelet): {UNDO}")));
    };
    let map = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(problem(path.clone(), format!("{MANIFEST_VAR} is not a JSON object: {UNDO}"))),
        Err(e) => return Err(problem(path.clone(), format!("{MANIFEST_VAR} is not valid JSON (line {}, column {}): {UNDO}", e.line(), e.column()))),
    };
    let field = |what: &str| problem(path.clone(), format!("the manifest in {MANIFEST_VAR}: {what}: {UNDO}"));
    let Some(converted) = map.get("converted").and_then(Value::as_object) else {
        return Err(field("no converted object: not written by kubectl envshim convert (a container wired by hand)"));
    };
    let seen = converted.get("seen").and_then(Value::as_array).and_then(|s| s.iter().map(|n| n.as_str().map(str::to_string)).collect::<Option<Vec<_>>>());
    let Some(seen) = seen else { return Err(field("converted.seen is not a list of names")) };
    let Some(rest) = map.get("env").and_then(Value::as_array).filter(|r| r.first().is_some_and(is_file_key_ref)).cloned() else {
        return Err(field("env is not a list that starts with a fileKeyRef entry"));
    };
    for key in ["command", "args", "volumeMounts"] {
        if map.get(key).is_some_and(|v| !v.is_array()) || (key == "command" && map.get(key).is_none()) {
            return Err(field(&format!("{key} is not a list")));
        }
    }
    if converted.get("entrypoint").is_some_and(|e| !e.is_object()) {
        return Err(field("converted.entrypoint is not an object"));
    }
    Ok((Manifest { rest, seen, map }, text))
}

/// `text` with every `$$` made `$` (the converter doubled each `$`); None
/// when a `$` stands alone.
fn halved(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '$' && chars.next() != Some('$') {
            return None;
        }
        out.push(c);
    }
    Some(out)
}

/// The container's own `env` list: the entries before the first
/// `fileKeyRef` as they are now, then the manifest's list with each entry
/// that is not a `fileKeyRef` taken from the container (as written, nulls
/// and all). Err: the entries do not line up with the manifest.
fn own_env(env: &[Value], at: usize, m: &Manifest) -> Result<Sequence, Error> {
    // What comes after the manifest's entry is the converter's alone (carried.rs).
    let (mut own, mut seen) = (Vec::new(), Vec::new());
    for (i, e) in env[..at].iter().enumerate() {
        match name(e) {
            Some(n) if n.starts_with(SEEN_PREFIX) => seen.push(i),
            Some(n) if n.starts_with(VALUE_PREFIX) => {}
            Some(n) if n.starts_with(RESERVED) => {
                return Err(problem(env_entry(i).key("name"), format!("{} is not an entry the converter writes there: {ADDED}", escape(n.as_bytes()))))
            }
            _ if is_file_key_ref(e) => {
                return Err(problem(env_entry(i).key("valueFrom").key("fileKeyRef"), format!("a fileKeyRef in a converted container: {ADDED}")))
            }
            _ => own.push(i),
        }
    }
    let kept: Vec<&Value> = m.rest.iter().filter(|e| !is_file_key_ref(e)).collect();
    // Where the list was split: the kubelet's view, recorded there
    // (ENVSHIM_SEEN_<j> = $(NAME) each); without one, as many entries from
    // the end as the manifest's list keeps.
    let split = match seen.first() {
        Some(s) => own.iter().take_while(|i| *i < s).count(),
        None => own.len().saturating_sub(kept.len()),
    };
    lined_up(env, &own[split..], &kept)?;
    let block = seen.first().is_none_or(|s| seen.iter().enumerate().all(|(j, i)| *i == s + j));
    let recorded = seen.len() == m.seen.len()
        && seen
            .iter()
            .zip(&m.seen)
            .enumerate()
            .all(|(j, (i, n))| name(&env[*i]) == Some(&format!("{SEEN_PREFIX}{j}")) && env[*i].get("value") == Some(&Value::String(format!("$({n})"))));
    if !(block && recorded) {
        let i = seen.first().copied().unwrap_or(at);
        return Err(problem(
            env_entry(i),
            format!("the {SEEN_PREFIX}<j> entries are not the ones the manifest's converted.seen names, where the list was split: {CHANGED}"),
        ));
    }
    let mut mine = own[split..].iter().map(|i| env[*i].clone());
    let rest = m.rest.iter().map(|e| if is_file_key_ref(e) { Some(e.clone()) } else { mine.next() });
    own[..split].iter().map(|i| Some(env[*i].clone())).chain(rest).collect::<Option<Sequence>>().ok_or_else(|| problem(container_field("env"), UNDO))
}

/// The container's entries after the split (`mine`, indexes into `env`)
/// against the manifest's list without its `fileKeyRef` entries (`kept`).
/// Err: the first difference, as an entry added, removed or changed when
/// it is one.
fn lined_up(env: &[Value], mine: &[usize], kept: &[&Value]) -> Result<(), Error> {
    let same = |i: usize, k: &Value| without_nulls(&env[i]) == *k;
    let all_same = |mine: &[usize], kept: &[&Value]| mine.len() == kept.len() && mine.iter().zip(kept).all(|(i, k)| same(*i, k));
    let Some(d) = (0..mine.len().max(kept.len())).find(|&d| !matches!((mine.get(d), kept.get(d)), (Some(&i), Some(k)) if same(i, k))) else {
        return Ok(());
    };
    let shown = |e: &Value| escape(name(e).unwrap_or_default().as_bytes());
    if mine.len() == kept.len() + 1 && all_same(&mine[d + 1..], &kept[d..]) {
        let i = mine[d];
        return Err(problem(
            env_entry(i),
            format!("{} is not in the list the manifest carries (envshim's part, from the first fileKeyRef's place on): {ADDED}", shown(&env[i])),
        ));
    }
    if mine.len() + 1 == kept.len() && all_same(&mine[d..], &kept[d + 1..]) {
        return Err(problem(container_field("env"), format!("lacks {}, an entry of the list the manifest carries: {REMOVED}", shown(kept[d]))));
    }
    Err(match (mine.get(d), kept.get(d)) {
        (Some(&i), Some(_)) => problem(env_entry(i), format!("{} differs from the entry the manifest's list holds for it: {CHANGED}", shown(&env[i]))),
        _ => problem(
            container_field("env"),
            format!("its entries from the first fileKeyRef's place on are not the manifest's list without its fileKeyRef entries: {CHANGED}"),
        ),
    })
}

/// The program line back: the manifest's `command` and `args` (or, when
/// `--entrypoint` gave the program, the container's own `command` as it
/// was), in place of the shim's.
fn program(o: &mut Mapping, m: &Manifest, at: usize) -> Result<(), Error> {
    let words = |v: Option<&Value>| v.and_then(Value::as_array).filter(|w| !w.is_empty()).cloned();
    let shim = words(o.get("command")).is_some_and(|w| {
        // A word after these: carried.rs.
        w.len() >= 2 && w[0].as_str().is_some_and(|s| s.starts_with('/')) && w[1] == "run"
    });
    if !shim {
        return Err(problem(
            container_field("command"),
            format!("is not the converter's [SHIM, \"run\"] (the program line is the manifest's, in env[{at}]): {UNDO}"),
        ));
    }
    if words(o.get("args")).is_some() {
        return Err(problem(container_field("args"), format!("set on a converted container, whose program line is its manifest's: {UNDO}")));
    }
    match m.map.get("converted").and_then(|c| c.get("entrypoint")).and_then(Value::as_object) {
        Some(own) => match own.get("command") {
            Some(command) => o.insert("command".into(), command.clone()),
            None => o.shift_remove("command"),
        },
        None => o.insert("command".into(), m.map["command"].clone()),
    };
    if let Some(args) = m.map.get("args") {
        o.insert("args".into(), args.clone());
    }
    Ok(())
}

/// The read-only mounts the converter added: the shim's, and each volume a
/// `fileKeyRef` reads that the container did not mount.
fn remove_mounts(o: &mut Mapping, m: &Manifest) {
    let manifest_mounts = m.map.get("volumeMounts").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let added = |v: &Value| {
        let (n, p) = (name(v).unwrap_or(""), v.get("mountPath").and_then(Value::as_str).unwrap_or(""));
        let ours = (n == SHIM_VOLUME && p == SHIM_DIR)
            || (p.strip_prefix(VOLUMES_DIR).and_then(|p| p.strip_prefix('/')) == Some(n)
                && manifest_mounts.iter().any(|m| name(m) == Some(n) && m["mountPath"] == p));
        ours && v.get("readOnly") == Some(&Value::Bool(true))
    };
    let Some(mounts) = o.get_mut("volumeMounts").and_then(Value::as_array_mut) else { return };
    let before = mounts.len();
    mounts.retain(|v| !added(v));
    if mounts.is_empty() && before > 0 {
        o.shift_remove("volumeMounts");
    }
}
