//! The command line (docs/reference.md §1): subcommands, the program line rules,
//! `install`; every option and its env-var form in `options`.

use std::os::unix::fs::FileTypeExt;

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use serde_json::json;

mod options;

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
        "--manifest",
        "--env-file",
        "--env",
        "--volume",
        "--strict-names",
        "--no-expand-args",
        "--no-service-url",
        "--termination-log",
        "--init",
        "--init-group",
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
    let out = envshim(["run", "--env", "A=1", "/bin/sh", "-c", PRINT_ARGS, "x", "--env", "B=2", "--", "--no-expand-args", "$(A)"]).run();
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

/// The copy is closed before it is renamed over DEST: an exec of DEST while
/// a writer holds it open fails with ETXTBSY ("text file busy"). Traced
/// with strace (tests/e2e/deps.sh installs it): the temporary file's
/// descriptor is closed before the rename.
#[test]
#[ignore = "needs strace"]
fn install_closes_the_copy_before_renaming_it_over_dest() {
    let d = Volume::new();
    let dest = d.join("envshim-copy");
    let trace = d.join("trace");
    let out = std::process::Command::new("strace")
        .args(["-f", "-qq", "-o", trace.to_str().unwrap(), "-e", "trace=openat,open,close,rename,renameat,renameat2"])
        .args([bin(), "install", dest.to_str().unwrap()])
        .output()
        .expect("strace (tests/e2e/deps.sh installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(trace).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let opened = lines.iter().position(|l| l.contains(".envshim-") && l.contains("O_CREAT")).unwrap_or_else(|| panic!("no temporary file in:\n{trace}"));
    let fd = lines[opened].rsplit("= ").next().unwrap().trim();
    let renamed = lines.iter().position(|l| l.contains("rename")).unwrap_or_else(|| panic!("no rename in:\n{trace}"));
    let closed = lines.iter().skip(opened).position(|l| l.contains(&format!("close({fd})"))).map(|i| i + opened);
    assert!(closed.is_some_and(|c| c < renamed), "closed at {closed:?}, renamed at {renamed}:\n{trace}");
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
