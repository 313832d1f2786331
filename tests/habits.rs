//! Where the shim tripped a new user coming from tini, dumb-init, envdir and
//! dotenv (issue 28), through the binary: ENTRYPOINT habits, the double
//! expansion of a program line the kubelet has already expanded, shell and
//! dotenv habits, and the configuration variables that keep an image's CMD.
//! Every failing input carries the sentinel, which no output may hold.

use crate::common::*;
use serde_json::json;

#[test]
fn tinis_habit_envshim_dash_dash_program_means_run() {
    let out = envshim(["--", "/bin/sh", "-c", PRINT_ARGS, "a$(HOME)b", "--port=8080"]).env("HOME", "/h").run();
    out.ok();
    assert_eq!(out.args0(), ["a/hb", "--port=8080"]);
}

#[test]
fn a_pods_args_after_a_bare_run_entrypoint_say_where_program_arguments_go() {
    // ENTRYPOINT ["/envshim","run"] with the pod's `args: ["--port=SECRET", "--debug"]`.
    let port = format!("--port={SENTINEL}");
    let out = envshim(["run", &port, "--debug"]).run();
    out.no_sentinel().fails_with(
        2,
        &[
            "unexpected argument '--port' found",
            "the program's arguments go after --: envshim run [OPTIONS] -- PROGRAM --port",
            r#"ENTRYPOINT ["/envshim","run","--","/app"] lets a pod's args append"#,
        ],
    );
    // A misspelt option of envshim's own still gets its suggestion.
    envshim(["run", "--verbos", "--", "true"]).run().fails_with(2, &["(did you mean --verbose? see envshim --help)"]);
    // With the documented ENTRYPOINT, the pod's args append.
    let out = envshim(["run", "--", "/bin/sh", "-c", PRINT_ARGS, "app", &port, "--debug"]).run();
    out.ok();
    assert_eq!(out.args0(), ["app", &port, "--debug"]);
}

#[test]
fn an_option_before_the_subcommand_says_to_put_it_after() {
    for opt in ["--verbose", "--manifest"] {
        let line = envshim([opt, "run", "--", SENTINEL]).run().no_sentinel().fails_with(2, &[]);
        assert_eq!(
            line,
            format!("envshim: unexpected argument '{opt}' found (options go after the subcommand: envshim run {opt} ..., not envshim {opt} run ...)")
        );
    }
}

#[test]
fn envshim_env_file_adds_env_files_after_the_options_and_keeps_the_cmd() {
    let v = Volume::new();
    let a = v.file_str("a.env", "A=from-a\nB=from-a\n");
    let b = v.file_str("b.env", "B=from-b\nC=from-b\n");
    let opt = v.file_str("opt.env", "A=from-option\nB=from-option\nD=from-option\n");
    let out = envshim(["run", "--env-file", &opt, "--"]).args(print_env()).env("ENVSHIM_ENV_FILE", format!("{a},{b}")).run();
    out.ok();
    let env = out.env_map();
    assert_eq!((env["A"].as_str(), env["B"].as_str(), env["C"].as_str(), env["D"].as_str()), ("from-a", "from-b", "from-b", "from-option"));
    assert!(!env.contains_key("ENVSHIM_ENV_FILE"), "{env:?}");
    // Empty parts are none; a missing file is named as given (66).
    let out = envshim(["run", "--"]).args(print_env()).env("ENVSHIM_ENV_FILE", format!(",{a},")).run();
    out.ok();
    assert_eq!(out.env_map()["A"], "from-a");
    let missing = v.join("missing.env");
    let out = envshim(["check"]).env("ENVSHIM_ENV_FILE", &missing).env("S", SENTINEL).run();
    out.no_sentinel().fails_with(66, &[missing.to_str().unwrap()]);
}

#[test]
fn envshim_no_expand_args_switches_the_program_lines_expansion_off() {
    // What the kubelet already expanded (a Secret in args, `$$` in a shell line) reaches the program as given.
    let out = envshim(["run", "--", "/bin/sh", "-c", PRINT_ARGS, "a$(HOME)b$$c"]).env("HOME", "/h").env("ENVSHIM_NO_EXPAND_ARGS", "true").run();
    out.ok();
    assert_eq!(out.args0(), ["a$(HOME)b$$c"]);
    assert!(!out.stdout_str().contains("ENVSHIM"));
    let out = envshim(["run", "--", "/bin/sh", "-c", PRINT_ARGS, "a$(HOME)b$$c"]).env("HOME", "/h").env("ENVSHIM_NO_EXPAND_ARGS", "0").run();
    out.ok();
    assert_eq!(out.args0(), ["a/hb$c"]);
    let out = envshim(["run", "--", "true"]).env("ENVSHIM_NO_EXPAND_ARGS", SENTINEL).run();
    out.no_sentinel().fails_with(2, &["ENVSHIM_NO_EXPAND_ARGS must be one of 1/0, true/false, yes/no, on/off"]);
}

#[test]
fn check_warns_about_dollar_dollar_in_the_program_line_naming_no_expand_args() {
    let out = envshim(["check", "--", "/bin/sh", "-c", "echo pid=$$"]).run();
    out.code(0);
    assert_eq!(
        out.stderr_lines()[0],
        "envshim: warning: argument 2 of the program line: envshim expands $$ to $ (and $(VAR)); on Kubernetes the kubelet has already expanded it: --no-expand-args or ENVSHIM_NO_EXPAND_ARGS=1 leaves it as written"
    );
    envshim(["check", "--strict", "--", "/bin/sh", "-c", "echo pid=$$"]).run().fails_with(78, &["$$"]);
    // `$$(` escapes a reference on purpose: no warning.
    envshim(["check", "--", "/bin/echo", "$$(Y)"]).run().ok();
    // Switched off, or in run: silent.
    envshim(["check", "--no-expand-args", "--", "/bin/sh", "-c", "echo pid=$$"]).run().ok();
    envshim(["check", "--", "/bin/sh", "-c", "echo pid=$$"]).env("ENVSHIM_NO_EXPAND_ARGS", "1").run().ok();
    let out = envshim(["run", "--", "/bin/sh", "-c", "printf %s pid=$$"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "pid=$");
}

#[test]
fn check_warns_that_braces_are_not_expanded_and_run_stays_silent() {
    let v = Volume::new();
    let file = v.file_str("app.env", format!("URL=http://${{HOST}}/{SENTINEL}\nOK=$(HOST)\n"));
    let env = format!("URL2=http://${{HOST}}/{SENTINEL}");
    let out = envshim(["check", "--env", &env, "--env-file", &file]).env("HOST", "h").run();
    out.code(0).no_sentinel();
    let lines = out.stderr_lines();
    assert_eq!(
        lines[..2],
        [
            format!("envshim: warning: the variable from {file} line 1 holds ${{NAME}}, left as written: values read from files are never expanded"),
            "envshim: warning: variable URL2 (--env) holds ${NAME}, left as written: envshim expands $(NAME), not ${NAME}".to_string(),
        ]
    );
    assert_eq!(lines.len(), 3, "{lines:?}");
    let out = envshim(["run", "--env", &env, "--env-file", &file, "--"]).args(print_env()).run();
    out.ok();
    assert_eq!(out.env_map()["URL2"], format!("http://${{HOST}}/{SENTINEL}"));
    // A platform-resolved entry's value (a Secret's) is a value, as an inherited one is: no warning.
    let m = serde_json::json!({"env": [{"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}).to_string();
    let out = envshim(["check", "--strict", "--manifest-json", &m]).env("PASS", format!("${{HOST}}{SENTINEL}")).run();
    out.code(0).no_sentinel();
    assert_eq!(out.stderr_lines().len(), 1, "{:?}", out.stderr_lines());
}

#[test]
fn an_env_file_given_to_env_dir_is_pointed_to_env_file() {
    let v = Volume::new();
    v.file("envs/app.env", format!("PASSWORD={SENTINEL}\n"));
    v.file("envs/settings", format!("# dotenv\nexport MODE=fast\nKEY={SENTINEL}\n"));
    v.file("envs/TOKEN", format!("{SENTINEL}\n"));
    v.file("envs/ca.crt", "-----BEGIN CERTIFICATE-----\nA=B\n");
    let dir = v.join("envs");
    let dir = dir.to_str().unwrap();
    let out = envshim(["check", "--env-dir", dir]).run();
    out.code(0).no_sentinel();
    let lines = out.stderr_lines();
    assert_eq!(
        lines[..2],
        [
            format!("envshim: warning: {dir}/app.env looks like an env file, yet --env-dir makes it one variable (app.env) holding the whole file: --env-file {dir}/app.env loads its lines as variables"),
            format!("envshim: warning: {dir}/settings looks like an env file, yet --env-dir makes it one variable (settings) holding the whole file: --env-file {dir}/settings loads its lines as variables"),
        ]
    );
    assert_eq!(lines.len(), 3, "{lines:?}");
    envshim(["check", "--strict", "--env-dir", dir]).run().no_sentinel().fails(78);
}

#[test]
fn messages_lead_somewhere_misspelt_fields_container_volume_env_dir_install() {
    let v = Volume::new();
    let value = json!({"name": "A", "valu": SENTINEL});
    let file_key = json!({"name": "B", "valueFrom": {"fileKeyref": {"volumeName": "v", "path": "p", "key": "k"}}});
    let m = v.manifest(&json!({"env": [value, file_key]}));
    let out = envshim(["check", "--manifest", &m]).run();
    let lines = out.fails(78);
    out.no_sentinel();
    assert!(lines.contains(&format!("envshim: manifest {m}: env[0].valu: unknown field (did you mean value?)")), "{lines:?}");
    assert!(lines.contains(&format!("envshim: manifest {m}: env[1].valueFrom.fileKeyref: unknown field (did you mean fileKeyRef?)")), "{lines:?}");
    // A field no schema field is close to gets no guess.
    let m = v.manifest(&json!({"env": [{"name": "A", "value": SENTINEL, "zzzzzz": 1}]}));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &["env[0].zzzzzz: unknown field"]);
    // --container ap.
    let pod = json!({"kind": "Pod", "spec": {"containers": [{"name": "app", "env": [{"name": "S", "value": SENTINEL}]}, {"name": "sidecar"}]}});
    let m = v.manifest(&pod);
    envshim(["check", "--manifest", &m, "--container", "ap"])
        .run()
        .no_sentinel()
        .fails_with(78, &["--container ap: no such container", "(it has app, sidecar); did you mean app?"]);
    // Docker's -v habit.
    let out = envshim(["check", "--volume", "cfg:/tmp"]).env("S", SENTINEL).run();
    out.no_sentinel().fails_with(2, &["--volume #1: expected NAME=DIR (envshim's --volume takes NAME=DIR, not Docker's NAME:DIR)"]);
    // An env file given to --env-dir.
    let file = v.file_str("app.env", format!("A={SENTINEL}\n"));
    envshim(["check", "--env-dir", &file])
        .run()
        .no_sentinel()
        .fails_with(78, &[&format!("--env-dir {file} is not a directory (for an env file of NAME=VALUE lines: --env-file {file})")]);
    // install into a directory that does not exist.
    let dest = v.join("no/such/dir/envshim");
    let out = envshim(["install", dest.to_str().unwrap()]).run();
    out.fails_with(73, &[&format!("install: the directory {} does not exist (for {})", v.join("no/such/dir").display(), dest.display())]);
    assert!(!v.join("no").exists());
}

#[test]
fn a_yaml_manifest_points_to_the_converter_and_both_yqs() {
    let v = Volume::new();
    let m = v.file_str("m.yaml", format!("env:\n- name: A\n  value: {SENTINEL}\n"));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(
        78,
        &["it looks like YAML; convert it offline: kubectl envshim manifest -f FILE [--container NAME], or yq (Go yq: yq -o json FILE; Python yq: yq . FILE)"],
    );
}

#[test]
fn a_missing_relative_mount_path_names_the_working_directory_and_volume() {
    let v = Volume::new();
    let m = json!({"volumeMounts": [{"name": "cfg", "mountPath": "config"}], "env": [file_key_ref("A", "cfg", "app.env", "A", false)]});
    let m = v.manifest(&m);
    let out = envshim(["check", "--manifest", &m]).cwd(v.path()).env("S", SENTINEL).run();
    out.no_sentinel().fails_with(78, &[&format!(
        "volume cfg: mountPath config is not a directory in this container (No such file or directory); it is relative to the working directory, {}: --volume cfg=DIR maps the volume to a directory",
        v.dir()
    )]);
}

#[test]
fn check_after_a_volume_error_adds_no_follow_on_warnings() {
    let v = Volume::new();
    let missing = v.join("missing");
    let m = json!({
        "volumeMounts": [{"name": "cfg", "mountPath": missing.to_str().unwrap()}],
        "env": [file_key_ref("A", "cfg", "app.env", "A", false), {"name": "B", "value": format!("$(A){SENTINEL}")}],
        "command": ["/bin/echo", "$(A)"]
    });
    let m = v.manifest(&m);
    let out = envshim(["check", "--manifest", &m]).run();
    let lines = out.fails(78);
    out.no_sentinel();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("envshim: volume cfg: mountPath "), "{lines:?}");
    // Without the error, the same reference is warned about.
    let m = v.manifest(&json!({"env": [{"name": "B", "value": format!("$(A){SENTINEL}")}]}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.code(0).no_sentinel().stderr_has("$(A) is not defined there");
}

#[test]
fn check_format_json_locates_volume_key_and_missing_file_errors_and_summarises_a_success() {
    let v = Volume::new();
    v.file("vol/a.env", format!("A={SENTINEL}\n"));
    let missing = v.join("missing");
    let m = v.manifest(&json!({
        "volumeMounts": [{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap()}, {"name": "gone", "mountPath": missing.to_str().unwrap()}],
        "envFrom": [{"fileRef": {"volumeName": "cfg", "path": "none.env"}}],
        "env": [
            file_key_ref("K", "cfg", "a.env", "NOPE", false),
            file_key_ref("G", "gone", "g.env", "G", false),
            file_key_ref("U", "nope", "u.env", "U", false),
            file_key_ref("P", "cfg", "../a.env", "P", false),
            file_key_ref("R", "cfg", "./", "R", false),
        ],
    }));
    let out = envshim(["check", "--format", "json", "--manifest", &m]).run();
    out.no_sentinel();
    let doc = out.json();
    let at = |i: usize| (doc["errors"][i]["path"].clone(), doc["errors"][i]["file"].clone());
    let errors = doc["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 6, "{doc}");
    assert_eq!(at(4), (json!("env[3].valueFrom.fileKeyRef.path"), json!(null)));
    assert_eq!(at(5), (json!("env[4].valueFrom.fileKeyRef.path"), json!(null)));
    assert_eq!(at(0), (json!("envFrom[0].fileRef.path"), json!("cfg/none.env")));
    assert_eq!(at(1), (json!("env[0].valueFrom.fileKeyRef.key"), json!("cfg/a.env")));
    assert_eq!(at(2), (json!(null), json!(missing.to_str().unwrap())));
    assert_eq!(at(3), (json!("env[2].valueFrom.fileKeyRef.volumeName"), json!(null)));
    assert_eq!((doc["variables"].clone(), doc["program"].clone()), (json!(null), json!(null)));
    // A success carries what the `ok:` line says.
    let env = v.file_str("ok.env", format!("A={SENTINEL}\nB=2\n"));
    let out = envshim(["check", "--format", "json", "--env-file", &env, "--env", "C=3", "--", "/bin/true"]).run();
    out.code(0).no_sentinel();
    let doc = out.json();
    assert_eq!(
        (doc["ok"].clone(), doc["variables"].clone(), doc["from_files"].clone(), doc["program"].clone()),
        (json!(true), json!(3), json!(2), json!("/bin/true"))
    );
}
