//! `check` as a CI gate: a program line checked as `run` would take it,
//! unresolved `$(NAME)` references warned about (names only), `--strict`
//! turning every warning into a failure, and the summary line.

use crate::common::*;
use serde_json::json;

#[test]
fn check_warns_about_each_unresolved_reference_by_name_and_run_stays_silent() {
    let v = Volume::new();
    let env = v.file_str("app.env", format!("TOKEN={SENTINEL}\nHOST=h\n"));
    let m = v.manifest(&json!({
        "env": [
            {"name": "URL", "value": format!("http://$(HOST):$(PORT)/$(LATER)?k={SENTINEL}")},
            {"name": "LATER", "value": "x"},
            {"name": "OK", "value": "$(TOKEN)$$(ESCAPED)"}
        ],
        "command": ["/bin/sh", "-c", "printf '%s|' \"$@\"", "sh", "$(URL)", "$(MISSING_ARG)", "$(LATER)"]
    }));
    let out = envshim(["check", "--manifest", &m, "--env-file", &env, "--env", "C=$(NOPE)$(NOPE)"]).run();
    out.code(0).no_sentinel();
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: manifest: env[0] (URL): $(PORT), $(LATER) are not defined there: left as written",
            "envshim: warning: --env #1 (C): $(NOPE) is not defined there: left as written",
            "envshim: warning: command[5] of the program line: $(MISSING_ARG) is not defined there: left as written",
            "envshim: ok: 6 variables (2 from files; env files read with envshim's grammar), program /bin/sh",
        ]
    );
    // run builds the same and says nothing (the kubelet is silent too).
    let out = envshim(["run", "--manifest", &m, "--env-file", &env, "--env", "C=$(NOPE)"]).run();
    out.code(0);
    assert_eq!(out.stderr_str(), "");
    assert!(out.stdout_str().starts_with("http://h:$(PORT)/$(LATER)?k="), "{}", out.stdout_str());
    assert!(out.stdout_str().ends_with("|$(MISSING_ARG)|x|"), "{}", out.stdout_str());
    // A `$(` that is not an unresolved reference: an escaped one, one without `)`, one from a value.
    let out = envshim(["check", "--env", "A=$$(X)", "--env", "B=$(A)", "--env", "C=a$(b", "--", "/bin/echo", "$(B)", "$$(Y)"]).run();
    assert_eq!(out.stderr_str(), "envshim: ok: 3 variables (0 from files), program /bin/echo\n");
    // --no-expand-args: the program line is not expanded, so nothing in it is unresolved.
    let out = envshim(["check", "--no-expand-args", "--env", "A=1", "--", "/bin/echo", "$(NOPE)"]).run();
    assert_eq!(out.stderr_str(), "envshim: ok: 1 variables (0 from files), program /bin/echo\n");
}

#[test]
fn strict_fails_on_every_warning_with_78_and_reports_them_all() {
    let v = Volume::new();
    let env = v.file_str("app.env", format!("1BAD={SENTINEL}\nGOOD={SENTINEL}\n"));
    let base = ["check", "--strict-names", "--env-file", &env, "--env", "U=$(UNSET)"];
    // Without --strict: warnings, exit 0.
    let out = envshim(base).run();
    out.code(0).no_sentinel();
    assert_eq!(out.stderr_lines().len(), 3, "{}", out.stderr_str());
    let out = envshim(base).arg("--strict").run();
    let lines = out.fails(78);
    out.no_sentinel();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("Keys [1BAD] from the EnvFrom file") && lines[0].ends_with("(check --strict)"), "{lines:?}");
    assert!(lines[1].contains("--env #1 (U): $(UNSET)") && lines[1].ends_with("(check --strict)"), "{lines:?}");
    // A failure with a code of its own comes first and gives the exit code.
    let out = envshim(base).args(["--strict", "--", "no-such-program-envshim"]).run();
    let lines = out.fails(127);
    assert_eq!(lines.len(), 3, "{lines:?}");
    // The termination log gets the failures.
    let log = v.join("log");
    envshim(base).args(["--strict", "--termination-log", log.to_str().unwrap()]).run().fails(78);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("(check --strict)") && !text.contains("s3cr3t"), "{text}");
    // Nothing to warn about: --strict passes.
    envshim(["check", "--strict", "--env-file", &env, "--", "/bin/true"]).run().ok().no_sentinel();
}

#[test]
fn check_validates_the_program_line_as_run_would() {
    let v = Volume::new();
    let big = "x".repeat(100_000);
    let b = format!("B={big}");
    // Expanded against the final environment: two 100 KB values in one argument are over execve's limit.
    envshim(["check", "--env", &b, "--", "/bin/echo", "$(B)$(B)"]).run().fails_with(126, &["argument 1 of the program line"]);
    envshim(["check", "--env", &b, "--no-expand-args", "--", "/bin/echo", "$(B)$(B)"]).run().ok();
    // Looked up in the final PATH.
    let bin = v.subdir("bin");
    let prog = bin.join("prog");
    std::fs::write(&prog, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("PATH={}", bin.display());
    let out = envshim(["check", "--env", &path, "prog", "--flag"]).run();
    out.ok();
    assert_eq!(out.stderr_str(), format!("envshim: ok: 1 variables (0 from files), program {}\n", prog.display()));
    envshim(["check", "--env", &path, "--", "true"]).run().fails_with(127, &["\"true\" not found"]);
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    envshim(["check", "--env", &path, "--", "prog"]).run().fails(126);
    // The manifest's command replaces the trailing program, as in run.
    let m = v.manifest(&json!({"command": ["/bin/true"]}));
    let out = envshim(["check", "--manifest", &m, "--", "no-such-program-envshim"]).run();
    assert_eq!(out.stderr_str(), "envshim: ok: 0 variables (0 from files), program /bin/true\n");
    // Nothing to run: still a summary.
    let out = envshim(["check"]).env("A", "1").run();
    assert_eq!(out.stderr_str(), "envshim: ok: 1 variables (0 from files), no program line\n");
}
