//! The converter's messages show input-derived text (names, kinds, keys,
//! paths, file names) as envshim does, through its `escape`: a name with a
//! line break forges no line, an ESC or OSC sequence never reaches the
//! terminal. Through the built binary; every input holds the sentinel.

use serde_json::{json, Value};

use crate::support::{run, Out, BIN, SENTINEL};

fn kubectl_envshim(args: &[&str], stdin: &str) -> Out {
    run(std::process::Command::new(BIN).args(args), stdin)
}

/// A name that would print a line of its own.
const FORGED: &str = "web\nkubectl-envshim: converted 3 documents, all fine";
/// Red text, and a hyperlink (OSC 8), each a terminal's escape sequence.
const RED: &str = "app\x1b[31mred";
const LINK: &str = "cfg\x1b]8;;https://example.com/\x07link\x1b]8;;\x07";

/// A Pod named `name` whose container `container` reads TOKEN from `volume`
/// (not mounted); an exec probe refers to it; PLAIN holds the sentinel.
fn pod(name: &str, container: &str, volume: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": container, "image": "app:1", "command": ["/app"],
            "env": [{"name": "PLAIN", "value": SENTINEL}, {"name": "TOKEN", "valueFrom": {"fileKeyRef": {"volumeName": volume, "path": "a.env", "key": "TOKEN"}}}],
            "livenessProbe": {"exec": {"command": ["sh", "-c", "test -n \"$TOKEN\""]}}}],
        "volumes": [{"name": volume, "emptyDir": {}}]}})
}

/// stderr: only `kubectl-envshim: ` lines, `lines` of them, no control
/// character but the line breaks, no forged line, no sentinel.
#[track_caller]
fn clean(out: &Out, lines: usize) {
    out.no_sentinel();
    assert!(!out.stderr.chars().any(|c| c.is_control() && c != '\n'), "a control character: {:?}", out.stderr);
    assert_eq!(out.stderr.lines().count(), lines, "{}", out.stderr);
    for l in out.stderr.lines() {
        assert!(l.starts_with("kubectl-envshim: ") && !l.starts_with("kubectl-envshim: converted"), "{l}");
    }
}

#[test]
fn names_with_control_characters_are_escaped_in_every_message() {
    let native = pod(FORGED, RED, "cfg").to_string();
    // --check's summary and the probe's warning.
    let out = kubectl_envshim(&["convert", "--check"], &native);
    assert_eq!(out.code, 1, "{}", out.stderr);
    clean(&out, 2);
    assert!(
        out.stderr.contains("(Pod/web\\x0akubectl-envshim: converted 3 documents, all fine): would convert containers app\\x1b[31mred\n"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("which container app\\x1b[31mred gets only from envshim"), "{}", out.stderr);
    // A refusal naming an env entry, and a key of the document on a path.
    let mut refused = pod(FORGED, RED, "cfg");
    refused["spec"]["containers"][0]["env"].as_array_mut().unwrap().push(json!({"name": format!("ENVSHIM_{LINK}"), "value": SENTINEL}));
    refused["spec"]["x\x1b[2Jy"] = json!({"valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "K"}}});
    let out = kubectl_envshim(&["convert"], &refused.to_string());
    assert_eq!((out.code, out.stdout.as_str()), (78, ""), "{}", out.stderr);
    clean(&out, 1);
    // (a name with a control character is no variable name the API server takes: refused as such)
    assert!(out.stderr.contains("env[2].name: container app\\x1b[31mred: is not a valid variable name"), "{}", out.stderr);
    let out =
        kubectl_envshim(&["convert"], &pod(FORGED, RED, "cfg").to_string().replace("livenessProbe", "x\\u001b[2Jy\":{\"valueFrom\":{\"fileKeyRef\":{}}},\"l"));
    clean(&out, 1);
    assert!(out.stderr.contains("spec.containers[0].x\\x1b[2Jy.valueFrom.fileKeyRef: a fileKeyRef outside the env"), "{}", out.stderr);
    // unconvert and manifest: an entry the converter did not write.
    let converted = kubectl_envshim(&["convert"], &native);
    let mut edited: Value = crate::support::json_docs(converted.succeeds())[0].clone();
    let env = edited["spec"]["containers"][0]["env"].as_array_mut().unwrap();
    env.insert(env.len() - 1, json!({"name": format!("ENVSHIM_{RED}"), "value": "x"}));
    for args in [&["unconvert"][..], &["manifest"]] {
        let out = kubectl_envshim(args, &edited.to_string());
        assert_eq!((out.code, out.stdout.as_str()), (78, ""), "{}", out.stderr);
        clean(&out, 1);
        assert!(out.stderr.contains("ENVSHIM_app\\x1b[31mred is not a setting the converter writes"), "{}", out.stderr);
    }
    // A volume name the API server refuses: refused at its path, escaped.
    let linked = pod(FORGED, RED, LINK).to_string();
    let out = kubectl_envshim(&["convert"], &linked);
    assert_eq!((out.code, out.stdout.as_str()), (78, ""), "{}", out.stderr);
    clean(&out, 1);
    assert!(out.stderr.contains("fileKeyRef.volumeName: container app\\x1b[31mred: "), "{}", out.stderr);
    // manifest's warning names the container and the volume as convert does.
    let out = kubectl_envshim(&["manifest"], &linked);
    assert_eq!(out.code, 0, "{}", out.stderr);
    clean(&out, 1);
    assert!(
        out.stderr.contains("container app\\x1b[31mred reads the volume cfg\\x1b]8;;https://example.com/\\x07link\\x1b]8;;\\x07 without mounting it"),
        "{}",
        out.stderr
    );
    let out = kubectl_envshim(&["manifest", "-c", "no\x1b[31mne"], &native);
    clean(&out, 1);
    // A file name and a stray word.
    let out = kubectl_envshim(&["convert", "-f", "/nonexistent/a\nkubectl-envshim: converted.yaml"], "");
    assert_eq!(out.code, 65, "{}", out.stderr);
    clean(&out, 1);
    let out = kubectl_envshim(&["convert", "a\x1b[31mb"], "");
    assert_eq!(out.code, 2, "{}", out.stderr);
    clean(&out, 1);
}
