use super::*;

fn errors(json: &str) -> Vec<String> {
    parse(json.as_bytes()).unwrap_err().into_iter().map(|e| { assert_eq!(e.code, 78); e.message }).collect()
}

#[test]
fn full_example_from_the_spec() {
    let m = parse(br#"{
      "name": "app", "image": "x", "resources": {},
      "volumeMounts": [ { "name": "config", "mountPath": "/data", "readOnly": true } ],
      "envFrom": [
        { "fileRef": { "volumeName": "config", "path": "all.env", "optional": true }, "prefix": "APP_" },
        { "configMapRef": { "name": "cm" } }
      ],
      "env": [
        { "name": "CONFIG_VAR", "valueFrom": { "fileKeyRef": {
            "volumeName": "config", "path": "config.env", "key": "CONFIG_VAR", "optional": false } } },
        { "name": "PUBLIC_URL", "value": "http://$(H):$(P)" },
        { "name": "FROM_PLATFORM", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k" } } },
        { "name": "EMPTY" }
      ],
      "command": ["/app/server"],
      "args": ["--url=$(PUBLIC_URL)"]
    }"#)
    .unwrap();
    assert_eq!(m.volume_mounts, vec![VolumeMount { name: "config".into(), mount_path: "/data".into() }]);
    let file = |p: &str, optional| FileRef { volume_name: "config".into(), path: p.into(), optional };
    assert_eq!(m.env_from, vec![EnvFrom::File { file: file("all.env", true), prefix: "APP_".into() }, EnvFrom::Platform]);
    assert_eq!(m.env[0].source, EnvSource::FileKey { file: file("config.env", false), key: "CONFIG_VAR".into() });
    assert_eq!(m.env[1].source, EnvSource::Value("http://$(H):$(P)".into()));
    assert_eq!(m.env[2].source, EnvSource::Platform);
    assert_eq!(m.env[3].source, EnvSource::Value(String::new()));
    assert_eq!(m.command, vec!["/app/server"]);
    assert_eq!(m.args, vec!["--url=$(PUBLIC_URL)"]);
}

#[test]
fn every_error_names_its_json_path() {
    let table: &[(&str, &str)] = &[
        (r#"[]"#, "manifest: expected a JSON object (a Kubernetes container spec), found an array"),
        (r#"{"env": {}}"#, "manifest: env: expected an array, found an object"),
        (r#"{"env": [{"name": "A", "valu": "x"}]}"#, "manifest: env[0].valu: unknown field"),
        (r#"{"env": [{"value": "x"}]}"#, "manifest: env[0].name: required field is missing"),
        (r#"{"env": [{"name": 5}]}"#, "manifest: env[0].name: expected a string, found a number"),
        (r#"{"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {}}}]}"#, "manifest: env[0]: has both value and valueFrom"),
        (r#"{"env": [{"name": "A", "valueFrom": {}}]}"#, "manifest: env[0].valueFrom: needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)"),
        (r#"{"env": [{"name": "A", "valueFrom": {"fieldRef": {}, "secretKeyRef": {}}}]}"#, "manifest: env[0].valueFrom: needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)"),
        (r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optinal": true}}}]}"#, "manifest: env[0].valueFrom.fileKeyRef.optinal: unknown field"),
        (r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p"}}}]}"#, "manifest: env[0].valueFrom.fileKeyRef.key: required field is missing"),
        (r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optional": "yes"}}}]}"#, "manifest: env[0].valueFrom.fileKeyRef.optional: expected a boolean, found a string"),
        (r#"{"env": [{"name": "A", "valueFrom": {"bogusRef": {}}}]}"#, "manifest: env[0].valueFrom.bogusRef: unknown field"),
        (r#"{"envFrom": [{"fileRef": {"volumeName": "v", "path": "p", "key": "k"}}]}"#, "manifest: envFrom[0].fileRef.key: unknown field"),
        (r#"{"envFrom": [{"prefix": "X"}]}"#, "manifest: envFrom[0]: needs exactly one of fileRef, configMapRef, secretRef"),
        (r#"{"envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "secretRef": {}}]}"#, "manifest: envFrom[0]: needs exactly one of fileRef, configMapRef, secretRef"),
        (r#"{"envFrom": [{"fileRef": {"path": "p"}}]}"#, "manifest: envFrom[0].fileRef.volumeName: required field is missing"),
        (r#"{"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "x"}]}"#, "manifest: volumeMounts[0].subPath: is not supported (the volume root would be ambiguous)"),
        (r#"{"volumeMounts": [{"name": "v", "mountPath": "/d", "subPathExpr": "x"}]}"#, "manifest: volumeMounts[0].subPathExpr: is not supported (the volume root would be ambiguous)"),
        (r#"{"volumeMounts": [{"name": "v", "mountPth": "/d"}]}"#, "manifest: volumeMounts[0].mountPth: unknown field"),
        (r#"{"command": ["a", 1]}"#, "manifest: command[1]: expected a string, found a number"),
        (r#"{"args": "x"}"#, "manifest: args: expected an array, found a string"),
        (r#"{"args": ["a\u0000b"]}"#, "manifest: args[0]: contains a NUL byte"),
    ];
    for (json, want) in table {
        let got = errors(json);
        assert!(got.iter().any(|m| m == want), "{json}: {got:?}");
    }
}

#[test]
fn reports_every_problem_not_just_the_first() {
    let got = errors(r#"{"env": [{"name": "A", "x": 1}, {"value": "v"}], "volumeMounts": [{"name": "v"}]}"#);
    assert_eq!(got.len(), 3, "{got:?}");
}

#[test]
fn null_is_absent_and_empty_arrays_are_unset() {
    let m = parse(br#"{"env": null, "command": [], "args": null, "envFrom": [], "volumeMounts": null}"#).unwrap();
    assert_eq!(m, Manifest::default());
}

#[test]
fn errors_never_quote_values() {
    let s = "SENTINEL-s3cr3t";
    for json in [
        format!(r#"{{"env": [{{"name": "A", "value": "{s}", "valueFrom": {{}}}}]}}"#),
        format!(r#"{{"env": [{{"name": "A", "value": ["{s}"]}}]}}"#),
        format!(r#"{{"env": [{{"name": "A", "value": "{s}"#),
        format!(r#"{{"env": [{{"name": "A", "value": "{s}\q"}}]}}"#),
        format!(r#"{{"command": "{s}"}}"#),
    ] {
        let msgs = errors(&json);
        assert!(msgs.iter().all(|m| !m.contains(s)), "{msgs:?}");
    }
}

#[test]
fn syntax_errors_are_one_line() {
    let msgs = errors("{\n\"env\": [\n");
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with("manifest is not valid JSON: "), "{}", msgs[0]);
    assert!(!msgs[0].contains('\n'));
}
