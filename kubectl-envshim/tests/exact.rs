//! The converter, exact: the program in a converted pod gets
//! exactly the argv and environment that the kubelet 1.35 gives it with
//! native `fileKeyRef`, except what docs/kubelet-differences.md lists.
//!
//! Black-box, through the real binaries: each pod is written to a file, run
//! through `kubectl-envshim convert`, and its converted container is given to
//! the kubelet model (`support/kubelet.rs`, written from the Kubernetes
//! documents) and then to the real `envshim`, which execs a printer
//! (`support/printer.rs`) with what it built. The same model run on the pod as
//! written is what the program must see. See `support/harness.rs` for the two
//! paths and `support/generate.rs` for the random pods.
//!
//! `random_pods_start_converted_as_natively` (`exact/random_pods.rs`) runs EXACT_PODS (3,000) pods
//! from the fixed seed EXACT_SEED; set both to explore further (EXACT_ONLY=p17
//! runs one of them, EXACT_SHOW=N lists N differing pods, not 8). The named
//! tests are the classes of divergence the converter once had, one each;
//! `references_to_earlier_names_only` is the control, exact already.

use crate::support::{generate, harness, kubelet};

use std::collections::BTreeMap;

use serde_json::{json, Value};

use harness::{Case, Converted, Format, Outcome, SENTINEL};
use kubelet::{Started, World};

mod engine;
mod random_pods;

// ---------------------------------------------------------------- the model

/// The model's expansion passes every row of the design doc's table.
#[test]
fn the_models_expansion_passes_the_design_doc_table() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/expansion-seed-table.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mapping: BTreeMap<String, String> = table["mapping"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    let rows = table["rows"].as_array().unwrap();
    assert!(rows.len() >= 30, "the table has {} rows", rows.len());
    for row in rows {
        let input = row["input"].as_str().unwrap();
        let got = kubelet::expand(input, |n| mapping.get(n).cloned());
        assert_eq!(got, row["expected"].as_str().unwrap(), "input {input:?}");
    }
}

/// The model's env-file reader gives what the kubelet's own gives on every
/// case of its table (`tests/data/kubelet-parse-env.json`, which the shim's
/// `--env-grammar kubelet` passes too: tests/kubelet_grammar.rs).
#[test]
fn the_models_env_file_reader_passes_the_kubelets_cases() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/kubelet-parse-env.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rows = table["rows"].as_array().unwrap();
    assert!(rows.len() >= 30, "the table has {} rows", rows.len());
    for row in rows {
        let (name, content, key) = (row["name"].as_str().unwrap(), row["content"].as_str().unwrap(), row["key"].as_str().unwrap());
        let got = kubelet::env_file_value(content, key);
        match row.get("error") {
            Some(e) => {
                let why = got.expect_err(name);
                assert!(why.starts_with(&format!("line {}:", e["line"])), "{name}: {why}");
                assert!(why.contains(&e["kubelet_reason"].as_str().unwrap().replace(" is not allowed", "")), "{name}: {why}");
            }
            None => assert_eq!(got.as_ref().map(|v| v.as_deref()), Ok(row["value"].as_str()), "{name}"),
        }
    }
}

// ------------------------------------------- reproducing a case

/// A case as a reader needs it to reproduce: the pod, and the world around it.
fn describe(case: &Case) -> String {
    let files: BTreeMap<String, String> = case
        .world
        .volumes
        .iter()
        .flat_map(|(v, dir)| std::fs::read_dir(dir).unwrap().map(move |f| (v.clone(), f.unwrap().path())))
        .map(|(v, f)| (format!("{v}/{}", f.file_name().unwrap().to_string_lossy()), std::fs::read_to_string(&f).unwrap()))
        .collect();
    format!(
        "pod: {}\n--entrypoint: {:?}\nConfigMaps: {:?}\nSecrets: {:?}\nservice variables: {:?}\nenv files: {:?}\nimage: {:?}",
        serde_json::to_string_pretty(&case.pod).unwrap(),
        case.entrypoint,
        case.world.config_maps,
        case.world.secrets,
        case.world.service_env,
        files,
        case.world.image
    )
}

// ------------------------------------------------- the named cases --

/// Runs `check` on every variant (label, value), then fails naming every
/// failing one, not only the first (each one's message is printed above).
fn every<L: std::fmt::Display, T>(variants: impl IntoIterator<Item = (L, T)>, check: impl Fn(&T)) {
    let failures: Vec<String> = variants
        .into_iter()
        .filter_map(|(label, v)| {
            let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&v))).err()?;
            let why = failed.downcast_ref::<String>().cloned().or_else(|| failed.downcast_ref::<&str>().map(|s| s.to_string()));
            Some(format!("  {label}: {}", why.unwrap_or_default().lines().next().unwrap_or_default()))
        })
        .collect();
    assert!(failures.is_empty(), "{} variant(s) fail:\n{}", failures.len(), failures.join("\n"));
}

/// `F`: an entry taking `K` from `cfg/app.env` (which holds `K='v'`), so the
/// container is converted.
fn f() -> Value {
    json!({"name": "F", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "K"}}})
}

/// The printer, then `words`.
fn printer(words: &[&str]) -> Value {
    let mut line = vec![harness::printer().to_string()];
    line.extend(words.iter().map(|w| w.to_string()));
    json!(line)
}

/// The minimal pod: volume `cfg` with `app.env` holding `file`;
/// container `app` with `fields` (its command, env, ...), mounting `cfg`.
fn pod(dir: &tempfile::TempDir, fields: Value, file: &str) -> Case {
    let cfg = dir.path().join("cfg");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(cfg.join("app.env"), file).unwrap();
    let mut c = json!({"name": "app", "image": "app:1"});
    for (k, v) in fields.as_object().unwrap() {
        c[k] = v.clone();
    }
    // Every input holds the sentinel (checked on every stderr by the harness).
    let env = c["env"].as_array_mut().unwrap();
    if !env.iter().any(|e| e["value"] == SENTINEL) {
        env.insert(0, json!({"name": "SECRET", "value": SENTINEL}));
    }
    c["volumeMounts"] = json!([{"name": "cfg", "mountPath": cfg}]);
    let image = generate::image(harness::printer());
    let has_command = c["command"].as_array().is_some_and(|w| !w.is_empty());
    Case {
        pod: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [c], "volumes": [{"name": "cfg", "emptyDir": {}}]}}),
        container: "app".into(),
        entrypoint: (!has_command).then(|| image.entrypoint.clone()),
        world: World {
            config_maps: BTreeMap::new(),
            secrets: BTreeMap::new(),
            service_env: BTreeMap::from([("KUBERNETES_SERVICE_HOST".into(), "10.96.0.1".into()), ("KUBERNETES_SERVICE_PORT".into(), "443".into())]),
            fields: BTreeMap::from([("metadata.name".into(), "p".into())]),
            volumes: BTreeMap::from([("cfg".into(), cfg)]),
            image,
            hostname: "p".into(),
        },
    }
}

/// Converts the case alone (in `format`) and asserts that the converted
/// program starts exactly as the native one. Returns the native start.
#[track_caller]
fn exact(case: &Case, format: Format, extra: &[&str]) -> Started {
    let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let native = harness::native(case);
    let converted = match harness::convert_batch(&[case], format, &extra).remove(0) {
        Converted::Refused(code, err) => panic!("refused ({code}): {err}\n{}", describe(case)),
        Converted::Container(c, w) => harness::converted(&c, &w),
    };
    let diffs = harness::differences(&native, &converted);
    assert!(diffs.is_empty(), "the converted program differs from the native one: {}\n{}", diffs.join("; "), describe(case));
    match native {
        Outcome::Started(s) => s,
        Outcome::Fails(why) => panic!("the native pod does not start ({why}): a test mistake"),
    }
}

/// The control: a pod whose entries refer only to names defined before them,
/// with no image or runtime name in sight, is exact today already; the
/// harness must see no difference there.
#[test]
fn references_to_earlier_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let env = json!([{"name": "A", "value": "a"}, {"name": "B", "value": "$(A)-b"}, f(), {"name": "C", "value": "$(F)/$(B)/$$(A)/$(NOPE)"}]);
    let case = pod(&dir, json!({"command": printer(&["$(C)", "$$", "$(KUBERNETES_SERVICE_PORT)"]), "env": env}), "K='v'\n");
    for format in harness::FORMATS {
        let s = exact(&case, format, &[]);
        assert_eq!(s.argv[1..], ["v/a-b/$(A)/$(NOPE)", "$", "443"]);
        assert_eq!(s.env["F"], "v");
    }
}

#[test]
fn forward_reference() {
    let dir = tempfile::tempdir().unwrap();
    let case = pod(
        &dir,
        json!({"command": printer(&["$(URL)"]), "env": [{"name": "URL", "value": "http://$(HOST)/"}, {"name": "HOST", "value": "db"}, f()]}),
        "K='v'\n",
    );
    let s = exact(&case, Format::YamlStream, &[]);
    assert_eq!(s.env["URL"], "http://$(HOST)/");
    assert_eq!(s.argv[1], "http://$(HOST)/");
}

#[test]
fn self_reference() {
    let dir = tempfile::tempdir().unwrap();
    let case = pod(&dir, json!({"command": printer(&["$(PATH)"]), "env": [{"name": "PATH", "value": "/opt/bin:$(PATH)"}, f()]}), "K='v'\n");
    assert_eq!(exact(&case, Format::JsonStream, &[]).env["PATH"], "/opt/bin:$(PATH)");
}

#[test]
fn env_from_shadowed() {
    let dir = tempfile::tempdir().unwrap();
    let mut case = pod(
        &dir,
        json!({"command": printer(&[]), "envFrom": [{"configMapRef": {"name": "cm"}}], "env": [{"name": "BANNER", "value": "mode=$(MODE)"}, {"name": "MODE", "value": "debug"}, f()]}),
        "K='v'\n",
    );
    case.world.config_maps.insert("cm".into(), BTreeMap::from([("MODE".into(), "prod".into())]));
    let s = exact(&case, Format::YamlStream, &[]);
    assert_eq!((s.env["BANNER"].as_str(), s.env["MODE"].as_str()), ("mode=prod", "debug"));
}

#[test]
fn service_variable_shadowed() {
    let dir = tempfile::tempdir().unwrap();
    let env = json!([{"name": "API", "value": "$(KUBERNETES_SERVICE_HOST)"}, {"name": "KUBERNETES_SERVICE_HOST", "value": "proxy"}, f()]);
    let case = pod(&dir, json!({"command": printer(&["$(API)"]), "env": env}), "K='v'\n");
    let s = exact(&case, Format::YamlStream, &[]);
    assert_eq!((s.env["API"].as_str(), s.env["KUBERNETES_SERVICE_HOST"].as_str()), ("10.96.0.1", "proxy"));
}

#[test]
fn optional_file_key_ref_missing_name_redefined_later() {
    // A fileKeyRef to a key the file lacks, and a Secret that does not exist:
    // both optional, both find nothing; Y sees X as not defined yet.
    let missing_key = json!({"name": "X", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "ABSENT", "optional": true}}});
    let missing_secret = json!({"name": "X", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "x", "optional": true}}});
    every([("a fileKeyRef to a key the file lacks", missing_key), ("a secretKeyRef to a Secret that does not exist", missing_secret)], |first| {
        let dir = tempfile::tempdir().unwrap();
        let env = json!([first, {"name": "Y", "value": "y=$(X)"}, {"name": "X", "value": "late"}, f()]);
        let case = pod(&dir, json!({"command": printer(&[]), "env": env}), "K='v'\n");
        assert_eq!(exact(&case, Format::YamlStream, &[]).env["Y"], "y=$(X)");
    });
}

#[test]
fn secret_replaced() {
    // The DB_PASS case: the file's value must win over the literal before it,
    // the optional Secret that does not exist changing nothing.
    let dir = tempfile::tempdir().unwrap();
    let env = json!([
        {"name": "DB_PASS", "value": "changeme"},
        {"name": "DB_PASS", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "DB_PASS"}}},
        {"name": "DB_PASS", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password", "optional": true}}},
    ]);
    let case = pod(&dir, json!({"command": printer(&[]), "env": env}), &format!("DB_PASS='{SENTINEL}'\n"));
    assert_eq!(exact(&case, Format::YamlStream, &[]).env["DB_PASS"], SENTINEL);
}

#[test]
fn image_env_not_expanded_in_values_and_args() {
    // HOME, PATH and APP_NAME are the image's ENV, HOSTNAME the runtime's: the
    // kubelet never sees them, so their references stay as written.
    let dir = tempfile::tempdir().unwrap();
    let env = json!([{"name": "V", "value": "$(HOME)/x:$(HOSTNAME):$(APP_NAME)"}, f(), {"name": "W", "value": "$(PATH)"}]);
    let case = pod(&dir, json!({"command": printer(&["$(HOME)"]), "args": ["$(PATH)", "$(HOSTNAME)", "$(APP_NAME)"], "env": env}), "K='v'\n");
    let s = exact(&case, Format::YamlStream, &[]);
    assert_eq!(s.env["V"], "$(HOME)/x:$(HOSTNAME):$(APP_NAME)");
    assert_eq!(s.env["W"], "$(PATH)");
    assert_eq!(s.argv[1..], ["$(HOME)", "$(PATH)", "$(HOSTNAME)", "$(APP_NAME)"]);
    assert_eq!(s.env["HOME"], "/home/app");
}

#[test]
fn entrypoint_words_run_as_written() {
    // No command: the image's ENTRYPOINT (given with --entrypoint) and CMD are
    // never expanded, though A is defined; args after them are.
    let env = json!([{"name": "A", "value": "a"}, f()]);
    let dir = tempfile::tempdir().unwrap();
    let mut case = pod(&dir, json!({"env": env}), "K='v'\n");
    let img = &case.world.image;
    case.entrypoint = Some([img.entrypoint.clone(), img.cmd.clone()].concat());
    let s = exact(&case, Format::YamlStream, &[]);
    assert_eq!(s.argv[1..], ["ep", "$(HOME)", "$$", "$(A)", "cmd", "$(MODE)", "$$x"]);

    let dir = tempfile::tempdir().unwrap();
    let case = pod(&dir, json!({"args": ["$(A)", "$$"], "env": env}), "K='v'\n");
    let s = exact(&case, Format::JsonStream, &[]);
    assert_eq!(s.argv[1..], ["ep", "$(HOME)", "$$", "$(A)", "a", "$"]);
}

#[test]
fn empty_command_means_unset() {
    // `command: []` and `command: null` (Helm renders both) are no command:
    // the image's ENTRYPOINT runs, then the args.
    let variants = [(json!([]), Format::YamlStream), (Value::Null, Format::YamlStream), (json!([]), Format::JsonStream), (Value::Null, Format::JsonList)];
    every(variants.map(|(c, f)| (format!("command: {c} in {f:?}"), (c, f))), |(command, format)| {
        let dir = tempfile::tempdir().unwrap();
        let case = pod(&dir, json!({"command": command, "args": ["--k=$(F)"], "env": [f()]}), "K='v'\n");
        let s = exact(&case, *format, &[]);
        assert_eq!(s.argv[1..], ["ep", "$(HOME)", "$$", "$(A)", "--k=v"], "command: {command}");
    });
}

#[test]
fn manifest_size_127k_128k_129k_1m() {
    // Literal values of 16 KiB each, the sentinel in them: natively every
    // string is far below the 128 KiB exec limit and the pod starts.
    every([127 * 1024, 128 * 1024, 129 * 1024, 1024 * 1024].map(|t| (format!("{t} bytes"), t)), |&total| {
        let mut env = vec![f()];
        let mut left = total;
        let mut n = 0;
        while left > 0 {
            let size = left.min(16 * 1024);
            let value = format!("{SENTINEL}{}", "x".repeat(size - SENTINEL.len()));
            env.push(json!({"name": format!("BIG{n}"), "value": value}));
            left -= size;
            n += 1;
        }
        let dir = tempfile::tempdir().unwrap();
        let case = pod(&dir, json!({"command": printer(&["$(F)"]), "env": env}), "K='v'\n");
        assert!(matches!(harness::native(&case), Outcome::Started(_)), "{total}: natively the pod must start");
        match harness::convert_batch(&[&case], Format::YamlStream, &[]).remove(0) {
            // Refused: with 78, naming the container and the limit.
            Converted::Refused(code, err) => {
                assert_eq!(code, 78, "{total} bytes: {err}");
                assert!(err.contains("container app"), "{total} bytes: {err}");
                assert!(["KiB", "MiB", "limit"].iter().any(|l| err.contains(l)), "{total} bytes: the refusal names no limit: {err}");
            }
            // Converted: envshim must start (spawned for real) and give the program what the kubelet would.
            Converted::Container(c, w) => {
                let diffs = harness::differences(&harness::native(&case), &harness::converted(&c, &w));
                assert!(diffs.is_empty(), "{total} bytes of values: converted, then {}", diffs.join("; "));
            }
        }
    });
}

#[test]
fn envshim_entries_in_env() {
    // envshim reads ENVSHIM_* as its own configuration; natively they are the
    // program's variables like any other. Refused at convert time (78, naming
    // the entry) or carried through: never converted and then failing.
    every([("ENVSHIM_MANIFEST", "/x/manifest.json"), ("ENVSHIM_WAIT", "bad"), ("ENVSHIM_CONTAINER", "other")].map(|(n, v)| (n, (n, v))), |&(name, value)| {
        let dir = tempfile::tempdir().unwrap();
        let case = pod(&dir, json!({"command": printer(&[]), "env": [{"name": "S", "value": SENTINEL}, {"name": name, "value": value}, f()]}), "K='v'\n");
        match harness::convert_batch(&[&case], Format::YamlStream, &[]).remove(0) {
            Converted::Refused(code, err) => {
                assert_eq!(code, 78, "{name}: {err}");
                for part in [name, "container app", "env[1]"] {
                    assert!(err.contains(part), "{name}: the refusal does not name {part:?}: {err}");
                }
            }
            Converted::Container(c, w) => {
                let diffs = harness::differences(&harness::native(&case), &harness::converted(&c, &w));
                assert!(diffs.is_empty(), "{name}={value}: converted, then {}", diffs.join("; "));
            }
        }
    });
}

/// A null field is absent to kubectl: `fileKeyRef: null` beside another
/// source (as a template may render it) is that source's entry. A pod with
/// no other `fileKeyRef` is left as it is; one with another converts, and
/// the entry is the platform's.
#[test]
fn a_null_file_key_ref_is_absent() {
    let dir = tempfile::tempdir().unwrap();
    let null_beside = json!({"name": "P", "value": null, "valueFrom": {"fileKeyRef": null, "fieldRef": {"fieldPath": "metadata.name"}}});
    let alone = pod(&dir, json!({"command": printer(&["$(P)"]), "env": [null_beside]}), "K='v'\n");
    let text = harness::write(std::slice::from_ref(&alone.pod), Format::YamlStream);
    let out = harness::kubectl_envshim(&["convert".into()], &text);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(harness::read(&out.stdout), harness::read(&text));
    let case = pod(&dir, json!({"command": printer(&["$(P)", "$(Q)"]), "env": [f(), null_beside, {"name": "Q", "value": "$(P)-$(F)"}]}), "K='v'\n");
    for format in harness::FORMATS {
        let s = exact(&case, format, &[]);
        assert_eq!(s.argv[1..], ["p", "p-v"]);
    }
}

/// The rest of docs/kubelet-differences.md row 13: an `envFrom` prefix that
/// starts with `ENVSHIM_`, and a `$(ENVSHIM_*)` reference after the first
/// `fileKeyRef` (in a value or the program line), are refused (78), naming
/// the place; natively they are ordinary.
#[test]
fn envshim_prefix_and_references_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let variants = [
        (
            "an envFrom prefix",
            json!({"command": printer(&[]), "envFrom": [{"prefix": "ENVSHIM_", "configMapRef": {"name": "m", "optional": true}}], "env": [f()]}),
            "envFrom[0].prefix",
        ),
        ("a reference in a value", json!({"command": printer(&[]), "env": [f(), {"name": "G", "value": "$(ENVSHIM_WAIT)"}]}), "$(ENVSHIM_WAIT)"),
        ("a reference in the program line", json!({"command": printer(&["$(ENVSHIM_X)"]), "env": [f()]}), "$(ENVSHIM_X)"),
    ];
    every(variants.map(|(label, fields, part)| (label, (fields, part))), |(fields, part)| {
        let case = pod(&dir, fields.clone(), "K='v'\n");
        // Natively an ordinary container: it starts.
        assert!(matches!(harness::native(&case), Outcome::Started(_)));
        match harness::convert_batch(&[&case], Format::YamlStream, &[]).remove(0) {
            Converted::Refused(code, err) => {
                assert_eq!(code, 78, "{err}");
                for p in ["container app", "ENVSHIM_", part] {
                    assert!(err.contains(p), "the refusal does not name {p:?}: {err}");
                }
            }
            Converted::Container(..) => panic!("converted"),
        }
    });
}

#[test]
fn manifest_checked_at_convert_time() {
    // What envshim would refuse at every start, the converter refuses once (78),
    // naming the document, the container and the entry.
    let cases = [("path", json!("../a.env")), ("path", json!("/abs/a.env")), ("path", json!("")), ("key", json!("1=2"))];
    every(cases.map(|(f, b)| (format!("{f}: {b}"), (f, b))), |(field, bad)| {
        let dir = tempfile::tempdir().unwrap();
        let mut r = json!({"volumeName": "cfg", "path": "app.env", "key": "K"});
        r[field] = bad.clone();
        let env = json!([{"name": "S", "value": SENTINEL}, {"name": "F", "valueFrom": {"fileKeyRef": r}}]);
        let case = pod(&dir, json!({"command": printer(&[]), "env": env}), "K='v'\n");
        let run = harness::kubectl_envshim(&harness::convert_args(&[&case], &[]), &harness::write(std::slice::from_ref(&case.pod), Format::YamlStream));
        assert_eq!(run.code, 78, "{field}: {bad}: exit {}, stderr {}", run.code, run.stderr);
        assert!(run.stdout.is_empty());
        for part in ["document 1", "container app", "spec.containers[0].env[1]"] {
            assert!(run.stderr.contains(part), "{field}: {bad}: the refusal does not name {part:?}: {}", run.stderr);
        }
        assert!(!run.stderr.contains(SENTINEL));
    });
}

#[test]
fn unknown_kind_with_pod_template() {
    // An Argo Rollout and a Knative Service embed a pod template the converter
    // does not list by kind: converted by structure, or refused (78); never
    // passed through with its fileKeyRef, and `--check` never says 0.
    let dir = tempfile::tempdir().unwrap();
    let env = json!([{"name": "S", "value": SENTINEL}, f(), {"name": "U", "value": "u=$(F)"}]);
    let case = pod(&dir, json!({"command": printer(&["$(U)"]), "env": env}), "K='v'\n");
    let spec = case.pod["spec"].clone();
    let documents = [
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "p"},
               "spec": {"replicas": 1, "strategy": {"canary": {"steps": [{"setWeight": 20}]}}, "template": {"metadata": {"labels": {"app": "p"}}, "spec": spec}}}),
        json!({"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "p"},
               "spec": {"template": {"metadata": {"annotations": {"autoscaling.knative.dev/min-scale": "1"}}, "spec": spec}}}),
    ];
    every(documents.map(|d| (d["kind"].to_string(), d)), |doc| {
        let kind = doc["kind"].as_str().unwrap();
        let args = harness::convert_args(&[&case], &[]);
        let input = harness::write(std::slice::from_ref(doc), Format::YamlStream);
        let run = harness::kubectl_envshim(&args, &input);
        assert!(!run.stderr.contains(SENTINEL), "{kind}: {}", run.stderr);
        let mut check = args.clone();
        check.push("--check".into());
        let checked = harness::kubectl_envshim(&check, &input);
        let check_says = |code| assert_ne!(code, 0, "{kind}: --check says nothing would change; stderr {}", checked.stderr);
        if run.code == 78 {
            assert!(run.stderr.contains("document 1"), "{kind}: {}", run.stderr);
            check_says(checked.code);
            return;
        }
        assert_eq!(run.code, 0, "{kind}: {}", run.stderr);
        let out = harness::read(&run.stdout);
        assert!(!out.iter().any(harness::has_file_key_ref), "{kind}: exit 0 with a fileKeyRef left in the output");
        check_says(checked.code);
        // Converted by structure: the template's program starts as natively.
        let template = out.iter().find(|d| d["kind"] == kind).expect("the document").clone();
        let as_pod = json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": template["spec"]["template"]["spec"]});
        let converted = harness::container(&as_pod, "app").expect("container app").clone();
        let mut world = case.world.clone();
        let (config_maps, secrets) = harness::generated_objects(&out);
        world.config_maps.extend(config_maps);
        world.secrets.extend(secrets);
        let diffs = harness::differences(&harness::native(&case), &harness::converted(&converted, &world));
        assert!(diffs.is_empty(), "{kind}: {}", diffs.join("; "));
    });
}
