//! `--manifest-json TEXT` / `ENVSHIM_MANIFEST_JSON` (docs/reference.md §1): the manifest's
//! text itself, as `kubectl envshim convert` writes it into a container. Same
//! schema, limit and errors as a manifest file; exclusive with one (78); the
//! messages name the option or the variable; the variable never reaches the program.

use crate::common::*;
use serde_json::json;

#[test]
fn the_text_is_the_manifest_from_the_option_and_from_the_variable() {
    let vol = Volume::new();
    vol.file("app.env", format!("TOKEN={SENTINEL}\n"));
    let manifest = json!({
        "volumeMounts": [{ "name": "config", "mountPath": vol.dir() }],
        "env": [file_key_ref("TOKEN", "config", "app.env", "TOKEN", false), { "name": "URL", "value": "x-$(TOKEN)-$$(TOKEN)" }],
        "command": ["/usr/bin/env", "-0"],
    })
    .to_string();
    let from_option = envshim(["run", "--manifest-json", &manifest]).run();
    from_option.ok();
    let map = from_option.env_map();
    assert_eq!(map.get("TOKEN").map(String::as_str), Some(SENTINEL));
    assert_eq!(map.get("URL").map(String::as_str), Some(format!("x-{SENTINEL}-$(TOKEN)").as_str()));
    let from_env = envshim(["run"]).env("ENVSHIM_MANIFEST_JSON", &manifest).run();
    from_env.ok();
    // ENVSHIM_* is configuration: the program does not see the manifest.
    assert_eq!(from_env.env_map(), map);
    assert!(!map.contains_key("ENVSHIM_MANIFEST_JSON"), "{map:?}");
}

#[test]
fn the_option_wins_over_the_variable_and_the_default_file_is_not_read() {
    let a = json!({ "env": [{ "name": "A", "value": "option" }], "command": ["/usr/bin/env", "-0"] }).to_string();
    let b = json!({ "env": [{ "name": "A", "value": "variable" }], "command": ["/usr/bin/env", "-0"] }).to_string();
    let out = envshim(["run", "--manifest-json", &a]).env("ENVSHIM_MANIFEST_JSON", &b).run();
    out.ok();
    assert_eq!(out.env_map().get("A").map(String::as_str), Some("option"));
}

#[test]
fn with_a_manifest_file_too_is_78_whichever_way_each_is_given() {
    let vol = Volume::new();
    let file = vol.file_str("m.json", "{}");
    let text = format!(r#"{{"env":[{{"name":"S","value":"{SENTINEL}"}}]}}"#);
    let runs = [
        envshim(["run", "--manifest", &file, "--manifest-json", &text, "--", "/bin/true"]),
        envshim(["run", "--manifest", &file, "--", "/bin/true"]).env("ENVSHIM_MANIFEST_JSON", &text),
        envshim(["run", "--manifest-json", &text, "--", "/bin/true"]).env("ENVSHIM_MANIFEST", &file),
        envshim(["check"]).env("ENVSHIM_MANIFEST", &file).env("ENVSHIM_MANIFEST_JSON", &text),
    ];
    let names = ["--manifest-json", "ENVSHIM_MANIFEST_JSON", "--manifest-json", "ENVSHIM_MANIFEST_JSON"];
    for (run, name) in runs.into_iter().zip(names) {
        let out = run.run();
        out.fails_with(78, &[name, "exclusive"]);
        out.no_sentinel();
    }
}

#[test]
fn errors_are_a_manifest_files_and_name_the_option_or_the_variable() {
    // Not JSON: 78.
    let bad = format!(r#"{{"env":[{{"name":"S","value":"{SENTINEL}"}}"#);
    let out = envshim(["run", "--manifest-json", &bad, "--", "/bin/true"]).run();
    out.fails_with(78, &["--manifest-json is not valid JSON"]);
    out.no_sentinel();
    // A schema error names its JSON path.
    let typo = format!(
        r#"{{"env":[{{"name":"S","value":"{SENTINEL}"}},{{"name":"T","valueFrom":{{"fileKeyRef":{{"volumeName":"v","path":"p","key":"k","optionl":true}}}}}}]}}"#
    );
    let out = envshim(["run", "--", "/bin/true"]).env("ENVSHIM_MANIFEST_JSON", &typo).run();
    out.fails_with(78, &["ENVSHIM_MANIFEST_JSON: env[1].valueFrom.fileKeyRef.optionl: unknown field"]);
    out.no_sentinel();
    // A missing volume file: the file's own error (66), as with a manifest file.
    let vol = Volume::new();
    let missing = json!({ "volumeMounts": [{ "name": "v", "mountPath": vol.dir() }], "env": [file_key_ref("S", "v", "gone.env", "S", false)] }).to_string();
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_MANIFEST_JSON", &missing).run().fails_with(66, &["gone.env"]);
}

#[test]
fn a_text_as_long_as_linux_passes_one_argument_or_variable() {
    // Linux caps one argument or variable at 128 KiB (MAX_ARG_STRLEN), below
    // the manifest's 1 MiB limit: the longest text the kernel passes is read.
    let head = r#"{"command":["/bin/true"]"#;
    let text = format!("{head}{}}}", " ".repeat(128 * 1024 - 64 - head.len()));
    envshim(["run", "--manifest-json", &text]).run().ok();
    envshim(["run"]).env("ENVSHIM_MANIFEST_JSON", &text).run().ok();
}

/// `--container` picks a container of a whole object given as the text, and
/// its messages name the option or the variable, not a manifest file.
#[test]
fn container_works_on_the_text_and_names_the_option_or_the_variable() {
    let pod = json!({"kind": "Pod", "spec": {"containers": [
        {"name": "a", "env": [{"name": "WHO", "value": "a"}]},
        {"name": "dup", "env": [{"name": "X", "value": SENTINEL}]},
        {"name": "dup"}
    ]}})
    .to_string();
    let out = envshim(["run", "--manifest-json", &pod, "--container", "a", "--"]).args(print_env()).run();
    out.ok();
    assert_eq!(out.env_map()["WHO"], "a");
    envshim(["check", "--manifest-json", &pod, "--container", "dup"])
        .run()
        .no_sentinel()
        .fails_with(78, &["--container dup: two containers of --manifest-json have that name: spec.containers[1] and spec.containers[2]"]);
    envshim(["check", "--container", "dup"])
        .env("ENVSHIM_MANIFEST_JSON", &pod)
        .run()
        .no_sentinel()
        .fails_with(78, &["two containers of ENVSHIM_MANIFEST_JSON have"]);
    envshim(["check", "--manifest-json", &pod]).run().no_sentinel().fails_with(78, &["--manifest-json is a Pod, not a container spec"]);
}
