//! What the converter moves out of the API server's sight (a converted
//! container's env entries and program line, into envshim's manifest) is
//! checked as the API server checks it: a pod it would refuse natively is
//! refused at convert time (78), one line naming the field, nothing written,
//! no value shown; never converted into a pod that crash-loops. The rules
//! row by row: `kubectl-envshim/src/validate/cases.jsonl`; here, each kind
//! of refusal through the binary.

use std::process::Command;

use serde_json::{json, Value};

use crate::support::{run, Out, BIN, SENTINEL};

/// A Pod whose container `app` reads `A` from the volume `cfg`, with the
/// sentinel in a value; `patch` sets fields of the container (`env` is
/// appended to), `pod` fields of the spec.
fn pod(patch: Value, pod: Value) -> String {
    let mut c = json!({
        "name": "app", "image": "app:1", "command": ["/app"],
        "env": [{"name": "SECRET", "value": SENTINEL}, {"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "A"}}}],
    });
    for (k, v) in patch.as_object().unwrap() {
        match (k.as_str(), v) {
            ("env", Value::Array(more)) => c["env"].as_array_mut().unwrap().extend(more.iter().cloned()),
            _ => c[k] = v.clone(),
        }
    }
    let mut spec = json!({"containers": [c], "volumes": [{"name": "cfg", "emptyDir": {}}]});
    for (k, v) in pod.as_object().unwrap() {
        spec[k] = v.clone();
    }
    serde_json::to_string(&json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})).unwrap()
}

fn convert(stdin: &str, args: &[&str]) -> Out {
    run(Command::new(BIN).arg("convert").args(args), stdin)
}

/// Refused (78): one line, naming the field and saying why.
#[track_caller]
fn refused(input: &str, args: &[&str], at: &str, why: &str) {
    let err = convert(input, args).fails(78, &[&format!("stdin: document 1 (Pod/p): spec.containers[0].{at}: container app: {why}")]).to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
}

fn file_key_ref(name: &str, volume: &str, path: Value, key: Value) -> Value {
    json!({"name": name, "valueFrom": {"fileKeyRef": {"volumeName": volume, "path": path, "key": key}}})
}

#[test]
fn an_invalid_name_moving_into_the_manifest_is_refused() {
    // A fileKeyRef entry leaves the env list: the API server would never see its name.
    let input = pod(json!({"env": [file_key_ref("BAD=NAME", "cfg", json!("app.env"), json!("A"))]}), json!({}));
    refused(&input, &[], "env[2].name", "is not a valid variable name: printable ASCII characters except '='");
    let input = pod(json!({"env": [{"name": "", "value": SENTINEL}]}), json!({}));
    refused(&input, &[], "env[2].name", "required: every env entry has a name");
}

#[test]
fn a_value_from_with_two_sources_is_refused() {
    // Before the first fileKeyRef as after it.
    let two = json!({"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}, "configMapKeyRef": {"name": "c", "key": "k"}}});
    let mut input: Value = serde_json::from_str(&pod(json!({}), json!({}))).unwrap();
    input["spec"]["containers"][0]["env"].as_array_mut().unwrap().insert(1, two);
    refused(&input.to_string(), &[], "env[1].valueFrom", "needs exactly one source");
    let input = pod(json!({"env": [{"name": "T", "value": SENTINEL, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}), json!({}));
    refused(&input, &[], "env[2].valueFrom", "may not be set when value is not empty");
}

#[test]
fn a_file_key_ref_path_outside_the_volume_is_refused() {
    for path in ["../app.env", "a/../../app.env", "a/.."] {
        let input = pod(json!({"env": [file_key_ref("X", "cfg", json!(path), json!("X"))]}), json!({}));
        refused(&input, &[], "env[2].valueFrom.fileKeyRef.path", "has a '..' element: the path must stay inside the volume");
    }
    let input = pod(json!({"env": [file_key_ref("X", "cfg", json!("/etc/app.env"), json!("X"))]}), json!({}));
    refused(&input, &[], "env[2].valueFrom.fileKeyRef.path", "is absolute: it must be relative to the volume");
}

#[test]
fn a_file_key_ref_without_a_key_or_with_an_invalid_one_is_refused() {
    let mut entry = file_key_ref("X", "cfg", json!("app.env"), json!(null));
    entry["valueFrom"]["fileKeyRef"].as_object_mut().unwrap().remove("key");
    refused(&pod(json!({"env": [entry]}), json!({})), &[], "env[2].valueFrom.fileKeyRef.key", "required: the key in the env file");
    let input = pod(json!({"env": [file_key_ref("X", "cfg", json!("app.env"), json!("K=V"))]}), json!({}));
    refused(&input, &[], "env[2].valueFrom.fileKeyRef.key", "is not a valid variable name");
}

#[test]
fn a_file_key_ref_on_a_volume_the_pod_lacks_is_refused() {
    let input = pod(json!({"env": [file_key_ref("X", "nope", json!("app.env"), json!("X"))]}), json!({}));
    refused(&input, &[], "env[2].valueFrom.fileKeyRef.volumeName", "\"nope\" is not among the pod's volumes");
    // Not a volume's name at all (the pod's volume names are DNS labels).
    let input = pod(json!({"env": [file_key_ref("X", "Cfg", json!("app.env"), json!("X"))]}), json!({"volumes": [{"name": "cfg", "emptyDir": {}}]}));
    refused(&input, &[], "env[2].valueFrom.fileKeyRef.volumeName", "is not a volume's name: a lowercase RFC 1123 label");
}

#[test]
fn a_key_ref_or_a_field_ref_without_what_it_selects_is_refused() {
    let variants = [
        (json!({"secretKeyRef": {"name": "s"}}), "secretKeyRef.key", "required: the Secret's key"),
        (json!({"configMapKeyRef": {"key": "k"}}), "configMapKeyRef.name", "the ConfigMap's name: required"),
        (json!({"fieldRef": {}}), "fieldRef.fieldPath", "required: the pod's field"),
        (json!({"resourceFieldRef": {"divisor": "1"}}), "resourceFieldRef.resource", "required: the container's resource"),
    ];
    for (from, at, why) in variants {
        let input = pod(json!({"env": [{"name": "R", "valueFrom": from}]}), json!({}));
        refused(&input, &[], &format!("env[2].valueFrom.{at}"), why);
    }
}

#[test]
fn a_program_line_that_is_not_strings_is_refused() {
    // args, a string: it would leave the container for the manifest.
    let input = pod(json!({"args": format!("--token {SENTINEL}")}), json!({}));
    refused(&input, &[], "args", "expected a list of strings, found a string");
    // A command, a string, beside --entrypoint: the manifest would keep it out of sight.
    let input = pod(json!({"command": format!("/app {SENTINEL}")}), json!({}));
    refused(&input, &["--entrypoint", "app=/app"], "command", "expected a list of strings, found a string");
    let input = pod(json!({"args": ["--port", 8080]}), json!({}));
    refused(&input, &[], "args[1]", "expected a string, found a number");
}

/// `envFrom[].fileRef` is envshim's own (an envshim manifest's), no
/// Kubernetes field: in a pod it is refused, converted or not, in any
/// container list, and the message says where it belongs.
#[test]
fn an_env_from_file_ref_in_a_pod_is_refused() {
    let file_ref = json!([{"fileRef": {"volumeName": "cfg", "path": "app.env"}}]);
    let input = pod(json!({"envFrom": file_ref}), json!({}));
    refused(&input, &[], "envFrom[0].fileRef", "is envshim's own field, not one of the Kubernetes API");
    // A pod with no fileKeyRef: nothing to convert, and still refused.
    let plain = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {
        "initContainers": [{"name": "init", "image": "i", "env": [{"name": "S", "value": SENTINEL}], "envFrom": [{"secretRef": {"name": "s"}}, {"fileRef": {"volumeName": "cfg", "path": "app.env"}}]}],
        "containers": [{"name": "app", "image": "app:1"}], "volumes": [{"name": "cfg", "emptyDir": {}}]}}}});
    let err = convert(&plain.to_string(), &[])
        .fails(
            78,
            &[
                "document 1 (Deployment/d): spec.template.spec.initContainers[0].envFrom[1].fileRef: container init: is envshim's own field",
                "belongs in an envshim manifest",
            ],
        )
        .to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
}
