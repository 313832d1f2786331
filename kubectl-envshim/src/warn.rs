//! What a converted document's user needs to know: which objects and
//! containers changed (`--check` lists them), and every place of the pod
//! spec that refers to a variable the container now gets only from envshim
//! (an exec probe, a lifecycle hook): those are run by the
//! kubelet or the runtime, outside envshim, and see the text unexpanded.
//! Names only: never a value.

use std::collections::HashSet;
use std::fmt::Write;

use envshim::converter::escape;
use serde_json::Value;

/// One object (the document, or an item of a `List`) the conversion changed.
pub struct Note {
    /// `Kind/name`.
    pub object: String,
    /// The containers converted.
    pub containers: Vec<String>,
    /// Each as `PATH: what`.
    pub warnings: Vec<String>,
    /// A container of it was converted before: converted again, from the original it carries.
    pub again: bool,
}

/// The objects of `before` that differ in `after` (the same document converted).
pub fn notes(before: &Value, after: &Value) -> Vec<Note> {
    if before == after {
        return Vec::new();
    }
    fn items(v: &Value) -> Option<&Vec<Value>> {
        (v.get("kind").and_then(Value::as_str) == Some("List")).then(|| v.get("items").and_then(Value::as_array)).flatten()
    }
    match (items(before), items(after)) {
        (Some(b), Some(a)) if a.len() == b.len() => {
            b.iter().zip(a).enumerate().filter(|(_, (b, a))| b != a).map(|(i, (b, _))| note(b, &format!("items[{i}]"))).collect()
        }
        _ => vec![note(before, "")],
    }
}

fn note(object: &Value, at: &str) -> Note {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    let name = object.get("metadata").and_then(|m| text(m.get("name")).or_else(|| text(m.get("generateName"))));
    let mut n = Note {
        object: format!(
            "{}/{}",
            escape(text(object.get("kind")).unwrap_or_default().as_bytes()),
            name.map_or_else(|| "(no name)".into(), |n| escape(n.as_bytes()))
        ),
        containers: Vec::new(),
        warnings: Vec::new(),
        again: false,
    };
    walk(object, &mut at.to_string(), &mut n);
    n
}

/// Every container with a `fileKeyRef` in the pod specs under `v`. `at`
/// is the path to `v`, grown and cut back as the walk goes (a new string
/// at every node made it quadratic under a long key).
fn walk(v: &Value, at: &mut String, n: &mut Note) {
    let len = at.len();
    match v {
        Value::Object(fields) => {
            for (key, value) in fields {
                if len > 0 {
                    at.push('.');
                }
                at.push_str(&escape(key.as_bytes()));
                match value.as_array() {
                    Some(cs) if key == "containers" || key == "initContainers" => {
                        let here = at.len();
                        for (i, c) in cs.iter().enumerate() {
                            let _ = write!(at, "[{i}]");
                            container(c, at, n);
                            at.truncate(here);
                        }
                    }
                    _ => walk(value, at, n),
                }
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let _ = write!(at, "[{i}]");
                walk(item, at, n);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

fn container(c: &Value, at: &str, n: &mut Note) {
    // Converted before: what it was written as (converting again starts from it).
    let original = c.as_object().filter(|_| !crate::unconvert::wired_by_hand(c)).and_then(|m| crate::unconvert::original(m).ok().flatten()).map(Value::Object);
    n.again |= original.is_some();
    let c = original.as_ref().unwrap_or(c);
    let env = c.get("env").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let file_key_ref = |e: &Value| e.get("valueFrom").and_then(|v| v.get("fileKeyRef")).is_some_and(|f| !f.is_null());
    if !env.iter().any(file_key_ref) {
        return;
    }
    n.containers.push(crate::convert::container_name(c));
    // The names the kubelet no longer resolves: the fileKeyRef variables, and
    // the literal values that refer to one (the kubelet leaves `$(TOKEN)` as text).
    let mut only_envshim: HashSet<&str> = HashSet::new();
    for e in env {
        let Some(name) = e.get("name").and_then(Value::as_str) else { continue };
        let refers = e.get("value").and_then(Value::as_str).is_some_and(|v| !refers_to(v, &only_envshim).is_empty());
        if file_key_ref(e) || refers {
            only_envshim.insert(name);
        }
    }
    let mut places: Vec<(String, &Value)> = Vec::new();
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        places.push((format!("{probe}.exec.command"), &c[probe]["exec"]["command"]));
    }
    for hook in ["postStart", "preStop"] {
        places.push((format!("lifecycle.{hook}.exec.command"), &c["lifecycle"][hook]["exec"]["command"]));
    }
    for (path, value) in places {
        let words: Vec<&str> = match value {
            Value::String(s) => vec![s.as_str()],
            Value::Array(words) => words.iter().filter_map(Value::as_str).collect(),
            _ => continue,
        };
        let (mut names, mut known): (Vec<&str>, HashSet<&str>) = (Vec::new(), HashSet::new());
        for w in words {
            for name in refers_to(w, &only_envshim) {
                if known.insert(name) {
                    names.push(name);
                }
            }
        }
        if !names.is_empty() {
            n.warnings.push(format!(
                "{}.{path}: refers to {}, which container {} gets only from envshim: it runs outside envshim, without it",
                at,
                names.iter().map(|n| escape(n.as_bytes())).collect::<Vec<_>>().join(", "),
                n.containers.last().map_or("", String::as_str)
            ));
        }
    }
}

/// The names of `names` that `text` refers to: `$(NAME)` (the kubelet's
/// expansion), `${NAME}` or `$NAME` (a shell's, as in `sh -c`). Linear in
/// `text`: the end of a `$(` or `${` name is searched for once and
/// remembered (searched again from each `$`, 2 MB of `$(` took minutes).
fn refers_to<'n>(text: &str, names: &HashSet<&'n str>) -> Vec<&'n str> {
    let (mut found, mut known) = (Vec::new(), HashSet::new());
    let bytes = text.as_bytes();
    // The next `)`, and the next end of a `${` name, at or after a position (None: not searched yet).
    let (mut paren, mut brace): (Option<Option<usize>>, Option<Option<usize>>) = (None, None);
    let next = |cache: &mut Option<Option<usize>>, from: usize, ends: &[u8]| -> Option<usize> {
        match *cache {
            Some(Some(c)) if c >= from => Some(c),
            Some(None) => None,
            _ => {
                let c = bytes[from..].iter().position(|b| ends.contains(b)).map(|p| p + from);
                *cache = Some(c);
                c
            }
        }
    };
    let mut i = 0;
    while let Some(d) = bytes[i..].iter().position(|&b| b == b'$').map(|d| d + i) {
        let rest = &text[d + 1..];
        i = d + 1;
        let name = if rest.starts_with('(') {
            next(&mut paren, d + 2, b")").map(|c| &text[d + 2..c])
        } else if rest.starts_with('{') {
            next(&mut brace, d + 2, b"}:-=+?").map(|c| &text[d + 2..c])
        } else if rest.starts_with('$') {
            i += 1; // `$$`: an escaped dollar, no reference
            None
        } else {
            Some(&rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())])
        };
        if let Some(&n) = name.and_then(|name| names.get(name)) {
            if known.insert(n) {
                found.push(n);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::refers_to;

    #[test]
    fn references_as_the_kubelet_and_a_shell_write_them() {
        let names = ["DB_URL", "TOKEN"].into_iter().collect();
        for (text, want) in [
            ("$(DB_URL)", &["DB_URL"][..]),
            ("curl -H \"Authorization: $TOKEN\" $DB_URL/health", &["TOKEN", "DB_URL"]),
            ("${TOKEN:-x} ${DB_URL}", &["TOKEN", "DB_URL"]),
            ("$$(DB_URL) $$TOKEN $TOKENS $(OTHER) $", &[]),
            ("$TOKEN_2 $DB_URL.x", &["DB_URL"]),
        ] {
            assert_eq!(refers_to(text, &names), want, "{text}");
        }
    }
}
