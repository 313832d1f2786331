//! `kubectl envshim convert` (docs/reference.md §10) through the built binary: every kind,
//! a List, streams, JSON, `--check`, the options (`convert/options.rs`), every error (exit code,
//! message, nothing on stdout, no value shown), idempotence over generated
//! pods, and what envshim makes of a converted container after the kubelet
//! has expanded its env.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::prelude::*;

use crate::support::quoted_yaml::block_yaml;
use serde_norway::Value;

use crate::support::{run, Out, BIN, SENTINEL, SHIM_IMAGE as IMAGE};

mod again;
mod options;
mod production;
mod slots;
mod sub_path;

fn kubectl_envshim(args: &[&str], stdin: &str) -> Out {
    kubectl_envshim_with(args, stdin, Some(IMAGE))
}

/// `kubectl_envshim` with KUBECTL_ENVSHIM_SHIM_IMAGE set to IMAGE, or unset.
fn kubectl_envshim_with(args: &[&str], stdin: &str, image: Option<&str>) -> Out {
    let mut command = Command::new(BIN);
    match image {
        Some(image) => command.env("KUBECTL_ENVSHIM_SHIM_IMAGE", image),
        None => command.env_remove("KUBECTL_ENVSHIM_SHIM_IMAGE"),
    };
    run(command.args(args), stdin)
}

fn convert(stdin: &str) -> Out {
    kubectl_envshim(&["convert"], stdin)
}

fn yaml(text: &str) -> Value {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("not YAML ({e}): {text}"))
}

/// The documents of a stream (empty ones left out).
fn docs(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_norway::Deserializer::from_str(text).map(|d| Value::deserialize(d).unwrap()).filter(|d| !d.is_null()).collect()
}

fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| match k.parse::<usize>() {
        Ok(i) => &v[i],
        Err(_) => &v[*k],
    })
}

/// A pod spec: an initContainer writing the env file, the app with fileKeyRef.
const POD_SPEC: &str = r#"
initContainers:
  - name: gen
    image: busybox
    command: ["sh", "-c", "echo TOKEN=x > /config/app.env"]
    volumeMounts: [{name: config, mountPath: /config}]
containers:
  - name: app
    image: app:1
    command: ["/app", "--token=$(TOKEN)"]
    args: ["--url=$(URL)", "$$(KEEP)"]
    env:
      - name: NS
        valueFrom: {configMapKeyRef: {name: cm, key: ns}}
      - name: TOKEN
        valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: TOKEN}}
      - name: URL
        value: "http://$(TOKEN)/$(NS)"
      - name: SECRET
        value: "SENTINEL-s3cr3t-VALUE"
    resources: {limits: {memory: 64Mi}}
  - name: plain
    image: plain:1
    env: [{name: A, value: "1"}]
volumes:
  - name: config
    emptyDir: {}
"#;

fn indent(text: &str, n: usize) -> String {
    text.lines().map(|l| if l.is_empty() { String::new() } else { format!("{}{l}", " ".repeat(n)) }).collect::<Vec<_>>().join("\n")
}

/// A document of `kind` holding POD_SPEC, and the path to its pod spec.
fn workload(kind: &str) -> (String, Vec<&'static str>) {
    let spec = indent(POD_SPEC, 6);
    let (api, body, path) = match kind {
        "Pod" => ("v1", format!("spec:\n{}", indent(POD_SPEC, 2)), vec!["spec"]),
        "PodTemplate" => ("v1", format!("template:\n  metadata: {{labels: {{app: x}}}}\n  spec:\n{}", indent(POD_SPEC, 4)), vec!["template", "spec"]),
        "CronJob" => (
            "batch/v1",
            format!("spec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n        spec:\n{}", indent(POD_SPEC, 10)),
            vec!["spec", "jobTemplate", "spec", "template", "spec"],
        ),
        _ => {
            let api = match kind {
                "ReplicationController" => "v1",
                "Job" => "batch/v1",
                _ => "apps/v1",
            };
            (api, format!("spec:\n  template:\n    metadata: {{labels: {{app: x}}}}\n    spec:\n{spec}"), vec!["spec", "template", "spec"])
        }
    };
    (format!("apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: w-{}\n{body}\n", kind.to_lowercase()), path)
}

/// Takes the app's command away.
const NO_COMMAND: (&str, &str) = ("command: [\"/app\", \"--token=$(TOKEN)\"]", "workingDir: /");

const KINDS: [&str; 9] = ["Pod", "PodTemplate", "Deployment", "ReplicaSet", "ReplicationController", "StatefulSet", "DaemonSet", "Job", "CronJob"];

/// What the kubelet does with a container's `env` (literal values expanded
/// against the entries before them; `$$` becomes `$`), with the values the
/// platform resolves (`valueFrom` other than fileKeyRef) given.
fn kubelet_env(env: &Value, platform: &BTreeMap<&str, &str>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for e in env.as_sequence().unwrap() {
        let name = e["name"].as_str().unwrap().to_string();
        let value = match (e.get("value"), e.get("valueFrom")) {
            (_, Some(_)) => platform.get(name.as_str()).map(|v| v.to_string()),
            (Some(v), None) => {
                let v = v.as_str().unwrap();
                let known: BTreeMap<String, String> = out.iter().cloned().collect();
                Some(String::from_utf8(envshim::converter::expand(v.as_bytes(), |n| known.get(std::str::from_utf8(n).ok()?).map(|v| v.as_bytes()))).unwrap())
            }
            (None, None) => Some(String::new()),
        };
        if let Some(value) = value {
            out.retain(|(n, _)| *n != name);
            out.push((name, value));
        }
    }
    out
}

/// The manifest envshim reads in a converted container: ENVSHIM_MANIFEST_JSON after the kubelet.
fn manifest_seen(container: &Value) -> serde_json::Value {
    let env = kubelet_env(&container["env"], &BTreeMap::from([("NS", "prod")]));
    let text = &env.iter().find(|(n, _)| n == "ENVSHIM_MANIFEST_JSON").expect("ENVSHIM_MANIFEST_JSON").1;
    envshim::converter::parse_manifest(text.as_bytes()).unwrap_or_else(|_| panic!("envshim cannot read {text}"));
    serde_json::from_str(text).unwrap()
}

fn json_of(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn every_kind_has_its_pod_converted() {
    for kind in KINDS {
        let (input, path) = workload(kind);
        let out = convert(&input);
        let doc = yaml(out.ok());
        let original = yaml(&input);
        let spec = at(&doc, &path);
        let before = at(&original, &path);
        // The installer first among the initContainers, the volume first among the volumes.
        let init = &spec["initContainers"];
        assert_eq!(init[0]["name"].as_str(), Some("envshim-install"), "{kind}");
        assert_eq!(json_of(&init[0]["command"]), serde_json::json!(["/envshim", "install", "/.envshim/bin/envshim"]));
        assert_eq!(init[0]["image"].as_str(), Some(IMAGE));
        let sc = json_of(&init[0]["securityContext"]);
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["allowPrivilegeEscalation"], false);
        assert_eq!(sc["runAsNonRoot"], true);
        assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
        assert_eq!(json_of(&init[1]), json_of(&before["initContainers"][0]), "{kind}: the other initContainer is unchanged");
        assert_eq!(json_of(&spec["volumes"][0]), serde_json::json!({"name": "envshim", "emptyDir": {"sizeLimit": "4Mi"}}));
        assert_eq!(json_of(&spec["volumes"][1]), json_of(&before["volumes"][0]));
        // The app: envshim run, no args, the fileKeyRef entry gone, the rest kept in order.
        let app = &spec["containers"][0];
        assert_eq!(json_of(&app["command"]), serde_json::json!(["/.envshim/bin/envshim", "run"]));
        assert!(app.get("args").is_none());
        let names: Vec<&str> = app["env"].as_sequence().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        // The kubelet's view where the fileKeyRef entry was: what the rest and the program line refer to.
        assert_eq!(
            names,
            ["NS", "ENVSHIM_SEEN_0", "ENVSHIM_SEEN_1", "ENVSHIM_SEEN_2", "URL", "SECRET", "ENVSHIM_MANIFEST_JSON", "ENVSHIM_ENV_GRAMMAR", "ENVSHIM_EXPANDED"],
            "{kind}"
        );
        let seen: Vec<&str> = app["env"].as_sequence().unwrap()[1..4].iter().map(|e| e["value"].as_str().unwrap()).collect();
        assert_eq!(seen, ["$(TOKEN)", "$(NS)", "$(URL)"], "{kind}");
        assert_eq!(json_of(&app["resources"]), json_of(&before["containers"][0]["resources"]));
        assert_eq!(
            json_of(&app["volumeMounts"]),
            serde_json::json!([
                {"name": "envshim", "mountPath": "/.envshim/bin", "readOnly": true},
                {"name": "config", "mountPath": "/.envshim/volumes/config", "readOnly": true},
            ])
        );
        // The manifest, as envshim reads it after the kubelet: the list from the fileKeyRef on, the program line.
        let b = &before["containers"][0];
        assert_eq!(
            manifest_seen(app),
            serde_json::json!({
                "env": json_of(&b["env"]).as_array().unwrap()[1..], "command": json_of(&b["command"]), "args": json_of(&b["args"]),
                "volumeMounts": [{"name": "config", "mountPath": "/.envshim/volumes/config"}],
                "converted": {"seen": ["TOKEN", "NS", "URL"], "before": ["pNS"], "values": [], "envFrom": false},
            }),
            "{kind}"
        );
        // The container without fileKeyRef is unchanged, and so is the document's head.
        assert_eq!(json_of(&spec["containers"][1]), json_of(&before["containers"][1]));
        assert_eq!(json_of(&doc["metadata"]), json_of(&original["metadata"]));
        // Field order of the document kept.
        let keys = |v: &Value| v.as_mapping().unwrap().keys().map(|k| k.as_str().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(keys(&doc), keys(&original));
        assert_eq!(keys(app)[..3], ["name", "image", "command"]);
        // Idempotent.
        assert_eq!(convert(&out.stdout).ok(), out.stdout, "{kind}: converting again changed it");
    }
}

#[test]
fn a_list_has_every_item_converted() {
    let items: Vec<String> = ["Pod", "Deployment", "CronJob"].iter().map(|k| indent(&workload(k).0, 4).replacen("    ", "  - ", 1)).collect();
    let input =
        format!("apiVersion: v1\nkind: List\nmetadata: {{}}\nitems:\n{}\n  - apiVersion: v1\n    kind: Service\n    metadata: {{name: s}}\n", items.join("\n"));
    let doc = yaml(convert(&input).ok());
    for (i, path) in [(0, vec!["spec"]), (1, vec!["spec", "template", "spec"]), (2, vec!["spec", "jobTemplate", "spec", "template", "spec"])] {
        let spec = at(&doc["items"][i], &path);
        assert_eq!(spec["initContainers"][0]["name"].as_str(), Some("envshim-install"), "item {i}");
        assert_eq!(spec["containers"][0]["command"][1].as_str(), Some("run"));
    }
    assert_eq!(json_of(&doc["items"][3]), json_of(&yaml(&input)["items"][3]));
}

#[test]
fn a_stream_keeps_every_untouched_document_byte_for_byte() {
    let untouched = [
        "# leading comment, kept\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}   # flow style, a comment\ndata:\n  k: 'single quoted'\n",
        "---\napiVersion: example.com/v1\nkind: Deployment   # another group's, with a pod template and no fileKeyRef\nmetadata: {name: crd}\nspec:\n  template:\n    spec:\n      containers: [{name: a, env: [{name: X, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]\n",
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers:\n  - {name: a, image: a, command: [\"/a\"], env: [{name: A, value: \"$(B)\"}]}\n",
        "--- # a comment on the marker\n# only comments in this document\n",
        "---\napiVersion: v1\nkind: Service\nmetadata:\n    name: svc      # four-space indentation\nspec:\n    ports: [{port: 80}]\n...\n",
    ];
    let (deployment, _) = workload("Deployment");
    let input = format!("{}{}{}---\n# comment above the converted one\n{deployment}{}{}", untouched[0], untouched[1], untouched[2], untouched[3], untouched[4]);
    let out = convert(&input);
    let text = out.ok();
    assert!(text.starts_with(&format!("{}{}{}", untouched[0], untouched[1], untouched[2])), "{text}");
    assert!(text.ends_with(&format!("{}{}", untouched[3], untouched[4])), "{text}");
    assert!(text.contains("---\n# comment above the converted one\napiVersion: apps/v1\n"), "{text}");
    let all = docs(text);
    assert_eq!(all.len(), 5, "{text}");
    assert_eq!(all[3]["spec"]["template"]["spec"]["initContainers"][0]["name"].as_str(), Some("envshim-install"));
    assert_eq!(convert(text).ok(), text);
    kubectl_envshim(&["convert", "--check"], text).ok();
}

#[test]
fn json_in_gives_json_out() {
    let (input, _) = workload("Deployment");
    let json = serde_json::to_string(&json_of(&yaml(&input))).unwrap();
    let plain = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},  "spec":{}}"#;
    let stream = format!("{plain}\n{json}\n  {plain}\n");
    let out = convert(&stream);
    let text = out.ok();
    let values: Vec<serde_json::Value> = serde_json::Deserializer::from_str(text).into_iter().map(Result::unwrap).collect();
    assert_eq!(values.len(), 3);
    assert!(text.starts_with(&format!("{plain}\n{{\n  \"apiVersion\": \"apps/v1\",\n  \"kind\": \"Deployment\"")), "{text}");
    assert!(text.ends_with(&format!("\n  {plain}\n")), "{text}");
    assert_eq!(values[1]["spec"]["template"]["spec"]["containers"][0]["command"], serde_json::json!(["/.envshim/bin/envshim", "run"]));
    // Field order kept in JSON too.
    let keys: Vec<&String> = values[1].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "metadata", "spec"]);
    assert_eq!(convert(text).ok(), text);
}

#[test]
fn several_files_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let (pod, _) = workload("Pod");
    let a = dir.path().join("a.yaml");
    std::fs::write(&a, &pod).unwrap();
    let b = dir.path().join("b.yaml");
    std::fs::write(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n").unwrap();
    let out = kubectl_envshim(
        &["convert", "-f", a.to_str().unwrap(), "-f", "-", "-f", b.to_str().unwrap()],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n",
    );
    let all = docs(out.ok());
    let kinds: Vec<&str> = all.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Pod", "Namespace", "ConfigMap"]);
    assert!(out.stdout.ends_with("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), "{}", out.stdout);
}

#[test]
fn check_writes_nothing_and_says_whether_anything_would_change() {
    let (pod, _) = workload("Pod");
    let out = kubectl_envshim(&["convert", "--check"], &pod);
    // Each document that would change, on stderr, as `gofmt -l` lists files.
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (1, "", "kubectl-envshim: stdin: document 1 (Pod/w-pod): would convert containers app\n"));
    let converted = convert(&pod).stdout;
    let out = kubectl_envshim(&["convert", "--check"], &converted);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""));
    // Errors are still errors under --check.
    kubectl_envshim(&["convert", "--check"], &pod.replace(NO_COMMAND.0, NO_COMMAND.1)).fails(78, &["no command"]);
}

#[test]
fn a_mounted_volume_is_used_where_the_container_mounts_it_and_sidecars_are_converted() {
    let input = r#"apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  initContainers:
    - name: side
      image: s
      restartPolicy: Always
      command: ["/side"]
      env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A, optional: true}}}]
      volumeMounts: [{name: config, mountPath: /cfg, subPath: x}]
  containers:
    - name: app
      image: a
      command: ["/app"]
      env: [{name: A, valueFrom: {fileKeyRef: {volumeName: config, path: a.env, key: A}}}]
      volumeMounts: [{name: config, mountPath: /data/config, readOnly: true}]
  volumes: [{name: config, emptyDir: {}}]
"#;
    let doc = yaml(convert(input).ok());
    let spec = &doc["spec"];
    let names: Vec<&str> = spec["initContainers"].as_sequence().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["envshim-install", "side"]);
    // A subPath mount is not the volume's root: a mount of the root is added.
    let side = &spec["initContainers"][1];
    assert_eq!(manifest_seen(side)["volumeMounts"], serde_json::json!([{"name": "config", "mountPath": "/.envshim/volumes/config"}]));
    assert_eq!(side["restartPolicy"].as_str(), Some("Always"));
    // The app's own mount is used; none added but envshim's.
    let app = &spec["containers"][0];
    assert_eq!(manifest_seen(app)["volumeMounts"], serde_json::json!([{"name": "config", "mountPath": "/data/config"}]));
    assert_eq!(
        json_of(&app["volumeMounts"]),
        serde_json::json!([{"name": "config", "mountPath": "/data/config", "readOnly": true}, {"name": "envshim", "mountPath": "/.envshim/bin", "readOnly": true}])
    );
}

#[test]
fn errors_name_the_document_the_object_the_container_and_the_path() {
    let (deployment, _) = workload("Deployment");
    // POD_SPEC's env holds the sentinel: no message may show it.
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\n";
    // No command (78).
    let d = deployment.replace(NO_COMMAND.0, NO_COMMAND.1);
    assert_ne!(d, deployment);
    convert(&format!("{cm}{d}"))
        .fails(78, &["stdin: document 2 (Deployment/w-deployment): spec.template.spec.containers[0].command: container app: no command", "--entrypoint app="]);
    // A fileKeyRef naming a volume the pod does not have (78).
    let d = deployment.replace("volumeName: config", "volumeName: nope");
    convert(&d).fails(
        78,
        &["document 1 (Deployment/w-deployment): spec.template.spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName: container app:", "\"nope\""],
    );
    // A Windows pod (78).
    let (pod, _) = workload("Pod");
    let w = pod.replace("spec:\n", "spec:\n  os: {name: windows}\n");
    convert(&w).fails(78, &["document 1 (Pod/w-pod): spec.os.name: a Windows pod"]);
    // A typo in a fileKeyRef: envshim's own manifest check, with its path in the document (78).
    let d = deployment.replace("key: TOKEN}", "key: TOKEN, optionl: true}");
    convert(&d).fails(78, &["spec.template.spec.containers[0].env[1].valueFrom.fileKeyRef.optionl: container app: unknown field"]);
    // A fileKeyRef added to a container converted already (78): a hand edit, as unconvert refuses it.
    let converted = convert(&deployment).stdout;
    let again = converted.replacen(
        "        env:\n",
        "        env:\n        - name: NEW\n          valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: NEW}}\n",
        1,
    );
    assert_ne!(again, converted);
    convert(&again).fails(78, &["spec.template.spec.containers[0].env[0].valueFrom.fileKeyRef: container app: a fileKeyRef in a converted container: added after the conversion: edit the original and convert again"]);
    // Every failing document is reported; nothing is written, even for the good ones.
    let two = format!("{}---\n{}", deployment.replace("volumeName: config", "volumeName: a"), pod.replace("volumeName: config", "volumeName: b"));
    let err = convert(&format!("{}---\n{two}", workload("Job").0)).fails(78, &["document 2 (Deployment/w-deployment)", "document 3 (Pod/w-pod)"]).to_string();
    assert_eq!(err.lines().count(), 2, "{err}");
    // In a List: the item's path and the item's kind/name.
    let list = format!("apiVersion: v1\nkind: List\nitems:\n{}\n", indent(&pod.replace("volumeName: config", "volumeName: c"), 4).replacen("    ", "  - ", 1));
    convert(&list).fails(78, &["document 1 (Pod/w-pod): items[0].spec.containers[0].env[1].valueFrom.fileKeyRef.volumeName"]);
    // Not YAML, not JSON (65), with the line in the stream.
    convert(&format!("{cm}apiVersion: v1\nkind: Pod\nmetadata: {{name: \"{SENTINEL}\n  x: [\n")).fails(65, &["stdin: document 2 (line ", "not valid YAML"]);
    convert(&format!("{{\"kind\": \"Pod\"}}\n{{\"kind\": \"{SENTINEL}\" ")).fails(65, &["stdin: document 2: not valid JSON"]);
    // Unreadable input (65).
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.yaml");
    // The system's reason as envshim words it (strerror's text, as the shim's messages have it).
    kubectl_envshim(&["convert", "-f", missing.to_str().unwrap()], "").fails(65, &["missing.yaml: cannot be read (No such file or directory)"]);
    kubectl_envshim(&["convert", "-f", dir.path().to_str().unwrap()], "").fails(65, &["no .yaml, .yml or .json file in it (-R reads its subdirectories)"]);
    let latin1 = dir.path().join("latin1.yaml");
    std::fs::write(&latin1, b"kind: Pod\nmetadata: {name: \xe9}\n").unwrap();
    kubectl_envshim(&["convert", "-f", latin1.to_str().unwrap()], "").fails(65, &["latin1.yaml: is not UTF-8"]);
}

#[test]
fn a_converted_document_reads_the_same_for_kubectl() {
    // kubectl reads YAML 1.1: a plain 0400 is octal (a file mode), `yes` is true.
    let (pod, _) = workload("Pod");
    let input = pod.replace(
        "  volumes:\n    - name: config\n      emptyDir: {}\n",
        "  volumes:\n    - name: config\n      emptyDir: {}\n    - name: s\n      secret: {secretName: s, defaultMode: 0400, items: [{key: k, path: k, mode: 0644}]}\n",
    );
    let input = input.replace("      image: app:1\n", "      image: app:1\n      tty: yes\n      workingDir: \"0400\"\n");
    assert!(input.contains("defaultMode: 0400") && input.contains("tty: yes"), "{input}");
    let out = convert(&input);
    let text = out.ok();
    assert!(text.contains("defaultMode: 256") && text.contains("mode: 420"), "{text}");
    assert!(text.contains("tty: true\n"), "{text}");
    assert!(text.contains("workingDir: '0400'\n"), "{text}");
}

/// The envshim binary of this workspace (built when missing: `cargo test -p kubectl-envshim`).
fn envshim_bin() -> PathBuf {
    let bin = Path::new(BIN).with_file_name("envshim");
    if !bin.exists() {
        let status = Command::new(env!("CARGO")).args(["build", "-p", "envshim", "--bin", "envshim"]).status().unwrap();
        assert!(status.success());
    }
    bin
}

#[test]
fn envshim_gives_the_converted_program_what_native_file_key_ref_would() {
    let vol = tempfile::tempdir().unwrap();
    std::fs::write(vol.path().join("app.env"), format!("TOKEN='t$(NS)k'\nOTHER='{SENTINEL}'\n")).unwrap();
    let mount = vol.path().to_str().unwrap();
    let input = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
    - name: app
      image: a
      command: ["/bin/sh", "-c", "printf '%s\\0' \"$@\"; echo; /usr/bin/env -0", "sh"]
      args: ["--token=$(TOKEN)", "--url=$(URL)", "$$(NS)", "$(MISSING)", "$$$$"]
      env:
        - name: NS
          valueFrom: {{configMapKeyRef: {{name: cm, key: ns}}}}
        - name: EARLY
          value: "$(TOKEN)-$(NS)"
        - name: TOKEN
          valueFrom: {{fileKeyRef: {{volumeName: config, path: app.env, key: TOKEN}}}}
        - name: URL
          value: "http://$(TOKEN)/$(NS)/$$(NS)/$$$(NS)"
        - name: OPT
          valueFrom: {{fileKeyRef: {{volumeName: config, path: app.env, key: ABSENT, optional: true}}}}
        - name: LAST
          value: "again-$(NS)-$(OPT)"
      volumeMounts: [{{name: config, mountPath: {mount}}}]
  volumes: [{{name: config, emptyDir: {{}}}}]
"#
    );
    let doc = yaml(convert(&input).ok());
    let app = &doc["spec"]["containers"][0];
    // The runtime's environment: the kubelet's work on the converted env list.
    let env = kubelet_env(&app["env"], &BTreeMap::from([("NS", "prod")]));
    let command: Vec<String> = app["command"].as_sequence().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect();
    assert_eq!(command[1], "run");
    let out = Command::new(envshim_bin()).arg(&command[1]).env_clear().envs(env).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (args, vars) = text.split_once('\n').unwrap();
    // $(TOKEN) from the file, chained with the platform's NS, in both orders; $$ kept as $.
    assert_eq!(
        args.trim_end_matches('\0').split('\0').collect::<Vec<_>>(),
        ["--token=t$(NS)k", "--url=http://t$(NS)k/prod/$(NS)/$prod", "$(NS)", "$(MISSING)", "$$"]
    );
    // (PWD: the shell's own.)
    let vars: BTreeMap<&str, &str> = vars.split('\0').filter(|v| !v.is_empty() && !v.starts_with("PWD=")).map(|v| v.split_once('=').unwrap()).collect();
    assert_eq!(
        vars,
        BTreeMap::from([
            ("NS", "prod"),
            ("EARLY", "$(TOKEN)-prod"),
            ("TOKEN", "t$(NS)k"),
            ("URL", "http://t$(NS)k/prod/$(NS)/$prod"),
            ("LAST", "again-prod-$(OPT)")
        ])
    );
}

fn arb_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just("$".to_string()), Just("(".to_string()), Just(")".to_string()), Just("$(A)".to_string()), "[a-zA-Z_ é]{0,3}"],
        0..12,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Doubling every `$`, then the Kubernetes expansion with any variables
    /// defined, gives back the text.
    #[test]
    fn doubling_dollars_is_the_inverse_of_expansion(text in arb_text(), vars in proptest::collection::btree_map("[A-Z(]{1,2}", "[$()a-z]{0,4}", 0..4)) {
        let doubled = text.replace('$', "$$");
        let back = envshim::converter::expand(doubled.as_bytes(), |n| vars.get(std::str::from_utf8(n).ok()?).map(|v| v.as_bytes()));
        prop_assert_eq!(String::from_utf8(back).unwrap(), text);
    }
}

fn arb_env_entry() -> impl Strategy<Value = serde_json::Value> {
    let name = "[A-Z]{1,3}";
    prop_oneof![
        (name, arb_text()).prop_map(|(n, v)| serde_json::json!({"name": n, "value": v})),
        (name, prop_oneof![Just("v1"), Just("v2")], "[a-z][a-z.]{0,7}", any::<bool>())
            .prop_map(|(n, v, p, o)| serde_json::json!({"name": n, "valueFrom": {"fileKeyRef": {"volumeName": v, "path": p, "key": n, "optional": o}}})),
        (name,).prop_map(|(n,)| serde_json::json!({"name": n, "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})),
    ]
}

/// A generated container: env, command, args, whether it mounts the volume v1.
type GenContainer = (Vec<serde_json::Value>, Option<Vec<String>>, Option<Vec<String>>, bool);

fn arb_pod() -> impl Strategy<Value = serde_json::Value> {
    let container = || {
        (
            proptest::collection::vec(arb_env_entry(), 0..5),
            proptest::option::of(proptest::collection::vec(arb_text(), 1..3)),
            proptest::option::of(proptest::collection::vec(arb_text(), 0..3)),
            any::<bool>(),
        )
    };
    (proptest::collection::vec(container(), 1..3), proptest::collection::vec(container(), 0..2), any::<bool>()).prop_map(|(cs, ics, json)| {
        let make = |prefix: &str, list: Vec<GenContainer>| {
            list.into_iter()
                .enumerate()
                .map(|(i, (env, command, args, mounts))| {
                    let mut c = serde_json::json!({"name": format!("{prefix}{i}"), "image": "i", "env": env});
                    // A container without command cannot be converted: give one to those with fileKeyRef.
                    c["command"] = serde_json::json!(command.unwrap_or_else(|| vec!["/bin/x".into()]));
                    if let Some(a) = args {
                        c["args"] = serde_json::json!(a);
                    }
                    if mounts {
                        c["volumeMounts"] = serde_json::json!([{"name": "v1", "mountPath": "/v1"}]);
                    }
                    c
                })
                .collect::<Vec<_>>()
        };
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "json": json},
            "spec": {"initContainers": make("i", ics), "containers": make("c", cs), "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}]}})
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Converting twice gives what converting once gives; every converted
    /// container's manifest, after the kubelet, is the container as it was.
    #[test]
    fn converting_twice_is_converting_once(pod in arb_pod()) {
        let text = if pod["metadata"]["json"] == true { serde_json::to_string(&pod).unwrap() } else { block_yaml(&pod) };
        let once = convert(&text);
        prop_assert_eq!(once.code, 0, "{}", once.stderr);
        prop_assert_eq!(&convert(&once.stdout).stdout, &once.stdout);
        prop_assert_eq!(kubectl_envshim(&["convert", "--check"], &once.stdout).code, 0);
        let converted = yaml(&once.stdout);
        for list in ["initContainers", "containers"] {
            for (i, c) in pod["spec"][list].as_array().unwrap().iter().enumerate() {
                let after = &converted["spec"][list][i + usize::from(list == "initContainers" && once.stdout != text)];
                let has = c["env"].as_array().unwrap().iter().any(|e| e["valueFrom"].get("fileKeyRef").is_some());
                if has {
                    // The manifest: the list from the first fileKeyRef on, the program line ([] is unset).
                    let m = manifest_seen(after);
                    let env = c["env"].as_array().unwrap();
                    let first = env.iter().position(|e| e["valueFrom"].get("fileKeyRef").is_some()).unwrap();
                    prop_assert_eq!(m["env"].as_array().unwrap(), &env[first..]);
                    prop_assert_eq!(&m["command"], &c["command"]);
                    prop_assert_eq!(m.get("args"), c.get("args").filter(|a| a.as_array().is_some_and(|a| !a.is_empty())));
                } else {
                    prop_assert_eq!(json_of(after), c.clone());
                }
            }
        }
        prop_assert_eq!(once.stdout == text, !pod.to_string().contains("fileKeyRef"));
    }
}
