//! Day 2 of a converted workload (docs/reference.md §10, "Converting again"
//! and "Hand edits"): `convert` on its own output converts again from the
//! original each container carries, with the settings given now; with the
//! same settings nothing changes; a hand edit is refused (78) by `convert`,
//! `convert --check` and `manifest` as `unconvert` refuses it. The property
//! on generated pods is `converting_again_is_converting_the_original` below
//! and `exact::random_pods_convert_again`.

use super::*;
use crate::support::SENTINEL;

fn example(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/convert").join(name)).unwrap()
}

/// The example's converted Deployment (converted with `--shim-image envshim:0.1.0`).
fn converted_yaml() -> String {
    example("deployment.converted.yaml")
}

/// Issue 49, wall 1: `convert -f converted.yaml --watch --watch-splay 60s`
/// gave back its input, and `convert --check` with other settings said 0.
#[test]
fn converting_again_applies_the_new_settings() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join("converted.yaml");
    std::fs::write(&file, converted_yaml()).unwrap();
    let file = file.to_str().unwrap();
    let watch = kubectl_envshim(&["convert", "-f", file, "--watch", "--watch-splay", "60s"], "").ok().to_string();
    assert_ne!(watch, converted_yaml());
    // Exactly what the original converted with these settings gives.
    let native = example("deployment.yaml");
    assert_eq!(watch, kubectl_envshim(&["convert", "--watch", "--watch-splay", "60s"], &native).ok());
    let app = &yaml(&watch)["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(app["command"], yaml("[/.envshim/bin/envshim, run, --watch]"));
    assert!(app["env"].as_sequence().unwrap().iter().any(|e| e["name"] == "ENVSHIM_WATCH_SPLAY" && e["value"] == "60s"), "{watch}");
    // --check with other settings: 1, the document named, nothing on stdout.
    let check = kubectl_envshim(&["convert", "--check", "-f", file, "--watch", "--watch-splay", "10s"], "");
    assert_eq!((check.code, check.stdout.as_str()), (1, ""), "{}", check.stderr);
    assert!(
        check.stderr.starts_with(&format!("kubectl-envshim: {file}: document 1 (Deployment/envshim-convert-demo): would convert containers app again")),
        "{}",
        check.stderr
    );
    // The same settings: nothing changes, byte for byte, and --check says 0.
    let same = ["--shim-image", "envshim:0.1.0"];
    assert_eq!(kubectl_envshim(&[&["convert", "-f", file][..], &same].concat(), "").ok(), converted_yaml());
    kubectl_envshim(&[&["convert", "--check", "-f", file][..], &same].concat(), "").ok();
    assert_eq!(kubectl_envshim(&["convert", "--watch", "--watch-splay", "60s"], &watch).ok(), watch);
    // No option: what the original converts to with none (--watch dropped; the image: KUBECTL_ENVSHIM_SHIM_IMAGE's).
    let plain = kubectl_envshim(&["convert"], &watch).ok().to_string();
    assert_eq!(plain, kubectl_envshim(&["convert"], &native).ok());
    assert!(!plain.contains("--watch") && plain.contains(IMAGE), "{plain}");
}

/// Each setting, the pod-level ones too (the installer's image, requests and
/// limits, envshim in the image), changes a converted pod as it changes the original.
#[test]
fn every_setting_applies_when_converting_again() {
    let native = example("deployment.yaml");
    let settings: [&[&str]; 10] = [
        &[],
        &["--wait", "30s"],
        &["--env-grammar", "envshim"],
        &["--watch", "--on-change", "exit", "--restart-timeout", "3s"],
        &["--watch", "--watch-poll", "5s", "--watch-settle", "2s", "--restart-signal", "HUP"],
        &["--shim-image", "registry.example.com/other:2"],
        &["--installer-cpu", "100m", "--installer-memory", "32Mi"],
        &["--shim-path", "/usr/local/bin/envshim"],
        &["--shim-path", "/usr/local/bin/envshim", "--wait", "1m", "--watch"],
        &["--shim-image", "envshim:0.1.0"],
    ];
    let outputs: Vec<String> = settings.iter().map(|s| kubectl_envshim(&[&["convert"][..], s].concat(), &native).ok().to_string()).collect();
    for (s1, once) in settings.iter().zip(&outputs) {
        for (s2, direct) in settings.iter().zip(&outputs) {
            let again = kubectl_envshim(&[&["convert"][..], s2].concat(), once);
            assert_eq!(again.ok(), direct, "converted with {s1:?}, then with {s2:?}");
            let check = kubectl_envshim(&[&["convert", "--check"][..], s2].concat(), once);
            assert_eq!(check.code, i32::from(once != direct), "converted with {s1:?}, checked with {s2:?}: {}", check.stderr);
        }
    }
    // The image: none given nor found keeps the one the pod's installer has (a build without its own image).
    let image = kubectl_envshim_with(&["convert", "--wait", "5s"], &converted_yaml(), None).ok().to_string();
    assert_eq!(image, kubectl_envshim(&["convert", "--wait", "5s", "--shim-image", "envshim:0.1.0"], &native).ok());
    kubectl_envshim_with(&["convert", "--check"], &converted_yaml(), None).ok();
    // Envshim in the image: converting again with the installer needs an image, as converting the original does.
    kubectl_envshim_with(&["convert"], &outputs[7], None).fails(2, &["no envshim image"]);
}

/// `--entrypoint` gave the program of a container without command: the
/// original it carries has none, so converting again needs it again (as
/// converting the original does), and applies a new one.
#[test]
fn converting_again_takes_the_entrypoint_as_converting_the_original_does() {
    let (pod, _) = workload("Deployment");
    let native = pod.replace(NO_COMMAND.0, NO_COMMAND.1);
    let once = kubectl_envshim(&["convert", "--entrypoint", "app=/bin/app"], &native).ok().to_string();
    assert_eq!(kubectl_envshim(&["convert", "--entrypoint", "app=/bin/app"], &once).ok(), once);
    let other = kubectl_envshim(&["convert", "--entrypoint", r#"app=["/bin/other","--serve"]"#], &once).ok().to_string();
    assert_eq!(other, kubectl_envshim(&["convert", "--entrypoint", r#"app=["/bin/other","--serve"]"#], &native).ok());
    convert(&once).fails(78, &["spec.template.spec.containers[0].command: container app: no command", "--entrypoint app=PROGRAM"]);
}

/// A container wired by hand (its `ENVSHIM_MANIFEST_JSON` not the
/// converter's) is left as it is, beside a converted one converted again.
#[test]
fn a_container_wired_by_hand_is_left_as_it_is() {
    let native = example("deployment.yaml");
    let wired = "        - name: by-hand\n          image: app:1\n          command: [/envshim, run]\n          env:\n            - name: ENVSHIM_MANIFEST_JSON\n              value: '{\"env\":[],\"command\":[\"/app\"]}'\n";
    let with = |text: &str| text.replacen("      containers:\n", &format!("      containers:\n{wired}"), 1);
    assert_ne!(with(&native), native);
    let once = kubectl_envshim(&["convert"], &with(&native)).ok().to_string();
    let again = kubectl_envshim(&["convert", "--wait", "9s"], &once).ok().to_string();
    assert_eq!(again, kubectl_envshim(&["convert", "--wait", "9s"], &with(&native)).ok());
    let by_hand = |text: &str| yaml(text)["spec"]["template"]["spec"]["containers"][0].clone();
    assert_eq!(by_hand(&again), by_hand(&with(&native)));
    assert_eq!(by_hand(&again)["name"], "by-hand");
}

/// Issue 49, wall 2: a teammate appends `DB_ADDR: "$(DB_HOST):5432"` to the
/// converted container. `convert`, `convert --check`, `manifest` and
/// `unconvert` each refuse it (78), naming the entry's path and name and
/// what to do; nothing on stdout, no value shown.
#[test]
fn an_entry_appended_by_hand_is_refused_everywhere() {
    let converted = converted_yaml();
    let line = "          value: $$\n";
    assert_eq!(converted.matches(&format!("        - name: ENVSHIM_EXPANDED\n{line}")).count(), 1);
    for value in ["\"$(DB_HOST):5432\"", SENTINEL] {
        let edited = converted.replacen(line, &format!("{line}        - name: DB_ADDR\n          value: {value}\n"), 1);
        assert_ne!(edited, converted);
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("converted.yaml");
        std::fs::write(&file, &edited).unwrap();
        let file = file.to_str().unwrap();
        let what = "env[8]: container app: DB_ADDR comes after ENVSHIM_MANIFEST_JSON, where the converter writes only its own settings: added after the conversion: edit the original and convert again";
        let line = format!("kubectl-envshim: {file}: document 1 (Deployment/envshim-convert-demo): spec.template.spec.containers[0].{what}\n");
        for args in
            [&["convert"][..], &["convert", "--check"], &["convert", "--check", "--watch", "--watch-splay", "10s"], &["unconvert"], &["unconvert", "--check"]]
        {
            let out = kubectl_envshim(&[args, &["-f", file]].concat(), "");
            assert_eq!(out.fails(78, &[]), line, "{args:?}");
        }
        let (path, rest) = what.split_once(": container app: ").unwrap();
        let out = kubectl_envshim(&["manifest", "-c", "app", "-f", file], "");
        assert_eq!(out.fails(78, &[]), format!("kubectl-envshim: {file}: container app: {path}: {rest}\n"));
    }
}

/// Random settings: `--watch` and one of its settings, `--wait`,
/// `--env-grammar`, the installer's image and requests, or envshim in the image.
fn arb_settings() -> impl Strategy<Value = Vec<String>> {
    let watch_setting = proptest::option::of(prop_oneof![Just(["--on-change", "exit"]), Just(["--watch-splay", "60s"]), Just(["--restart-signal", "HUP"])]);
    let wait = proptest::option::of(prop_oneof![Just("5s"), Just("1m")]);
    (any::<bool>(), watch_setting, wait, any::<bool>(), 0..4usize).prop_map(|(watch, setting, wait, grammar, shim)| {
        let mut s: Vec<&str> = Vec::new();
        if watch {
            s.push("--watch");
            s.extend(setting.into_iter().flatten());
        }
        if let Some(wait) = wait {
            s.extend(["--wait", wait]);
        }
        if grammar {
            s.extend(["--env-grammar", "envshim"]);
        }
        match shim {
            1 => s.extend(["--shim-image", "registry.example.com/other:2"]),
            2 => s.extend(["--shim-path", "/usr/local/bin/envshim"]),
            3 => s.extend(["--installer-cpu", "100m"]),
            _ => {}
        }
        s.into_iter().map(str::to_string).collect()
    })
}

fn convert_with(settings: &[String], extra: &[&str], stdin: &str) -> Out {
    let args: Vec<&str> = ["convert"].into_iter().chain(extra.iter().copied()).chain(settings.iter().map(String::as_str)).collect();
    kubectl_envshim(&args, stdin)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// `convert(convert(x, s1), s2) == convert(x, s2)`, byte for byte, for
    /// random pods and settings; `convert --check` with s2 says 1 exactly when
    /// that differs from `convert(x, s1)`; and each kind of hand edit of a
    /// converted container fails `convert --check` (78) at the container's
    /// path, every edited pod in one stream, no value shown.
    #[test]
    fn converting_again_is_converting_the_original(pod in arb_pod(), s1 in arb_settings(), s2 in arb_settings()) {
        let text = if pod["metadata"]["json"] == true { serde_json::to_string(&pod).unwrap() } else { block_yaml(&pod) };
        let once = convert_with(&s1, &[], &text);
        prop_assert_eq!(once.code, 0, "{}", once.stderr);
        let direct = convert_with(&s2, &[], &text);
        prop_assert_eq!(direct.code, 0, "{}", direct.stderr);
        let again = convert_with(&s2, &[], &once.stdout);
        prop_assert_eq!((again.code, again.stderr.as_str()), (0, ""));
        if pod["spec"]["initContainers"] == serde_json::json!([]) {
            // An empty list the installer was added to goes with it (as unconvert undoes it), and comes back last when added again.
            let read = |text: &str| {
                let mut doc = crate::support::json_docs(text).remove(0);
                doc["spec"].as_object_mut().unwrap().retain(|k, v| k != "initContainers" || v != &serde_json::json!([]));
                doc
            };
            prop_assert_eq!(read(&again.stdout), read(&direct.stdout), "converted with {:?}, then {:?}", s1, s2);
        } else {
            prop_assert_eq!(&again.stdout, &direct.stdout, "converted with {:?}, then {:?}", s1, s2);
        }
        let check = convert_with(&s2, &["--check"], &once.stdout);
        prop_assert_eq!(check.code, i32::from(once.stdout != direct.stdout), "{}", check.stderr);

        let converted = crate::support::json_docs(&once.stdout).remove(0);
        let (mut edited, mut wanted) = (Vec::new(), Vec::new());
        for list in ["initContainers", "containers"] {
            for (i, c) in converted["spec"][list].as_array().into_iter().flatten().enumerate() {
                if !c["env"].as_array().is_some_and(|env| env.iter().any(|e| e["name"] == "ENVSHIM_MANIFEST_JSON")) {
                    continue;
                }
                for (what, c) in crate::support::edits::hand_edits(c) {
                    let mut doc = converted.clone();
                    doc["spec"][list][i] = c;
                    edited.push(serde_json::to_string(&doc).unwrap());
                    wanted.push((what, format!("(Pod/p): spec.{list}[{i}].")));
                }
            }
        }
        if !edited.is_empty() {
            let out = convert_with(&s1, &["--check"], &edited.join("\n"));
            let stderr = out.fails(78, &[]);
            for (n, (what, path)) in wanted.iter().enumerate() {
                let doc = format!("stdin: document {} {path}", n + 1);
                prop_assert!(stderr.contains(&doc), "{}: {} not refused: {}", what, doc, stderr);
            }
        }
    }
}
