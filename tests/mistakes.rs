//! What a new user trips over, through the binary: a whole Pod or workload
//! as the manifest (`--container`), YAML, misspelt options and variables,
//! duplicate keys, `--verbose`, `check --format json`, message style.
//! Every failing input carries the sentinel, which no output may hold.

use crate::common::*;
use serde_json::json;

/// A Pod as `kubectl get pod -o json` prints it: two containers and an
/// initContainer, one variable of each from a file.
fn pod(v: &Volume) -> serde_json::Value {
    v.file("vol/app.env", format!("APP_KEY={SENTINEL}\nSIDE_KEY=side\nINIT_KEY=init\n"));
    let fkr = |name: &str| json!({"name": name, "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": name}}});
    let mounts = json!([{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap(), "readOnly": true}]);
    json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox", "volumeMounts": mounts, "env": [fkr("INIT_KEY")]}],
            "containers": [
                {"name": "app", "image": "app", "volumeMounts": mounts, "env": [fkr("APP_KEY"), {"name": "POD", "value": "", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
                {"name": "side", "image": "side", "volumeMounts": mounts, "env": [fkr("SIDE_KEY")]}
            ]
        },
        "status": {"phase": "Running"}
    })
}

#[test]
fn a_whole_pod_is_refused_with_what_to_do() {
    let v = Volume::new();
    let m = v.manifest(&pod(&v));
    let line = envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[]).clone();
    assert_eq!(
        line,
        format!("envshim: manifest {m} is a Pod, not a container spec: pass one container's spec (kubectl get pod POD -o jsonpath='{{.spec.containers[0]}}'), or choose one with --container NAME (it has app, side, init)")
    );
}

#[test]
fn container_picks_one_container_of_a_pod() {
    let v = Volume::new();
    let m = v.manifest(&pod(&v));
    for (how, name, var, want) in [("option", "side", "SIDE_KEY", "side"), ("variable", "init", "INIT_KEY", "init")] {
        let shim = if how == "option" {
            envshim(["run", "--manifest", &m, "--container", name, "--"])
        } else {
            envshim(["run", "--manifest", &m, "--"]).env("ENVSHIM_CONTAINER", name)
        };
        let out = shim.args(print_env()).run();
        out.ok();
        let env = out.env_map();
        assert_eq!(env[var], want);
        assert!(!env.contains_key("APP_KEY") && !env.contains_key("ENVSHIM_CONTAINER"), "{env:?}");
    }
    // `"value": ""` beside a valueFrom means the valueFrom (here the platform's: inherited).
    let out = envshim(["run", "--manifest", &m, "--container", "app", "--"]).args(print_env()).env("POD", "p-1").run();
    out.ok();
    assert_eq!(out.env_map()["POD"], "p-1");
}

#[test]
fn container_works_across_a_list_of_workloads_and_refuses_ambiguity() {
    let v = Volume::new();
    let c = |name: &str, value: &str| json!({"name": name, "env": [{"name": "WHO", "value": value}]});
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [c("web", "deployment")]}}}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [c("cron", "cronjob")], "initContainers": [c("dup", "a")]}}}}}},
        {"apiVersion": "v1", "kind": "PodTemplate", "template": {"spec": {"containers": [c("tmpl", "podtemplate"), c("dup", SENTINEL)]}}}
    ]});
    let m = v.manifest(&list);
    for (name, want) in [("web", "deployment"), ("cron", "cronjob"), ("tmpl", "podtemplate")] {
        let out = envshim(["run", "--manifest", &m, "--container", name, "--"]).args(print_env()).run();
        out.ok();
        assert_eq!(out.env_map()["WHO"], want);
    }
    envshim(["check", "--manifest", &m, "--container", "dup"]).run().no_sentinel().fails_with(
        78,
        &[
            "--container dup: two containers of manifest",
            "items[1].spec.jobTemplate.spec.template.spec.initContainers[0] and items[2].template.spec.containers[1]",
        ],
    );
    envshim(["check", "--manifest", &m, "--container", "nope"])
        .run()
        .no_sentinel()
        .fails_with(78, &["--container nope: no such container in manifest", "a List (it has web, cron, tmpl, dup, dup)"]);
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &["is a List, not a container spec"]);
    // A `kind` that is no kind's name is not shown: any text could be there.
    let odd = v.manifest(&json!({"kind": SENTINEL, "spec": {"containers": [{"name": "app"}]}}));
    envshim(["check", "--manifest", &odd]).run().no_sentinel().fails_with(78, &["is a whole object, not a container spec"]);
    // A schema error in the chosen container names its whole path.
    let bad = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "A", "valu": SENTINEL}]}]}}}});
    let m = v.manifest(&bad);
    envshim(["check", "--manifest", &m, "--container", "web"])
        .run()
        .no_sentinel()
        .fails_with(78, &[&format!("manifest {m}: spec.template.spec.containers[0].env[0].valu: unknown field")]);
}

#[test]
fn container_with_a_container_spec_must_name_it() {
    let v = Volume::new();
    let m = v.manifest(&json!({"name": "web", "env": [{"name": "A", "value": SENTINEL}]}));
    envshim(["check", "--manifest", &m, "--container", "web"]).run().ok();
    envshim(["check", "--manifest", &m, "--container", "db"])
        .run()
        .no_sentinel()
        .fails_with(78, &[&format!("--container db: manifest {m} is a single container spec, named web")]);
}

#[test]
fn value_beside_value_from_is_still_an_error_when_not_empty() {
    let v = Volume::new();
    let m = v.manifest(&json!({"env": [{"name": "A", "value": SENTINEL, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[&format!("manifest {m}: env[0]: has both value and valueFrom")]);
}

#[test]
fn a_yaml_manifest_says_so_and_how_to_get_json() {
    let v = Volume::new();
    for yaml in [
        format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {SENTINEL}\n"),
        format!("# app\nenv:\n- name: A\n  value: {SENTINEL}\n"),
        format!("---\nname: {SENTINEL}\n"),
    ] {
        let m = v.file_str("m.yaml", &yaml);
        envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(
            78,
            &[&format!("manifest {m} is not valid JSON: it looks like YAML; convert it offline: kubectl envshim manifest -f FILE [--container NAME], or yq (Go yq: yq -o json FILE; Python yq: yq . FILE)")],
        );
    }
    // Broken JSON is not called YAML.
    let m = v.file_str("m.json", format!("{{\"env\": [{{\"name\": \"{SENTINEL}\"}}\n"));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[&format!("manifest {m} is not valid JSON: ")]);
}

#[test]
fn a_misspelt_option_or_subcommand_gets_a_suggestion() {
    for (args, want) in [
        (vec!["run", "--manfest", SENTINEL, "--", "/bin/true"], "unexpected argument '--manfest' found (did you mean --manifest? see envshim --help)"),
        (vec!["check", "--env-fil", SENTINEL], "unexpected argument '--env-fil' found (did you mean --env-file? see envshim --help)"),
        (vec!["check", "--strict-name"], "unexpected argument '--strict-name' found (did you mean --strict-names? see envshim --help)"),
        (vec!["render", "--show-value"], "unexpected argument '--show-value' found (did you mean --show-values? see envshim --help)"),
        (vec!["chek", SENTINEL], "unrecognized subcommand 'chek' (did you mean check? see envshim --help)"),
        (vec!["check", "--bogus"], "unexpected argument '--bogus' found (see envshim --help)"),
    ] {
        let line = envshim(&args).run().fails_with(2, &[]);
        assert_eq!(line, format!("envshim: {want}"), "{args:?}");
    }
}

#[test]
fn an_unknown_envshim_variable_is_removed_with_a_warning() {
    let out = envshim(["run", "--"]).args(print_env()).env("ENVSHIM_MANIFST", SENTINEL).env("ENVSHIM_ZZZZZZZZZZZZZZZZZZZZ", SENTINEL).run();
    out.no_sentinel().code(0);
    assert!(!out.env_map().keys().any(|k| k.starts_with("ENVSHIM_")));
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: ENVSHIM_MANIFST is not a variable envshim knows: removed from the environment (did you mean ENVSHIM_MANIFEST?)",
            "envshim: warning: ENVSHIM_ZZZZZZZZZZZZZZZZZZZZ is not a variable envshim knows: removed from the environment (see envshim --help)",
        ]
    );
    // Known ones: no warning.
    envshim(["check"]).env("ENVSHIM_STRICT_NAMES", "0").env("ENVSHIM_VERBOSE", "no").run().ok();
}

#[test]
fn a_usage_error_reaches_an_explicit_termination_log() {
    let v = Volume::new();
    let log = v.join("tl");
    for args in [
        vec!["check", "--termination-log", log.to_str().unwrap(), "--bogus", SENTINEL],
        vec!["run", &format!("--termination-log={}", log.display()), "--manfest", SENTINEL],
    ] {
        let line = envshim(&args).run().no_sentinel().fails_with(2, &[]);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("{line}\n"), "{args:?}");
        std::fs::remove_file(&log).unwrap();
    }
    // After `--` it is the program's argument, not envshim's.
    envshim(["run", "--bogus", "--", "prog", "--termination-log", log.to_str().unwrap()]).run().fails(2);
    assert!(!log.exists());
}

#[test]
fn an_unwritable_termination_log_is_warned_about() {
    let v = Volume::new();
    let log = v.join("missing-dir/tl");
    let m = v.file_str("m.json", format!("{{\"env\": [{{\"name\": \"A\", \"valu\": \"{SENTINEL}\"}}]}}"));
    let out = envshim(["check", "--termination-log", log.to_str().unwrap(), "--manifest", &m]).run();
    out.no_sentinel().code(78);
    assert_eq!(
        out.stderr_lines(),
        [
            format!("envshim: warning: cannot write the termination log {} (No such file or directory)", log.display()),
            format!("envshim: manifest {m}: env[0].valu: unknown field (did you mean value?)")
        ]
    );
    // A log that cannot take the text: the same, the exit code still the failure's own.
    let out = envshim(["check", "--termination-log", "/dev/full", "--manifest", &m]).run();
    out.no_sentinel().code(78).stderr_has("envshim: warning: cannot write the termination log /dev/full (No space left on device)");
}

#[test]
fn option_values_may_start_with_a_dash() {
    let v = Volume::new();
    let f = v.file_str("-weird.env", "W=from-file\n");
    let out = envshim(["run", "--env", "-X=1", "--env-file", "-weird.env", "--"]).cwd(v.path()).args(print_env()).run();
    out.ok();
    let env = out.env_map();
    assert_eq!((env["-X"].as_str(), env["W"].as_str()), ("1", "from-file"));
    let out = envshim(["check", &format!("--env-file={f}"), "--env", "-A=-b"]).run();
    out.ok();
    // `--` still ends the options; other options do not take a value starting with `-`.
    envshim(["run", "--env", "--", "/bin/true"]).run().fails_with(2, &["--env and --env-file need a value (-- ends the options)"]);
    envshim(["run", "--manifest", "--", "/bin/true"]).run().fails_with(2, &["a value is required for '--manifest <PATH>'"]);
}

#[test]
fn a_name_given_twice_in_an_env_file_is_warned_about_by_line() {
    let v = Volume::new();
    v.file("vol/app.env", format!("DUP={SENTINEL}\nOTHER=1\nDUP=second\n"));
    let m = v.manifest(&json!({"volumeMounts": [{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap()}], "envFrom": [{"fileRef": {"volumeName": "cfg", "path": "app.env"}}]}));
    let out = envshim(["run", "--manifest", &m, "--"]).args(print_env()).run();
    out.no_sentinel().code(0);
    assert_eq!(out.env_map()["DUP"], "second", "the last wins");
    assert_eq!(
        out.stderr_lines(),
        ["envshim: warning: volume cfg, path app.env: the name on line 1 is given again on line 3: the last one wins (the kubelet takes the first)"]
    );
    // Many duplicates: one warning for the file, counting the rest; read twice, warned once.
    let many: String = (0..500).map(|i| format!("K{}={SENTINEL}\n", i % 7)).collect();
    v.file("many.env", &many);
    let out = envshim(["check", "--env-file", "many.env", "--env-file", "./many.env", "--env-file", "many.env"]).cwd(v.path()).run();
    out.no_sentinel().code(0);
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: env file many.env: the name on line 1 is given again on line 8: the last one wins (the kubelet takes the first); 492 more lines give a name again",
            "envshim: warning: env file ./many.env: the name on line 1 is given again on line 8: the last one wins (the kubelet takes the first); 492 more lines give a name again",
            "envshim: ok: 7 variables (7 from files; env files read with envshim's grammar), no program line",
        ]
    );
    // No duplicate: nothing said.
    v.file("plain.env", "A=1\nB=2\n");
    envshim(["check", "--env-file", "plain.env"]).cwd(v.path()).run().ok();
}

/// A file is named as the user named it: `--env-file` by its path, a
/// volume's file by volume and path, the manifest by its path.
#[test]
fn messages_name_files_as_the_user_named_them() {
    let v = Volume::new();
    v.file("ef/big.env", format!("A='{SENTINEL}\n"));
    let m = v.manifest(&json!({"volumeMounts": [{"name": "ef", "mountPath": v.join("ef").to_str().unwrap()}], "envFrom": [{"fileRef": {"volumeName": "ef", "path": "big.env"}}]}));
    envshim(["check", "--env-file", "ef/big.env"]).cwd(v.path()).run().no_sentinel().fails_with(65, &["envshim: env file ef/big.env, line 1: "]);
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(65, &["envshim: volume ef, path big.env, line 1: "]);
    // Nested OS errors are not doubled.
    let out = envshim(["check", "--termination-log", v.join("no/dir/tl").to_str().unwrap(), "--env", "=x"]).run();
    assert!(!out.stderr_str().contains("os error"), "{}", out.stderr_str());
}

#[test]
fn every_option_and_argument_has_help_and_help_help_works() {
    for sub in ["run", "check", "render", "install", "help"] {
        let out = envshim(["help", sub]).run();
        out.ok();
        let text = out.stdout_str();
        let mut in_list = false;
        for line in text.lines() {
            if line.starts_with("Options:") || line.starts_with("Arguments:") {
                in_list = true;
                continue;
            }
            if in_list && line.trim_start().starts_with(['-', '<', '[']) {
                // `  --name <VALUE>  Help text`: two blanks or more between the name and its text.
                let rest = line.trim_start();
                let help = rest.split_once("  ").map(|(_, h)| h.trim_start()).unwrap_or("");
                assert!(!help.is_empty() && !help.starts_with('['), "{sub}: no help text for {rest:?}\n{text}");
            }
        }
    }
    let out = envshim(["help", "--help"]).run();
    out.ok();
    assert!(out.stdout_str().contains("Usage: envshim help"), "{}", out.stdout_str());
}

#[test]
fn verbose_names_each_variable_its_source_and_size_never_a_value() {
    let v = Volume::new();
    v.file("vol/app.env", format!("SECRET={SENTINEL}\n"));
    let m = v.manifest(&json!({
        "volumeMounts": [{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap()}],
        "env": [{"name": "FROM_FILE", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "SECRET"}}}, {"name": "LIT", "value": "x$(INH)"}],
    }));
    let want = [
        "envshim: INH from inherited (21 bytes)".to_string(),
        format!("envshim: FROM_FILE from cfg/app.env:1 ({} bytes)", SENTINEL.len()),
        format!("envshim: LIT from manifest env[1] ({} bytes)", SENTINEL.len() + 1),
        format!("envshim: CLI from --env ({} bytes)", SENTINEL.len()),
    ];
    for how in ["--verbose", "-v", "ENVSHIM_VERBOSE", "--init"] {
        let mut shim = envshim(["run", "--manifest", &m, "--env", &format!("CLI={SENTINEL}")]).env("INH", SENTINEL);
        shim = match how {
            "ENVSHIM_VERBOSE" => shim.env("ENVSHIM_VERBOSE", "yes"),
            "--init" => shim.args(["--init", "-v"]),
            flag => shim.arg(flag),
        };
        let out = shim.args(["--", "/bin/sh", "-c", "echo program"]).run();
        out.no_sentinel().code(0);
        assert_eq!(out.stderr_lines(), want, "{how}");
        assert_eq!(out.stdout_str(), "program\n", "{how}");
    }
    // check too; off by default.
    envshim(["check", "--manifest", &m, "--verbose"]).run().code(0).stderr_has("envshim: LIT from manifest env[1] (7 bytes)");
    envshim(["run", "--manifest", &m, "--", "/bin/true"]).run().ok();
}

/// `check --format json`: one document on stdout with every problem (code,
/// message, path or file and line) and the warnings; the exit code as without it.
#[test]
fn check_format_json_reports_every_problem_and_warning() {
    let v = Volume::new();
    v.file("vol/bad.env", format!("A=1\nB='{SENTINEL}\n"));
    v.file("dup.env", format!("D={SENTINEL}\nD=2\n"));
    let m = v.manifest(&json!({
        "volumeMounts": [{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap()}],
        "envFrom": [{"fileRef": {"volumeName": "cfg", "path": "bad.env"}}],
        "env": [{"name": "X", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "missing.env", "key": "K"}}}],
    }));
    let out = envshim(["check", "--format", "json", "--manifest", &m, "--env-file", "dup.env"]).cwd(v.path()).env("ENVSHIM_MANIFST", SENTINEL).run();
    out.no_sentinel().code(65);
    assert!(out.stderr.is_empty(), "{}", out.stderr_str());
    let doc = out.json();
    assert_eq!(
        doc,
        json!({
            "ok": false,
            "exit_code": 65,
            "errors": [
                {"code": 65, "message": "volume cfg, path bad.env, line 2: opens a single quote that is never closed", "path": null, "file": "cfg/bad.env", "line": 2},
                {"code": 66, "message": "manifest: env[0] (X): file cfg/missing.env not found", "path": "env[0].valueFrom.fileKeyRef.path", "file": "cfg/missing.env", "line": null},
            ],
            "errors_not_shown": 0,
            "warnings": [
                {"message": "ENVSHIM_MANIFST is not a variable envshim knows: removed from the environment (did you mean ENVSHIM_MANIFEST?)"},
                {"message": "env file dup.env: the name on line 1 is given again on line 2: the last one wins (the kubelet takes the first)"},
            ],
            "warnings_not_shown": 0,
            "variables": null,
            "from_files": null,
            "program": null,
        })
    );
    // A manifest error carries its JSON path and the manifest file.
    let bad = v.manifest(&json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optinal": SENTINEL}}}]}));
    let out = envshim(["check", "--format=json", "--manifest", &bad]).run();
    out.no_sentinel().code(78);
    let doc = out.json();
    assert_eq!(doc["errors"][0]["path"], "env[0].valueFrom.fileKeyRef.optinal");
    assert_eq!(doc["errors"][0]["file"], bad.as_str());
    assert_eq!(doc["errors"][0]["message"], format!("manifest {bad}: env[0].valueFrom.fileKeyRef.optinal: unknown field (did you mean optional?)"));
    // A syntax error: the line.
    let broken = v.file_str("broken.json", format!("{{\n\"env\": [\n{SENTINEL}\n"));
    let doc = envshim(["check", "--format", "json", "--manifest", &broken]).run().json();
    assert_eq!((doc["exit_code"].clone(), doc["errors"][0]["line"].clone(), doc["errors"][0]["file"].clone()), (json!(78), json!(3), json!(broken)));
    // Nothing wrong.
    let out = envshim(["check", "--format", "json"]).run();
    out.ok();
    assert_eq!(
        out.json(),
        json!({"ok": true, "exit_code": 0, "errors": [], "errors_not_shown": 0, "warnings": [], "warnings_not_shown": 0, "variables": 0, "from_files": 0, "program": null})
    );
}

/// A whole object of many containers under a long key is refused in bounded
/// memory: a JSON path kept for each container took gigabytes (10 GB here).
#[test]
fn many_containers_under_a_long_key_are_refused_in_bounded_memory() {
    let v = Volume::new();
    let key = "k".repeat(200_000);
    let containers = vec![r#"{"name":"c"}"#; 20_000].join(",");
    v.file("big.json", format!("{{\"kind\":\"Pod\",\"{key}\":{{\"containers\":[{containers}]}}}}"));
    let path = v.join("big.json");
    for extra in [&[][..], &["--container", "none"][..]] {
        let out = std::process::Command::new("bash")
            .args(["-c", "ulimit -v 400000; exec \"$0\" check --manifest \"$@\"", bin(), path.to_str().unwrap()])
            .args(extra)
            .env_clear()
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(78), "{extra:?}: {stderr}");
        assert!(stderr.starts_with("envshim: ") && stderr.contains(" a Pod") && stderr.lines().count() == 1, "{stderr}");
    }
}

#[test]
fn a_missing_key_names_the_closest_key_of_the_file_never_a_value() {
    let (_vol, _d, m) =
        setup(&[("db.env", &format!("PASSWORD={SENTINEL}\nUSER=app\n"))], json!({"env": [file_key_ref("DB_PASSWORD", "v", "db.env", "PASWORD", false)]}));
    let line = envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(66, &[]);
    assert_eq!(line, "envshim: manifest: env[0] (DB_PASSWORD): key \"PASWORD\" not found in v/db.env (did you mean PASSWORD?)");
    // Nothing close: no guess.
    let (_vol, _d, m) = setup(&[("db.env", &format!("PASSWORD={SENTINEL}\n"))], json!({"env": [file_key_ref("X", "v", "db.env", "TOKEN", false)]}));
    let line = envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(66, &[]);
    assert_eq!(line, "envshim: manifest: env[0] (X): key \"TOKEN\" not found in v/db.env");
}

#[test]
fn an_unknown_top_level_field_is_refused_as_the_api_server_would() {
    let v = Volume::new();
    v.file("vol/app.env", format!("K={SENTINEL}\n"));
    let mounts = json!([{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap()}]);
    let m = v.manifest(&json!({"volumeMount": mounts, "env": [file_key_ref("K", "cfg", "app.env", "K", false)]}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.no_sentinel();
    let lines = out.fails(78);
    assert!(lines.contains(&format!("envshim: manifest {m}: volumeMount: unknown field (did you mean volumeMounts?)")), "{lines:?}");
    // Alone (the manifest reads as empty otherwise), and nothing close: refused too.
    let m = v.manifest(&json!({"volumeMount": mounts}));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &["volumeMount: unknown field (did you mean volumeMounts?)"]);
    let m = v.manifest(&json!({"imagePullPolcy": "Always", "env": []}));
    envshim(["check", "--manifest", &m]).run().fails_with(78, &["imagePullPolcy: unknown field (did you mean imagePullPolicy?)"]);
    let m = v.manifest(&json!({"frobnicate": 1, "env": []}));
    let line = envshim(["check", "--manifest", &m]).run().fails_with(78, &[]);
    assert_eq!(line, format!("envshim: manifest {m}: frobnicate: unknown field"));
    // Every other field of a Kubernetes Container is accepted (and ignored).
    let container = json!({
        "name": "app", "image": "app:1", "command": ["/bin/true"], "args": [], "workingDir": "/", "ports": [{"containerPort": 80}],
        "envFrom": [], "env": [{"name": "A", "value": "1"}], "resources": {}, "resizePolicy": [], "restartPolicy": "Always",
        "restartPolicyRules": [], "volumeMounts": [], "volumeDevices": [], "livenessProbe": {}, "readinessProbe": {}, "startupProbe": {},
        "lifecycle": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "Always",
        "securityContext": {}, "stdin": false, "stdinOnce": false, "tty": false
    });
    let m = v.manifest(&container);
    envshim(["check", "--manifest", &m]).run().ok();
    let m = v.manifest(&json!({"name": "app", "image": "app:1"}));
    envshim(["check", "--manifest", &m]).run().ok();
}

#[test]
fn an_absolute_file_key_ref_path_that_is_missing_says_paths_are_relative_to_the_volume() {
    let (vol, _d, _) = setup(&[], json!({}));
    let elsewhere = Volume::new();
    let outside = elsewhere.file_str("db.env", format!("PW={SENTINEL}\n"));
    let d = Volume::new();
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("PW", "v", &outside, "PW", false)]}));
    let line = envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(66, &[]);
    assert_eq!(
        line,
        format!("envshim: manifest: env[0] (PW): file v{outside} not found (a path is relative to its volume: a leading / is the volume's root, not the container's)")
    );
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "envFrom": [file_ref("v", &outside, false, None)]}));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(66, &["file v/", "a path is relative to its volume"]);
    // A relative path: no such note.
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("PW", "v", "db.env", "PW", false)]}));
    let line = envshim(["check", "--manifest", &m]).run().fails_with(66, &[]);
    assert_eq!(line, "envshim: manifest: env[0] (PW): file v/db.env not found");
}

#[test]
fn check_warns_of_an_unquoted_value_cut_at_a_comment_never_showing_it() {
    let v = Volume::new();
    v.file("app.env", format!("A=plain\nPW=abc #{SENTINEL}\nB=x # {SENTINEL}\n"));
    let out = envshim(["check", "--env-file", "app.env"]).cwd(v.path()).run();
    out.no_sentinel().code(0);
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: env file app.env, line 2: the unquoted value of PW ends before ' #', which starts a comment: quote the value if the # is part of it; 1 more line ends the same way",
            "envshim: ok: 3 variables (3 from files; env files read with envshim's grammar), no program line",
        ]
    );
    envshim(["check", "--strict", "--env-file", "app.env"])
        .cwd(v.path())
        .run()
        .no_sentinel()
        .fails_with(78, &["line 2: the unquoted value of PW ends before ' #'"]);
    // run takes the value as the grammar says, silently.
    let out = envshim(["run", "--env-file", "app.env", "--"]).args(print_env()).cwd(v.path()).run();
    out.ok();
    assert_eq!(out.env_map()["PW"], "abc");
    // A volume's file is named by volume and path; quoted, or a # inside a word: nothing said.
    let (_vol, _d, m) = setup(&[("db.env", &format!("PW=abc #{SENTINEL}\n"))], json!({"envFrom": [file_ref("v", "db.env", false, None)]}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.no_sentinel().code(0);
    assert!(out.stderr_str().starts_with("envshim: warning: volume v, path db.env, line 1: the unquoted value of PW ends before ' #'"), "{}", out.stderr_str());
    v.file("fine.env", format!("PW='abc #{SENTINEL}'\nQ=abc#def\nR=\"a #b\" # a comment\n"));
    envshim(["check", "--env-file", "fine.env"]).cwd(v.path()).run().ok();
}

/// An env file given as the program (`check team/db.env` for `check
/// --env-file team/db.env`): the message says to load it with --env-file,
/// for a name ending in `.env` or a text file that cannot be executed; a
/// binary or a script is not taken for one.
#[test]
fn an_env_file_given_as_the_program_is_pointed_to_env_file() {
    let v = Volume::new();
    v.file("team/db.env", format!("DB_PASSWORD='{SENTINEL}'\n"));
    v.file("team/settings", format!("MODE='{SENTINEL}'\n"));
    v.file("team/script", "#!/bin/sh\nexit 0\n");
    for (args, code) in [
        (vec!["check", "--env-grammar", "kubelet", "team/db.env"], 126),
        (vec!["check", "--", "team/settings"], 126),
        (vec!["run", "--", "team/db.env"], 126),
        (vec!["check", "--", "db.env"], 127),
    ] {
        let out = envshim(&args).cwd(v.path()).run();
        let at = args.last().unwrap();
        out.fails_with(code, &[&format!("--env-file {at}")]);
        out.no_sentinel();
    }
    let out = envshim(["check", "--", "team/script"]).cwd(v.path()).run();
    assert!(!out.fails(126)[0].contains("--env-file"), "{}", out.stderr_str());
    let out = envshim(["check", "--", "team/missing"]).cwd(v.path()).run();
    assert!(!out.fails(127)[0].contains("--env-file"), "{}", out.stderr_str());
}
