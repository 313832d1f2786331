//! A container's `fileKeyRef` entries: each checked now as the API server
//! and envshim would check it at the start, and the volumes they name, with
//! where the container sees each (its own mount, or one the conversion adds).

use std::collections::{HashMap, HashSet};

use envshim::error::Error;
use serde_json::Value;

use super::{env_entry, problem, Mapping, VOLUMES_DIR};

/// The checks the API server makes of a `fileKeyRef` and envshim makes at
/// the start, made now: (field, why) for each that fails.
pub(super) fn file_key_ref(f: &Value) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    if let Some(path) = f.get("path").and_then(Value::as_str) {
        if path.starts_with('/') {
            problems.push(("path", "is absolute: it must be relative to the volume".to_string()));
        } else if let Err(why) = envshim::sources::check_path(path) {
            problems.push(("path", why.to_string()));
        }
    }
    if let Some(key) = f.get("key").and_then(Value::as_str) {
        if key.len() > envshim::limits::MAX_NAME_BYTES || !envshim::names::NameRule::Relaxed.accepts(key.as_bytes()) {
            problems.push((
                "key",
                format!(
                    "\"{}\" is not a valid variable name (printable ASCII except '=', at most {} bytes)",
                    envshim::error::escape(key.as_bytes()),
                    envshim::limits::MAX_NAME_BYTES
                ),
            ));
        }
    }
    problems
}

/// The volumes the `fileKeyRef` entries of `rest` name, in order, each with
/// where this container sees it: its own mount of the volume root, else one
/// added (true).
pub(super) type Mounts = Vec<(String, String, bool)>;

pub(super) fn volume_mounts(c: &Mapping, rest: &[Value], first: usize, volumes: &HashSet<String>) -> Result<Mounts, Vec<Error>> {
    // The container's mounts of whole volumes, the first of each.
    let mut own: HashMap<&str, &str> = HashMap::new();
    for m in c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten() {
        if ["subPath", "subPathExpr"].iter().all(|k| m.get(*k).and_then(Value::as_str).unwrap_or("").is_empty()) {
            if let (Some(name), Some(path)) = (m.get("name").and_then(Value::as_str), m.get("mountPath").and_then(Value::as_str)) {
                own.entry(name).or_insert(path);
            }
        }
    }
    let (mut mounts, mut problems, mut done): (Mounts, _, HashSet<&str>) = (Vec::new(), Vec::new(), HashSet::new());
    for (i, e) in rest.iter().enumerate() {
        let Some(volume) = e.get("valueFrom").and_then(|v| v.get("fileKeyRef")).and_then(|f| f.get("volumeName")).and_then(Value::as_str) else {
            continue; // not a fileKeyRef, or one without a volumeName: the manifest check says so
        };
        if !done.insert(volume) {
            continue;
        }
        if !volumes.contains(volume) {
            problems.push(problem(env_entry(first + i).key("valueFrom").key("fileKeyRef").key("volumeName"), format!("the volume \"{}\" is not among the pod's volumes", envshim::error::escape(volume.as_bytes()))));
            continue;
        }
        match own.get(volume) {
            Some(path) => mounts.push((volume.to_string(), path.to_string(), false)),
            None => mounts.push((volume.to_string(), format!("{VOLUMES_DIR}/{volume}"), true)),
        }
    }
    if problems.is_empty() {
        Ok(mounts)
    } else {
        Err(problems)
    }
}
