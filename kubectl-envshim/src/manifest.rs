//! `kubectl envshim manifest`: one container's manifest as JSON, for the
//! modes wired by hand (envshim as the image's ENTRYPOINT, Docker): the
//! fields envshim reads, as the container has them. The container is chosen
//! by envshim's own reader (`--container`, docs/reference.md §3), so a name missing or
//! given twice gets the very message envshim gives. A converted container is
//! shown as it was written before its conversion (`unconvert.rs`): the same
//! JSON as for the original workload.

use serde_json::{Map, Value};

use envshim::converter::{escape, Error, ExitCode};

use crate::cli::ManifestArgs;
use crate::convert::has_file_key_ref;
use crate::input::{self, data_error};
use crate::report::{fail, say, usage, write_stdout};
use crate::tree;

/// The container fields envshim reads (docs/reference.md §3).
const FIELDS: [&str; 5] = ["volumeMounts", "envFrom", "env", "command", "args"];

pub fn command(args: &ManifestArgs) -> ExitCode {
    if let Some(stray) = args.stray.first() {
        return usage(&crate::cli::stray(stray, "manifest"));
    }
    let (list, shown) = match documents(args) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let mut all = Vec::new();
    tree::containers(&list, &mut |c| all.push(c));
    let name = match &args.container {
        Some(name) => name.clone(),
        None => match only_container(&all, &shown) {
            Ok(name) => name,
            Err(code) => return code,
        },
    };
    let bytes = match serde_json::to_vec(&list) {
        Ok(b) => b,
        Err(e) => return fail(&[data_error(&shown, format!("cannot be written as JSON ({e})"))]),
    };
    if let Err(errors) = envshim::converter::parse_manifest_named(&bytes, &format!("manifest {shown}"), Some(&shown), Some(name.as_bytes())) {
        return fail(&errors);
    }
    // envshim found exactly one container of that name; messages show it escaped.
    let shown_name = escape(name.as_bytes());
    let Some(chosen) = all.into_iter().find(|c| named(c) == Some(name.as_str())) else {
        return fail(&[Error { subject: shown, ..Error::config(format!("no container {shown_name}")) }]);
    };
    let original = match chosen.as_object().map(crate::unconvert::original) {
        Some(Ok(Some(o))) => Value::Object(o),
        Some(Err(problems)) => {
            let subject = format!("{shown}: container {shown_name}");
            return fail(
                &problems.into_iter().map(|p| Error::in_manifest(p.code, &subject, p.path().cloned().unwrap_or_default(), None, p.what)).collect::<Vec<_>>(),
            );
        }
        _ => chosen.clone(),
    };
    let manifest: Map<String, Value> =
        original.as_object().into_iter().flatten().filter(|(k, _)| FIELDS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    for volume in unmounted(&manifest) {
        say(&format!(
            "warning: container {shown_name} reads the volume {} without mounting it: mount it in the container, where envshim reads it",
            escape(volume.as_bytes())
        ));
    }
    match serde_json::to_string_pretty(&Value::Object(manifest)) {
        Ok(text) => write_stdout(format!("{text}\n").as_bytes()),
        Err(e) => fail(&[data_error(&shown, format!("cannot be written as JSON ({e})"))]),
    }
}

/// The inputs' documents that hold a container, as one value (several as a
/// `List`: envshim's selection then covers the whole input), and the name
/// messages give the input; `Err`: the exit code of the failure reported.
fn documents(args: &ManifestArgs) -> Result<(Value, String), ExitCode> {
    let inputs = input::read_all(&args.input).map_err(|e| fail(&[e]))?;
    let mut docs = Vec::new();
    let mut errors = Vec::new();
    for (shown, text) in &inputs {
        match text {
            Ok(text) => match tree::read(text) {
                Ok(mut d) => docs.append(&mut d),
                Err(e) => errors.push(data_error(shown, e)),
            },
            Err(e) => errors.push(e.clone()),
        }
    }
    if !errors.is_empty() {
        return Err(fail(&errors));
    }
    let shown = match inputs.as_slice() {
        [(one, _)] => one.clone(),
        _ => "the input".to_string(),
    };
    // The documents with containers (envshim's reader takes 128 levels of
    // nesting, which a document of another kind may pass).
    docs.retain(|d| {
        let mut any = false;
        tree::containers(d, &mut |_| any = true);
        any
    });
    if docs.is_empty() {
        return Err(fail(&[Error { subject: shown, ..Error::config("no document holds a container") }]));
    }
    let list = match <[Value; 1]>::try_from(docs) {
        Ok([one]) => one,
        Err(docs) => serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs}),
    };
    Ok((list, shown))
}

/// A container's name.
fn named<'v>(c: &&'v Value) -> Option<&'v str> {
    c.get("name").and_then(Value::as_str)
}

/// Without `--container`: the one container, or the one with a `fileKeyRef`
/// (or converted); `Err`: a usage error naming them (its exit code).
fn only_container(all: &[&Value], shown: &str) -> Result<String, ExitCode> {
    let with_file_key_ref: Vec<&Value> = all.iter().copied().filter(|c| has_file_key_ref(c) || crate::unconvert::is_converted(c)).collect();
    match (all, with_file_key_ref.as_slice()) {
        ([one], _) | (_, [one]) if named(one).is_some() => Ok(named(one).unwrap_or_default().to_string()),
        _ => {
            let names: Vec<String> = all.iter().map(|c| named(c).map_or_else(|| "(no name)".into(), |n| escape(n.as_bytes()))).collect();
            let has = if names.is_empty() { "it has none".to_string() } else { format!("it has {}", names.join(", ")) };
            Err(usage(&format!("{shown}: choose the container with --container NAME ({has})")))
        }
    }
}

/// The volumes a `fileKeyRef` or `fileRef` names that the container does not mount.
fn unmounted(m: &Map<String, Value>) -> Vec<String> {
    let list = |k: &str| m.get(k).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let mounted: Vec<&Value> = list("volumeMounts").iter().filter_map(|v| v.get("name")).collect();
    let env = list("env").iter().filter_map(|e| e.pointer("/valueFrom/fileKeyRef/volumeName"));
    let mut out: Vec<String> = Vec::new();
    for v in env.chain(list("envFrom").iter().filter_map(|e| e.pointer("/fileRef/volumeName"))) {
        if let Some(v) = v.as_str().filter(|v| !mounted.iter().any(|m| m.as_str() == Some(v)) && !out.iter().any(|o| o == v)) {
            out.push(v.to_string());
        }
    }
    out
}
