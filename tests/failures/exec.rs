//! Failures at the exec (docs/reference.md §7): the kernel's execve size
//! limits (126), a program not found (127) or that cannot be executed (126),
//! and nothing run when anything before it fails.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;
use serde_json::json;

// ---------------------------------------------------------------- execve size limits: 126

/// A volume with `P`, a 32,768-byte value.
fn big_parts() -> (Volume, String) {
    let d = Volume::new();
    let p = d.file_str("p.env", format!("P={}\n", "p".repeat(32_768)));
    (d, p)
}

#[test]
fn single_env_string_limit_131071_bytes() {
    let (_d, p) = big_parts();
    // BIG=$(P)$(P)$(P)+tail: 4 + 3 * 32,768 + tail bytes as NAME=VALUE.
    for (total, code) in [(131_071usize, 0), (131_072, 126)] {
        let tail = "t".repeat(total - 4 - 3 * 32_768);
        let out = envshim(["run", "--env-file", &p, "--env", &format!("BIG=$(P)$(P)$(P){tail}"), "--no-expand-args", "--", "/bin/sh", "-c", "echo ${#BIG}"])
            .stack_limit(8 << 20)
            .run();
        if code == 0 {
            out.ok();
            assert_eq!(out.stdout_str().trim(), (total - 4).to_string());
        } else {
            out.fails_with(126, &["BIG", "131072"]);
        }
        // check sees it too, with no program.
        envshim(["check", "--env-file", &p, "--env", &format!("BIG=$(P)$(P)$(P){tail}")]).stack_limit(8 << 20).run().code(code);
    }
}

#[test]
fn single_argument_limit() {
    let (_d, p) = big_parts();
    // 5 * 32,768 bytes after expansion.
    let big = "$(P)$(P)$(P)$(P)$(P)";
    envshim(["run", "--env-file", &p, "--", "/bin/true", "ok", big]).run().fails_with(126, &["argument 2", "163840"]);
    let d = Volume::new();
    let m = d.manifest(&json!({"command": ["/bin/true"], "args": ["x", big]}));
    envshim(["run", "--env-file", &p, "--manifest", &m]).run().fails_with(126, &["args[1]"]);
    envshim(["check", "--env-file", &p, "--manifest", &m]).run().fails_with(126, &["args[1]"]);
    // Not expanded, it is small.
    envshim(["run", "--no-expand-args", "--env-file", &p, "--", "/bin/true", big]).run().ok();
}

#[test]
fn total_size_over_the_system_limit_names_the_largest_and_the_total() {
    // A 512 KiB stack gives the kernel's floor: 128 KiB for argv + envp.
    let vol = Volume::new();
    for i in 0..3 {
        vol.file(&format!("f{i}.env"), format!("F{i}A={}\nF{i}B={}\n", "a".repeat(30_000), "b".repeat(30_000)));
    }
    vol.file("big.env", format!("K={}\n", "k".repeat(32_000)));
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "envFrom": [file_ref("v", "f0.env", false, None), file_ref("v", "f1.env", false, None), file_ref("v", "f2.env", false, None)],
        "env": [file_key_ref("LARGEST", "v", "big.env", "K", false)],
    }));
    let out = envshim(["run", "--manifest", &m, "--", "/bin/true"]).stack_limit(512 << 10).run();
    let msg = out.fails_with(126, &["variable LARGEST", "131072"]);
    let total: usize = msg.split_whitespace().skip_while(|w| *w != "total").nth(1).and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no total in {msg}"));
    assert!(total > 6 * 30_000 + 32_000, "{msg}");
    // The largest read from an envFrom file is named by file and line, not by name.
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "envFrom": [file_ref("v", "f0.env", false, None), file_ref("v", "f1.env", false, None), file_ref("v", "f2.env", false, None), file_ref("v", "big.env", false, None)],
    }));
    let out = envshim(["check", "--manifest", &m]).stack_limit(512 << 10).run();
    let msg = out.fails_with(126, &["v/big.env line 1"]);
    assert!(!msg.contains(" K "), "{msg}");
    // With the usual 8 MiB stack it fits.
    envshim(["run", "--manifest", &m, "--", "/bin/true"]).stack_limit(8 << 20).run().ok();
}

/// 2,000 variables of 1 KB and one more, `BIG`, under an 8 MiB stack
/// (2 MiB for argv + envp): the largest `BIG` the kernel execs is found by
/// binary search with real `execve`s of `/bin/true` (same path, argv and
/// environment); envshim runs the program at that size and refuses one byte
/// more itself, naming the total. Before, envshim counted two pointers more
/// than the kernel (`argc + envc + 2` instead of `max(argc, 1) + envc`) and
/// refused the largest 16 bytes the kernel takes.
#[test]
// Test set-up only: pre_exec.
#[allow(unsafe_code)]
fn the_execve_total_matches_the_kernel_on_both_sides_of_its_boundary() {
    use std::os::unix::process::CommandExt;
    const STACK: u64 = 8 << 20;
    let vars: Vec<(String, String)> = (0..2000).map(|i| (format!("VAR_{i:04}"), "v".repeat(1024))).collect();
    let kernel_takes = |big: usize| -> bool {
        let mut cmd = std::process::Command::new("/bin/true");
        cmd.env_clear().envs(vars.iter().cloned()).env("BIG", "b".repeat(big));
        // SAFETY: getrlimit/setrlimit are async-signal-safe; nothing else runs in the hook.
        unsafe {
            cmd.pre_exec(|| {
                let mut rl: libc::rlimit = std::mem::zeroed();
                libc::getrlimit(libc::RLIMIT_STACK, &mut rl);
                rl.rlim_cur = STACK as libc::rlim_t;
                if libc::setrlimit(libc::RLIMIT_STACK, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            })
        };
        match cmd.status() {
            Ok(status) => {
                assert!(status.success());
                true
            }
            Err(e) if e.raw_os_error() == Some(libc::E2BIG) => false,
            Err(e) => panic!("exec /bin/true: {e}"),
        }
    };
    // The kernel takes 0 and refuses a single string at MAX_ARG_STRLEN.
    let (mut ok, mut too_big) = (0usize, 131_068usize);
    assert!(kernel_takes(ok) && !kernel_takes(too_big));
    while too_big - ok > 1 {
        let mid = (ok + too_big) / 2;
        if kernel_takes(mid) {
            ok = mid;
        } else {
            too_big = mid;
        }
    }
    // envshim gets the variables from env files: inherited, they would make
    // envshim's own exec (a longer argv) fail first.
    let d = Volume::new();
    let files: Vec<String> = vars
        .chunks(60)
        .enumerate()
        .map(|(i, chunk)| d.file_str(&format!("{i}.env"), chunk.iter().map(|(k, v)| format!("{k}={v}\n")).collect::<String>()))
        .collect();
    let run = |big: usize| {
        let mut shim = envshim(["run"]).stack_limit(STACK);
        for f in &files {
            shim = shim.args(["--env-file", f]);
        }
        shim.args(["--env", &format!("BIG={}", "b".repeat(big)), "--", "/bin/true"]).run()
    };
    run(ok).ok();
    // One byte over the kernel's limit is one byte over envshim's.
    run(too_big).fails_with(126, &["total 2097153 bytes, over the system limit of 2097152 bytes", "variable BIG"]);
}

// ---------------------------------------------------------------- program not found: 127; cannot exec: 126

#[test]
fn program_not_found_is_127() {
    envshim(["run", "--", "/nonexistent/prog"]).run().fails_with(127, &["/nonexistent/prog"]);
    envshim(["run", "--", "no-such-program-envshim"]).env("PATH", "/usr/bin:/bin").run().fails_with(127, &["no-such-program-envshim"]);
    // Without PATH: the default list is searched; it does not hold the current directory.
    let d = Volume::new();
    let prog = d.file("localprog", "#!/bin/sh\necho local\n");
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
    envshim(["run", "--", "localprog"]).cwd(d.path()).run().fails(127);
    // An empty program.
    envshim(["run", "--", ""]).run().fails(127);
    envshim(["run", "--env", "E=", "--", "$(E)"]).run().fails(127);
}

#[test]
fn program_not_executable_is_126() {
    let d = Volume::new();
    let noexec = d.file("noexec", "#!/bin/sh\necho hi\n");
    std::fs::set_permissions(&noexec, std::fs::Permissions::from_mode(0o644)).unwrap();
    envshim(["run", "--", noexec.to_str().unwrap()]).run().fails_with(126, &[noexec.to_str().unwrap()]);
    // Found in PATH but not executable.
    envshim(["run", "--", "noexec"]).env("PATH", d.dir()).run().fails_with(126, &["noexec"]);
    // A directory.
    envshim(["run", "--", d.dir().as_str()]).run().fails(126);
    // Executable, but exec fails: not a valid executable, or a missing interpreter.
    let garbage = d.file("garbage", "\x7fELFnot really\n");
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o755)).unwrap();
    envshim(["run", "--", garbage.to_str().unwrap()]).run().fails(126);
    let orphan = d.file("orphan", "#!/nonexistent/interpreter\n");
    std::fs::set_permissions(&orphan, std::fs::Permissions::from_mode(0o755)).unwrap();
    envshim(["run", "--", orphan.to_str().unwrap()]).run().fails_with(126, &["orphan"]);
}

#[test]
fn nothing_is_executed_when_anything_fails() {
    let d = Volume::new();
    let marker = d.join("ran");
    let script = format!("touch {}", marker.display());
    let bad = d.file_str("bad.env", "A=1\nB\n");
    envshim(["run", "--env-file", &bad, "--", "/bin/sh", "-c", &script]).run().fails(65);
    envshim(["run", "--env", "=x", "--", "/bin/sh", "-c", &script]).run().fails(78);
    assert!(!marker.exists());
}
