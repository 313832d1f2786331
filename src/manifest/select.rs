//! A Pod, a workload or a `List` given as the manifest (SPEC §3): refused
//! with what to do, or with `--container NAME` that container of it, read as
//! a container spec. Only a manifest that is not a container spec, or a run
//! with `--container`, comes here: the document is valid JSON (it was read
//! once), and is walked again for every `containers` and `initContainers`
//! array, at any depth (a Pod's `spec`, a workload's `spec.template.spec`,
//! a CronJob's `spec.jobTemplate.spec.template.spec`, a `List`'s items),
//! keeping each container's text, so the one chosen is read by the same
//! reader, its strings still slices of the input. One walk of the tree,
//! whatever the kind: a few KB less code than following each kind's path.

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

/// What the walk found: the containers, the document's own `kind` and
/// `name`, and whether it is a whole object: it has a key of one at the top
/// (`kind`, `apiVersion`, `spec`, `items`), which a container has not.
#[derive(Default)]
struct Walk<'a> {
    found: Vec<Found<'a>>,
    kind: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    whole: bool,
}

#[cold]
#[inline(never)]
pub(super) fn select<'a>(
    bytes: &'a [u8],
    shown: &str,
    container: Option<&[u8]>,
    manifest: Manifest<'a>,
    errors: Vec<Error>,
) -> Result<Manifest<'a>, Vec<Error>> {
    let name = display(shown);
    let mut w = Walk::default();
    // The document was read once: the walk cannot fail.
    let _ = read(bytes, |r| node(r, bytes, &mut String::new(), &mut w));
    let whole = w.whole;
    let fail = |message: String| {
        let mut e = Error::config(message);
        e.at = Some(Box::new(crate::error::At { path: Some(String::new()), file: (!shown.is_empty()).then(|| shown.to_string()), line: 0 }));
        Err(vec![e])
    };
    let Some(wanted) = container else {
        if !whole {
            return if errors.is_empty() { Ok(manifest) } else { Err(name_errors(errors, shown, "")) };
        }
        return fail(format!(
            "{name} is {}, not a container spec: pass one container's spec (kubectl get pod POD -o jsonpath='{{.spec.containers[0]}}'), or choose one with --container NAME ({})",
            kind(&w),
            names(&w.found)
        ));
    };
    let wanted_shown = escape(wanted);
    if !whole {
        // A container spec, with --container: it must be that container.
        return match &w.name {
            Some(own) if own.as_bytes() == wanted => {
                if errors.is_empty() {
                    Ok(manifest)
                } else {
                    Err(name_errors(errors, shown, ""))
                }
            }
            Some(own) => fail(format!("--container {wanted_shown}: {name} is a single container spec, named {}", escape(own.as_bytes()))),
            None => fail(format!("--container {wanted_shown}: {name} is a single container spec without a name")),
        };
    }
    let mut chosen = w.found.iter().filter(|f| f.name.as_deref().is_some_and(|n| n.as_bytes() == wanted));
    let Some(one) = chosen.next() else {
        return fail(format!("--container {wanted_shown}: no such container in {name}, {} ({})", kind(&w), names(&w.found)));
    };
    if let Some(two) = chosen.next() {
        return fail(format!("--container {wanted_shown}: two containers of {name} have that name: {} and {}", one.path, two.path));
    }
    let mut errors = Vec::new();
    // The container's text is a valid JSON value (read once already).
    let m = read(one.text, |r| r.manifest(&mut errors)).unwrap_or_default();
    if errors.is_empty() {
        Ok(m)
    } else {
        Err(name_errors(errors, shown, &format!("{}.", one.path)))
    }
}

/// `a Pod`, `an Ingress`, `a whole object` (no `kind`).
fn kind(w: &Walk) -> String {
    let kind = w.kind.as_deref().map_or_else(|| "whole object".into(), |k| escape(k.as_bytes()));
    format!("{} {kind}", if kind.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" })
}

/// `it has app, side, init`: the first names, `containers` before `initContainers`.
fn names(found: &[Found]) -> String {
    let mut list: Vec<String> = Vec::new();
    for init in [false, true] {
        let of_kind = found.iter().filter(|f| f.path.contains(".initContainers[") == init);
        list.extend(of_kind.map(|f| f.name.as_deref().map_or_else(|| "(no name)".into(), |n| escape(n.as_bytes()))));
    }
    let more = list.len().saturating_sub(MAX_NAMES_SHOWN);
    list.truncate(MAX_NAMES_SHOWN);
    if more > 0 {
        list.push(format!("and {more} more"));
    }
    if list.is_empty() {
        "it has none".to_string()
    } else {
        format!("it has {}", list.join(", "))
    }
}

/// Walks the value at the reader (its JSON path in `path`), recording each
/// item of a `containers` or `initContainers` array of objects, and the
/// top-level `kind` and `name`.
fn node<'a>(r: &mut Reader<'a>, bytes: &'a [u8], path: &mut String, w: &mut Walk<'a>) -> Option<()> {
    r.skip_ws();
    match r.peek()? {
        b'{' => r.fields(|r, key| {
            let top = path.is_empty();
            let at = path.len();
            if !top {
                path.push('.');
            }
            path.push_str(&escape(key.as_bytes()));
            let list = key == "containers" || key == "initContainers";
            w.whole |= top && matches!(&*key, "kind" | "apiVersion" | "spec" | "items");
            let done = if top && (key == "kind" || key == "name") && r.peek() == Some(b'"') {
                let text = r.string()?;
                *(if key == "kind" { &mut w.kind } else { &mut w.name }) = Some(text);
                Some(())
            } else if list && r.peek() == Some(b'[') {
                r.items(|r, i| {
                    let (start, at) = (r.i, path.len());
                    path.push_str(&format!("[{i}]"));
                    let mut name = None;
                    if r.peek() == Some(b'{') {
                        r.fields(|r, k| match r.peek() {
                            Some(b'"') if k == "name" => r.string().map(|n| name = Some(n)),
                            _ => r.skip(),
                        })?;
                        w.found.push(Found { path: path.clone(), name, text: &bytes[start..r.i] });
                    } else {
                        r.skip()?;
                    }
                    path.truncate(at);
                    Some(())
                })
            } else {
                node(r, bytes, path, w)
            };
            path.truncate(at);
            done
        }),
        b'[' => r.items(|r, i| {
            let at = path.len();
            path.push_str(&format!("[{i}]"));
            node(r, bytes, path, w)?;
            path.truncate(at);
            Some(())
        }),
        _ => r.skip(),
    }
}
