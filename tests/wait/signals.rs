//! `--wait` and signals (docs/reference.md §9.2), through the binary: SIGTERM,
//! SIGINT, SIGHUP and SIGQUIT end the wait at once (also as PID 1 of a fresh pid
//! namespace), the lines naming what is still missing, the signal mask after the
//! wait, and an inherited ignored SIGTERM. No message or termination log may
//! show the sentinel.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::{atomic, Waited, Writer};
use crate::common::*;

// ---------------------------------------------------------------- signals

/// envshim waiting for `files` (never written), started directly or as PID 1
/// of a fresh pid namespace; output goes to files in `dir`.
struct Waiting {
    child: Child,
    dir: Volume,
    in_namespace: bool,
}

impl Waiting {
    fn start(extra: &[&str], in_namespace: bool) -> Waiting {
        let dir = Volume::new();
        let mut cmd = command(in_namespace);
        cmd.args(["run", "--wait", "60s", "--env-file"])
            .arg(dir.join("never.env"))
            .args(["--file-env", "S", "--termination-log"])
            .arg(dir.join("log"))
            .args(extra)
            .args(["--", "/bin/true"])
            .env_clear()
            .env("S_FILE", dir.join("run/secrets/s"))
            .env("NOT_SHOWN", SENTINEL)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
            .stderr(std::fs::File::create(dir.join("stderr")).unwrap());
        Waiting { child: cmd.spawn().unwrap(), dir, in_namespace }
    }

    /// envshim's pid as seen from here.
    fn pid(&self) -> i32 {
        let outer = self.child.id() as i32;
        if !self.in_namespace {
            return outer;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let children = std::fs::read_to_string(format!("/proc/{outer}/task/{outer}/children")).unwrap_or_default();
            if let Some(pid) = children.split_whitespace().next() {
                return pid.parse().unwrap();
            }
            assert!(Instant::now() < deadline, "unshare started no child");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until envshim blocks SIGTERM and SIGINT (or waits for them): it is in the wait.
    fn wait_until_waiting(&self) -> i32 {
        let pid = self.pid();
        let bits = (1u64 << (libc::SIGTERM - 1)) | (1u64 << (libc::SIGINT - 1));
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let blocked = status_mask(pid, "SigBlk");
            // Blocked, or taken by sigtimedwait (which unblocks them while it sleeps).
            let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
            // (unshare's child blocks them too, before it execs envshim.)
            let envshim = status_name(pid).as_deref() == Some("envshim");
            if envshim && (blocked.is_some_and(|b| b & bits == bits) || wchan.contains("sigtimedwait")) {
                return pid;
            }
            assert!(Instant::now() < deadline, "envshim never blocked SIGTERM/SIGINT (SigBlk {blocked:?}, wchan {wchan})");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `sig` once envshim waits; returns its exit code and how long it took to end.
    // Test set-up, not in nix: kill with any signal number (nix's Signal has no real-time ones).
    #[allow(unsafe_code)]
    fn signal(mut self, sig: i32) -> (Option<i32>, Duration, String, String) {
        let pid = self.wait_until_waiting();
        let sent = Instant::now();
        // SAFETY: plain syscall; the process is ours and not yet reaped.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        let deadline = sent + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("envshim did not end on signal {sig}: {}", std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let read = |n| String::from_utf8_lossy(&self.dir.read(n)).into_owned();
        (status.code(), sent.elapsed(), read("stderr"), read("log"))
    }
}

fn check_stopped(code: Option<i32>, took: Duration, stderr: &str, log: &str, sig: i32, name: &str) {
    assert_eq!(code, Some(128 + sig), "stderr: {stderr}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    // What it waited for, then what ended the wait.
    assert!(lines[0].starts_with("envshim: waiting up to 60s for "), "{stderr}");
    assert!(lines[0].contains("never.env, ") && lines[0].ends_with("run/secrets/s (S_FILE)"), "{stderr}");
    assert!(lines[1].starts_with(&format!("envshim: {name} while waiting")), "{stderr}");
    assert!(lines[1].contains("never.env") && lines[1].contains("run/secrets/s (S_FILE)"), "{stderr}");
    assert_eq!(log, format!("{}\n", lines[1]));
    assert_no_sentinel(stderr.as_bytes(), "stderr");
    assert_no_sentinel(log.as_bytes(), "the termination log");
}

#[test]
fn sigterm_and_sigint_end_the_wait_at_once() {
    let (code, took, err, log) = Waiting::start(&[], false).signal(libc::SIGTERM);
    check_stopped(code, took, &err, &log, libc::SIGTERM, "SIGTERM");
    let (code, took, err, log) = Waiting::start(&[], false).signal(libc::SIGINT);
    check_stopped(code, took, &err, &log, libc::SIGINT, "SIGINT");
}

/// SIGHUP and SIGQUIT end the wait as SIGTERM does: 129 and 131, with their
/// line on stderr and in the termination log (also as PID 1, where a signal
/// without a handler would be dropped).
#[test]
fn sighup_and_sigquit_end_the_wait_with_their_line() {
    let (code, took, err, log) = Waiting::start(&[], false).signal(libc::SIGHUP);
    check_stopped(code, took, &err, &log, libc::SIGHUP, "SIGHUP");
    let (code, took, err, log) = Waiting::start(&[], false).signal(libc::SIGQUIT);
    check_stopped(code, took, &err, &log, libc::SIGQUIT, "SIGQUIT");
}

/// Every 10 s the wait names the files still missing, and how long is left;
/// one that appeared is no longer named.
#[test]
fn the_wait_names_what_is_still_missing_every_10_seconds() {
    let d = Volume::new();
    let (a, b) = (d.join("a.env"), d.join("b.env"));
    let _w = Writer::after(Duration::from_millis(500), &atomic(&a, &format!("A={SENTINEL}\n")));
    let _w2 = Writer::after(Duration::from_millis(10_800), &atomic(&b, &format!("B={SENTINEL}\n")));
    let out = envshim(["check", "--env-file", a.to_str().unwrap(), "--env-file", b.to_str().unwrap(), "--wait", "2m"]).run();
    out.code(0).no_sentinel();
    let lines = out.stderr_lines();
    assert_eq!(
        lines,
        [
            format!("envshim: waiting up to 120s for {}, {}", a.display(), b.display()),
            format!("envshim: still waiting for {} (110s left)", b.display()),
            "envshim: ok: 2 variables (2 from files; env files read with envshim's grammar), no program line".to_string(),
        ]
    );
    assert!(out.elapsed >= Duration::from_millis(10_800), "{:?}", out.elapsed);
}

/// A wait for many files names the first ten and counts the rest.
#[test]
fn a_wait_for_many_files_names_ten_and_counts_the_rest() {
    let d = Volume::new();
    let mut args = vec!["check".to_string(), "--wait".into(), "300ms".into()];
    for i in 0..25 {
        args.extend(["--env-file".to_string(), d.join(&format!("{i:02}-{}.env", "x".repeat(100))).to_str().unwrap().to_string()]);
    }
    let out = envshim(&args).run();
    let lines = out.stderr_lines();
    assert_eq!(out.code, 66);
    assert!(lines[0].starts_with("envshim: waiting up to 300ms for "), "{lines:?}");
    assert!(lines[0].ends_with(".env and 15 more"), "{lines:?}");
    assert!(lines[0].contains("09-") && !lines[0].contains("10-"), "{lines:?}");
}

/// As PID 1 a signal without a handler is dropped; the wait takes it anyway,
/// with and without `--init` (nothing has been forked yet).
#[test]
#[ignore = "needs root"]
fn as_pid_1_sigterm_and_sigint_end_the_wait_too() {
    assert!(pid_namespaces(), "needs root and unshare --pid --fork --mount-proc");
    let (code, took, err, log) = Waiting::start(&[], true).signal(libc::SIGTERM);
    check_stopped(code, took, &err, &log, libc::SIGTERM, "SIGTERM");
    let (code, took, err, log) = Waiting::start(&["--init"], true).signal(libc::SIGTERM);
    check_stopped(code, took, &err, &log, libc::SIGTERM, "SIGTERM");
    let (code, took, err, log) = Waiting::start(&["--init"], true).signal(libc::SIGINT);
    check_stopped(code, took, &err, &log, libc::SIGINT, "SIGINT");
}

#[test]
#[ignore = "needs root"]
fn as_pid_1_sighup_and_sigquit_end_the_wait_too() {
    assert!(pid_namespaces(), "needs root and unshare --pid --fork --mount-proc");
    let (code, took, err, log) = Waiting::start(&["--init"], true).signal(libc::SIGHUP);
    check_stopped(code, took, &err, &log, libc::SIGHUP, "SIGHUP");
    let (code, took, err, log) = Waiting::start(&[], true).signal(libc::SIGQUIT);
    check_stopped(code, took, &err, &log, libc::SIGQUIT, "SIGQUIT");
}

/// After the wait the signal mask is what it was: the program (a shell that
/// reports its own mask) starts with SIGTERM and SIGINT unblocked.
#[test]
fn the_mask_is_restored_after_the_wait() {
    let d = Volume::new();
    let f = d.join("late.env");
    let _w = Writer::after(Duration::from_millis(200), &atomic(&f, "A=1\n"));
    let out = envshim(["run", "--env-file", f.to_str().unwrap(), "--wait", "15s", "--", "/bin/sh", "-c", "grep SigBlk /proc/self/status"]).run().waited();
    out.ok();
    assert_eq!(out.stdout_str().trim(), "SigBlk:\t0000000000000000");
}

/// A SIGTERM inherited as ignored (`nohup`, `trap '' TERM`) stays ignored
/// during the wait too: the wait runs to its end and fails as usual (66).
#[test]
// Test set-up, not in nix: pre_exec.
#[allow(unsafe_code)]
fn an_inherited_ignored_sigterm_does_not_end_the_wait() {
    use std::os::unix::process::CommandExt;
    let dir = Volume::new();
    let mut cmd = command(false);
    cmd.args(["run", "--wait", "1500ms", "--env-file"])
        .arg(dir.join("never.env"))
        .args(["--", "/bin/true"])
        .env_clear()
        .env("NOT_SHOWN", SENTINEL)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal() is async-signal-safe; nothing else runs in the hook.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
            Ok(())
        })
    };
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).expect("kill");
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(66), "{err}");
    assert!(took >= Duration::from_millis(1400), "ended after {took:?}: {err}");
    assert!(err.contains("after waiting 1500ms"), "{err}");
    assert!(!err.contains(SENTINEL));
}
