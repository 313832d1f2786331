//! `kubectl envshim unconvert` and `manifest`'s read-back (docs/reference.md
//! §10) through the built binary: the example back as written, documents
//! not converted byte for byte, `--check`, JSON, a workload changed by hand
//! refused at its path (78, nothing on stdout, no value shown), and the KRM
//! function's `unconvert` key under kpt and as kustomize's plugin. The
//! property on the random pods is `exact::random_pods`.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{json_docs as docs, run, Out, BIN, SENTINEL};

fn kubectl_envshim(args: &[&str], stdin: &str) -> Out {
    run(std::process::Command::new(BIN).args(args), stdin)
}

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/convert").join(name)).unwrap()
}

/// A Deployment whose container `app` reads TOKEN from a file it does not
/// mount, and has no command (`--entrypoint` gives it); a value holds the sentinel.
const NATIVE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:1
        args: ["--db=$(DB_URL)"]
        env:
        - name: PLAIN
          value: "SENTINEL-s3cr3t-VALUE"
        - name: TOKEN
          valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: TOKEN}}
        - name: DB_URL
          value: "postgres://u:$(TOKEN)@db"
      volumes:
      - name: config
        emptyDir: {}
"#;

fn converted() -> String {
    kubectl_envshim(&["convert", "--entrypoint", r#"app=["/app","$(x)"]"#, "--wait", "5s"], NATIVE).ok().to_string()
}

#[test]
fn the_example_comes_back_as_written_and_reads_back_as_written() {
    let back = kubectl_envshim(&["unconvert", "-f", "-"], &example("deployment.converted.yaml")).ok().to_string();
    assert_eq!(docs(&back), docs(&example("deployment.yaml")));
    // A converted container's manifest is the original's, with or without -c.
    let original = kubectl_envshim(&["manifest", "-c", "app"], &example("deployment.yaml"));
    for args in [&["manifest", "-c", "app"][..], &["manifest"]] {
        assert_eq!(kubectl_envshim(args, &example("deployment.converted.yaml")).stdout, original.stdout);
    }
    // No command of its own (the image's, given by --entrypoint), args, an added mount, --wait: all undone.
    let back = kubectl_envshim(&["unconvert"], &converted()).ok().to_string();
    assert_eq!(docs(&back), docs(NATIVE));
    // (Both say the same: the container reads a volume it does not mount.)
    let app = kubectl_envshim(&["manifest"], &converted()).succeeds().to_string();
    assert_eq!(serde_json::from_str::<Value>(&app).unwrap(), serde_json::from_str::<Value>(kubectl_envshim(&["manifest"], NATIVE).succeeds()).unwrap());
    assert!(!app.contains("ENVSHIM_") && app.contains("\"args\"") && !app.contains("\"command\""), "{app}");
}

#[test]
fn json_gives_json_and_what_is_not_converted_comes_out_byte_for_byte() {
    let native_json = serde_json::to_string_pretty(&docs(NATIVE)[0]).unwrap();
    let converted_json = kubectl_envshim(&["convert", "--entrypoint", "app=/app"], &native_json).ok().to_string();
    let back = kubectl_envshim(&["unconvert"], &converted_json).ok().to_string();
    assert!(back.trim_start().starts_with('{'), "{back}");
    assert_eq!(serde_json::from_str::<Value>(&back).unwrap(), docs(NATIVE)[0]);
    // A stream: the native documents as they came (comments, quoting), the converted one undone.
    let other = "# kept\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  on: \"yes\" # quoted\n";
    let stream = format!("{other}---\n{NATIVE}---\n{}", converted());
    let back = kubectl_envshim(&["unconvert"], &stream).ok().to_string();
    assert!(back.starts_with(&format!("{other}---\n{NATIVE}---\n")), "{back}");
    assert_eq!(docs(&back)[2], docs(NATIVE)[0]);
    // --check: the converted document listed, exit 1, nothing on stdout; 0 when nothing would change.
    let check = kubectl_envshim(&["unconvert", "--check"], &stream);
    assert_eq!((check.code, check.stdout.as_str()), (1, ""));
    assert_eq!(check.stderr, "kubectl-envshim: stdin: document 3 (Deployment/web): would unconvert containers app\n");
    assert_eq!(kubectl_envshim(&["unconvert", "--check"], &format!("{other}---\n{NATIVE}")).ok(), "");
    // Undone, converting again gives the same conversion.
    assert_eq!(
        kubectl_envshim(&["convert", "--entrypoint", r#"app=["/app","$(x)"]"#, "--wait", "5s"], &kubectl_envshim(&["unconvert"], &converted()).stdout).stdout,
        converted()
    );
}

type Edit = dyn Fn(&mut Value);

/// The converted Deployment changed by `edit`, as JSON.
fn edited(edit: &Edit) -> String {
    let mut doc = docs(&converted()).remove(0);
    edit(&mut doc["spec"]["template"]["spec"]["containers"][0]);
    serde_json::to_string(&doc).unwrap()
}

#[test]
fn a_workload_changed_by_hand_is_refused_with_its_path() {
    // The converted env: PLAIN, ENVSHIM_SEEN_0..1, DB_URL, ENVSHIM_MANIFEST_JSON, ENVSHIM_WAIT, ENVSHIM_ENV_GRAMMAR.
    let at = "spec.template.spec.containers[0]";
    let manifest = |c: &mut Value| c["env"][4]["value"].as_str().unwrap().to_string();
    let cases: Vec<(&str, Box<Edit>, String)> = vec![
        ("command edited", Box::new(|c| c["command"] = json!(["/app", SENTINEL])), format!("{at}.command: container app: is not the converter's")),
        ("args added", Box::new(|c| c["args"] = json!([SENTINEL])), format!("{at}.args: container app: set on a converted container")),
        ("an entry edited", Box::new(|c| c["env"][3]["value"] = json!(SENTINEL)), format!("{at}.env[3]: container app: DB_URL differs from the entry the manifest's list holds for it: changed after the conversion: edit the original and convert again")),
        ("an entry edited away", Box::new(|c| drop(c["env"].as_array_mut().unwrap().remove(3))), format!("{at}.env: container app: lacks DB_URL, an entry of the list the manifest carries: removed after the conversion: edit the original and convert again")),
        ("entries removed", Box::new(|c| c["env"].as_array_mut().unwrap().retain(|e| e["name"] != "PLAIN" && e["name"] != "DB_URL")), format!("{at}.env: container app: lacks DB_URL, an entry of the list")),
        ("an entry appended", Box::new(|c| c["env"].as_array_mut().unwrap().push(json!({"name": "X", "value": SENTINEL}))), format!("{at}.env[8]: container app: X comes after ENVSHIM_MANIFEST_JSON, where the converter writes only its own settings: added after the conversion: edit the original and convert again")),
        ("a fileKeyRef added", Box::new(|c| c["env"][0] = json!({"name": "PLAIN", "valueFrom": {"fileKeyRef": {"volumeName": "config", "path": "a", "key": "K"}}})), format!("{at}.env[0].valueFrom.fileKeyRef: container app: a fileKeyRef in a converted container: added after the conversion: edit the original and convert again")),
        ("a seen entry edited", Box::new(|c| c["env"][1]["value"] = json!("$(PLAIN)")), format!("{at}.env[1]: container app: the ENVSHIM_SEEN_<j> entries")),
        ("a $ not doubled", Box::new(move |c| c["env"][4]["value"] = json!(manifest(c).replacen("$$", "$", 1))), format!("{at}.env[4].value: container app: ENVSHIM_MANIFEST_JSON has a `$` that is not doubled")),
        ("not JSON", Box::new(move |c| c["env"][4]["value"] = json!(format!("{SENTINEL}{}", manifest(c)))), format!("{at}.env[4].value: container app: ENVSHIM_MANIFEST_JSON is not valid JSON (line 1, column 1)")),
        ("wired by hand", Box::new(|c| c["env"][4]["value"] = json!(format!(r#"{{"env":[],"command":["{SENTINEL}"]}}"#))), format!("{at}.env[4].value: container app: the manifest in ENVSHIM_MANIFEST_JSON: no converted object")),
    ];
    for (what, edit, message) in cases {
        let input = format!("{NATIVE}---\n{}", edited(&edit));
        let out = kubectl_envshim(&["unconvert"], &input);
        let stderr = out.fails(78, &["stdin: document 2 (Deployment/web): ", &message]);
        assert!(
            ["changed since the conversion, so it cannot be undone exactly", "after the conversion: edit the original and convert again"]
                .iter()
                .any(|w| stderr.contains(w)),
            "{what}: {stderr}"
        );
        assert!(!stderr.contains("added changed"), "{what}: {stderr}");
        // convert and convert --check refuse it as well, with the same line (with the settings it was converted with, or others);
        // a container wired by hand (a manifest not the converter's) is not theirs to undo: left as it is.
        for args in [&["convert", "--entrypoint", r#"app=["/app","$(x)"]"#, "--wait", "5s"][..], &["convert", "--check", "--entrypoint", "app=/app", "--watch"]]
        {
            let out = kubectl_envshim(args, &input);
            if what == "wired by hand" && args[1] == "--check" {
                assert_eq!((out.code, out.stderr.as_str()), (1, "kubectl-envshim: stdin: document 1 (Deployment/web): would convert containers app\n"));
            } else if what == "wired by hand" {
                assert_eq!(docs(out.succeeds()).get(1), docs(&input).get(1), "{args:?}");
            } else {
                assert_eq!(out.fails(78, &[]), stderr, "{what}: {args:?}");
            }
        }
        // manifest's read-back refuses it too, the path in the container.
        let path = message.split(": container app: ").next().unwrap().trim_start_matches(at).trim_start_matches('.');
        let out = kubectl_envshim(&["manifest", "-c", "app"], &edited(&edit));
        out.fails(78, &[&format!("stdin: container app: {path}{}", if path.is_empty() { "" } else { ": " })]);
    }
}

/// kpt runs `krm` with `unconvert: "true"`: the package's converted file back as written, the other byte for byte;
/// `krm CONFIG` (kustomize's exec transformer plugin) the same.
#[test]
fn kpt_and_kustomize_run_it_as_a_function() {
    let d = tempfile::tempdir().unwrap();
    let pkg = d.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    let other = "apiVersion: v1\nkind: Service\nmetadata: {name: s} # flow\n";
    std::fs::write(pkg.join("app.yaml"), converted()).unwrap();
    std::fs::write(pkg.join("other.yaml"), other).unwrap();
    let config = d.path().join("fn.yaml");
    std::fs::write(&config, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: envshim}\ndata:\n  unconvert: \"true\"\n").unwrap();
    let exec = format!("{BIN} krm");
    let out = run(std::process::Command::new("kpt").args(["fn", "eval"]).arg(&pkg).args(["--exec", &exec, "--fn-config"]).arg(&config), "");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.no_sentinel();
    assert_eq!(docs(&std::fs::read_to_string(pkg.join("app.yaml")).unwrap()), docs(NATIVE));
    assert_eq!(std::fs::read_to_string(pkg.join("other.yaml")).unwrap(), other);
    // kustomize's exec transformer plugin: the config file as the argument, the stream on stdin.
    let back = kubectl_envshim(&["krm", config.to_str().unwrap()], &format!("{}---\n{other}", converted())).ok().to_string();
    assert_eq!(docs(&back), [docs(NATIVE), docs(other)].concat());
    // A workload it cannot undo: 78 and the path, nothing written.
    let edited = edited(&|c| c["command"] = json!(["/app"]));
    kubectl_envshim(&["krm", config.to_str().unwrap()], &edited)
        .fails(78, &["spec.template.spec.containers[0].command: container app: is not the converter's"]);
    // "false" converts, as without the key.
    std::fs::write(&config, "kind: ConfigMap\ndata:\n  unconvert: \"false\"\n  shim-image: r/e:1\n  entrypoint: app=/app\n").unwrap();
    assert!(kubectl_envshim(&["krm", config.to_str().unwrap()], NATIVE).ok().contains("ENVSHIM_MANIFEST_JSON"));
}

/// The converted manifest's JSON in `c` (its `$` halved), changed by `edit`, written back as the converter writes it.
fn manifest_edited(c: &mut Value, edit: impl Fn(&mut Value)) {
    let mut m: Value = serde_json::from_str(&c["env"][4]["value"].as_str().unwrap().replace("$$", "$")).unwrap();
    edit(&mut m);
    c["env"][4]["value"] = json!(m.to_string().replace('$', "$$"));
}

/// What would change the program and that `manifest` would hide (it shows
/// the original): a word after `[SHIM, "run"]`, an `ENVSHIM_*` entry the
/// converter did not write, a setting twice, a second manifest, a mount of
/// the converter's moved. Each refused by `unconvert` and `manifest` (78) at
/// its path, once; the input holds the sentinel (PLAIN's value), no message shows it.
#[test]
fn what_the_converter_did_not_write_is_refused_each_once() {
    let at = "spec.template.spec.containers[0]";
    let cases = program_and_env_edits().into_iter().chain(mount_edits());
    for (edit, messages) in cases {
        let input = edited(&edit);
        let out = kubectl_envshim(&["unconvert"], &input);
        let expected: Vec<String> = messages.iter().map(|m| format!("kubectl-envshim: stdin: document 1 (Deployment/web): {at}.{m}")).collect();
        let stderr = out.fails(78, &[]);
        assert_eq!(stderr.lines().count(), messages.len(), "each once: {stderr}");
        for (line, m) in stderr.lines().zip(&expected) {
            assert!(line.starts_with(m.as_str()), "{line}\nwanted {m}");
        }
        // convert and convert --check refuse the same, in the same words: never converted again over it.
        for args in [&["convert", "--entrypoint", r#"app=["/app","$(x)"]"#, "--wait", "5s"][..], &["convert", "--check", "--entrypoint", "app=/app"]] {
            assert_eq!(kubectl_envshim(args, &input).fails(78, &[]), stderr, "{args:?}");
        }
        // manifest shows nothing it cannot vouch for: the same refusals, in the container.
        let out = kubectl_envshim(&["manifest", "-c", "app"], &input);
        let stderr = out.fails(78, &[]);
        assert_eq!(stderr.lines().count(), messages.len(), "each once: {stderr}");
        for (line, m) in stderr.lines().zip(&messages) {
            let (path, what) = m.split_once(": container app: ").unwrap();
            assert!(line.starts_with(&format!("kubectl-envshim: stdin: container app: {path}: {what}")), "{line}\nwanted {m}");
        }
    }
}

const ADDED: &str = "added after the conversion: edit the original and convert again";
const CHANGED: &str = "changed after the conversion: edit the original and convert again";

/// Hand edits of the program line and of `env`, each with the message it gets.
fn program_and_env_edits() -> Vec<(Box<Edit>, Vec<String>)> {
    let (added, changed) = (ADDED, CHANGED);
    // env: PLAIN, ENVSHIM_SEEN_0..1, DB_URL, ENVSHIM_MANIFEST_JSON, ENVSHIM_WAIT, ENVSHIM_ENV_GRAMMAR, ENVSHIM_EXPANDED.
    let insert = |e: Value| move |c: &mut Value| c["env"].as_array_mut().unwrap().insert(7, e.clone());
    vec![
        (
            Box::new(|c| c["command"].as_array_mut().unwrap().push(json!(r#"--manifest-json={"env":[],"command":["/bin/sh"]}"#))),
            vec![format!("command[2]: container app: a word after the converter's [SHIM, \"run\"], which envshim reads as an option of its own: {added}")],
        ),
        (
            Box::new(|c| c["command"].as_array_mut().unwrap().push(json!("--volume=config=/elsewhere"))),
            vec![format!("command[2]: container app: a word after")],
        ),
        (
            Box::new(|c| c["command"].as_array_mut().unwrap().extend([json!("--watch"), json!("--env-file=/x")])),
            vec![format!("command[3]: container app: a word after")],
        ),
        (
            Box::new(insert(json!({"name": "ENVSHIM_MANIFEST_JSON", "value": r#"{"env":[],"command":["/bin/sh"]}"#}))),
            vec![format!("env[7]: container app: a second ENVSHIM_MANIFEST_JSON (the kubelet keeps the last, and envshim reads it): {added}")],
        ),
        (
            Box::new(insert(json!({"name": "ENVSHIM_ENV_FILE", "value": "/tmp/x.env"}))),
            vec![format!("env[7]: container app: ENVSHIM_ENV_FILE is not a setting the converter writes: {added}")],
        ),
        (
            Box::new(insert(json!({"name": "ENVSHIM_WATCH", "value": "true"}))),
            vec![format!("env[7]: container app: ENVSHIM_WATCH is not a setting the converter writes")],
        ),
        (
            Box::new(insert(json!({"name": "ENVSHIM_WAIT", "value": "1s"}))),
            vec![format!("env[7]: container app: ENVSHIM_WAIT again (the converter writes each of its settings once; the kubelet keeps the last): {added}")],
        ),
        (
            Box::new(insert(json!({"name": "ENVSHIM_ON_CHANGE", "value": "exit"}))),
            vec![format!("env[7]: container app: ENVSHIM_ON_CHANGE is a setting of --watch, which the command does not give")],
        ),
        (
            Box::new(|c| c["env"][5] = json!({"name": "ENVSHIM_WAIT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}})),
            vec![format!("env[5]: container app: ENVSHIM_WAIT is not a literal value, as the converter writes it: {changed}")],
        ),
        (Box::new(|c| c["env"][7]["value"] = json!("$")), vec![format!("env[7]: container app: ENVSHIM_EXPANDED is not the converter's")]),
        (Box::new(|c| drop(c["env"].as_array_mut().unwrap().remove(6))), vec![format!("env: container app: lacks ENVSHIM_ENV_GRAMMAR")]),
        (
            Box::new(|c| {
                c["env"].as_array_mut().unwrap().insert(0, json!({"name": "ENVSHIM_VALUE_0_A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}))
            }),
            vec![format!("env[0]: container app: ENVSHIM_VALUE_0_A is not the copy the converter writes")],
        ),
        (
            Box::new(|c| c["envFrom"] = json!([{"prefix": "ENVSHIM_", "configMapRef": {"name": "cm"}}])),
            vec![format!("envFrom[0].prefix: container app: starts with ENVSHIM_")],
        ),
    ]
}

/// Hand edits of the converter's mounts, each with the message it gets.
fn mount_edits() -> Vec<(Box<Edit>, Vec<String>)> {
    let changed = CHANGED;
    vec![
        (
            Box::new(|c| c["volumeMounts"][0]["mountPath"] = json!("/elsewhere")),
            vec![format!("volumeMounts[0]: container app: not the converter's mount of envshim, read-only at /.envshim/bin: {changed}")],
        ),
        (
            Box::new(|c| c["volumeMounts"][1]["readOnly"] = json!(false)),
            vec![format!("volumeMounts[1]: container app: not the converter's mount of config, read-only at /.envshim/volumes/config")],
        ),
        (
            Box::new(|c| drop(c["volumeMounts"].as_array_mut().unwrap().remove(0))),
            vec![format!("volumeMounts: container app: lacks the converter's read-only mount of envshim at /.envshim/bin: {changed}")],
        ),
        (
            Box::new(|c| c["volumeMounts"].as_array_mut().unwrap().push(json!({"name": "config", "mountPath": "/.envshim/bin/envshim"}))),
            vec![format!("volumeMounts[2]: container app: not a mount the converter writes")],
        ),
    ]
}

/// A volume the manifest reads through the container's own mount, moved:
/// refused (envshim would read another directory). What the converter
/// writes passes: `--watch` and its settings, each once.
#[test]
fn a_moved_mount_the_manifest_reads_is_refused_and_the_watch_settings_pass() {
    let at = "spec.template.spec.containers[0]";
    let changed = CHANGED;
    let own = NATIVE.replace("        env:\n", "        volumeMounts: [{name: config, mountPath: /etc/cfg}]\n        env:\n");
    let mut doc = docs(kubectl_envshim(&["convert", "--entrypoint", "app=/app"], &own).ok()).remove(0);
    doc["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][0]["mountPath"] = json!("/elsewhere");
    kubectl_envshim(&["unconvert"], &doc.to_string())
        .fails(78, &[&format!("{at}.volumeMounts: container app: no longer mounts config at /etc/cfg, where the manifest reads it: {changed}")]);
    let watch = kubectl_envshim(&["convert", "--entrypoint", "app=/app", "--watch", "--on-change", "exit", "--restart-timeout", "3s"], NATIVE).ok().to_string();
    assert_eq!(docs(kubectl_envshim(&["unconvert"], &watch).ok()), docs(NATIVE));
    kubectl_envshim(&["manifest"], &watch).succeeds();
}

/// `--listen` (with or without `--watch`) and the handover's settings, as the
/// converter writes them, come back; a value envshim refuses is refused.
#[test]
fn the_listen_and_handover_settings_come_back_and_a_changed_one_is_refused() {
    let at = "spec.template.spec.containers[0]";
    let changed = CHANGED;
    // --listen (with or without --watch) and the handover's settings, as written.
    let handover = ["--watch", "--on-change", "handover", "--ready-timeout", "30s", "--ready-delay", "2s", "--watch-splay", "30s", "--watch-replicas", "3"];
    for watch in [&[][..], &handover] {
        let mut args = vec!["convert", "--entrypoint", "app=/app", "--listen", "tcp::8080,unix:/run/app.sock"];
        args.extend_from_slice(watch);
        let listening = kubectl_envshim(&args, NATIVE).ok().to_string();
        assert_eq!(docs(kubectl_envshim(&["unconvert"], &listening).ok()), docs(NATIVE));
        kubectl_envshim(&["manifest"], &listening).succeeds();
    }
    // ENVSHIM_LISTEN carried with a value envshim refuses: refused as a changed setting.
    let mut doc = docs(kubectl_envshim(&["convert", "--entrypoint", "app=/app", "--listen", "tcp::8080"], NATIVE).ok()).remove(0);
    let env = doc["spec"]["template"]["spec"]["containers"][0]["env"].as_array_mut().unwrap();
    let k = env.iter().position(|e| e["name"] == "ENVSHIM_LISTEN").unwrap();
    env[k]["value"] = json!(format!("tcp:{SENTINEL}:80"));
    let out = kubectl_envshim(&["unconvert"], &doc.to_string());
    out.fails(78, &[&format!("{at}.env[{k}]: container app: ENVSHIM_LISTEN is not a value --listen takes: {changed}")]);
    out.no_sentinel();
}

/// A carried manifest that envshim refuses at the start is refused (78) as
/// `envshim check` refuses the same text, in its words: never shown as valid.
#[test]
fn a_manifest_envshim_refuses_is_refused_as_envshim_check_does() {
    let cases: Vec<(Box<Edit>, &str)> = vec![
        (Box::new(|m| m["command"] = json!([5])), "command[0]: expected a string, found a number"),
        (Box::new(|m| m["command"] = json!([format!("/app\u{0}{SENTINEL}")])), "command[0]: contains a NUL byte"),
        (Box::new(|m| m["hostPID"] = json!(true)), "hostPID: unknown field"),
    ];
    for (edit, reason) in cases {
        let input = edited(&move |c| manifest_edited(c, &edit));
        let text = docs(&input)[0]["spec"]["template"]["spec"]["containers"][0]["env"][4]["value"].as_str().unwrap().replace("$$", "$");
        let check = std::process::Command::new(crate::support::harness::envshim()).args(["check", "--manifest-json", &text]).output().unwrap();
        assert_eq!(check.status.code(), Some(78));
        assert!(String::from_utf8_lossy(&check.stderr).contains(&format!("--manifest-json: {reason}")), "{}", String::from_utf8_lossy(&check.stderr));
        let path = "spec.template.spec.containers[0].env[4].value";
        kubectl_envshim(&["unconvert"], &input).fails(
            78,
            &[&format!(
                "stdin: document 1 (Deployment/web): {path}: container app: the manifest in ENVSHIM_MANIFEST_JSON: {reason}: envshim refuses it at the start"
            )],
        );
        kubectl_envshim(&["manifest", "-c", "app"], &input)
            .fails(78, &[&format!("stdin: container app: env[4].value: the manifest in ENVSHIM_MANIFEST_JSON: {reason}")]);
        kubectl_envshim(&["convert", "--check", "--entrypoint", "app=/app"], &input)
            .fails(78, &[&format!("{path}: container app: the manifest in ENVSHIM_MANIFEST_JSON: {reason}")]);
    }
}
