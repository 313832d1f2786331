//! What a converted container carries for envshim beside its manifest: the
//! copies of the platform's values after the first `fileKeyRef`, and, for an
//! engine that does not expand `$(VAR)` in `env` (`podman kube play`,
//! `docker run` given the converted env), the container's own entries before
//! it, which envshim then runs as the kubelet would (docs/reference.md,
//! "Under an engine that does not expand").

use std::collections::HashMap;

use serde_json::Value;

use super::{mapping, platform_source, string, Mapping, VALUE_PREFIX};

/// `converted`'s `before`, `values` and `envFrom` (the shim's `Converted`, src/manifest.rs):
/// each entry of `env[..first]` as a letter (`l` a literal, `p` a reference
/// the platform resolves, `o` an optional one) and its name; the literal
/// values the engine's variables cannot hold (a later entry that the engine
/// sets too sets the name again), in order; and whether the container has `envFrom`.
pub(super) fn own_entries(env: &[Value], first: usize, c: &Mapping) -> Mapping {
    let name = |e: &Value| e.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    // Each name's last entry the engine sets (the fileKeyRef entries leave
    // the list): found in one pass, not a scan an entry.
    let last: HashMap<String, usize> = env.iter().enumerate().filter(|(_, e)| !super::is_file_key_ref(e)).map(|(i, e)| (name(e), i)).collect();
    let (mut before, mut values) = (Vec::new(), Vec::new());
    for (i, e) in env[..first].iter().enumerate() {
        let kind = match platform_source(e) {
            Some(source) if source.get("optional").and_then(Value::as_bool) == Some(true) => 'o',
            Some(_) => 'p',
            None => 'l',
        };
        let n = name(e);
        if kind == 'l' && last.get(&n).is_some_and(|&l| l > i) {
            values.push(string(e.get("value").and_then(Value::as_str).unwrap_or("")));
        }
        before.push(Value::String(format!("{kind}{n}")));
    }
    let env_from = c.get("envFrom").and_then(Value::as_array).is_some_and(|l| !l.is_empty());
    Mapping::from_iter([
        ("before".to_string(), Value::Array(before)),
        ("values".to_string(), Value::Array(values)),
        ("envFrom".to_string(), Value::Bool(env_from)),
    ])
}

/// A platform-resolved entry `i` of the manifest's list, carried twice under
/// private names for envshim: `_A` and `_B`. An optional one is first set to a
/// different literal each, so one that finds nothing leaves them different
/// (and a ConfigMap key of the same name, imported by `envFrom`, cannot pass
/// for the value: the entries set both after it).
pub(crate) fn copies(i: usize, entry: &Value, source: &Value) -> Vec<Value> {
    let optional = source.get("optional").and_then(Value::as_bool) == Some(true);
    let mut out = Vec::new();
    for (side, unset) in [("A", "0"), ("B", "1")] {
        let name = Value::String(format!("{VALUE_PREFIX}{i}_{side}"));
        if optional {
            out.push(mapping([("name", name.clone()), ("value", string(unset))]));
        }
        out.push(mapping([("name", name), ("valueFrom", entry["valueFrom"].clone())]));
    }
    out
}

/// The kubelet expands `$(VAR)` in env values and turns `$$` into `$`:
/// doubling every `$` is its exact inverse, so envshim reads the text as written.
pub fn double_dollars(text: &str) -> String {
    text.replace('$', "$$")
}
