//! Where the environment comes from and in which order (docs/reference.md §2): inherited
//! < envFrom < env, manifest before the command line, expansion against
//! what is built so far, and KUBERNETES_SERVICE_URL.

use std::collections::BTreeMap;

use crate::common::*;
use serde_json::{json, Value};

/// The environment the program gets: `run ARGS -- env -0` with `inherited`.
#[track_caller]
fn program_env(args: &[&str], inherited: &[(&str, &str)]) -> BTreeMap<String, String> {
    let out = envshim(["run"]).args(args).arg("--").args(print_env()).envs(inherited.iter().copied()).run();
    out.ok();
    out.env_map()
}

#[test]
fn inherited_then_envfrom_then_env() {
    let (_v, _d, m) = setup(
        &[("a.env", "L1=file\nL2=file\nL3=file\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [{"name": "L3", "value": "env"}, {"name": "L4", "value": "env"}],
        }),
    );
    let env = program_env(&["--manifest", &m], &[("L0", "inh"), ("L1", "inh"), ("L3", "inh"), ("L4", "inh")]);
    let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(got, [("L0", "inh"), ("L1", "file"), ("L2", "file"), ("L3", "env"), ("L4", "env")]);
}

#[test]
fn manifest_before_command_line() {
    let (vol, _d, m) = setup(
        &[("a.env", "X=manifest-file\nY=manifest-file\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [{"name": "Z", "value": "manifest-env"}, {"name": "W", "value": "manifest-env"}],
        }),
    );
    let cli_file = vol.file_str("cli.env", "X=cli-file\nZ=cli-file\n");
    let env = program_env(&["--manifest", &m, "--env-file", &cli_file, "--env", "W=cli-env"], &[]);
    // --env-file after the manifest's envFrom, but before any env entry.
    assert_eq!(env["X"], "cli-file");
    assert_eq!(env["Y"], "manifest-file");
    assert_eq!(env["Z"], "manifest-env");
    assert_eq!(env["W"], "cli-env");
}

#[test]
fn envfrom_sources_in_order_with_prefixes() {
    let (_v, _d, m) = setup(
        &[("a.env", "K=a\nA_K=from-a\n"), ("b.env", "K=b\n")],
        json!({"envFrom": [
            file_ref("v", "a.env", false, None),
            file_ref("v", "b.env", false, Some("A_")),
            file_ref("v", "b.env", false, None),
        ]}),
    );
    let env = program_env(&["--manifest", &m], &[]);
    assert_eq!((env["K"].as_str(), env["A_K"].as_str()), ("b", "b"));
}

#[test]
fn expansion_sees_everything_built_so_far_and_nothing_later() {
    let (_v, _d, m) = setup(
        &[("a.env", "FROM_FILE=f\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [
                {"name": "E0", "value": "$(INH)-$(FROM_FILE)-$(LATER)-$(CLI)"},
                {"name": "LATER", "value": "later"},
                {"name": "E2", "value": "$(LATER)+$(E0)"},
                {"name": "SELF", "value": "[$(SELF)]"},
                {"name": "INH", "value": "re-$(INH)"},
            ],
        }),
    );
    let env = program_env(&["--manifest", &m, "--env", "CLI=$(E2)|$(INH)", "--env", "SELF=$(SELF)!"], &[("INH", "i"), ("SELF", "old")]);
    assert_eq!(env["E0"], "i-f-$(LATER)-$(CLI)");
    assert_eq!(env["E2"], "later+i-f-$(LATER)-$(CLI)");
    assert_eq!(env["INH"], "re-i");
    assert_eq!(env["CLI"], "later+i-f-$(LATER)-$(CLI)|re-i");
    // A variable referencing itself sees its earlier value.
    assert_eq!(env["SELF"], "[old]!");
}

#[test]
fn substituted_values_are_not_rescanned() {
    let env = program_env(&["--env", "A=$(B)", "--env", "C=$(A)"], &[("B", "$(INNER)"), ("INNER", "no")]);
    assert_eq!(env["A"], "$(INNER)");
    assert_eq!(env["C"], "$(INNER)");
}

#[test]
fn values_from_files_are_never_expanded() {
    let (vol, _d, m) = setup(
        &[("a.env", "RAW=$(INH)\nRAW2=\"$$ $(INH)\"\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [file_key_ref("KEYED", "v", "a.env", "RAW", false), {"name": "EXPANDED", "value": "$(RAW)"}],
        }),
    );
    let cli_file = vol.file_str("cli.env", "CLIRAW=$(INH)\n");
    let env = program_env(&["--manifest", &m, "--env-file", &cli_file], &[("INH", "i")]);
    assert_eq!(env["RAW"], "$(INH)");
    assert_eq!(env["RAW2"], "$$ $(INH)");
    assert_eq!(env["KEYED"], "$(INH)");
    assert_eq!(env["CLIRAW"], "$(INH)");
    // Referencing a file's value substitutes it, without rescanning it.
    assert_eq!(env["EXPANDED"], "$(INH)");
}

#[test]
fn inherited_values_are_not_expanded() {
    let env = program_env(&[], &[("A", "$(B)"), ("B", "b")]);
    assert_eq!(env["A"], "$(B)");
}

#[test]
fn expansion_table_of_the_design_doc_through_env_values() {
    let doc: Value = serde_json::from_str(include_str!("data/expansion-seed-table.json")).unwrap();
    let mapping: Vec<(String, String)> = doc["mapping"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 36);
    // Every row as a manifest env value, the mapping inherited.
    let env: Vec<Value> = rows.iter().enumerate().map(|(i, r)| json!({"name": format!("ROW{i}"), "value": r["input"]})).collect();
    let d = Volume::new();
    let m = d.manifest(&json!({"env": env}));
    let inherited: Vec<(&str, &str)> = mapping.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m]).envs(inherited.iter().copied()).run();
    out.ok();
    let got = values(&rendered(&out));
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(got[&format!("ROW{i}")], r["expected"].as_str().unwrap(), "input {}", r["input"]);
    }
    // And as arguments, expanded against the final environment.
    let inputs: Vec<&str> = rows.iter().map(|r| r["input"].as_str().unwrap()).collect();
    let out = envshim(["run", "--", "/bin/sh", "-c", PRINT_ARGS]).args(&inputs).envs(inherited.iter().copied()).run();
    out.ok();
    // PRINT_ARGS itself holds `"$0" "$@"`, which expansion leaves alone.
    let args = out.args0();
    assert_eq!(args.len(), rows.len());
    for (got, r) in args.iter().zip(rows) {
        assert_eq!(got, r["expected"].as_str().unwrap(), "input {}", r["input"]);
    }
}

#[test]
fn command_and_args_use_the_final_environment() {
    let (_v, _d, m) = setup(
        &[("a.env", "F=file\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [{"name": "F", "value": "env-$(F)"}],
            "command": ["/bin/sh", "-c", PRINT_ARGS, "$(F)"],
            "args": ["$(C)", "$(F)$(C)"],
        }),
    );
    let out = envshim(["run", "--manifest", &m, "--env", "C=cli", "--env", "F=last"]).run();
    out.ok();
    assert_eq!(out.args0(), ["last", "cli", "lastcli"]);
}

#[test]
fn platform_value_from_keeps_the_inherited_value() {
    let (_v, _d, m) = setup(
        &[("a.env", "S=file\nT=file\nU=file\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [
                {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                {"name": "T", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
                {"name": "V", "value": "literal"},
                {"name": "V", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "W", "value": "literal"},
                {"name": "W", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                {"name": "AFTER", "value": "$(S)/$(T)/$(V)/$(W)"},
            ],
        }),
    );
    let env = program_env(&["--manifest", &m], &[("S", "inh-s"), ("V", "inh-v")]);
    // Inherited: overrides envFrom and earlier env entries.
    assert_eq!(env["S"], "inh-s");
    assert_eq!(env["V"], "inh-v");
    // Not inherited: left as it was.
    assert_eq!(env["T"], "file");
    assert_eq!(env["W"], "literal");
    assert_eq!(env["U"], "file");
    assert_eq!(env["AFTER"], "inh-s/file/inh-v/literal");
    // Not inherited and not set before: not set.
    let (_v, _d, m) = setup(&[], json!({"env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}));
    assert!(program_env(&["--manifest", &m], &[]).is_empty());
}

#[test]
fn optional_missing_file_or_key_keeps_an_earlier_value() {
    let (_v, _d, m) = setup(
        &[("a.env", "A=from-envfrom\nB=from-envfrom\nOTHER=x\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None), file_ref("v", "gone.env", true, Some("G_"))],
            "env": [
                file_key_ref("A", "v", "gone.env", "A", true),
                file_key_ref("B", "v", "a.env", "NOKEY", true),
                {"name": "C", "value": "from-env"},
                file_key_ref("C", "v", "gone.env", "C", true),
                file_key_ref("INH", "v", "a.env", "NOKEY", true),
            ],
        }),
    );
    let env = program_env(&["--manifest", &m], &[("INH", "inherited")]);
    assert_eq!(env["A"], "from-envfrom");
    assert_eq!(env["B"], "from-envfrom");
    assert_eq!(env["C"], "from-env");
    assert_eq!(env["INH"], "inherited");
}

#[test]
fn empty_values_are_values() {
    let (_v, _d, m) = setup(
        &[("a.env", "E1=\nE2=''\n")],
        json!({"env": [
            file_key_ref("E1", "v", "a.env", "E1", false),
            file_key_ref("E2", "v", "a.env", "E2", false),
            {"name": "E3"},
            {"name": "E4", "value": ""},
            {"name": "E5", "value": "[$(E1)]"},
        ]}),
    );
    let env = program_env(&["--manifest", &m], &[("E1", "inh"), ("E2", "inh"), ("E3", "inh"), ("E4", "inh")]);
    for k in ["E1", "E2", "E3", "E4"] {
        assert_eq!(env[k], "", "{k}");
    }
    assert_eq!(env["E5"], "[]");
}

#[test]
fn duplicates_last_wins() {
    let (vol, _d, m) = setup(
        &[("a.env", "D=1\nD=2\n"), ("b.env", "D=3\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, None)],
            "env": [
                file_key_ref("K", "v", "a.env", "D", false),
                {"name": "M", "value": "1"},
                {"name": "M", "value": "2"},
            ],
        }),
    );
    // The file's duplicate is warned about (the kubelet takes the first), the last still wins.
    let out = envshim(["run", "--manifest", &m, "--"]).args(print_env()).run();
    out.code(0);
    assert_eq!(
        out.stderr_lines(),
        ["envshim: warning: volume v, path a.env: the name on line 1 is given again on line 2: the last one wins (the kubelet takes the first)"]
    );
    let env = out.env_map();
    assert_eq!((env["D"].as_str(), env["K"].as_str(), env["M"].as_str()), ("2", "2", "2"));
    let b = vol.join("b.env");
    let a = vol.join("a.env");
    let out =
        envshim(["run", "--env-file", a.to_str().unwrap(), "--env-file", b.to_str().unwrap(), "--env", "X=1", "--env", "X=2", "--"]).args(print_env()).run();
    out.code(0);
    let env = out.env_map();
    assert_eq!((env["D"].as_str(), env["X"].as_str()), ("3", "2"));
}

/// The program gets each key of an env file exactly as parsed, in order,
/// whether its `NAME=VALUE` is handed to `execve` where the file holds it
/// (written so, then a blank or line ending) or copied (blanks around `=`,
/// quotes, the last line without a newline, a prefix), with and without
/// `--init`, and past the 64 files whose strings are used in place.
#[test]
fn env_file_keys_reach_the_program_in_place_or_copied() {
    let text = "A=1\nB = 2\r\nC=3 \t\nD=\"q q\"\nexport E=5\nF=\nG=x\tH=y  \nA=6\nI=last";
    let mut files: Vec<(String, String)> = vec![("a.env".into(), text.into())];
    files.extend((0..70).map(|i| (format!("k{i}.env"), format!("K{i}=v{i}\n"))));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
    let mut env_from = vec![file_ref("v", "a.env", false, None), file_ref("v", "a.env", false, Some("P_"))];
    env_from.extend((0..70).map(|i| file_ref("v", &format!("k{i}.env"), false, None)));
    let (_v, _d, m) = setup(&refs, json!({"envFrom": env_from, "env": [{"name": "C", "value": "$(C)$(A)"}]}));
    let keys = [("A", "6"), ("B", "2"), ("C", "3"), ("D", "q q"), ("E", "5"), ("F", ""), ("G", "x\tH=y"), ("I", "last")];
    let mut want: Vec<(String, String)> = vec![("L".into(), "inh".into())];
    want.extend(keys.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    want.extend(keys.iter().map(|(k, v)| (format!("P_{k}"), v.to_string())));
    want.extend((0..70).map(|i| (format!("K{i}"), format!("v{i}"))));
    want[3].1 = "36".into();
    for init in [&[][..], &["--init"][..]] {
        let out = envshim(["run"]).args(init).args(["--manifest", &m, "--"]).args(print_env()).env("L", "inh").run();
        out.code(0);
        // `A` is given twice in a.env: warned about once, though the file is imported twice.
        assert_eq!(
            out.stderr_lines(),
            ["envshim: warning: volume v, path a.env: the name on line 1 is given again on line 8: the last one wins (the kubelet takes the first)"]
        );
        assert_eq!(out.env0(), want, "{init:?}");
    }
}

#[test]
fn one_file_referenced_many_times_is_consistent() {
    let (_v, _d, m) = setup(
        &[("a.env", "A=1\nB=2\n")],
        json!({
            "envFrom": [file_ref("v", "a.env", false, Some("P_")), file_ref("v", "./a.env", false, None)],
            "env": [file_key_ref("X", "v", "/a.env", "B", false), file_key_ref("Y", "v", "a.env", "A", false)],
        }),
    );
    let env = program_env(&["--manifest", &m], &[]);
    let got: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(got, [("A", "1"), ("B", "2"), ("P_A", "1"), ("P_B", "2"), ("X", "2"), ("Y", "1")]);
}

// ---------------------------------------------------------------- KUBERNETES_SERVICE_URL

fn url_for(host: &str, port: &str, args: &[&str]) -> Option<String> {
    let env = program_env(args, &[("KUBERNETES_SERVICE_HOST", host), ("KUBERNETES_SERVICE_PORT", port)]);
    env.get("KUBERNETES_SERVICE_URL").cloned()
}

#[test]
fn service_url_is_built_from_host_and_port() {
    assert_eq!(url_for("10.96.0.1", "443", &[]).as_deref(), Some("https://10.96.0.1:443"));
    assert_eq!(url_for("kubernetes.default.svc", "6443", &[]).as_deref(), Some("https://kubernetes.default.svc:6443"));
    assert_eq!(url_for("fd00:10:96::1", "443", &[]).as_deref(), Some("https://[fd00:10:96::1]:443"));
    assert_eq!(url_for("::1", "443", &[]).as_deref(), Some("https://[::1]:443"));
    // Already bracketed: not bracketed twice.
    assert_eq!(url_for("[fd00::1]", "443", &[]).as_deref(), Some("https://[fd00::1]:443"));
    // Either empty or missing: none.
    assert_eq!(url_for("", "443", &[]), None);
    assert_eq!(url_for("10.0.0.1", "", &[]), None);
    assert!(!program_env(&[], &[("KUBERNETES_SERVICE_HOST", "10.0.0.1")]).contains_key("KUBERNETES_SERVICE_URL"));
    assert!(!program_env(&[], &[("KUBERNETES_SERVICE_PORT", "443")]).contains_key("KUBERNETES_SERVICE_URL"));
    assert_eq!(url_for("10.0.0.1", "443", &["--no-service-url"]), None);
}

#[test]
fn an_inherited_service_url_is_kept() {
    let env = program_env(&[], &[("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("KUBERNETES_SERVICE_PORT", "443"), ("KUBERNETES_SERVICE_URL", "https://custom")]);
    assert_eq!(env["KUBERNETES_SERVICE_URL"], "https://custom");
    // Even when empty: it is set.
    let env = program_env(&[], &[("KUBERNETES_SERVICE_HOST", "h"), ("KUBERNETES_SERVICE_PORT", "1"), ("KUBERNETES_SERVICE_URL", "")]);
    assert_eq!(env["KUBERNETES_SERVICE_URL"], "");
}

#[test]
fn service_url_is_a_platform_variable_env_can_reference_and_override() {
    let host = [("KUBERNETES_SERVICE_HOST", "fd00::1"), ("KUBERNETES_SERVICE_PORT", "443")];
    let (_v, _d, m) = setup(&[("a.env", "KUBERNETES_SERVICE_URL=from-file\n")], json!({"env": [{"name": "API", "value": "$(KUBERNETES_SERVICE_URL)/api"}]}));
    let env = program_env(&["--manifest", &m], &host);
    assert_eq!(env["API"], "https://[fd00::1]:443/api");
    // envFrom overrides it, like any platform variable.
    let (_v, _d, m) = setup(
        &[("a.env", "KUBERNETES_SERVICE_URL=from-file\n")],
        json!({"envFrom": [file_ref("v", "a.env", false, None)], "env": [{"name": "API", "value": "$(KUBERNETES_SERVICE_URL)"}]}),
    );
    let env = program_env(&["--manifest", &m], &host);
    assert_eq!((env["KUBERNETES_SERVICE_URL"].as_str(), env["API"].as_str()), ("from-file", "from-file"));
    // And --env.
    let env = program_env(&["--env", "KUBERNETES_SERVICE_URL=https://x:1"], &host);
    assert_eq!(env["KUBERNETES_SERVICE_URL"], "https://x:1");
}

#[test]
fn service_url_comes_from_the_inherited_host_and_port_only() {
    // Step 1 builds it from the inherited environment: host and port set by
    // env files or env entries do not make one.
    let (_v, _d, m) =
        setup(&[("a.env", "KUBERNETES_SERVICE_HOST=10.0.0.9\nKUBERNETES_SERVICE_PORT=443\n")], json!({"envFrom": [file_ref("v", "a.env", false, None)]}));
    assert!(!program_env(&["--manifest", &m], &[]).contains_key("KUBERNETES_SERVICE_URL"));
    let env = program_env(&["--env", "KUBERNETES_SERVICE_HOST=10.0.0.9", "--env", "KUBERNETES_SERVICE_PORT=443"], &[]);
    assert!(!env.contains_key("KUBERNETES_SERVICE_URL"));
    // Inherited ones overridden later still give the URL of the inherited ones.
    let env = program_env(&["--env", "KUBERNETES_SERVICE_HOST=other"], &[("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("KUBERNETES_SERVICE_PORT", "443")]);
    assert_eq!(env["KUBERNETES_SERVICE_URL"], "https://10.0.0.1:443");
}

#[test]
fn the_final_path_finds_the_program() {
    // PATH is part of the environment built like any other variable.
    let d = Volume::new();
    let prog = d.file("bin/prog-prec", "#!/bin/sh\necho \"$WHO\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let f = d.file_str("p.env", format!("PATH={}\n", d.join("bin").display()));
    let out = envshim(["run", "--env-file", &f, "--env", "WHO=me", "--", "prog-prec"]).env("PATH", "/usr/bin").run();
    out.ok();
    assert_eq!(out.stdout_str(), "me\n");
}

#[test]
fn expansion_edge_cases_through_the_binary() {
    // (input, expected) with A=a and E="" defined; multi-byte characters after `$` stay whole.
    let rows: &[(&str, &str)] = &[
        ("$(A)", "a"),
        ("$$(A)", "$(A)"),
        ("$$$(A)", "$a"),
        ("$", "$"),
        ("x$", "x$"),
        ("$(", "$("),
        ("$(A", "$(A"),
        ("$()", "$()"),
        ("$(E)", ""),
        ("[$(E)]", "[]"),
        ("$(A))", "a)"),
        ("$($(A))", "$($(A))"),
        ("${A} $A \\$(A)", "${A} $A \\a"),
        ("$\u{e9}$(A)", "$\u{e9}a"),
        ("$\u{20ac}x", "$\u{20ac}x"),
        ("$\u{1F600}$(A)", "$\u{1F600}a"),
        ("caf\u{e9}$(A)\u{e9}", "caf\u{e9}a\u{e9}"),
    ];
    let mut args = vec!["--env".to_string(), "A=a".into(), "--env".into(), "E=".into()];
    for (i, (input, _)) in rows.iter().enumerate() {
        args.push("--env".into());
        args.push(format!("R{i:02}={input}"));
    }
    let got = values(&render_values(&args));
    let out = envshim(["run", "--env", "A=a", "--env", "E=", "--", "/bin/sh", "-c", PRINT_ARGS]).args(rows.iter().map(|(input, _)| *input)).run();
    out.ok();
    let argv = out.args0();
    for (i, (input, want)) in rows.iter().enumerate() {
        assert_eq!(got[&format!("R{i:02}")], *want, "env value {input:?}");
        assert_eq!(argv[i], *want, "argument {input:?}");
    }
}
