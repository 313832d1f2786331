//! A model of what the kubelet 1.35 and the container runtime give a
//! container's program: its environment and its argv. Written from the
//! Kubernetes documentation and docs/reference.md §2 (the env-file reader from
//! the rules of the kubelet's own, not its code);
//! the differential test (`tests/exact.rs`) holds the converted path to it.
//!
//! Sources, cited at each step:
//! - [expansion]: the `$(var)` design doc, `seeds/002_*` (its table is
//!   `conformance/expansion-seed-table.json`, every row checked by `exact.rs`);
//! - [envfrom]: the configuration docs, `seeds/003_*` ("Configure all key-value
//!   pairs in a ConfigMap as container environment variables"; a key that is not
//!   a valid name is skipped with an event; a later source overrides an earlier
//!   one and `env` overrides `envFrom`);
//! - [kep3721]: KEP-3721, `seeds/000_*` (the failure table: an optional file or
//!   key that does not exist leaves the variable unset, a required one fails the
//!   pod);
//! - [define-env]: "Define Dependent Environment Variables" (an entry sees only
//!   the entries before it and the service variables; a name it does not know
//!   stays `$(NAME)`); "Define a Command and Arguments" (command and args are
//!   expanded with the container's environment; no command: the image's
//!   ENTRYPOINT, then `args`, or else the image's CMD);
//! - [parse-env]: the kubelet 1.35's env-file reader (`ParseEnv` in
//!   pkg/kubelet/util/env, with its tests): its rules are written out at
//!   `env_file_value`;
//! - docs/reference.md §2 (the order: platform variables, `envFrom`, `env`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

/// What the image holds (its config: `ENTRYPOINT`, `CMD`, `ENV`).
#[derive(Clone, Debug)]
pub struct Image {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// Everything outside the container spec that decides what the program gets.
#[derive(Clone, Debug)]
pub struct World {
    /// ConfigMaps that exist (name -> data).
    pub config_maps: BTreeMap<String, BTreeMap<String, String>>,
    /// Secrets that exist (name -> decoded data).
    pub secrets: BTreeMap<String, BTreeMap<String, String>>,
    /// The service variables the kubelet makes (`KUBERNETES_SERVICE_HOST`, ...).
    pub service_env: BTreeMap<String, String>,
    /// `fieldRef.fieldPath` -> value (`metadata.name`, `status.podIP`, ...).
    pub fields: BTreeMap<String, String>,
    /// The pod's volumes: volume name -> the directory holding its files.
    pub volumes: BTreeMap<String, PathBuf>,
    pub image: Image,
    /// What the runtime sets `HOSTNAME` to (the pod's name, natively).
    pub hostname: String,
}

/// What the program is started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// The kubelet and the runtime: the program's argv and environment, or why
/// the container does not start.
pub fn start(container: &Value, world: &World) -> Result<Started, String> {
    let list = container_env(container, world)?;
    let argv = program_line(container, &list, &world.image);
    if argv.is_empty() {
        return Err("no command: neither command nor the image's ENTRYPOINT/CMD".into());
    }
    // The runtime (containerd's CRI, as Docker before it): HOSTNAME first, then
    // the image's ENV, then the kubelet's list, each overriding the one before.
    let mut env = BTreeMap::from([("HOSTNAME".to_string(), world.hostname.clone())]);
    env.extend(world.image.env.iter().cloned());
    env.extend(list);
    // The runtime's execve: Linux refuses any one argv or `NAME=VALUE` string
    // over 128 KiB with its NUL (MAX_ARG_STRLEN): the container does not start.
    let mut strings = argv.iter().map(String::len).chain(env.iter().map(|(k, v)| k.len() + 1 + v.len()));
    if strings.any(|n| n + 1 > MAX_ARG_STRLEN) {
        return Err("execve: a string over 128 KiB (E2BIG)".into());
    }
    Ok(Started { argv, env })
}

/// Linux's limit on one execve string (32 pages), the NUL included.
pub const MAX_ARG_STRLEN: usize = 128 * 1024;

/// The kubelet's list for the container: [envfrom], then each `env` entry in
/// order [define-env], then the service variables that no entry defined.
pub fn container_env(container: &Value, world: &World) -> Result<BTreeMap<String, String>, String> {
    env_list(container, world, true)
}

/// An engine that is not a kubelet and does not expand `$(VAR)`
/// (`podman kube play`, `docker run` given the container's env): the same
/// sources resolved, each literal value set as written (`$$` too), the last
/// entry of a name winning; no service variables; `command` and `args` run
/// as written. The runtime's part (HOSTNAME, the image's ENV) as in [`start`].
pub fn engine_start(container: &Value, world: &World) -> Result<Started, String> {
    let vars = env_list(container, world, false)?;
    let words = |field: &str| list(container, field).iter().map(|w| w.as_str().unwrap_or_default().to_string()).collect::<Vec<_>>();
    let argv = [words("command"), words("args")].concat();
    let mut env = BTreeMap::from([("HOSTNAME".to_string(), world.hostname.clone())]);
    env.extend(world.image.env.iter().cloned());
    env.extend(vars);
    Ok(Started { argv, env })
}

/// The container's list, by the kubelet (`kubelet`) or by an engine that does not expand.
fn env_list(container: &Value, world: &World, kubelet: bool) -> Result<BTreeMap<String, String>, String> {
    let mut tmp: BTreeMap<String, String> = BTreeMap::new();

    // [envfrom]: each source in order, every key prefixed; a missing source
    // fails the pod unless optional; a name that is not valid is skipped.
    for (i, source) in list(container, "envFrom").iter().enumerate() {
        let prefix = source.get("prefix").and_then(Value::as_str).unwrap_or("");
        let (kind, store) = if let Some(r) = source.get("configMapRef") {
            (r, &world.config_maps)
        } else if let Some(r) = source.get("secretRef") {
            (r, &world.secrets)
        } else {
            return Err(format!("envFrom[{i}]: no source the model knows"));
        };
        let name = kind.get("name").and_then(Value::as_str).unwrap_or("");
        match store.get(name) {
            Some(data) => {
                for (key, value) in data {
                    let var = format!("{prefix}{key}");
                    if valid_name(&var) {
                        tmp.insert(var, value.clone());
                    }
                }
            }
            None if optional(kind) => {}
            None => return Err(format!("envFrom[{i}]: {name} does not exist")),
        }
    }

    // [define-env]: each entry in order. A literal is expanded against what is
    // defined so far, then the service variables [expansion]; a platform
    // reference that finds nothing and is optional leaves the name as it was.
    for (i, entry) in list(container, "env").iter().enumerate() {
        let name = entry["name"].as_str().ok_or(format!("env[{i}]: no name"))?.to_string();
        let literal = entry.get("value").and_then(Value::as_str).unwrap_or("");
        let value = if !literal.is_empty() && !kubelet {
            Some(literal.to_string())
        } else if !literal.is_empty() {
            Some(expand(literal, |n| tmp.get(n).or_else(|| world.service_env.get(n)).cloned()))
        } else if let Some(from) = entry.get("valueFrom").filter(|v| !v.is_null()) {
            value_from(from, world).map_err(|e| format!("env[{i}] ({name}): {e}"))?
        } else {
            // Neither value nor valueFrom: the empty string.
            Some(String::new())
        };
        if let Some(value) = value {
            tmp.insert(name, value);
        }
    }

    // The service variables, where no entry (nor envFrom) set the name.
    for (name, value) in world.service_env.iter().filter(|_| kubelet) {
        tmp.entry(name.clone()).or_insert_with(|| value.clone());
    }
    Ok(tmp)
}

/// A `valueFrom`: Ok(None) when an optional reference finds nothing.
fn value_from(from: &Value, world: &World) -> Result<Option<String>, String> {
    let key_in = |store: &BTreeMap<String, BTreeMap<String, String>>, r: &Value, what: &str| {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        let key = r.get("key").and_then(Value::as_str).unwrap_or("");
        match store.get(name).map(|data| data.get(key)) {
            Some(Some(v)) => Ok(Some(v.clone())),
            _ if optional(r) => Ok(None),
            Some(None) => Err(format!("{what} {name} has no key {key}")),
            None => Err(format!("{what} {name} does not exist")),
        }
    };
    if let Some(r) = from.get("configMapKeyRef") {
        key_in(&world.config_maps, r, "ConfigMap")
    } else if let Some(r) = from.get("secretKeyRef") {
        key_in(&world.secrets, r, "Secret")
    } else if let Some(r) = from.get("fieldRef") {
        let path = r.get("fieldPath").and_then(Value::as_str).unwrap_or("");
        world.fields.get(path).cloned().map(Some).ok_or(format!("fieldRef {path}: not a field the model knows"))
    } else if let Some(r) = from.get("fileKeyRef") {
        file_key_ref(r, world)
    } else {
        Err("valueFrom with no source the model knows".into())
    }
}

/// [kep3721] `fileKeyRef`: the key's value in the env file; optional and the
/// file or the key missing: nothing. (A missing optional *file* fails the pod
/// in the 1.35 kubelet, against its own documentation: the model follows the
/// documentation, which is what envshim does: docs/kubelet-differences.md
/// entry 7.)
fn file_key_ref(r: &Value, world: &World) -> Result<Option<String>, String> {
    let volume = r.get("volumeName").and_then(Value::as_str).unwrap_or("");
    let path = r.get("path").and_then(Value::as_str).unwrap_or("");
    let key = r.get("key").and_then(Value::as_str).unwrap_or("");
    let dir = world.volumes.get(volume).ok_or(format!("fileKeyRef: no volume {volume}"))?;
    let found = match std::fs::read_to_string(dir.join(path)) {
        Ok(text) => env_file_value(&text, key)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("fileKeyRef {volume}/{path}: {e}")),
    };
    match found {
        Some(v) => Ok(Some(v)),
        None if optional(r) => Ok(None),
        None => Err(format!("fileKeyRef {volume}/{path}: no key {key}")),
    }
}

/// [parse-env] The 1.35 env-file reader, for one key. Lines end at LF, a CR
/// ending a line dropped; blanks before a line's first character are skipped,
/// and blank and `#` lines too. A line is `NAME='VALUE'`: a line without `=`,
/// an empty name, or a blank right before `=` is an error; a blank right
/// after `=` is the empty value (the line read no further); any other value
/// not starting with `'` is an error ("value must be enclosed in single
/// quotes"). The value runs to the next `'`, literal, across lines (joined
/// by LF); after it only blanks and a `#` comment may follow; an unclosed
/// quote is an error. The first line holding the key gives its value and
/// nothing after it is read; an error on a line before it fails the read.
/// The empty value is a key the kubelet does not find ([kep3721]).
pub fn env_file_value(text: &str, key: &str) -> Result<Option<String>, String> {
    let blanks: &[char] = &[' ', '\t'];
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let mut n = 0;
    while let Some(raw) = lines.next() {
        n += 1;
        let line = raw.trim_start_matches(blanks);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let eq = line.find('=').ok_or(format!("line {n}: missing '='"))?;
        let (name_part, value_part) = (&line[..eq], &line[eq + 1..]);
        let name = name_part.trim_end_matches(blanks);
        if name.is_empty() {
            return Err(format!("line {n}: empty variable name"));
        }
        if name != name_part {
            return Err(format!("line {n}: whitespace before '='"));
        }
        if value_part.starts_with(blanks) {
            if name == key {
                return Ok(None);
            }
            continue;
        }
        let mut rest = value_part.strip_prefix('\'').ok_or(format!("line {n}: value must be enclosed in single quotes"))?;
        let (start, mut value) = (n, String::new());
        loop {
            if let Some(close) = rest.find('\'') {
                value.push_str(&rest[..close]);
                let after = rest[close + 1..].trim_start_matches(blanks);
                if !after.is_empty() && !after.starts_with('#') {
                    return Err(format!("line {n}: unexpected content after closing quote"));
                }
                if name == key {
                    return Ok(Some(value).filter(|v| !v.is_empty()));
                }
                break;
            }
            value.push_str(rest);
            value.push('\n');
            rest = lines.next().ok_or(format!("line {start}: unclosed single quote"))?;
            n += 1;
        }
    }
    Ok(None)
}

/// [define-env] The program line: command and args expanded against the
/// container's final list (the kubelet never sees the image's ENV); with no
/// command, the image's ENTRYPOINT, then args, or else the image's CMD. The
/// image's words are never expanded (the runtime adds them after the kubelet).
/// An empty `command` (`[]`, `null`) is no command.
pub fn program_line(container: &Value, env: &BTreeMap<String, String>, image: &Image) -> Vec<String> {
    let words = |field: &str| -> Vec<String> {
        list(container, field).iter().map(|w| w.as_str().unwrap_or_default().to_string()).map(|w| expand(&w, |n| env.get(n).cloned())).collect()
    };
    let (command, args) = (words("command"), words("args"));
    if !command.is_empty() {
        return [command, args].concat();
    }
    let rest = if args.is_empty() { image.cmd.clone() } else { args };
    [image.entrypoint.clone(), rest].concat()
}

/// [expansion] The `$(var)` algorithm: left to right; `$$` is one `$`;
/// `$(NAME)` up to the first `)` is NAME's value, or stays as written when
/// NAME is not defined; `$(` with no `)` after it stays; `$` before any other
/// character stays with that character; a trailing `$` stays. A value put in
/// is never scanned again.
pub fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        match after.chars().next() {
            None => {
                out.push('$');
                rest = after;
            }
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => match after.find(')') {
                Some(close) => {
                    let name = &after[1..close];
                    match lookup(name) {
                        Some(value) => out.push_str(&value),
                        None => out.push_str(&format!("$({name})")),
                    }
                    rest = &after[close + 1..];
                }
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            Some(c) => {
                out.push('$');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// KEP-4369's relaxed rule (GA in 1.34): printable ASCII but `=`, at least one byte.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| (32..=126).contains(&b) && b != b'=')
}

fn optional(reference: &Value) -> bool {
    reference.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

/// A list field of the container; absent or `null` is empty.
fn list<'a>(container: &'a Value, field: &str) -> &'a [Value] {
    container.get(field).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}
