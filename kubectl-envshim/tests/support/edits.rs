//! The hand edits of a converted container that `convert`, `convert
//! --check`, `manifest` and `unconvert` must refuse (docs/reference.md §10,
//! "Hand edits"), for the property tests on generated pods.

use serde_json::{json, Value};

use super::SENTINEL;

/// Each kind of hand edit that applies to the converted container `c`:
/// (what, the container edited). The sentinel is in what is added.
pub fn hand_edits(c: &Value) -> Vec<(&'static str, Value)> {
    let env = c["env"].as_array().unwrap();
    let name = |i: usize| env[i]["name"].as_str().unwrap_or("");
    let at = (0..env.len()).find(|&i| name(i) == "ENVSHIM_MANIFEST_JSON").unwrap();
    let manifest: Value = serde_json::from_str(&env[at]["value"].as_str().unwrap().replace("$$", "$")).unwrap();
    let kept = manifest["env"].as_array().unwrap().iter().filter(|e| e["valueFrom"].get("fileKeyRef").is_none()).count();
    let seen = (0..at).find(|&i| name(i) == "ENVSHIM_SEEN_0");
    // The last of the container's own entries before the manifest: one of envshim's part when the manifest keeps any.
    let last_own = (0..at).rev().find(|&i| !name(i).starts_with("ENVSHIM_")).filter(|_| kept > 0);
    let edit = |f: &dyn Fn(&mut Vec<Value>)| {
        let mut c = c.clone();
        f(c["env"].as_array_mut().unwrap());
        c
    };
    let mut edits = vec![
        ("an entry added", edit(&|env| env.push(json!({"name": "DB_ADDR", "value": SENTINEL})))),
        (
            "a second manifest",
            edit(&|env| env.insert(at + 1, json!({"name": "ENVSHIM_MANIFEST_JSON", "value": format!("{{\"env\":[],\"command\":[\"{SENTINEL}\"]}}")}))),
        ),
        ("an ENVSHIM_* entry the converter did not write", edit(&|env| env.insert(at + 1, json!({"name": "ENVSHIM_ENV_FILE", "value": SENTINEL})))),
    ];
    let mut word = c.clone();
    word["command"].as_array_mut().unwrap().push(json!(format!("--env-file={SENTINEL}")));
    edits.push(("a word after run", word));
    if let Some(i) = last_own {
        edits.push(("an entry changed", edit(&|env| env[i] = json!({"name": env[i]["name"], "value": format!("{SENTINEL}-edited")}))));
        // Removed: where the list was split is known (the kubelet's view recorded there).
        if seen.is_some_and(|s| s < i) {
            edits.push(("an entry removed", edit(&|env| drop(env.remove(i)))));
        }
    }
    edits
}
