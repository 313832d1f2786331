//! The volumes a container's `fileKeyRef` entries name, with where the
//! container sees each (its own mount, or one the conversion adds); the
//! entries themselves are checked before (`validate.rs`).

use std::collections::{HashMap, HashSet};

use envshim::converter::Error;
use serde_json::Value;

use super::{env_entry, problem, Mapping, VOLUMES_DIR};

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
            problems.push(problem(
                env_entry(first + i).key("valueFrom").key("fileKeyRef").key("volumeName"),
                format!("the volume \"{}\" is not among the pod's volumes", envshim::converter::escape(volume.as_bytes())),
            ));
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
