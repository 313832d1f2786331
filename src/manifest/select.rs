//! A Pod, a workload or a `List` given as the manifest (SPEC §3): refused
//! with what to do, or with `--container NAME` that container of it, read as
//! a container spec. Only a manifest that is not a container spec, or a run
//! with `--container`, comes here: the document is valid JSON (it was read
//! once), and is walked again as byte ranges of its values, so the container
//! chosen is read by the same reader, its strings still slices of the input.

use std::borrow::Cow;

use super::{display, name_errors, read, Manifest, Reader};
use crate::error::{escape, Error};

/// At most this many container names are listed in a message.
const MAX_NAMES_SHOWN: usize = 10;

/// A container found: its JSON path (`spec.containers[0]`), its name, its text.
struct Found<'a> {
    path: String,
    name: Option<Cow<'a, str>>,
    text: &'a [u8],
}

#[cold]
#[inline(never)]
pub(super) fn select<'a>(
    bytes: &'a [u8],
    shown: &str,
    container: Option<&[u8]>,
    whole: bool,
    manifest: Manifest<'a>,
    errors: Vec<Error>,
) -> Result<Manifest<'a>, Vec<Error>> {
    let name = display(shown);
    let top = fields(bytes);
    let fail = |message: String| {
        let mut e = Error::config(message);
        e.path = Some(String::new());
        e.file = (!shown.is_empty()).then(|| shown.to_string());
        Err(vec![e])
    };
    let plain = |errors: Vec<Error>| if errors.is_empty() { Ok(manifest) } else { Err(name_errors(errors, shown, "")) };
    if !whole {
        // A container spec, with --container: it must be that container.
        let Some(wanted) = container else { return plain(errors) };
        let own = top.iter().find(|(k, _)| k == "name").and_then(|(_, v)| text(v));
        return match own {
            Some(own) if own.as_bytes() == wanted => plain(errors),
            Some(own) => fail(format!(
                "--container {}: {name} is a single container spec, named {}",
                escape(wanted),
                escape(own.as_bytes())
            )),
            None => fail(format!("--container {}: {name} is a single container spec without a name", escape(wanted))),
        };
    }
    let kind = top.iter().find(|(k, _)| k == "kind").and_then(|(_, v)| text(v)).map_or_else(|| "whole object".into(), |k| escape(k.as_bytes()));
    let kind = format!("{} {kind}", if kind.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" });
    let mut found = Vec::new();
    containers(&top, "", &mut found);
    let names = || {
        let mut list: Vec<String> = found.iter().take(MAX_NAMES_SHOWN).map(|f| f.name.as_deref().map_or_else(|| "(no name)".into(), |n| escape(n.as_bytes()))).collect();
        if found.len() > MAX_NAMES_SHOWN {
            list.push(format!("and {} more", found.len() - MAX_NAMES_SHOWN));
        }
        if list.is_empty() {
            "it has none".to_string()
        } else {
            format!("it has {}", list.join(", "))
        }
    };
    let Some(wanted) = container else {
        return fail(format!(
            "{name} is {kind}, not a container spec: pass one container's spec (kubectl get pod POD -o jsonpath='{{.spec.containers[0]}}'), or choose one with --container NAME ({})",
            names()
        ));
    };
    let mut chosen = found.iter().filter(|f| f.name.as_deref().is_some_and(|n| n.as_bytes() == wanted));
    let Some(one) = chosen.next() else {
        return fail(format!("--container {}: no such container in {name}, {kind} ({})", escape(wanted), names()));
    };
    if let Some(two) = chosen.next() {
        return fail(format!("--container {}: two containers of {name} have that name: {} and {}", escape(wanted), one.path, two.path));
    }
    let prefix = format!("{}.", one.path);
    let mut errors = Vec::new();
    let mut inner_whole = false;
    // The container's text is a valid JSON value: read once already.
    let m = read(one.text, |r| r.manifest(&mut errors, &mut inner_whole)).map_err(|_| {
        let mut e = Error::config(format!("{name}: {}: cannot be read", one.path));
        e.path = Some(one.path.clone());
        vec![e]
    })?;
    if errors.is_empty() {
        Ok(m)
    } else {
        Err(name_errors(errors, shown, &prefix))
    }
}

/// The containers of a document (its `fields`), at `at` (its JSON path and a
/// dot, or ""): a `List`'s items, each in turn; else the Pod spec at the
/// first of the places the workloads keep it, its `containers` then its
/// `initContainers`.
fn containers<'a>(doc: &[(Cow<'a, str>, &'a [u8])], at: &str, found: &mut Vec<Found<'a>>) {
    let get = |fs: &[(Cow<'a, str>, &'a [u8])], key: &str| fs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v);
    if let Some(items) = get(doc, "items") {
        for (i, item) in elements(items).into_iter().enumerate() {
            containers(&fields(item), &format!("{at}items[{i}]."), found);
        }
        return;
    }
    // CronJob; Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job; PodTemplate; Pod.
    const PLACES: [&[&str]; 4] = [&["spec", "jobTemplate", "spec", "template", "spec"], &["spec", "template", "spec"], &["template", "spec"], &["spec"]];
    for place in PLACES {
        let mut spec = doc.to_vec();
        let mut ok = true;
        for key in place {
            match get(&spec, key) {
                Some(v) => spec = fields(v),
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok || !spec.iter().any(|(k, _)| k == "containers" || k == "initContainers") {
            continue;
        }
        let path = format!("{at}{}", place.join("."));
        for list in ["containers", "initContainers"] {
            let Some(items) = get(&spec, list) else { continue };
            for (i, c) in elements(items).into_iter().enumerate() {
                let name = fields(c).into_iter().rev().find(|(k, _)| k == "name").and_then(|(_, v)| text(v));
                found.push(Found { path: format!("{path}.{list}[{i}]"), name, text: c });
            }
        }
        return;
    }
}

/// The fields of the object `v` (keys and values' text); none if it is not one.
fn fields(v: &[u8]) -> Vec<(Cow<'_, str>, &[u8])> {
    let mut out = Vec::new();
    let _ = walk(v, b'{', |r, key| {
        let start = r.i;
        r.skip()?;
        out.push((key.unwrap_or_default(), &v[start..r.i]));
        Some(())
    });
    out
}

/// The items of the array `v`; none if it is not one.
fn elements(v: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let _ = walk(v, b'[', |r, _| {
        let start = r.i;
        r.skip()?;
        out.push(&v[start..r.i]);
        Some(())
    });
    out
}

/// Reads `v` if it is an object (`{`) or an array (`[`), calling `f` at each
/// value, with its key in an object.
fn walk<'a>(v: &'a [u8], open: u8, mut f: impl FnMut(&mut Reader<'a>, Option<Cow<'a, str>>) -> Option<()>) -> Option<()> {
    read(v, |r| {
        r.skip_ws();
        if r.peek() != Some(open) {
            return r.skip();
        }
        if open == b'{' {
            r.fields(|r, key| f(r, Some(key)))
        } else {
            r.items(|r, _| f(r, None))
        }
    })
    .ok()
}

/// The string `v`, if it is one.
fn text(v: &[u8]) -> Option<Cow<'_, str>> {
    read(v, |r| {
        r.skip_ws();
        if r.peek() == Some(b'"') {
            r.string().map(Some)
        } else {
            r.skip().map(|()| None)
        }
    })
    .ok()
    .flatten()
}
