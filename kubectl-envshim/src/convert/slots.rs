//! `--watch-splay`'s slots (docs/reference.md, "Live update in production"):
//! a pod with an index (a StatefulSet's, an Indexed Job's) acts in its own
//! slot of the splay, replica I at (I mod R)/R of it. The converter writes R
//! (the replicas it saw, unless `--watch-replicas` gives it) and the index,
//! a per-pod value, as a downward-API entry: `ENVSHIM_POD_INDEX`.

use serde_json::Value;

use super::{mapping, string, Mapping};
use crate::settings::Settings;

/// The variable envshim reads the pod's index from (`--pod-index`'s).
pub(crate) const POD_INDEX_VAR: &str = "ENVSHIM_POD_INDEX";
/// A StatefulSet pod's index: a label since Kubernetes 1.28 (KEP-4017; a
/// cluster before gives the entry an empty value, which envshim reads as no
/// index: a random delay, as without).
const STATEFULSET_INDEX: &str = "metadata.labels['apps.kubernetes.io/pod-index']";
/// An Indexed Job pod's index: an annotation since Indexed Jobs (1.21; the
/// label of the same name only since 1.28).
const JOB_INDEX: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";
/// Where the pod's index may come from, as the converter writes it.
pub(crate) const INDEX_FIELDS: [&str; 2] = [STATEFULSET_INDEX, JOB_INDEX];

/// A workload whose pods have an index: how many run at once, where the index is.
#[derive(Clone, Copy)]
pub(crate) struct Indexed {
    /// None: not a count the converter can read (a template's placeholder, 0).
    replicas: Option<u32>,
    field: &'static str,
}

/// What `map` (a node of the walk) says of the pods below it: Some(Some) a
/// workload with an index (a StatefulSet; a Job's spec with `completionMode:
/// Indexed`, in a Job, a CronJob's `jobTemplate` or anywhere), Some(None)
/// another object (its pods have none), None: as above it.
pub(crate) fn of(map: &Mapping) -> Option<Option<Indexed>> {
    let count = |v: Option<&Value>, default: u64| match v {
        None | Some(Value::Null) => u32::try_from(default).ok(),
        Some(v) => v.as_u64().filter(|n| *n > 0).and_then(|n| u32::try_from(n).ok()),
    };
    if map.get("completionMode").and_then(Value::as_str) == Some("Indexed") && map.contains_key("template") {
        // At most `parallelism` at once (1 unless given), never more than `completions`.
        let parallelism = count(map.get("parallelism"), 1);
        let replicas = match map.get("completions") {
            None | Some(Value::Null) => parallelism,
            c => parallelism.zip(count(c, 1)).map(|(p, c)| p.min(c)),
        };
        return Some(Some(Indexed { replicas, field: JOB_INDEX }));
    }
    match map.get("kind").and_then(Value::as_str) {
        Some("StatefulSet") => {
            let spec = map.get("spec").and_then(Value::as_object);
            Some(Some(Indexed { replicas: count(spec.and_then(|s| s.get("replicas")), 1), field: STATEFULSET_INDEX }))
        }
        Some(_) => Some(None),
        None => None,
    }
}

/// The entries a converted container of `workload` gets after its settings:
/// with `--watch-splay`, the replicas (unless given) and the pod's index;
/// none when there is no index or no count of replicas.
pub(crate) fn entries(workload: Option<Indexed>, s: &Settings) -> Vec<Value> {
    let Some(w) = workload.filter(|_| s.splay_slots) else { return Vec::new() };
    let mut entries = Vec::new();
    if !s.replicas_given {
        let Some(r) = w.replicas else { return Vec::new() };
        entries.push(mapping([("name", string("ENVSHIM_WATCH_REPLICAS")), ("value", Value::String(r.to_string()))]));
    }
    entries.push(index_entry(w.field));
    entries
}

/// `ENVSHIM_POD_INDEX` from the downward API's `field`.
pub(crate) fn index_entry(field: &str) -> Value {
    let field_ref = mapping([("apiVersion", string("v1")), ("fieldPath", string(field))]);
    mapping([("name", string(POD_INDEX_VAR)), ("valueFrom", mapping([("fieldRef", field_ref)]))])
}
