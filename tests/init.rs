//! `envshim run --init` (docs/reference.md §8), run for real: most tests start envshim as
//! PID 1 of a fresh pid namespace (`unshare --pid --fork --mount-proc`, which
//! needs root: those are `#[ignore = "needs root"]`, run by tests/all.sh), signal it from
//! outside as a container runtime would, and look at what the program saw.
//! Programs are `sh` scripts that report through files in a temp directory
//! (`$D`); every wait has a deadline, so a broken envshim fails, never hangs
//! (`common::Run`, which the `--watch` tests use too).
//! The signals (forwarded, rewritten, during the start-up) are in `signals`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{bin, command, pid_namespaces, Done, Run, TEST_BIN_VAR};

/// The tests that run envshim as PID 1 are `#[ignore = "needs root"]`
/// (tests/all.sh runs them as root); run without root or unshare, they fail
/// here, never pass unrun.
macro_rules! need_namespaces {
    () => {
        assert!(pid_namespaces(), "needs root and unshare --pid --fork --mount-proc (run as root, as tests/all.sh does)");
    };
}

// After the macro, which its tests use too.
mod signals;

/// Runs envshim to completion with a program that needs no signals.
fn run(args: &[&str], script: &str, in_namespace: bool) -> Done {
    Run::start(args, script, in_namespace).finish()
}

// ---------------------------------------------------------------- exit codes

#[test]
#[ignore = "needs root"]
fn the_exit_code_of_the_program_propagates() {
    need_namespaces!();
    let done = run(&["--init"], "exit 7", true);
    assert_eq!(done.code(), Some(7), "{}", done.stderr);
    assert_eq!(run(&["--init"], "exit 0", true).code(), Some(0));
}

#[test]
#[ignore = "needs root"]
fn a_program_killed_by_a_signal_gives_128_plus_its_number() {
    need_namespaces!();
    let done = run(&["--init"], "kill -KILL $$", true);
    assert_eq!(done.code(), Some(128 + libc::SIGKILL), "{}", done.stderr);
    assert_eq!(run(&["--init"], "trap - TERM; kill -TERM $$", true).code(), Some(128 + libc::SIGTERM));
}

#[test]
#[ignore = "needs root"]
fn with_init_the_program_is_a_child_of_envshim() {
    need_namespaces!();
    let done = run(&["--init"], "echo $$ $PPID", true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout.trim(), "2 1");
}

#[test]
#[ignore = "needs root"]
fn without_init_the_program_has_envshims_pid() {
    need_namespaces!();
    let done = run(&[], "echo $$", true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout.trim(), "1");
}

// ---------------------------------------------------------------- zombies

/// Starts five grandchildren whose parents exit at once, checks they were
/// re-parented to envshim (`$PPID`), makes them exit together (they read a
/// FIFO whose only writer is the program's fd 3, so closing it ends all
/// five at once: their SIGCHLDs coalesce), and waits until all five are
/// gone, not zombies. Prints `reaped`; exits 2, 3 or 4 with the evidence
/// otherwise.
const ORPHANS: &str = r#"
mkfifo $D/fifo
exec 3<>$D/fifo
for i in 1 2 3 4 5; do
  sh -c 'sh -c "exec 3>&- <$D/fifo; echo \$\$ >> $D/orphans; exec cat >/dev/null" &'
done
tries=0
until [ "$(cat $D/orphans 2>/dev/null | wc -l)" = 5 ]; do
  tries=$((tries + 1)); [ $tries -gt 500 ] && { echo "orphans did not start" >&2; exit 2; }
  sleep 0.01
done
for p in $(cat $D/orphans); do
  ppid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$p/status)
  [ "$ppid" = "$PPID" ] || { echo "orphan $p has parent $ppid, not $PPID" >&2; exit 3; }
done
exec 3>&-
tries=0
while :; do
  left=""
  for p in $(cat $D/orphans); do [ -e /proc/$p ] && left="$left $p"; done
  [ -z "$left" ] && break
  tries=$((tries + 1))
  if [ $tries -gt 500 ]; then
    for p in $left; do grep -H '^State' /proc/$p/status >&2; done
    exit 4
  fi
  sleep 0.01
done
echo reaped
"#;

#[test]
#[ignore = "needs root"]
fn five_orphaned_grandchildren_leave_no_zombie() {
    need_namespaces!();
    // In the namespace, nothing else may be a zombie either.
    let script = format!("{ORPHANS}\n! grep -H '^State:[[:space:]]*Z' /proc/[0-9]*/status >&2");
    let done = run(&["--init"], &script, true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "reaped\n");
}

#[test]
fn when_not_pid_1_a_subreaper_reaps_orphans_without_a_warning() {
    let done = run(&["--init"], ORPHANS, false);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout, "reaped\n");
    assert_eq!(done.stderr, "", "no warning expected");
}

// ---------------------------------------------------------------- the child's start

#[test]
// Test set-up, not in nix: pre_exec.
#[allow(unsafe_code)]
fn the_program_starts_with_default_dispositions_and_an_empty_mask() {
    use std::os::unix::process::CommandExt;
    let mut cmd = command(false);
    cmd.args(["run", "--init", "--", "grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"]);
    // envshim starts with HUP and CHLD ignored and USR1 blocked. An ignored
    // SIGCHLD would also make the kernel reap the child itself: its status
    // would be lost and envshim would never exit.
    // SAFETY: between fork and exec the closure only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGUSR1);
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        })
    };
    let done = Run::spawn(cmd, tempfile::tempdir().unwrap(), false).finish();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let mask = |field: &str| {
        let line = done.stdout.lines().find_map(|l| l.strip_prefix(field)).unwrap_or_else(|| panic!("{}", done.stdout));
        u64::from_str_radix(line.trim(), 16).unwrap()
    };
    assert_eq!(mask("SigBlk:"), 0, "{}", done.stdout);
    // Signals 32 to 34 are the C library's own: its sigaction refuses them, so an
    // inherited "ignore" stays (glibc's posix_spawn starts processes with 32 and
    // 33 ignored).
    let libc_reserved = 0b111 << (32 - 1);
    assert_eq!(mask("SigIgn:") & !libc_reserved, 0, "{}", done.stdout);
}

// ---------------------------------------------------------------- exec failures

fn envshim_init(program: &Path, log: &Path) -> std::process::Output {
    command(false).args(["run", "--init", "--termination-log"]).arg(log).arg("--").arg(program).output().unwrap()
}

fn executable(dir: &Path, name: &str, content: &[u8], mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    fs::write(&path, content).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn exec_failures_exit_126_or_127_with_one_envshim_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let cases = [
        // Found by the lookup before the fork: envshim's own codes.
        (dir.path().join("missing"), 127, "not found"),
        (executable(dir.path(), "not-executable", b"#!/bin/sh\n", 0o644), 126, "cannot be executed"),
        // Only execve in the child can tell these.
        (executable(dir.path(), "no-interpreter", b"#!/nonexistent/interpreter\n", 0o755), 126, "interpreter"),
        (executable(dir.path(), "not-a-program", b"\x7fELF garbage", 0o755), 126, "cannot be executed"),
    ];
    for (program, code, words) in cases {
        let _ = fs::remove_file(&log);
        let out = envshim_init(&program, &log);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{program:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{program:?}: {stderr}");
        assert!(stderr.starts_with("envshim: program ") && stderr.contains(words), "{program:?}: {stderr}");
        assert_eq!(fs::read_to_string(&log).unwrap(), stderr, "the termination log says the same");
    }
}

// ---------------------------------------------------------------- the terminal

/// Runs `command` under `script` (util-linux, beside the `unshare` the
/// other tests use), on a new pseudo-terminal.
fn on_a_terminal(command: &str) -> String {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env_remove(TEST_BIN_VAR)
        .stdin(Stdio::null())
        .output()
        .expect("script(1) runs (util-linux)");
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).replace('\r', "")
}

/// Prints the program's pid, its process group and the terminal's foreground group.
const PGRP: &str = r#"sh -c 'read -r stat < /proc/$$/stat; set -- ${stat##*)}; echo $$ $3 $6'"#;

fn pids(text: &str) -> Vec<i64> {
    text.split_whitespace().map(|w| w.parse().unwrap()).collect()
}

#[test]
fn the_program_gets_its_own_group_and_the_terminal() {
    let command = format!("{} run --init --no-expand-args -- {PGRP}", bin());
    let out = on_a_terminal(&command);
    let p = pids(&out);
    assert_eq!(p.len(), 3, "{out:?}");
    assert_eq!(p[1], p[0], "the program leads its own process group");
    assert_eq!(p[2], p[0], "its group is the terminal's foreground");
}

#[test]
fn a_background_envshim_does_not_take_the_terminal() {
    // `set -m`: job control, so the background job has a group of its own.
    let command = format!("sh -c 'set -m; {} run --init --no-expand-args -- {} & wait'", bin(), PGRP.replace('\'', r"'\''"));
    let out = on_a_terminal(&command);
    let p = pids(&out);
    assert_eq!(p.len(), 3, "{out:?}");
    assert_eq!(p[1], p[0], "the program leads its own process group");
    assert_ne!(p[2], p[0], "the shell keeps the terminal");
}
