//! What the converter moves out of the API server's sight (a converted
//! container's `env` entries, its `command` and `args`, into envshim's
//! manifest) checked as the API server would check it, so that a pod it
//! would refuse natively is refused at convert time (78), naming the field,
//! never converted into one that crash-loops at its start. The rules are a
//! table (`validate/rules.rs`), specified row by row by `validate/cases.jsonl`.
//! No message holds a value of the input.

use std::collections::HashSet;

use envshim::converter::{Error, JsonPath, Segment};
use serde_json::{Map, Value};

use crate::convert::problem;

mod rules;
#[cfg(test)]
mod tests;

/// A rule of the table: the field (`env[].valueFrom.fileKeyRef.path`), its
/// check, and what a refusal says.
pub(crate) struct Rule {
    field: &'static str,
    check: Check,
    what: &'static str,
}

/// What a field must be. A check of a text refuses a field that is there and
/// is not a string ("expected a string"); one that is absent passes, but
/// for `Required` and `DnsSubdomain`.
#[derive(Clone, Copy)]
pub(crate) enum Check {
    /// A mapping, if there.
    Mapping,
    /// A list, if there.
    List,
    /// A string, if there.
    Text,
    /// There, a string, not empty.
    Required,
    /// Printable ASCII except `=` (`IsRelaxedEnvVarName`), if not empty.
    EnvName,
    /// At most 128 bytes.
    KeyLength,
    /// A DNS-1123 label, if not empty.
    DnsLabel,
    /// A DNS-1123 subdomain; absent or empty fails (`ValidateNameFunc(ValidateSecretName)`).
    DnsSubdomain,
    /// `IsConfigMapKey`, if not empty.
    ConfigMapKey,
    /// Not starting with `/`.
    Relative,
    /// No `..` element (`validatePathNoBacksteps`).
    NoBacksteps,
    /// The name of one of the pod's volumes, if not empty.
    PodVolume,
    /// A boolean, if there.
    Bool,
    /// Exactly one of the sources (`valueFrom`).
    OneSource,
    /// Not beside a `value` that is not empty.
    NotBesideValue,
    /// Not there at all.
    Absent,
}

const SOURCES: [&str; 5] = ["fileKeyRef", "configMapKeyRef", "secretKeyRef", "fieldRef", "resourceFieldRef"];

/// The problems of a converted container, each at its path relative to the
/// container (`env[3].name`); `volumes`: the pod's volumes' names.
pub(crate) fn converted(c: &Map<String, Value>, volumes: &HashSet<String>) -> Vec<Error> {
    apply(rules::CONVERTED, c, volumes)
}

/// The problems any container of a pod has (converted or not), as [`converted`]'s.
pub(crate) fn every(c: &Map<String, Value>) -> Vec<Error> {
    apply(rules::EVERY, c, &HashSet::new())
}

fn apply(rules: &[Rule], c: &Map<String, Value>, volumes: &HashSet<String>) -> Vec<Error> {
    let mut problems = Vec::new();
    // The container's own fields, then each list's items, rule by rule.
    let mut refused: Vec<JsonPath> = Vec::new();
    for rule in rules.iter().filter(|r| !r.field.contains("[]")) {
        let path = JsonPath::default().key(rule.field);
        check(rule, c.get(rule.field).filter(|v| !v.is_null()), Some(c), volumes, path, &mut refused, &mut problems);
    }
    let mut lists: Vec<&str> = Vec::new();
    for rule in rules {
        if let Some((list, _)) = rule.field.split_once("[]") {
            if !lists.contains(&list) {
                lists.push(list);
            }
        }
    }
    for list in lists {
        // A list refused as a whole (`args: x`) has no items to check.
        let Some(items) = c.get(list).and_then(Value::as_array).filter(|_| !refused.iter().any(|r| r.0 == [Segment::Key(list.into())])) else { continue };
        for (i, item) in items.iter().enumerate() {
            let mut refused = Vec::new();
            for rule in rules {
                let Some(below) = rule.field.strip_prefix(list).and_then(|f| f.strip_prefix("[]")) else { continue };
                let mut path = JsonPath::item(list, i);
                let (mut parent, mut node) = (None, Some(item));
                // The parent's fields down to the rule's: each a mapping, or the rule does not apply.
                for key in below.split('.').filter(|k| !k.is_empty()) {
                    let Some(map) = node.and_then(Value::as_object) else {
                        node = None;
                        parent = None;
                        break;
                    };
                    parent = Some(map);
                    node = map.get(key).filter(|v| !v.is_null());
                    path = path.key(key);
                }
                if below.is_empty() || parent.is_some() {
                    check(rule, node, parent, volumes, path, &mut refused, &mut problems);
                }
            }
        }
    }
    problems
}

/// Applies `rule` to `v` (None: absent) at `path`, unless `path` or a field
/// above it was refused already; a refusal joins `refused` and `problems`.
fn check(
    rule: &Rule,
    v: Option<&Value>,
    parent: Option<&Map<String, Value>>,
    volumes: &HashSet<String>,
    path: JsonPath,
    refused: &mut Vec<JsonPath>,
    problems: &mut Vec<Error>,
) {
    if refused.iter().any(|r| path.0.starts_with(&r.0)) {
        return;
    }
    if let Some(what) = fails(rule, v, parent, volumes) {
        problems.push(problem(path.clone(), what));
        refused.push(path);
    }
}

/// Why `v` fails the rule, if it does.
fn fails(rule: &Rule, v: Option<&Value>, parent: Option<&Map<String, Value>>, volumes: &HashSet<String>) -> Option<String> {
    let what = || rule.what.to_string();
    let text = match (rule.check, v) {
        (Check::Mapping, Some(v)) => return (!v.is_object()).then(|| format!("{}, found {}", rule.what, kind(v))),
        (Check::List, Some(v)) => return (!v.is_array()).then(|| format!("{}, found {}", rule.what, kind(v))),
        (Check::Bool, Some(v)) => return (!v.is_boolean()).then(|| format!("{}, found {}", rule.what, kind(v))),
        (Check::Absent, Some(_)) => return Some(what()),
        (Check::OneSource, Some(v)) => {
            let given = SOURCES.iter().filter(|s| v.get(**s).is_some_and(|x| !x.is_null())).count();
            return (given != 1).then(what);
        }
        (Check::NotBesideValue, Some(_)) => {
            let value = parent.and_then(|p| p.get("value")).and_then(Value::as_str);
            return value.is_some_and(|v| !v.is_empty()).then(what);
        }
        (Check::Mapping | Check::List | Check::Bool | Check::Absent | Check::OneSource | Check::NotBesideValue, None) => return None,
        (Check::Required, None) => return Some(what()),
        (Check::DnsSubdomain, None) => "",
        (_, None) => return None,
        (_, Some(Value::String(s))) => s.as_str(),
        (_, Some(v)) => return Some(format!("expected a string, found {}", kind(v))),
    };
    let ok = match rule.check {
        Check::Required => !text.is_empty(),
        Check::Text => true,
        Check::EnvName => text.is_empty() || envshim::converter::is_relaxed(text.as_bytes()),
        Check::KeyLength => text.len() <= envshim::converter::MAX_NAME_BYTES,
        Check::DnsLabel => text.is_empty() || dns_label(text),
        Check::DnsSubdomain => dns_subdomain(text),
        Check::ConfigMapKey => text.is_empty() || config_map_key(text),
        Check::Relative => !text.starts_with('/'),
        Check::NoBacksteps => !text.split('/').any(|e| e == ".."),
        Check::PodVolume => text.is_empty() || volumes.contains(text),
        _ => true,
    };
    match rule.check {
        // A DNS label (checked before): the name says which volume.
        Check::PodVolume if !ok => Some(format!("\"{text}\" {}", rule.what)),
        _ => (!ok).then(what),
    }
}

/// What a JSON value is, for "expected ..., found ...".
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`: a label of a DNS name.
fn label(l: &str) -> bool {
    let b = l.as_bytes();
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(end) && b.last().is_some_and(end) && b.iter().all(|c| end(c) || *c == b'-')
}

/// A label of at most 63 bytes (`IsDNS1123Label`).
fn dns_label(s: &str) -> bool {
    s.len() <= 63 && label(s)
}

/// Labels joined by `.`, at most 253 bytes in all (`IsDNS1123Subdomain`: no limit a label).
fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(label)
}

/// `[-._a-zA-Z0-9]+`, at most 253 bytes, not `.`, `..` or starting with `..` (`IsConfigMapKey`).
fn config_map_key(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"-._".contains(&c)) && s != "." && !s.starts_with("..")
}
