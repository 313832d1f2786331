//! The command line (docs/reference.md §1): subcommands, every option and its env-var
//! form, the program line rules, `install`.

use std::os::unix::fs::FileTypeExt;

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use serde_json::json;

// ---------------------------------------------------------------- --version, --help

#[test]
fn version_prints_the_crate_version() {
    let out = envshim(["--version"]).run();
    out.ok();
    // The first line; the build's commit, target and compiler follow (tests/cli_docs.rs).
    assert_eq!(out.stdout_str().lines().next(), Some(format!("envshim {}", env!("CARGO_PKG_VERSION")).as_str()));
}

#[test]
fn help_lists_every_subcommand() {
    let out = envshim(["--help"]).run();
    out.ok();
    let text = out.stdout_str();
    for word in ["run", "check", "render", "install", "--version"] {
        assert!(text.contains(word), "--help lacks {word}:\n{text}");
    }
}

#[test]
fn subcommand_help_lists_every_option() {
    let out = envshim(["run", "--help"]).run();
    out.ok();
    let text = out.stdout_str();
    for opt in [
        "--manifest", "--env-file", "--env", "--volume", "--strict-names", "--no-expand-args",
        "--no-service-url", "--termination-log", "--init", "--init-group",
    ] {
        assert!(text.contains(opt), "run --help lacks {opt}:\n{text}");
    }
    let out = envshim(["render", "--help"]).run();
    out.ok();
    for opt in ["--format", "--show-values"] {
        assert!(out.stdout_str().contains(opt), "render --help lacks {opt}");
    }
}

// ---------------------------------------------------------------- usage errors

#[test]
fn usage_errors_exit_2_with_one_envshim_line() {
    let cases: &[&[&str]] = &[
        &[],
        &["frobnicate"],
        &["run", "--bogus", "/bin/true"],
        &["run", "--env"],
        &["check", "--strict=yes"],
        &["check", "--strict", "--strict"],
        &["render", "--format", "yaml"],
        &["run", "--volume", "novalue", "--", "/bin/true"],
        &["run", "--volume", "=/tmp", "--", "/bin/true"],
        &["run", "--env", "NOEQUALS", "--", "/bin/true"],
        &["install"],
    ];
    for args in cases {
        let out = envshim(*args).run();
        let lines = out.fails(2);
        assert_eq!(lines.len(), 1, "one line for {args:?}: {lines:?}");
    }
}

#[test]
fn run_without_program_line_is_a_usage_error() {
    envshim(["run"]).run().fails(2);
    envshim(["run", "--env", "A=1"]).run().fails(2);
    // A manifest with only args does not make a program line either.
    let d = Volume::new();
    let m = d.manifest(&json!({"args": ["x"]}));
    envshim(["run", "--manifest", &m]).run().fails(2);
}

// ---------------------------------------------------------------- run replaces the process

#[test]
fn run_execs_the_program_in_place() {
    // The shell's $$ is the pid envshim was started with: nothing forked.
    let out = envshim(["run", "--no-expand-args", "--", "/bin/sh", "-c", "echo $$"]).run();
    out.ok();
    assert_eq!(out.stdout_str().trim(), out.pid.to_string());
}

#[test]
fn run_passes_the_exit_code_of_the_program() {
    envshim(["run", "--", "/bin/sh", "-c", "exit 7"]).run().code(7);
    envshim(["run", "--", "/bin/sh", "-c", "exit 0"]).run().ok();
}

#[test]
fn run_gives_the_program_exactly_the_argv_and_env() {
    let out = envshim(["run", "--env", "X=1", "--"]).args(print_args("zero", &["a b", "", "--env", "c"])).run();
    out.ok();
    assert_eq!(out.args0(), ["zero", "a b", "", "--env", "c"]);

    let out = envshim(["run", "--env", "X=1", "--"]).args(print_env()).env("INHERITED", "yes").run();
    out.ok();
    let env = out.env0();
    let mut names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
    names.sort();
    assert_eq!(names, ["INHERITED", "X"]);
}

#[test]
fn run_with_echo() {
    let out = envshim(["run", "--env", "WHO=world", "--", "/bin/echo", "hello", "$(WHO)"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "hello world\n");
}

// ---------------------------------------------------------------- program line rules

#[test]
fn program_line_starts_at_double_dash() {
    let out = envshim(["run", "--"]).args(print_args("--env", &["X=1"])).run();
    out.ok();
    // `--env X=1` after the program are the program's arguments, not envshim's.
    assert_eq!(out.args0(), ["--env", "X=1"]);
    // A program whose name looks like an option, after `--`.
    let d = Volume::new();
    let prog = d.file("--prog", "#!/bin/sh\necho ran \"$@\"\n");
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = envshim(["run", "--env", &format!("PATH={}", d.dir()), "--", "--prog", "x"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "ran x\n");
}

#[test]
fn program_line_starts_at_first_non_option_word() {
    // Options after the program belong to the program, `--` included.
    let out = envshim(["run", "--env", "A=1", "/bin/sh", "-c", PRINT_ARGS, "x", "--env", "B=2", "--", "--no-expand-args", "$(A)"])
        .run();
    out.ok();
    assert_eq!(out.args0(), ["x", "--env", "B=2", "--", "--no-expand-args", "1"]);
    let out = envshim(["run", "--env", "A=1", "/usr/bin/env", "-0", "--env"]).run();
    // env(1) itself rejects --env: the point is that envshim passed it on.
    assert_ne!(out.code, 0);
    assert!(!out.stderr_str().starts_with("envshim:"), "{}", out.stderr_str());
}

#[test]
fn manifest_command_replaces_the_trailing_program_line() {
    let d = Volume::new();
    let m = d.manifest(&json!({"command": ["/bin/sh", "-c", PRINT_ARGS, "cmd"], "args": ["a1", "a2"]}));
    let out = envshim(["run", "--manifest", &m, "--", "/bin/echo", "trailing", "words"]).run();
    out.ok();
    assert_eq!(out.args0(), ["cmd", "a1", "a2"]);
    // Without a trailing line too.
    let out = envshim(["run", "--manifest", &m]).run();
    out.ok();
    assert_eq!(out.args0(), ["cmd", "a1", "a2"]);
    // `--` with nothing after it.
    let out = envshim(["run", "--manifest", &m, "--"]).run();
    out.ok();
    assert_eq!(out.args0(), ["cmd", "a1", "a2"]);
    // command without args: the trailing ARGS are dropped as well.
    let m = d.manifest(&json!({"command": ["/bin/sh", "-c", PRINT_ARGS, "only"]}));
    let out = envshim(["run", "--manifest", &m, "--", "/bin/sh", "x", "y"]).run();
    out.ok();
    assert_eq!(out.args0(), ["only"]);
}

#[test]
fn manifest_args_replace_the_trailing_args() {
    let d = Volume::new();
    let m = d.manifest(&json!({"args": ["-c", PRINT_ARGS, "margs", "$(A)"]}));
    let out = envshim(["run", "--manifest", &m, "--env", "A=va", "--", "/bin/sh", "-x", "dropped"]).run();
    out.ok();
    assert_eq!(out.args0(), ["margs", "va"]);
}

#[test]
fn without_manifest_command_or_args_the_trailing_line_is_used() {
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [{"name": "A", "value": "1"}], "command": [], "args": null}));
    let out = envshim(["run", "--manifest", &m, "--"]).args(print_args("t", &["$(A)"])).run();
    out.ok();
    assert_eq!(out.args0(), ["t", "1"]);
}

#[test]
fn command_and_args_are_expanded_against_the_final_environment() {
    let d = Volume::new();
    let m = d.manifest(&json!({
        "env": [{"name": "E", "value": "from-manifest"}],
        "command": ["/bin/sh", "-c", PRINT_ARGS, "$(E)"],
        "args": ["$(CLI)", "$(E)-$(UNDEFINED)", "$$(E)", "$(INH)"],
    }));
    let out = envshim(["run", "--manifest", &m, "--env", "CLI=from-cli"]).env("INH", "inh").run();
    out.ok();
    assert_eq!(out.args0(), ["from-manifest", "from-cli", "from-manifest-$(UNDEFINED)", "$(E)", "inh"]);
}

#[test]
fn trailing_args_are_expanded_unless_no_expand_args() {
    let out = envshim(["run", "--env", "A=x", "--"]).args(print_args("$(A)", &["$(A)", "$$", "$(B)"])).run();
    out.ok();
    assert_eq!(out.args0(), ["x", "x", "$", "$(B)"]);
    let out = envshim(["run", "--no-expand-args", "--env", "A=x", "--"]).args(print_args("$(A)", &["$(A)", "$$"])).run();
    out.ok();
    assert_eq!(out.args0(), ["$(A)", "$(A)", "$$"]);
}

#[test]
fn no_expand_args_does_not_touch_manifest_args() {
    let d = Volume::new();
    let m = d.manifest(&json!({"args": ["-c", PRINT_ARGS, "$(A)", "$(A)"]}));
    let out = envshim(["run", "--no-expand-args", "--manifest", &m, "--env", "A=x", "--", "/bin/sh"]).run();
    out.ok();
    assert_eq!(out.args0(), ["x", "x"]);
}

#[test]
fn the_program_itself_is_expanded() {
    let out = envshim(["run", "--env", "P=/bin/echo", "--", "$(P)", "hi"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "hi\n");
}

// ---------------------------------------------------------------- PATH lookup

#[test]
fn program_without_slash_is_searched_in_the_final_path() {
    let d = Volume::new();
    let prog = d.file("bin/hello-envshim", "#!/bin/sh\necho found-in-path\n");
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    // PATH set by --env (not inherited): the final environment's PATH is used.
    let path = format!("/nonexistent:{}", d.join("bin").display());
    let out = envshim(["run", "--env", &format!("PATH={path}"), "--", "hello-envshim"]).env("PATH", "/usr/bin").run();
    out.ok();
    assert_eq!(out.stdout_str(), "found-in-path\n");
    // Inherited PATH without the directory: not found.
    envshim(["run", "--", "hello-envshim"]).env("PATH", "/usr/bin:/bin").run().fails(127);
}

#[test]
fn without_path_the_default_path_is_searched() {
    // No PATH at all: env(1) is found in /usr/bin or /bin.
    let out = envshim(["run", "--", "env", "-0"]).run();
    out.ok();
    assert!(out.env0().is_empty(), "{:?}", out.env0());
}

// ---------------------------------------------------------------- check

#[test]
fn check_succeeds_with_its_summary_line_and_execs_nothing() {
    let d = Volume::new();
    let marker = d.join("ran");
    let m = d.manifest(&json!({"command": ["/bin/sh", "-c", format!("touch {}", marker.display())]}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.ok();
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr_str(), "envshim: ok: 0 variables (0 from files), program /bin/sh\n");
    assert!(!marker.exists(), "check ran the command");
}

#[test]
fn check_validates_the_manifest_command() {
    let d = Volume::new();
    let m = d.manifest(&json!({"command": ["no-such-program-envshim"]}));
    envshim(["check", "--manifest", &m]).run().fails_with(127, &["no-such-program-envshim"]);
    let noexec = d.file("noexec", "#!/bin/sh\n");
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
    let m = d.manifest(&json!({"command": [noexec.to_str().unwrap()]}));
    envshim(["check", "--manifest", &m]).run().fails(126);
    // Expanded against the final environment, then looked up.
    let m = d.manifest(&json!({"command": ["$(P)"]}));
    envshim(["check", "--manifest", &m, "--env", "P=/bin/true"]).run().ok();
    envshim(["check", "--manifest", &m, "--env", "P=/nonexistent/true"]).run().fails(127);
}

// ---------------------------------------------------------------- render (basics; more in render.rs)

#[test]
fn render_defaults_to_env_format_masked() {
    let out = envshim(["render", "--env", "A=secretish"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "# A from --env\nA=<set, 9 bytes>\n");
}

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
    if std::path::Path::new("/etc/envshim").exists() {
        eprintln!("skipped: /etc/envshim exists on this machine");
        return;
    }
    envshim(["check"]).run().ok();
    let out = envshim(["run", "--", "/bin/echo", "ok"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "ok\n");
}

/// `envshim ARGS...` in a private mount namespace whose `/etc` is an empty
/// tmpfs, after `setup` (a `sh` line) ran there: the default manifest's
/// directory as a pod would have it, without touching the machine's `/etc`.
/// None when mount namespaces cannot be made here (not root).
fn with_private_etc(setup: &str, args: &[&str]) -> Option<(i32, String, String)> {
    if !am_root() {
        return None;
    }
    let script = format!("mount --make-rprivate / && mount -t tmpfs envshim-test /etc && {setup} && exec \"$0\" \"$@\"");
    let out = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script, bin()])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("unshare");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Some((out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr)))
}

#[test]
fn an_etc_envshim_without_manifest_json_is_66_not_an_empty_manifest() {
    // A ConfigMap mounted at /etc/envshim whose key is not manifest.json.
    let Some((code, _, err)) = with_private_etc(&format!("mkdir /etc/envshim && echo '{SENTINEL}' > /etc/envshim/manifest.yaml"), &["check"]) else {
        eprintln!("skipped: needs root for a mount namespace");
        return;
    };
    assert_eq!(code, 66, "{err}");
    assert!(err.starts_with("envshim: /etc/envshim exists but has no manifest.json") && err.contains("the key manifest.json") && err.lines().count() == 1, "{err}");
    assert_no_sentinel(err.as_bytes(), "stderr");
    let (code, out, err) = with_private_etc("mkdir /etc/envshim", &["run", "--", "/bin/echo", "started"]).unwrap();
    assert_eq!((code, out.as_str()), (66, ""), "{err}");
    // --manifest names another: /etc/envshim is not looked at.
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [{"name": "FROM", "value": "named"}]}));
    let (code, out, err) = with_private_etc("mkdir /etc/envshim", &["render", "--show-values", "--manifest", &m]).unwrap();
    assert!(code == 0 && out.contains("\nFROM=named\n"), "{out}{err}");
    // Without the directory the default stays optional; with the file, it is read.
    let (code, out, err) = with_private_etc("true", &["run", "--", "/bin/echo", "started"]).unwrap();
    assert_eq!((code, out.as_str(), err.as_str()), (0, "started\n", ""));
    let (code, out, err) = with_private_etc(r#"mkdir /etc/envshim && echo '{"env": [{"name": "FROM", "value": "etc"}]}' > /etc/envshim/manifest.json"#, &["render", "--show-values"]).unwrap();
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
    envshim(["run", "--init", "--success-exit", "+3", "--", "/bin/true"]).run().fails_with(2, &["--success-exit", "'+3'"]);
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

// ---------------------------------------------------------------- install

#[test]
fn install_copies_the_binary_with_mode_0755_and_nothing_else() {
    let d = Volume::new();
    let dest = d.join("envshim-copy");
    let out = envshim(["install", dest.to_str().unwrap()]).run();
    out.code(0);
    assert_eq!(out.stderr_str(), format!("envshim: installed {} at {}\n", env!("CARGO_PKG_VERSION"), dest.display()));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(bin()).unwrap());
    assert_eq!(std::fs::metadata(&dest).unwrap().permissions().mode() & 0o7777, 0o755);
    let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, [std::ffi::OsString::from("envshim-copy")]);
    // The copy works.
    let out = std::process::Command::new(&dest).arg("--version").output().unwrap();
    assert!(out.status.success());
    // Installing again (an initContainer that restarts) replaces the earlier copy.
    envshim(["install", dest.to_str().unwrap()]).run().code(0);
    assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(bin()).unwrap());
}

/// docs/reference.md §12.5: an existing DEST that is not envshim (a system binary, a
/// script) is refused with 73 and left as it was, unless --force.
#[test]
fn install_refuses_to_replace_what_is_not_envshim_unless_forced() {
    let d = Volume::new();
    let script = format!("#!/bin/sh\necho {SENTINEL}\n");
    let elf = [b"\x7fELF".as_slice(), SENTINEL.as_bytes(), &[0u8; 100_000]].concat();
    for (name, contents) in [("script", script.as_bytes().to_vec()), ("other-elf", elf), ("empty", Vec::new())] {
        let dest = d.file(name, &contents);
        let out = envshim(["install", dest.to_str().unwrap()]).run();
        out.no_sentinel().fails_with(73, &[&format!("install: {} exists and is not an envshim binary (give --force to replace it)", dest.display())]);
        assert_eq!(std::fs::read(&dest).unwrap(), contents, "{name} left as it was");
        let out = envshim(["install", "--force", dest.to_str().unwrap()]).run();
        out.no_sentinel().code(0).stderr_has("envshim: installed ");
        assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(bin()).unwrap());
    }
    // A DEST directory holding something else named envshim: the same.
    let sub = d.subdir("bin");
    d.file("bin/envshim", b"not envshim");
    envshim(["install", sub.to_str().unwrap()]).run().fails(73);
    assert_eq!(d.read("bin/envshim"), b"not envshim");
    // A symlink to a system binary: refused (the link would be replaced, not the binary, but it is not envshim's).
    let link = d.symlink("sh-link", "/bin/sh");
    envshim(["install", link.to_str().unwrap()]).run().fails(73);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    // A FIFO: refused at once (opening it to look inside blocked until a writer came).
    let fifo = d.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let started = std::time::Instant::now();
    envshim(["install", fifo.to_str().unwrap()]).run().fails(73);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "install waited on a FIFO");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
}

#[test]
fn install_relative_dest_is_relative_to_the_working_directory() {
    let d = Volume::new();
    envshim(["install", "shim"]).cwd(d.path()).run().code(0);
    assert_eq!(std::fs::read(d.join("shim")).unwrap(), std::fs::read(bin()).unwrap());
}

#[test]
fn install_into_a_missing_directory_is_73_and_leaves_nothing() {
    let d = Volume::new();
    let dest = d.join("missing/dir/envshim");
    envshim(["install", dest.to_str().unwrap()]).run().fails(73);
    assert!(!d.join("missing").exists());
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

#[test]
fn install_into_a_directory_that_is_not_writable_is_73_and_leaves_nothing() {
    let d = Volume::new();
    let ro = d.subdir("ro");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let (shim, _) = envshim(["install", ro.join("envshim").to_str().unwrap()]).unprivileged();
    shim.run().fails(73);
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
}

#[test]
fn a_usage_error_from_a_configuration_variable_reaches_the_termination_log() {
    let v = Volume::new();
    let log = v.join("termination-log");
    envshim(["check", "--termination-log", log.to_str().unwrap()])
        .env("ENVSHIM_STRICT_NAMES", "maybe")
        .run()
        .fails_with(2, &["ENVSHIM_STRICT_NAMES"]);
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
        (vec!["run", "--init=yes", "/bin/true"], 2, "unexpected value"),
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
    envshim(["check", "--format=yaml", "/bin/true"]).run().fails_with(2, &["invalid value 'yaml' for '--format <text|json>' [possible values: text, json]"]);
    envshim(["check", "--format", "json", "--format", "text"]).run().fails_with(2, &["cannot be used multiple times"]);
}
