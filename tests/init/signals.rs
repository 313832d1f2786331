//! `envshim run --init` and signals (docs/reference.md §8), run as init.rs's
//! tests are: what is forwarded to the program (and what `--init-group` and
//! `--term-delay` change), SIGTERM during the start-up as PID 1,
//! `--success-exit` and `--rewrite-signal`, and the real-time signals the C
//! library reserves.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::run;
use crate::common::{bin, children_of, command, pid_namespaces, status_mask, status_name, Run, SENTINEL, TEST_BIN_VAR};

// ---------------------------------------------------------------- signals

/// Appends each trapped signal's name to `$D/got`; TERM also exits 42.
const TRAPS: &str = r#"
for s in HUP INT QUIT USR1 USR2 TSTP CONT WINCH TTIN TTOU; do trap "echo $s >> $D/got" $s; done
trap 'echo TERM >> $D/got; exit 42' TERM
: > $D/ready
while :; do sleep 0.02; done
"#;

#[test]
#[ignore = "needs root"]
fn signals_reach_the_program_and_term_ends_it() {
    need_namespaces!();
    let mut r = Run::start(&["--init"], TRAPS, true);
    r.wait_for("ready", |_| true);
    // The terminal stops are not forwarded: if they were, they would show up in
    // `got` before the signals sent after them.
    r.signal(libc::SIGTTIN);
    r.signal(libc::SIGTTOU);
    let mut expected = String::new();
    for (sig, name) in [
        (libc::SIGHUP, "HUP"),
        (libc::SIGINT, "INT"),
        (libc::SIGQUIT, "QUIT"),
        (libc::SIGUSR1, "USR1"),
        (libc::SIGUSR2, "USR2"),
        (libc::SIGTSTP, "TSTP"),
        (libc::SIGCONT, "CONT"),
        (libc::SIGWINCH, "WINCH"),
        (libc::SIGTERM, "TERM"),
    ] {
        r.signal(sig);
        expected.push_str(name);
        expected.push('\n');
        r.wait_for("got", |got| got.len() >= expected.len());
        assert_eq!(r.read("got"), expected);
    }
    let done = r.finish();
    assert_eq!(done.code(), Some(42), "{}", done.stderr);
    assert_eq!(done.stderr, "");
}

#[test]
#[ignore = "needs root"]
fn a_program_that_ignores_term_keeps_running_until_kill() {
    need_namespaces!();
    let script = r#"
trap '' TERM
trap 'echo WINCH >> $D/got' WINCH
: > $D/ready
while :; do sleep 0.02; done
"#;
    let mut r = Run::start(&["--init"], script, true);
    r.wait_for("ready", |_| true);
    // Both are pending together at worst, and envshim takes the lower number
    // first: when WINCH has been handled, TERM has been forwarded before it.
    r.signal(libc::SIGTERM);
    r.signal(libc::SIGWINCH);
    r.wait_for("got", |got| got == "WINCH\n");
    r.signal(libc::SIGWINCH);
    r.wait_for("got", |got| got == "WINCH\nWINCH\n");
    assert!(r.still_running(), "the program survived TERM, so envshim must still run");
    r.signal(libc::SIGKILL);
    let done = r.finish();
    // KILL ended envshim and its namespace. (unshare cannot re-raise SIGKILL on
    // itself as it does other signals, and exits 1 instead.)
    assert!(!done.status.success(), "{:?}", done.status);
}

#[test]
#[ignore = "needs root"]
fn init_group_signals_the_whole_process_group() {
    need_namespaces!();
    let script = r#"
sh -c 'trap "echo grandchild >> $D/got; exit 0" TERM; : > $D/gc-ready; while :; do sleep 0.02; done' &
trap 'echo child >> $D/got' TERM
while [ ! -e $D/gc-ready ]; do sleep 0.01; done
: > $D/ready
wait
wait
exit 5
"#;
    let mut r = Run::start(&["--init", "--init-group"], script, true);
    r.wait_for("ready", |_| true);
    r.signal(libc::SIGTERM);
    let done = r.finish();
    assert_eq!(done.code(), Some(5), "{}", done.stderr);
    let got = done.read("got");
    let mut lines: Vec<&str> = got.lines().collect();
    lines.sort();
    assert_eq!(lines, ["child", "grandchild"]);
}

/// A program that moves into envshim's process group (python3: `sh` cannot
/// call `setpgid`): with `--init-group` the group made for it is gone, so a
/// forwarded signal goes to the program by its pid (said once), never to
/// envshim's group. envshim runs in a group of its own, beside a `sleep`
/// that a signal to that group would end.
#[test]
fn init_group_forwards_to_a_program_that_left_its_group_and_never_to_envshims() {
    let dir = tempfile::tempdir().unwrap();
    let program = r#"
import os, signal, time
d = os.environ["D"]
def got(*_):
    with open(os.path.join(d, "got"), "a") as f:
        f.write("USR1\n")
signal.signal(signal.SIGUSR1, got)
os.setpgid(0, os.getpgid(os.getppid()))
open(os.path.join(d, "ready"), "w").close()
time.sleep(20)
"#;
    fs::write(dir.path().join("prog.py"), program).unwrap();
    let mut cmd = command(false);
    cmd.args(["run", "--init", "--init-group", "--", "python3"]).arg(dir.path().join("prog.py")).process_group(0);
    let mut r = Run::spawn(cmd, dir, false);
    let mut bystander = Command::new("sleep").arg("30").process_group(r.child.id() as i32).spawn().unwrap();
    r.wait_for("ready", |_| true);
    r.signal(libc::SIGUSR1);
    r.wait_for("got", |got| got == "USR1\n");
    r.signal(libc::SIGUSR1);
    r.wait_for("got", |got| got == "USR1\nUSR1\n");
    assert!(bystander.try_wait().unwrap().is_none(), "envshim's process group was signalled");
    r.signal(libc::SIGTERM);
    let done = r.finish();
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert_eq!(done.code(), Some(128 + libc::SIGTERM), "{}", done.stderr);
    assert_eq!(done.stderr.lines().count(), 1, "{}", done.stderr);
    assert!(done.stderr.contains("left its process group"), "{}", done.stderr);
}

#[test]
#[ignore = "needs root"]
fn term_delay_holds_the_first_sigterm_and_forwards_the_rest_at_once() {
    need_namespaces!();
    let script = r#"
trap 'echo WINCH >> $D/got' WINCH
trap 'echo TERM >> $D/got; exit 0' TERM
: > $D/ready
while :; do sleep 0.02; done
"#;
    let delay = Duration::from_millis(400);
    let mut r = Run::start(&["--init", "--term-delay", "400ms"], script, true);
    r.wait_for("ready", |_| true);
    let sent = Instant::now();
    r.signal(libc::SIGTERM);
    // WINCH (28) after TERM (15): had TERM not been held, it would be in `got` first.
    r.signal(libc::SIGWINCH);
    assert_eq!(r.wait_for("got", |got| !got.is_empty()), "WINCH\n");
    r.wait_for("got", |got| got == "WINCH\nTERM\n");
    assert!(sent.elapsed() >= delay, "TERM came after {:?}", sent.elapsed());
    assert_eq!(r.finish().code(), Some(0));
}

#[test]
fn term_delay_and_init_group_need_init() {
    for args in [&["--term-delay", "1s"][..], &["--init-group"][..]] {
        let out = command(false).arg("run").args(args).args(["--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("envshim: "), "{args:?}");
    }
    for bad in ["", "1.5s", "-1s", "5d", "s", "99999999999s"] {
        let out = command(false).args(["run", "--init", "--term-delay", bad, "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "--term-delay {bad:?}");
    }
    for good in ["0", "5", "500ms", "2s", "1m", "1h"] {
        let out = command(false).args(["run", "--init", "--term-delay", good, "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "--term-delay {good:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

// ---------------------------------------------------------------- signals during start-up

/// A cgroup that gives its processes `percent` of one CPU (the v1 `cpu`
/// controller, or v2's `cpu.max`), removed on drop. Where neither can be
/// made the test fails, saying why: it runs as root (tests/all.sh), where
/// the machine's cgroups are writable.
struct CpuLimit(PathBuf);

impl CpuLimit {
    fn new(percent: u32) -> CpuLimit {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("envshim-test-{}-{n}", std::process::id());
        let quota = percent * 1000;
        let v1 = PathBuf::from("/sys/fs/cgroup/cpu").join(&name);
        let v2 = PathBuf::from("/sys/fs/cgroup").join(&name);
        type SetLimit = Box<dyn Fn(&Path) -> std::io::Result<()>>;
        let tries: [(&PathBuf, SetLimit); 2] = [
            (&v1, Box::new(move |d: &Path| fs::write(d.join("cpu.cfs_quota_us"), quota.to_string()))),
            (&v2, Box::new(move |d: &Path| fs::write(d.join("cpu.max"), format!("{quota} 100000")))),
        ];
        let mut why = Vec::new();
        for (dir, limit) in tries {
            match fs::create_dir(dir).and_then(|()| limit(dir)) {
                Ok(()) => return CpuLimit(dir.clone()),
                Err(e) => {
                    let _ = fs::remove_dir(dir);
                    why.push(format!("{dir:?}: {e}"));
                }
            }
        }
        panic!("cannot make a cgroup with a CPU limit ({})", why.join("; "));
    }
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        // Its processes are gone once the test has reaped unshare; retry briefly.
        for _ in 0..100 {
            if fs::remove_dir(&self.0).is_ok() {
                return;
            }
            sleep(Duration::from_millis(20));
        }
    }
}

/// SIGTERM while envshim, PID 1 of its namespace, is still reading its
/// (large) manifest, slowed down to a few seconds by a 3% CPU limit: it ends
/// at once with 143 and the program never runs, with and without `--init`.
/// Before, PID 1 had SIGTERM at its default action, which the kernel drops:
/// the program started seconds later as if nothing had happened.
#[test]
#[ignore = "needs root"]
fn sigterm_during_start_up_as_pid_1_ends_envshim_at_once_with_143() {
    need_namespaces!();
    let dir = tempfile::tempdir().unwrap();
    // About 1 MB of env entries: ~0.2 s of work for the debug build, seconds at 3%.
    let env: Vec<serde_json::Value> = (0..30_000).map(|i| serde_json::json!({"name": format!("V{i}"), "value": "v"})).collect();
    let manifest = dir.path().join("manifest.json");
    fs::write(&manifest, serde_json::to_vec(&serde_json::json!({ "env": env })).unwrap()).unwrap();
    for mode in [&["--init"][..], &[][..]] {
        let limit = CpuLimit::new(3);
        let d = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("sh");
        cmd.env_remove(TEST_BIN_VAR);
        // The shell moves itself into the cgroup, then becomes unshare: every
        // process after it (envshim included) starts limited.
        cmd.arg("-c")
            .arg(r#"echo $$ > "$1/cgroup.procs" && shift && exec "$@""#)
            .arg("sh")
            .arg(&limit.0)
            .args(["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", bin(), "run"])
            .args(mode)
            .arg("--manifest")
            .arg(&manifest)
            .args(["--", "sh", "-c", ": > \"$D/ran\""]);
        let mut r = Run::spawn(cmd, d, true);
        // Wait until envshim runs (unshare's child has exec'd it) and has
        // caught SIGTERM (its handler installed): it is in its start-up. (An
        // envshim that never catches it gets the signal 300 ms after its exec.)
        let start = Instant::now();
        let mut exec_seen: Option<Instant> = None;
        let pid = loop {
            if let Some(pid) = children_of(r.child.id() as i32).into_iter().next() {
                if status_name(pid).as_deref() == Some("envshim") {
                    let seen = *exec_seen.get_or_insert_with(Instant::now);
                    let caught = status_mask(pid, "SigCgt").is_some_and(|m| m & (1 << (libc::SIGTERM - 1)) != 0);
                    if caught || seen.elapsed() > Duration::from_millis(300) {
                        break pid;
                    }
                }
            }
            if let Ok(Some(status)) = r.child.try_wait() {
                panic!("{mode:?}: envshim ended ({status}) before the signal; {}", r.output_so_far());
            }
            if start.elapsed() > Duration::from_secs(30) {
                r.give_up(&format!("{mode:?}: envshim never started"));
            }
            sleep(Duration::from_millis(1));
        };
        assert!(!r.path("ran").exists(), "{mode:?}: the start-up was over before the signal");
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).expect("kill");
        let sent = Instant::now();
        let done = r.finish();
        let took = sent.elapsed();
        assert_eq!(done.code(), Some(128 + libc::SIGTERM), "{mode:?}: {:?} {}", done.status, done.stderr);
        assert!(!done.dir.path().join("ran").exists(), "{mode:?}: the program ran");
        // The rest of the start-up would take seconds at 3%; the handler runs at once.
        assert!(took < Duration::from_secs(2), "{mode:?}: envshim took {took:?} to end");
        eprintln!("{mode:?}: ended {took:?} after SIGTERM");
        drop(limit);
    }
}

// ---------------------------------------------------------------- --success-exit, --rewrite-signal

#[test]
#[ignore = "needs root"]
fn success_exit_maps_the_programs_code_to_0_and_leaves_the_others() {
    need_namespaces!();
    let args = ["--init", "--success-exit", "143", "--success-exit", "3"];
    assert_eq!(run(&args, "exit 3", true).code(), Some(0));
    assert_eq!(run(&args, "exit 4", true).code(), Some(4));
    // Killed by SIGTERM: 143, counted as success.
    let done = run(&args, "trap - TERM; kill -TERM $$", true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(run(&args, "kill -KILL $$", true).code(), Some(137));
}

#[test]
#[ignore = "needs root"]
fn a_sigterm_that_ends_the_program_counts_as_success_with_success_exit_143() {
    need_namespaces!();
    let mut r = Run::start(&["--init", "--success-exit", "143"], "trap - TERM; : > $D/ready; while :; do sleep 0.02; done", true);
    r.wait_for("ready", |_| true);
    r.signal(libc::SIGTERM);
    let done = r.finish();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

#[test]
#[ignore = "needs root"]
fn rewrite_signal_forwards_term_as_quit_and_drops_a_signal_rewritten_to_0() {
    need_namespaces!();
    let script = r#"
trap 'echo TERM >> $D/got' TERM
trap 'echo QUIT >> $D/got; exit 5' QUIT
trap 'echo HUP >> $D/got' HUP
trap 'echo USR1 >> $D/got' USR1
: > $D/ready
while :; do sleep 0.02; done
"#;
    let mut r = Run::start(&["--init", "--rewrite-signal", "HUP:0", "--rewrite-signal", "SIGTERM:quit", "--rewrite-signal", "10:10"], script, true);
    r.wait_for("ready", |_| true);
    // HUP is dropped: had it been forwarded, it would be in `got` before USR1.
    r.signal(libc::SIGHUP);
    r.signal(libc::SIGUSR1);
    r.wait_for("got", |got| got == "USR1\n");
    r.signal(libc::SIGTERM);
    r.wait_for("got", |got| got == "USR1\nQUIT\n");
    assert_eq!(r.finish().code(), Some(5));
}

#[test]
#[ignore = "needs root"]
fn rewrite_signal_applies_to_a_sigterm_held_by_term_delay() {
    need_namespaces!();
    let script = "trap 'echo QUIT >> $D/got; exit 0' QUIT; trap 'echo TERM >> $D/got; exit 1' TERM; : > $D/ready; while :; do sleep 0.02; done";
    let mut r = Run::start(&["--init", "--term-delay", "200ms", "--rewrite-signal", "TERM:QUIT"], script, true);
    r.wait_for("ready", |_| true);
    r.signal(libc::SIGTERM);
    r.wait_for("got", |got| got == "QUIT\n");
    assert_eq!(r.finish().code(), Some(0));
}

#[test]
fn success_exit_and_rewrite_signal_need_init_and_valid_values() {
    for args in [&["--success-exit", "143"][..], &["--rewrite-signal", "TERM:QUIT"][..]] {
        let out = command(false).arg("run").args(args).args(["--", "true"]).env("X", SENTINEL).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("envshim: ") && err.contains("need --init") && !err.contains(SENTINEL), "{args:?}: {err}");
    }
    for (opt, bad) in [
        ("--success-exit", "256"),
        ("--success-exit", "-1"),
        ("--success-exit", "x"),
        ("--rewrite-signal", "KILL:TERM"),
        ("--rewrite-signal", "STOP:0"),
        ("--rewrite-signal", "TERM"),
        ("--rewrite-signal", "TERM:99"),
        ("--rewrite-signal", "NOPE:TERM"),
    ] {
        let out = command(false).args(["run", "--init", opt, bad, "--", "true"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{opt} {bad}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Without a namespace (envshim is then a subreaper): the option parses and applies.
    let out = command(false).args(["run", "--init", "--success-exit", "7", "--", "sh", "-c", "exit 7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_real_time_signals_the_c_library_reserves_are_forwarded_too() {
    // 32-34: musl keeps them for itself, glibc 32-33; the kernel delivers
    // them like any other. Not PID 1, where a signal left unhandled would
    // kill envshim and orphan the program. Their default action ends the
    // program, and envshim exits as it did: 128 + the signal.
    for sig in [32, 33, 34] {
        let mut r = Run::start(&["--init"], ": > $D/ready; while :; do sleep 0.02; done", false);
        r.wait_for("ready", |_| true);
        r.signal(sig);
        let done = r.finish();
        assert_eq!(done.code(), Some(128 + sig), "signal {sig}: {:?} {}", done.status, done.stderr);
        assert_eq!(done.stderr, "");
    }
    // A rewrite of one of them fires.
    let script = "trap 'echo TERM >> $D/got; exit 5' TERM; : > $D/ready; while :; do sleep 0.02; done";
    let mut r = Run::start(&["--init", "--rewrite-signal", "32:TERM"], script, false);
    r.wait_for("ready", |_| true);
    r.signal(32);
    r.wait_for("got", |got| got == "TERM\n");
    assert_eq!(r.finish().code(), Some(5));
}
