//! A Pod, a workload or a `List` given as the manifest (docs/reference.md §3): refused
//! with what to do, or with `--container NAME` that container of it, read as
//! a container spec. Only a document that reads as an empty container spec
//! (a whole object's fields are all unknown at the top level), or a run with
//! `--container`, comes here. The document (valid JSON: it was read once) is
//! read again as a tree ([`Json`], strings borrowed) and walked for every
//! `containers` and `initContainers` array, at any depth: a Pod's `spec`, a
//! workload's `spec.template.spec`, a CronJob's
//! `spec.jobTemplate.spec.template.spec`, a `List`'s items. The container
//! chosen is read by the manifest reader where it is in the document.

use super::reader::reader_at;
use super::{name_errors, read, Json as Value, Manifest};
use crate::error::{escape, Error, ExitCode, JsonPath, Segment};

/// At most this many container names are listed in a message.
const MAX_NAMES_SHOWN: usize = 10;

/// A container found: whether in an `initContainers` array, and its value
/// (its JSON path is made only for a message: a path per container made a
/// document of many containers under a long key take gigabytes).
type Found<'v, 'a> = (bool, &'v Value<'a>);

#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn select<'a>(
    bytes: &'a [u8],
    subject: &str,
    file: Option<&str>,
    container: Option<&[u8]>,
    manifest: Manifest<'a>,
    errors: Vec<Error>,
) -> Result<Manifest<'a>, Vec<Error>> {
    let doc = read(bytes, |r| r.value(true)).unwrap_or(Value::Null);
    // A key only a whole object has at its top, never a container.
    let whole = ["kind", "apiVersion", "spec", "items"].iter().any(|k| get(&doc, k).is_some());
    let plain = |errors: Vec<Error>| if errors.is_empty() { Ok(manifest) } else { Err(name_errors(errors, subject, file, &JsonPath::default())) };
    // A message in one piece (it names the manifest inside), about the whole document.
    let fail = |message: String| Err(vec![Error::in_manifest(ExitCode::Config, "", JsonPath::default(), file, message)]);
    let name_of = |v: &Value| text(v, "name").map(|n| escape(n.as_bytes()));
    let mut found = Vec::new();
    super::containers(&doc, &mut |init, c| found.push((init, c)));
    let names = || listed(&found);
    let kind = kind_of(&doc);
    let Some(wanted) = container else {
        if !whole {
            return plain(errors);
        }
        return fail(format!(
            "{subject} is {kind}, not a container spec: pass one container's spec (kubectl get pod POD -o jsonpath='{{.spec.containers[0]}}'), or choose one with --container NAME ({})",
            names()
        ));
    };
    let wanted_shown = escape(wanted);
    if !whole {
        // A container spec, with --container: it must be that container.
        return match name_of(&doc) {
            Some(own) if own == wanted_shown => plain(errors),
            Some(own) => fail(format!("--container {wanted_shown}: {subject} is a single container spec, named {own}")),
            None => fail(format!("--container {wanted_shown}: {subject} is a single container spec without a name")),
        };
    }
    let mut chosen = found.iter().filter(|(_, c)| text(c, "name").is_some_and(|n| n.as_bytes() == wanted));
    let Some((_, one)) = chosen.next() else {
        let all: Vec<&str> = found.iter().filter_map(|(_, c)| text(c, "name")).collect();
        let hint = crate::suggest::closest(wanted, &all).map_or(String::new(), |n| format!("; did you mean {}?", escape(n.as_bytes())));
        return fail(format!("--container {wanted_shown}: no such container in {subject}, {kind} ({}){hint}", names()));
    };
    let path = path_of(&doc, one);
    if let Some((_, other)) = chosen.next() {
        return fail(format!("--container {wanted_shown}: two containers of {subject} have that name: {path} and {}", path_of(&doc, other)));
    }
    let Value::Object(_, at) = **one else { unreachable!("the walk finds objects only") };
    let mut errors = Vec::new();
    // The document was read as valid UTF-8 and valid JSON: the container reads
    // again. Were it not to, a failure, never a run without the container's env.
    let Some(m) = std::str::from_utf8(bytes).ok().and_then(|s| reader_at(s, at).manifest(&mut errors)) else {
        return fail(format!("--container {wanted_shown}: {path} of {subject} cannot be read again"));
    };
    if errors.is_empty() {
        Ok(m)
    } else {
        Err(name_errors(errors, subject, file, &path))
    }
}

/// The containers' names for a message: `containers` before
/// `initContainers` (not a sort: a stable sort's code is large), at most
/// [`MAX_NAMES_SHOWN`].
fn listed(found: &[Found]) -> String {
    let mut list: Vec<String> = Vec::new();
    for init in [false, true] {
        let of_kind = found.iter().filter(|(in_init, _)| *in_init == init);
        list.extend(of_kind.map(|(_, c)| text(c, "name").map_or_else(|| "(no name)".into(), |n| escape(n.as_bytes()))));
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

/// What the document is, for a message: `a Pod`, `an Ingress`..., `a whole
/// object` (also for a `kind` that is not a kind's name: any text could be
/// there, and a message never shows the manifest's values).
fn kind_of(doc: &Value) -> String {
    let is_kind = |k: &&str| k.len() <= 63 && k.starts_with(|c: char| c.is_ascii_uppercase()) && k.bytes().all(|b| b.is_ascii_alphanumeric());
    let kind = text(doc, "kind").filter(is_kind).unwrap_or("whole object");
    format!("{} {kind}", if kind.starts_with(['A', 'E', 'I', 'O', 'U']) { "an" } else { "a" })
}

/// The value of `key` in the object `v` (its last, as the manifest reader takes).
fn get<'v, 'a>(v: &'v Value<'a>, key: &str) -> Option<&'v Value<'a>> {
    match v {
        Value::Object(fields, _) => fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    }
}

/// The string `key` of the object `v`.
fn text<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    match get(v, key) {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

/// The JSON path (`spec.containers[0]`) of `target`, a container [`super::containers`]
/// found in `doc` (compared by address), for a message.
#[cold]
fn path_of(doc: &Value, target: &Value) -> JsonPath {
    fn find(v: &Value, target: &Value, path: &mut Vec<Segment>) -> bool {
        let steps: Vec<(Segment, &Value)> = match v {
            Value::Object(fields, _) => fields.iter().map(|(k, v)| (Segment::Key(escape(k.as_bytes())), v)).collect(),
            Value::Array(items) => items.iter().enumerate().map(|(i, v)| (Segment::Index(i), v)).collect(),
            _ => return false,
        };
        for (step, value) in steps {
            path.push(step);
            if std::ptr::eq(value, target) || find(value, target, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = Vec::new();
    find(doc, target, &mut path);
    JsonPath(path)
}
