//! One document: find its pod spec(s), convert the containers that have a
//! `fileKeyRef`, and add the install initContainer and its volume.

use serde_json::{Map, Value};

/// A mapping of the document tree (kubectl's reading of it: JSON, keys in their order).
type Mapping = Map<String, Value>;
type Sequence = Vec<Value>;

use crate::code;

pub const DEFAULT_SHIM_PATH: &str = "/.envshim/bin/envshim";
/// Where the `envshim` volume is mounted, in the installer and in converted containers.
const SHIM_DIR: &str = "/.envshim/bin";
/// Where a volume a `fileKeyRef` names is mounted when the container does not mount it.
const VOLUMES_DIR: &str = "/.envshim/volumes";
const SHIM_VOLUME: &str = "envshim";
const INSTALLER: &str = "envshim-install";
/// The user the installer runs as: a `scratch` image has no USER, and
/// `runAsNonRoot` alone would make the kubelet refuse to start it. 65532 is
/// the `nonroot` user of distroless images.
const INSTALLER_UID: u64 = 65532;
pub const MANIFEST_VAR: &str = "ENVSHIM_MANIFEST_JSON";
const WAIT_VAR: &str = "ENVSHIM_WAIT";

pub struct Settings {
    pub shim_path: String,
    /// None: envshim is in the image (`--shim-path`): no installer, no volume.
    pub shim_image: Option<String>,
    pub entrypoints: Vec<(String, Vec<String>)>,
    pub wait: Option<String>,
    /// The envshim-install initContainer's requests and limits (Kubernetes quantities).
    pub installer_cpu: String,
    pub installer_memory: String,
}

/// Why a document cannot be converted: the object (`Kind/name`), the JSON
/// path from the document's root, and what is wrong.
pub struct Problem {
    pub code: u8,
    pub object: String,
    pub path: String,
    pub message: String,
}

/// Converts a document in place. Ok: each object that changed, with its
/// containers and warnings (none: the document is unchanged).
pub fn document(doc: &mut Value, s: &Settings) -> Result<Vec<crate::warn::Note>, Vec<Problem>> {
    let before = doc.clone();
    match object(doc, "", s)? {
        true => Ok(crate::warn::notes(&before, doc)),
        false => Ok(Vec::new()),
    }
}

fn object(doc: &mut Value, at: &str, s: &Settings) -> Result<bool, Vec<Problem>> {
    let Some(map) = doc.as_object_mut() else { return Ok(false) };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    let group = map.get("apiVersion").and_then(Value::as_str).map(|v| v.rsplit_once('/').map_or("", |(g, _)| g).to_string());
    let of = |groups: &[&str]| group.as_deref().is_none_or(|g| groups.contains(&g));
    let spec_at: &[&str] = match kind.as_str() {
        "List" if of(&[""]) => return list(map, at, s),
        "Pod" if of(&[""]) => &["spec"],
        "PodTemplate" if of(&[""]) => &["template", "spec"],
        "ReplicationController" if of(&[""]) => &["spec", "template", "spec"],
        "Deployment" | "ReplicaSet" | "DaemonSet" if of(&["apps", "extensions"]) => &["spec", "template", "spec"],
        "StatefulSet" if of(&["apps"]) => &["spec", "template", "spec"],
        "Job" if of(&["batch"]) => &["spec", "template", "spec"],
        "CronJob" if of(&["batch"]) => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return Ok(false),
    };
    let name = map
        .get("metadata")
        .and_then(|m| m.get("name").or_else(|| m.get("generateName")))
        .and_then(Value::as_str)
        .unwrap_or("(no name)")
        .to_string();
    let object = format!("{kind}/{name}");
    let mut path = at.to_string();
    let mut node: &mut Value = doc;
    for key in spec_at {
        match node.get_mut(*key) {
            Some(next) => node = next,
            None => return Ok(false),
        }
        path = join(&path, key);
    }
    match node.as_object_mut() {
        Some(spec) => pod(spec, &path, &object, s),
        None => Ok(false),
    }
}

fn list(map: &mut Mapping, at: &str, s: &Settings) -> Result<bool, Vec<Problem>> {
    let Some(items) = map.get_mut("items").and_then(Value::as_array_mut) else { return Ok(false) };
    let (mut changed, mut problems) = (false, Vec::new());
    for (i, item) in items.iter_mut().enumerate() {
        match object(item, &join(at, &format!("items[{i}]")), s) {
            Ok(c) => changed |= c,
            Err(mut p) => problems.append(&mut p),
        }
    }
    if problems.is_empty() {
        Ok(changed)
    } else {
        Err(problems)
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else if key.starts_with('[') {
        format!("{path}{key}")
    } else {
        format!("{path}.{key}")
    }
}

fn has_file_key_ref(container: &Value) -> bool {
    container.get("env").and_then(Value::as_array).is_some_and(|env| env.iter().any(is_file_key_ref))
}

fn is_file_key_ref(entry: &Value) -> bool {
    entry.get("valueFrom").and_then(|v| v.get("fileKeyRef")).is_some()
}

fn string(s: &str) -> Value {
    Value::String(s.to_string())
}

fn mapping<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn strings(words: &[&str]) -> Value {
    Value::Array(words.iter().map(|w| string(w)).collect())
}

fn pod(spec: &mut Mapping, path: &str, object: &str, s: &Settings) -> Result<bool, Vec<Problem>> {
    const LISTS: [&str; 2] = ["initContainers", "containers"];
    let wanted = LISTS.iter().any(|l| spec.get(*l).and_then(Value::as_array).is_some_and(|cs| cs.iter().any(has_file_key_ref)));
    if !wanted {
        return Ok(false);
    }
    let problem = |path: String, message: String| Problem { code: code::CONFIG, object: object.to_string(), path, message };
    if spec.get("os").and_then(|o| o.get("name")).and_then(Value::as_str) == Some("windows") {
        return Err(vec![problem(
            join(path, "os.name"),
            "a Windows pod: envshim runs Linux programs only, so its fileKeyRef entries cannot be converted".into(),
        )]);
    }
    let volumes: Vec<String> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(|v| v.get("name").and_then(Value::as_str)).map(str::to_string).collect())
        .unwrap_or_default();
    let mut problems = Vec::new();
    for list in LISTS {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else { continue };
        for (i, c) in containers.iter_mut().enumerate() {
            if !has_file_key_ref(c) {
                continue;
            }
            let name = c.get("name").and_then(Value::as_str).unwrap_or("(no name)").to_string();
            let at = join(path, &format!("{list}[{i}]"));
            if let Some(c) = c.as_object_mut() {
                problems.extend(container(c, &at, &volumes, s).into_iter().map(|(p, m)| problem(p, format!("container {name}: {m}"))));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    if let Some(image) = &s.shim_image {
        add_installer(spec, image, s);
    }
    Ok(true)
}

/// Converts one container; the problems as (JSON path, message).
fn container(c: &mut Mapping, at: &str, volumes: &[String], s: &Settings) -> Vec<(String, String)> {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let env: Sequence = c.get("env").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut problems = Vec::new();
    if let Some(i) = env.iter().position(|e| e.get("name").and_then(Value::as_str) == Some(MANIFEST_VAR)) {
        // Converted already, and given a fileKeyRef since: its own command is gone.
        problems.push((join(at, &format!("env[{i}].name")), format!("{MANIFEST_VAR} is set: the container was converted already; convert the original instead")));
        return problems;
    }
    let command = match c.get("command") {
        Some(command) => command.clone(),
        None => match s.entrypoints.iter().find(|(n, _)| *n == name) {
            Some((_, words)) => Value::Array(words.iter().map(|w| string(w)).collect()),
            None => {
                problems.push((
                    join(at, "command"),
                    format!(
                        "no command: the image's ENTRYPOINT cannot be known without asking a registry, which the converter never does; \
                         set command, or give --entrypoint {name}=PROGRAM"
                    ),
                ));
                Value::Null
            }
        },
    };
    // The volumes the fileKeyRef entries name, in order, each with where this
    // container sees it: its own mount of the volume root, else one added.
    let mut mounts: Vec<(String, String, bool)> = Vec::new();
    let own: Vec<(String, String)> = c
        .get("volumeMounts")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .filter(|m| ["subPath", "subPathExpr"].iter().all(|k| m.get(*k).and_then(Value::as_str).unwrap_or("").is_empty()))
                .filter_map(|m| Some((m.get("name")?.as_str()?.to_string(), m.get("mountPath")?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    for (i, e) in env.iter().enumerate() {
        let Some(volume) = e.get("valueFrom").and_then(|v| v.get("fileKeyRef")).and_then(|f| f.get("volumeName")).and_then(Value::as_str) else {
            continue; // not a fileKeyRef, or one without a volumeName: the manifest check says so
        };
        if mounts.iter().any(|(v, _, _)| v == volume) {
            continue;
        }
        if !volumes.iter().any(|v| v == volume) {
            problems.push((
                join(at, &format!("env[{i}].valueFrom.fileKeyRef.volumeName")),
                format!("the volume {volume:?} is not among the pod's volumes"),
            ));
            continue;
        }
        match own.iter().find(|(v, _)| v == volume) {
            Some((_, path)) => mounts.push((volume.to_string(), path.clone(), false)),
            None => mounts.push((volume.to_string(), format!("{VOLUMES_DIR}/{volume}"), true)),
        }
    }
    if !problems.is_empty() {
        return problems;
    }

    // The manifest: the env list as it was, command, args, where the volumes are.
    let mut manifest = Mapping::new();
    manifest.insert("env".to_string(), Value::Array(env.clone()));
    manifest.insert("command".to_string(), command);
    if let Some(args) = c.get("args") {
        manifest.insert("args".to_string(), args.clone());
    }
    let entries = mounts.iter().map(|(v, p, _)| mapping([("name", string(v)), ("mountPath", string(p))])).collect();
    manifest.insert("volumeMounts".to_string(), Value::Array(entries));
    let text = match serde_json::to_string(&Value::Object(manifest)) {
        Ok(t) => t,
        Err(e) => return vec![(at.to_string(), format!("cannot be written as JSON ({e})"))],
    };
    // What envshim will read: checked by envshim's own parser now, not at the pod's start.
    if let Err(errors) = envshim::manifest::parse(text.as_bytes()) {
        return errors
            .into_iter()
            .map(|e| {
                let m = e.message.strip_prefix("manifest: ").unwrap_or(&e.message);
                match m.split_once(": ") {
                    Some((p, why)) if p.starts_with("env[") || p.starts_with("command") || p.starts_with("args") => (join(at, p), why.to_string()),
                    _ => (at.to_string(), m.to_string()),
                }
            })
            .collect();
    }

    let mut new_env: Sequence = env.into_iter().filter(|e| !is_file_key_ref(e)).collect();
    new_env.push(mapping([("name", string(MANIFEST_VAR)), ("value", Value::String(double_dollars(&text)))]));
    if let Some(wait) = &s.wait {
        new_env.push(mapping([("name", string(WAIT_VAR)), ("value", string(wait))]));
    }
    c.insert("command".to_string(), strings(&[&s.shim_path, "run"]));
    c.shift_remove("args");
    c.insert("env".to_string(), Value::Array(new_env));
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
                c.insert("volumeMounts".to_string(), Value::Array(added));
            }
        }
    }
    Vec::new()
}

/// The kubelet expands `$(VAR)` in env values and turns `$$` into `$`:
/// doubling every `$` is its exact inverse, so envshim reads the text as written.
pub fn double_dollars(text: &str) -> String {
    text.replace('$', "$$")
}

/// The `envshim` volume and the `envshim-install` initContainer, each first
/// in its list, unless the pod has them already.
fn add_installer(spec: &mut Mapping, image: &str, s: &Settings) {
    let named = |list: &Sequence, name: &str| list.iter().any(|v| v.get("name").and_then(Value::as_str) == Some(name));
    let volume = mapping([("name", string(SHIM_VOLUME)), ("emptyDir", mapping([("sizeLimit", string("4Mi"))]))]);
    let installer = mapping([
        ("name", string(INSTALLER)),
        ("image", string(image)),
        ("command", strings(&["/envshim", "install", DEFAULT_SHIM_PATH])),
        ("volumeMounts", Value::Array(vec![mapping([("name", string(SHIM_VOLUME)), ("mountPath", string(SHIM_DIR))])])),
        // Requests and limits, small (it copies one file): a LimitRange, a
        // ResourceQuota or a policy engine requiring them admits the pod.
        ("resources", {
            let both = || mapping([("cpu", string(&s.installer_cpu)), ("memory", string(&s.installer_memory))]);
            mapping([("requests", both()), ("limits", both())])
        }),
        (
            "securityContext",
            mapping([
                ("allowPrivilegeEscalation", Value::Bool(false)),
                ("readOnlyRootFilesystem", Value::Bool(true)),
                ("runAsNonRoot", Value::Bool(true)),
                ("runAsUser", Value::Number(INSTALLER_UID.into())),
                ("runAsGroup", Value::Number(INSTALLER_UID.into())),
                ("capabilities", mapping([("drop", strings(&["ALL"]))])),
                ("seccompProfile", mapping([("type", string("RuntimeDefault"))])),
            ]),
        ),
    ]);
    for (list, item, name) in [("volumes", volume, SHIM_VOLUME), ("initContainers", installer, INSTALLER)] {
        match spec.get_mut(list).and_then(Value::as_array_mut) {
            Some(items) if named(items, name) => {}
            Some(items) => items.insert(0, item),
            None => {
                spec.insert(list.to_string(), Value::Array(vec![item]));
            }
        }
    }
}
