//! The options of run, check and render and their `ENVSHIM_*` variables
//! (docs/reference.md §1): each option and its env-var form, the default
//! manifest, the variables taken out of the program's environment, and
//! command lines of every shape.

use crate::common::*;
use serde_json::json;

// ---------------------------------------------------------------- options and their env vars

#[test]
fn manifest_option_and_env_var() {
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [{"name": "FROM", "value": "one"}]}));
    let other = d.file_str("other.json", json!({"env": [{"name": "FROM", "value": "two"}]}).to_string());
    let v = values(&render_values(["--manifest", &m]));
    assert_eq!(v["FROM"], "one");
    let out = envshim(["render", "--format", "json", "--show-values"]).env("ENVSHIM_MANIFEST", &m).run();
    out.ok();
    assert_eq!(values(&rendered(&out))["FROM"], "one");
    // The option wins over the variable.
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &other]).env("ENVSHIM_MANIFEST", &m).run();
    out.ok();
    assert_eq!(values(&rendered(&out))["FROM"], "two");
}

#[test]
fn a_named_manifest_that_is_missing_is_78() {
    let d = Volume::new();
    let missing = d.join("nope.json");
    let missing = missing.to_str().unwrap();
    for sub in [&["run", "--manifest", missing, "--", "/bin/true"][..], &["check", "--manifest", missing], &["render", "--manifest", missing]] {
        envshim(sub).run().fails_with(78, &[missing]);
    }
    envshim(["check"]).env("ENVSHIM_MANIFEST", missing).run().fails_with(78, &[missing]);
}

#[test]
fn without_a_named_manifest_the_default_is_optional() {
    // With a manifest there, envshim would read it: the test needs a machine without one.
    assert!(!std::path::Path::new("/etc/envshim").exists(), "/etc/envshim exists on this machine: envshim reads it");
    envshim(["check"]).run().ok();
    let out = envshim(["run", "--", "/bin/echo", "ok"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "ok\n");
}

/// `envshim ARGS...` in a private mount namespace whose `/etc` is an empty
/// tmpfs, after `setup` (a `sh` line) ran there: the default manifest's
/// directory as a pod would have it, without touching the machine's `/etc`.
/// Needs root (the tests that use it are `#[ignore = "needs root"]`).
fn with_private_etc(setup: &str, args: &[&str]) -> (i32, String, String) {
    assert!(am_root(), "needs root for a mount namespace");
    let script = format!("mount --make-rprivate / && mount -t tmpfs envshim-test /etc && {setup} && exec \"$0\" \"$@\"");
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script, bin()])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("unshare");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
#[ignore = "needs root"]
fn an_etc_envshim_without_manifest_json_is_66_not_an_empty_manifest() {
    // A ConfigMap mounted at /etc/envshim whose key is not manifest.json.
    let (code, _, err) = with_private_etc(&format!("mkdir /etc/envshim && echo '{SENTINEL}' > /etc/envshim/manifest.yaml"), &["check"]);
    assert_eq!(code, 66, "{err}");
    assert!(
        err.starts_with("envshim: /etc/envshim exists but has no manifest.json") && err.contains("the key manifest.json") && err.lines().count() == 1,
        "{err}"
    );
    assert_no_sentinel(err.as_bytes(), "stderr");
    let (code, out, err) = with_private_etc("mkdir /etc/envshim", &["run", "--", "/bin/echo", "started"]);
    assert_eq!((code, out.as_str()), (66, ""), "{err}");
    // --manifest names another: /etc/envshim is not looked at.
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [{"name": "FROM", "value": "named"}]}));
    let (code, out, err) = with_private_etc("mkdir /etc/envshim", &["render", "--show-values", "--manifest", &m]);
    assert!(code == 0 && out.contains("\nFROM=named\n"), "{out}{err}");
    // Without the directory the default stays optional; with the file, it is read.
    let (code, out, err) = with_private_etc("true", &["run", "--", "/bin/echo", "started"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "started\n", ""));
    let (code, out, err) = with_private_etc(
        r#"mkdir /etc/envshim && echo '{"env": [{"name": "FROM", "value": "etc"}]}' > /etc/envshim/manifest.json"#,
        &["render", "--show-values"],
    );
    assert!(code == 0 && out.contains("\nFROM=etc\n"), "{out}{err}");
}

#[test]
fn env_file_option_is_relative_to_the_working_directory() {
    let d = Volume::new();
    d.file("sub/rel.env", "R=1\n");
    let out = envshim(["render", "--format", "json", "--show-values", "--env-file", "sub/rel.env"]).cwd(d.path()).run();
    out.ok();
    assert_eq!(rendered(&out)["R"], ("sub/rel.env:1".to_string(), "1".to_string()));
}

#[test]
fn env_file_follows_symlinks() {
    let d = Volume::new();
    let elsewhere = Volume::new();
    let target = elsewhere.file_str("real.env", "L=linked\n");
    d.symlink("link.env", &target);
    let v = values(&render_values(["--env-file", d.join("link.env").to_str().unwrap()]));
    assert_eq!(v["L"], "linked");
}

#[test]
fn env_file_is_repeatable_in_order() {
    let d = Volume::new();
    let a = d.file_str("a.env", "X=a\nA=1\n");
    let b = d.file_str("b.env", "X=b\nB=2\n");
    let v = values(&render_values(["--env-file", &a, "--env-file", &b]));
    assert_eq!((v["X"].as_str(), v["A"].as_str(), v["B"].as_str()), ("b", "1", "2"));
    let v = values(&render_values(["--env-file", &b, "--env-file", &a]));
    assert_eq!(v["X"], "a");
}

#[test]
fn env_option_splits_at_the_first_equals_and_is_repeatable() {
    let v = values(&render_values(["--env", "A=b=c", "--env", "E=", "--env", "A=last=one"]));
    assert_eq!(v["A"], "last=one");
    assert_eq!(v["E"], "");
}

#[test]
fn volume_option_acts_as_a_volume_mount() {
    let vol = Volume::new();
    vol.file("c.env", "K=from-volume\n");
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [file_key_ref("K", "cfg", "c.env", "K", false)]}));
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m, "--volume", &vol.volume_arg("cfg")]).run();
    out.ok();
    assert_eq!(rendered(&out)["K"], ("cfg/c.env:1".to_string(), "from-volume".to_string()));
    // Without it the volume is unknown.
    envshim(["check", "--manifest", &m]).run().fails_with(78, &["cfg"]);
}

#[test]
fn volume_option_after_the_manifest_mount_of_the_same_name_wins() {
    // docs/reference.md is silent on a name mounted twice; envshim takes the last (--volume
    // comes after the manifest's volumeMounts), which is what `docker run -v` users want.
    let manifest_vol = Volume::new();
    manifest_vol.file("c.env", "K=manifest\n");
    let cli_vol = Volume::new();
    cli_vol.file("c.env", "K=cli\n");
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("cfg", &manifest_vol)],
        "env": [file_key_ref("K", "cfg", "c.env", "K", false)],
    }));
    assert_eq!(values(&render_values(["--manifest", &m]))["K"], "manifest");
    assert_eq!(values(&render_values(["--manifest", &m, "--volume", &cli_vol.volume_arg("cfg")]))["K"], "cli");
}

#[test]
fn strict_names_option() {
    envshim(["check", "--env", "1A=x"]).run().ok();
    envshim(["check", "--env", "Logging:Level=x"]).run().ok();
    envshim(["check", "--strict-names", "--env", "1A=x"]).run().fails_with(78, &["1A"]);
    envshim(["check", "--strict-names", "--env", "Logging:Level=x"]).run().fails_with(78, &["Logging:Level"]);
    envshim(["check", "--strict-names", "--env", "_ok.name-1=x"]).run().ok();
}

#[test]
fn strict_names_env_var_booleans() {
    for on in ["1", "true", "yes", "on"] {
        envshim(["check", "--env", "1A=x"]).env("ENVSHIM_STRICT_NAMES", on).run().fails_with(78, &["1A"]);
        envshim(["render", "--env", "1A=x"]).env("ENVSHIM_STRICT_NAMES", on).run().fails(78);
    }
    for off in ["0", "false", "no", "off"] {
        envshim(["check", "--env", "1A=x"]).env("ENVSHIM_STRICT_NAMES", off).run().ok();
    }
    for bad in ["", "2", "maybe", "y", "enabled", " 1"] {
        envshim(["check", "--env", "A=x"]).env("ENVSHIM_STRICT_NAMES", bad).run().fails_with(2, &["ENVSHIM_STRICT_NAMES"]);
    }
    // The option is on whatever the variable says (it can only turn the rule on).
    envshim(["check", "--strict-names", "--env", "1A=x"]).env("ENVSHIM_STRICT_NAMES", "0").run().fails(78);
}

#[test]
fn init_env_var_bad_value_is_a_usage_error() {
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_INIT", "perhaps").run().fails_with(2, &["ENVSHIM_INIT"]);
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_INIT", "0").run().ok();
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_INIT", "off").run().ok();
    // check validates everything run would, and the variable configures every command.
    envshim(["check"]).env("ENVSHIM_INIT", "perhaps").run().fails_with(2, &["ENVSHIM_INIT"]);
    envshim(["render"]).env("ENVSHIM_INIT", "perhaps").run().fails_with(2, &["ENVSHIM_INIT"]);
    envshim(["check"]).env("ENVSHIM_INIT", "1").run().ok();
    envshim(["render"]).env("ENVSHIM_INIT", "yes").run().ok();
}

/// A boolean variable is checked even when its option is given too (docs/reference.md §1:
/// anything else is a usage error), and `--success-exit` takes digits only.
#[test]
fn boolean_variables_are_checked_beside_their_options() {
    for (var, option) in [("ENVSHIM_INIT", "--init"), ("ENVSHIM_VERBOSE", "--verbose"), ("ENVSHIM_STRICT_NAMES", "--strict-names")] {
        envshim(["check", option]).env(var, "perhaps").run().fails_with(2, &[var]);
        envshim(["check", option]).env(var, "off").run().ok();
    }
    // A variable of an option that takes a value, given too.
    envshim(["check", "--wait", "1s"]).env("ENVSHIM_WAIT", "soon").run().fails_with(2, &["ENVSHIM_WAIT"]);
    envshim(["run", "--init", "--success-exit", "+3", "--", "/bin/true"]).run().fails_with(2, &["--success-exit: expected an exit code from 0 to 255"]);
}

/// A known option misused (given twice) gets no "did you mean" naming itself.
#[test]
fn a_known_option_misused_gets_no_suggestion() {
    let out = envshim(["check", "--strict-names", "--strict-names"]).run();
    out.fails_with(2, &["--strict-names", "cannot be used multiple times"]);
    assert!(!out.stderr_str().contains("did you mean"), "{}", out.stderr_str());
}

#[test]
fn envshim_variables_are_removed_from_the_program_environment() {
    let d = Volume::new();
    let m = d.manifest(&json!({}));
    let out = envshim(["run", "--"])
        .args(print_env())
        .envs([
            ("ENVSHIM_MANIFEST", m.as_str()),
            ("ENVSHIM_STRICT_NAMES", "0"),
            ("ENVSHIM_INIT", "false"),
            ("ENVSHIM_ANYTHING", "x"),
            ("ENVSHIM_", "y"),
            ("KEEP", "1"),
            ("XENVSHIM_NOT_OURS", "2"),
            ("envshim_lower", "3"),
        ])
        .run();
    out.code(0);
    // The unknown ones are named in a warning (the known one closest to each, when one is close).
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: ENVSHIM_ is not a variable envshim knows: removed from the environment (see envshim --help)",
            "envshim: warning: ENVSHIM_ANYTHING is not a variable envshim knows: removed from the environment (see envshim --help)",
        ]
    );
    let env = out.env_map();
    assert_eq!(env.keys().map(String::as_str).collect::<Vec<_>>(), ["KEEP", "XENVSHIM_NOT_OURS", "envshim_lower"]);
    // Nor can they be referenced from the environment being built.
    let out = envshim(["render", "--format", "json", "--show-values", "--env", "R=$(ENVSHIM_ANYTHING)"]).env("ENVSHIM_ANYTHING", "x").run();
    out.code(0);
    assert_eq!(values(&rendered(&out)).into_iter().collect::<Vec<_>>(), [("R".to_string(), "$(ENVSHIM_ANYTHING)".to_string())]);
}

/// A Service named `envshim` or `envshim-*` gives every container of its
/// namespace service links (`ENVSHIM_SERVICE_HOST`, `ENVSHIM_PORT_8080_TCP`...):
/// they are the program's variables, kept without a warning, in a plain
/// container and a converted one; a name only like them is still envshim's.
#[test]
fn service_links_of_a_service_named_envshim_are_the_programs() {
    let links = [
        ("ENVSHIM_SERVICE_HOST", "10.0.0.7"),
        ("ENVSHIM_SERVICE_PORT", "8080"),
        ("ENVSHIM_SERVICE_PORT_HTTP", "8080"),
        ("ENVSHIM_PORT", "tcp://10.0.0.7:8080"),
        ("ENVSHIM_PORT_8080_TCP", "tcp://10.0.0.7:8080"),
        ("ENVSHIM_PORT_8080_TCP_PROTO", "tcp"),
        ("ENVSHIM_PORT_8080_TCP_PORT", "8080"),
        ("ENVSHIM_PORT_8080_TCP_ADDR", "10.0.0.7"),
        ("ENVSHIM_FOO_SERVICE_HOST", "10.0.0.8"),
        ("ENVSHIM_FOO_SERVICE_PORT_METRICS_2", "9090"),
        ("ENVSHIM_FOO_PORT_53_UDP_ADDR", "10.0.0.8"),
        ("ENVSHIM_SEEN_2_PORT_9_SCTP", "sctp://10.0.0.9:9"),
    ];
    let d = Volume::new();
    let plain = d.manifest(&json!({}));
    let converted = json!({"env": [], "command": ["/usr/bin/env", "-0"], "converted": {"seen": []}}).to_string();
    for (var, manifest) in [("ENVSHIM_MANIFEST", plain.as_str()), ("ENVSHIM_MANIFEST_JSON", &converted)] {
        let cmd = envshim(["run", "--"]);
        let not_links = [("ENVSHIM_PORT_HTTP_TCP", "x"), ("ENVSHIM__SERVICE_HOST", "x"), ("ENVSHIM_WAIT_", "x")];
        let out = cmd.args(print_env()).env(var, manifest).envs(links).envs(not_links).run();
        out.code(0);
        assert_eq!(
            out.stderr_lines(),
            [
                "envshim: warning: ENVSHIM_PORT_HTTP_TCP is not a variable envshim knows: removed from the environment (see envshim --help)",
                "envshim: warning: ENVSHIM_WAIT_ is not a variable envshim knows: removed from the environment (did you mean ENVSHIM_WAIT?)",
                "envshim: warning: ENVSHIM__SERVICE_HOST is not a variable envshim knows: removed from the environment (see envshim --help)",
            ],
            "{var}"
        );
        let env = out.env_map();
        for (name, value) in links {
            assert_eq!(env.get(name).map(String::as_str), Some(value), "{var}: {name}");
        }
    }
}

#[test]
fn no_service_url_option() {
    let host = [("KUBERNETES_SERVICE_HOST", "10.0.0.1"), ("KUBERNETES_SERVICE_PORT", "443")];
    let out = envshim(["run", "--"]).args(print_env()).envs(host).run();
    out.ok();
    assert_eq!(out.env_map()["KUBERNETES_SERVICE_URL"], "https://10.0.0.1:443");
    let out = envshim(["run", "--no-service-url", "--"]).args(print_env()).envs(host).run();
    out.ok();
    assert!(!out.env_map().contains_key("KUBERNETES_SERVICE_URL"));
}

#[test]
fn a_usage_error_from_a_configuration_variable_reaches_the_termination_log() {
    let v = Volume::new();
    let log = v.join("termination-log");
    envshim(["check", "--termination-log", log.to_str().unwrap()]).env("ENVSHIM_STRICT_NAMES", "maybe").run().fails_with(2, &["ENVSHIM_STRICT_NAMES"]);
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text, "envshim: ENVSHIM_STRICT_NAMES must be one of 1/0, true/false, yes/no, on/off\n");
}

#[test]
fn the_options_table_applies_to_check_and_render_too() {
    // docs/reference.md §1: one table of options for run, check and render.
    for cmd in ["check", "render"] {
        envshim([cmd, "--init", "--init-group", "--no-expand-args", "--no-service-url", "--term-delay", "1s"]).run().ok();
        envshim([cmd, "--init-group"]).run().fails_with(2, &["--init"]);
    }
}

/// `run` and `check` command lines of every common shape: each option takes
/// effect, and the shapes clap refuses keep its messages.
#[test]
fn command_lines_of_every_shape_take_effect() {
    let v = Volume::new();
    let secret = v.file_str("secret", "from-file\n");
    // M is expanded before the --env variables exist (manifest env first, then --env).
    let m = v.manifest(&serde_json::json!({"env": [{"name": "M", "value": "$(A)-m"}]}));
    let log = v.join("log");
    let log = log.to_str().unwrap();
    let options = |program: Vec<&str>| {
        envshim(["run", &format!("--manifest={m}"), "--env", "A=1", "--env=B=$(A)", "--strict-names", "--no-service-url"])
            .args(["--file-env", "S", "--termination-log", log, "--no-expand-args", "--"])
            .args(program)
            .env("S_FILE", &secret)
            .run()
    };
    let out = options(print_args("zero", &["$(A)", "--env", "x"]));
    out.ok();
    assert_eq!(out.args0(), ["zero", "$(A)", "--env", "x"]);
    let out = options(print_env());
    out.ok();
    let mut env = out.env0();
    env.sort();
    assert_eq!(env, [("A", "1"), ("B", "1"), ("M", "$(A)-m"), ("S", "from-file")].map(|(k, v)| (k.to_string(), v.to_string())));
    // The program as the first word that is not an option; options after it are its own.
    let out = envshim(["run", "--manifest", &m, "--init", "--init-group", "/bin/sh", "-c", "echo $M", "--init"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "$(A)-m\n");
    envshim(["check", "--manifest", &m, "--env-file", &secret, "--volume", &v.volume_arg("cfg")]).run().fails(65);
    // check takes a program line as run does, and --strict anywhere among the options.
    let out = envshim(["check", "--manifest", &m, "--strict", "--init", "/bin/sh", "-c", "exit 3", "--strict"]).run();
    out.fails_with(78, &["env[0] (M): $(A) is not defined there", "(check --strict)"]);
    envshim(["check", "--env", "A=1", "--strict", "--", "/bin/sh", "-c", "$(A)"]).run().ok();
    envshim(["check", "--", "no-such-program-envshim"]).run().fails_with(127, &["no-such-program-envshim"]);
    envshim(["check", "--"]).run().ok();
    // Shapes clap refuses, its messages kept.
    for (args, code, message) in [
        (vec!["run", "--manifest", &m, "--manifest", &m, "/bin/true"], 2, "cannot be used multiple times"),
        (vec!["run", "--init", "--init", "/bin/true"], 2, "cannot be used multiple times"),
        (vec!["run", "--init=yes", "/bin/true"], 2, "--init: takes no value"),
        (vec!["run", "--manifest", "--", "/bin/true"], 2, "a value is required"),
        (vec!["run", "--manifest=", "/bin/true"], 78, "not found"),
        (vec!["run", "--manifest", &m, "--"], 2, "PROGRAM"),
        (vec!["check", "--strict", "--strict", "/bin/true"], 2, "cannot be used multiple times"),
        (vec!["run", "-x", "/bin/true"], 2, "unexpected argument '-x'"),
        (vec!["run", "--manifests", &m, "/bin/true"], 2, "unexpected argument '--manifests'"),
    ] {
        envshim(&args).run().fails_with(code, &[message]);
    }
    envshim(["run", "--wait", "1s", "--manifest", &m, "/bin/true"]).run().ok();
    envshim(["run", "--manifest", &m, "--", "--", "/bin/true"]).run().fails_with(127, &["\"--\" not found"]);
    // --manifest-json and check's --format.
    let out = envshim(["run", r#"--manifest-json={"env":[{"name":"J","value":"j"}]}"#, "--", "/bin/sh", "-c", "echo $J"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "j\n");
    let out = envshim(["check", "--format", "json", "--manifest-json", r#"{"env":[{"name":"J","value":"j"}]}"#, "--", "/bin/true"]).run();
    out.ok();
    assert!(out.stdout_str().starts_with('{'), "{}", out.stdout_str());
    // A wrong format is named with the two it may be.
    envshim(["check", "--format=yaml", "/bin/true"]).run().fails_with(2, &["--format: expected one of text, json"]);
    envshim(["check", "--format", "json", "--format", "text"]).run().fails_with(2, &["cannot be used multiple times"]);
}
