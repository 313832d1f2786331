//! A converted container's manifest (`converted`, written by `kubectl envshim
//! convert`; docs/reference.md, "Converted containers"): the list runs on the
//! kubelet's view recorded in `ENVSHIM_SEEN_<j>`, never on the image's or
//! the runtime's variables; platform entries take their own copies
//! (`ENVSHIM_VALUE_<i>_A`/`_B`); no `KUBERNETES_SERVICE_URL` is added.

use crate::common::*;
use serde_json::json;

/// A converted manifest with `env`, the program printing its environment and `args`.
fn manifest(env: serde_json::Value, seen: &[&str], args: &[&str], vol: &Volume) -> String {
    json!({
        "env": env,
        "command": ["/usr/bin/env", "-0"],
        "args": args,
        "volumeMounts": [{ "name": "cfg", "mountPath": vol.dir() }],
        "converted": { "seen": seen },
    })
    .to_string()
}

#[test]
fn expansion_sees_the_kubelets_view_not_the_image_or_the_runtime() {
    let vol = Volume::new();
    vol.file("app.env", "F='from-file'\n");
    let env = json!([
        file_key_ref("F", "cfg", "app.env", "F", false),
        { "name": "URL", "value": "$(HOST)/$(F)/$(HOME)/$(LATER)" },
        { "name": "LATER", "value": "late" },
    ]);
    // HOST the kubelet knew (db); HOME it did not (the image's ENV): its view holds `$(HOME)`.
    // LATER: the kubelet had no value where the list starts; the inherited one is its own, later.
    let out = envshim(["run"])
        .env("ENVSHIM_MANIFEST_JSON", manifest(env, &["HOST", "F", "HOME", "LATER"], &[], &vol))
        .envs([("ENVSHIM_SEEN_0", "db"), ("ENVSHIM_SEEN_1", "$(F)"), ("ENVSHIM_SEEN_2", "$(HOME)"), ("ENVSHIM_SEEN_3", "$(LATER)")])
        .envs([("HOME", "/root"), ("HOST", "db"), ("LATER", "late"), ("URL", "wrong")])
        .envs([("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("KUBERNETES_SERVICE_PORT", "443")])
        .run();
    out.ok();
    let map = out.env_map();
    assert_eq!(map["URL"], "db/from-file/$(HOME)/$(LATER)");
    assert_eq!(map["F"], "from-file");
    assert_eq!(map["HOME"], "/root", "a name the list does not set keeps the runtime's value");
    assert!(!map.contains_key("KUBERNETES_SERVICE_URL"), "the kubelet adds no such variable: {map:?}");
    assert!(map.keys().all(|k| !k.starts_with("ENVSHIM_")), "{map:?}");
    assert!(!out.stderr_str().contains("warning"), "{}", out.stderr_str());
}

#[test]
fn the_program_line_sees_the_view_too() {
    let vol = Volume::new();
    vol.file("app.env", "F='v'\n");
    let vol2 = Volume::new();
    let args = vol2.join("args");
    let env = json!([file_key_ref("F", "cfg", "app.env", "F", false), { "name": "A", "value": "a-$(F)" }]);
    let m = json!({
        "env": env,
        "command": ["/bin/sh", "-c", "printf '%s\\n' \"$@\" > \"$0\"", args.to_str().unwrap()],
        "args": ["$(A)", "$(HOSTNAME)", "$(B)", "$$(A)"],
        "volumeMounts": [{ "name": "cfg", "mountPath": vol.dir() }],
        "converted": { "seen": ["F", "A", "HOSTNAME", "B"] },
    })
    .to_string();
    envshim(["run"])
        .env("ENVSHIM_MANIFEST_JSON", m)
        .envs([("ENVSHIM_SEEN_0", "$(F)"), ("ENVSHIM_SEEN_1", "$(A)"), ("ENVSHIM_SEEN_2", "$(HOSTNAME)"), ("ENVSHIM_SEEN_3", "b")])
        .envs([("HOSTNAME", "pod-1"), ("PATH", "/usr/bin:/bin")])
        .run()
        .ok();
    assert_eq!(String::from_utf8(vol2.read("args")).unwrap(), "a-v\n$(HOSTNAME)\nb\n$(A)\n");
}

#[test]
fn a_platform_entry_takes_its_copies_and_an_optional_one_that_found_nothing_is_skipped() {
    let vol = Volume::new();
    vol.file("app.env", format!("PASS='{SENTINEL}'\n"));
    let secret = |optional: bool| json!({ "name": "PASS", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k", "optional": optional } } });
    let env = json!([file_key_ref("PASS", "cfg", "app.env", "PASS", false), secret(true), { "name": "ECHO", "value": "$(PASS)" }, secret(false)]);
    let run = |copies: &[(&str, &str)]| {
        envshim(["run"])
            .env("ENVSHIM_MANIFEST_JSON", manifest(env.clone(), &["PASS"], &[], &vol))
            .envs([("ENVSHIM_SEEN_0", "$(PASS)"), ("PASS", "changeme")])
            .envs(copies.iter().copied())
            .run()
    };
    // The optional Secret absent (its copies left at their different literals): the file's value stays.
    let out = run(&[("ENVSHIM_VALUE_1_A", "0"), ("ENVSHIM_VALUE_1_B", "1"), ("ENVSHIM_VALUE_3_A", "req"), ("ENVSHIM_VALUE_3_B", "req")]);
    out.ok();
    assert_eq!(out.env_map()["ECHO"], SENTINEL);
    assert_eq!(out.env_map()["PASS"], "req");
    // Present (both copies equal, whatever the value): it replaces the file's value.
    let out = run(&[("ENVSHIM_VALUE_1_A", "1"), ("ENVSHIM_VALUE_1_B", "1"), ("ENVSHIM_VALUE_3_A", "0"), ("ENVSHIM_VALUE_3_B", "0")]);
    out.ok();
    assert_eq!(out.env_map()["ECHO"], "1");
    assert_eq!(out.env_map()["PASS"], "0");
}

#[test]
fn a_view_variable_missing_means_the_pod_was_edited_after_conversion() {
    let vol = Volume::new();
    vol.file("app.env", format!("F='{SENTINEL}'\n"));
    let env = json!([file_key_ref("F", "cfg", "app.env", "F", false)]);
    let out = envshim(["run"]).env("ENVSHIM_MANIFEST_JSON", manifest(env, &["A", "B"], &[], &vol)).env("ENVSHIM_SEEN_0", "a").run();
    out.fails_with(78, &["converted.seen[1]: ENVSHIM_SEEN_1 is not set", "convert the original again"]);
    out.no_sentinel();
}

#[test]
fn converted_is_checked_like_the_rest_of_the_manifest() {
    for (converted, expected) in [
        (json!({ "seen": "A" }), "converted.seen: expected an array"),
        (json!({ "seen": [1] }), "converted.seen[0]: expected a string"),
        (json!({ "sen": [] }), "converted.sen: unknown field"),
        (json!([]), "converted: expected an object"),
    ] {
        let m = json!({ "env": [], "command": ["/usr/bin/env"], "converted": converted }).to_string();
        envshim(["run"]).env("ENVSHIM_MANIFEST_JSON", m).run().fails_with(78, &[expected]);
    }
}

#[test]
fn private_variables_are_warned_about_outside_a_converted_container() {
    let out = envshim(["run", "--", "/usr/bin/env", "-0"]).env("ENVSHIM_SEEN_0", "x").run();
    out.code(0);
    out.stderr_has("ENVSHIM_SEEN_0 is not a variable envshim knows");
    assert!(!out.env_map().contains_key("ENVSHIM_SEEN_0"));
}

/// docs/kubelet-differences.md row 14: an `ENVSHIM_*` key a ConfigMap gives
/// through `envFrom` reaches a converted container's envshim as inherited:
/// it is read as envshim's configuration (here `ENVSHIM_ENV_FILE` adds its
/// file's variables) and removed from the program's environment.
#[test]
fn an_inherited_envshim_variable_configures_a_converted_container() {
    let vol = Volume::new();
    vol.file("app.env", "F='f'\n");
    vol.file("extra.env", format!("EXTRA='{SENTINEL}'\n"));
    let env = json!([file_key_ref("F", "cfg", "app.env", "F", false)]);
    let out = envshim(["run"]).env("ENVSHIM_MANIFEST_JSON", manifest(env, &[], &[], &vol)).env("ENVSHIM_ENV_FILE", format!("{}/extra.env", vol.dir())).run();
    out.ok();
    let env = out.env_map();
    assert_eq!(env.get("EXTRA").map(String::as_str), Some(SENTINEL), "{env:?}");
    assert!(!env.contains_key("ENVSHIM_ENV_FILE"), "{env:?}");
    out.stderr_no_sentinel();
}
