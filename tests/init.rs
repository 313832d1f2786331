//! `envshim run --init` (docs/reference.md §8), run for real: most tests start envshim as
//! PID 1 of a fresh pid namespace (`unshare --pid --fork --mount-proc`, which
//! needs root; they are skipped with a message otherwise), signal it from
//! outside as a container runtime would, and look at what the program saw.
//! Programs are `sh` scripts that report through files in a temp directory
//! (`$D`); every wait has a deadline, so a broken envshim fails, never hangs.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::{bin, command, pid_namespaces, SENTINEL, TEST_BIN_VAR};

/// Long enough for a loaded CI machine; reached only when something is broken.
const DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(5);

macro_rules! need_namespaces {
    () => {
        if !pid_namespaces() {
            eprintln!("skipped: needs root and unshare");
            return;
        }
    };
}

/// envshim running a `sh -c SCRIPT` program, with `$D` a fresh directory.
struct Run {
    child: Child,
    dir: tempfile::TempDir,
    in_namespace: bool,
}

/// What a finished run left: its status, its output, and `$D`.
struct Done {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    dir: tempfile::TempDir,
}

impl Done {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}

impl Run {
    /// `envshim run ARGS --no-expand-args -- sh -c SCRIPT`, as PID 1 of a new pid
    /// namespace when `in_namespace`. Output goes to files, so a process that
    /// outlives envshim cannot keep a pipe, and the test, waiting.
    fn start(args: &[&str], script: &str, in_namespace: bool) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = command(in_namespace);
        cmd.arg("run").args(args).args(["--no-expand-args", "--", "sh", "-c", script]);
        Run::spawn(cmd, dir, in_namespace)
    }

    /// Starts `cmd` (which runs envshim) with `$D` set to `dir`.
    fn spawn(mut cmd: Command, dir: tempfile::TempDir, in_namespace: bool) -> Run {
        cmd.env("D", dir.path())
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.path().join("stdout")).unwrap())
            .stderr(fs::File::create(dir.path().join("stderr")).unwrap());
        let child = cmd.spawn().unwrap();
        Run { child, dir, in_namespace }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Waits until `name` exists in `$D` and `done` accepts its content.
    fn wait_for(&mut self, name: &str, done: impl Fn(&str) -> bool) -> String {
        let path = self.path(name);
        let start = Instant::now();
        loop {
            if let Ok(text) = fs::read_to_string(&path) {
                if done(&text) {
                    return text;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("envshim exited ({status}) while waiting for {name}: {}", self.output_so_far());
            }
            if start.elapsed() > DEADLINE {
                self.give_up(&format!("{name} never came (has {:?})", fs::read_to_string(&path).ok()));
            }
            sleep(POLL);
        }
    }

    /// The pid of envshim as seen from here (outside its namespace).
    fn envshim_pid(&self) -> i32 {
        let outer = self.child.id() as i32;
        if !self.in_namespace {
            return outer;
        }
        children_of(outer).into_iter().next().expect("unshare has no child")
    }

    // Test set-up, not in nix: kill with any signal number (nix's Signal has no real-time ones).
    #[allow(unsafe_code)]
    fn signal(&self, sig: libc::c_int) {
        // SAFETY: plain syscall; the pid is envshim's, alive until we reap unshare.
        assert_eq!(unsafe { libc::kill(self.envshim_pid(), sig) }, 0, "kill {sig}");
    }

    fn still_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for envshim (or unshare) to exit.
    fn finish(mut self) -> Done {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Done { status, stdout: self.read("stdout"), stderr: self.read("stderr"), dir: self.dir };
            }
            if start.elapsed() > DEADLINE {
                self.give_up("envshim did not exit");
            }
            sleep(POLL);
        }
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    fn output_so_far(&self) -> String {
        format!("stdout {:?}, stderr {:?}", self.read("stdout"), self.read("stderr"))
    }

    fn give_up(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("{why} within {DEADLINE:?}; {}", self.output_so_far());
    }
}

/// The pids whose parent is `parent`, from /proc.
fn children_of(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold anything, so split after its last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        if rest.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(parent) {
            found.push(pid);
        }
    }
    found
}

/// Runs envshim to completion with a program that needs no signals.
fn run(args: &[&str], script: &str, in_namespace: bool) -> Done {
    Run::start(args, script, in_namespace).finish()
}

// ---------------------------------------------------------------- exit codes

#[test]
fn the_exit_code_of_the_program_propagates() {
    need_namespaces!();
    let done = run(&["--init"], "exit 7", true);
    assert_eq!(done.code(), Some(7), "{}", done.stderr);
    assert_eq!(run(&["--init"], "exit 0", true).code(), Some(0));
}

#[test]
fn a_program_killed_by_a_signal_gives_128_plus_its_number() {
    need_namespaces!();
    let done = run(&["--init"], "kill -KILL $$", true);
    assert_eq!(done.code(), Some(128 + libc::SIGKILL), "{}", done.stderr);
    assert_eq!(run(&["--init"], "trap - TERM; kill -TERM $$", true).code(), Some(128 + libc::SIGTERM));
}

#[test]
fn with_init_the_program_is_a_child_of_envshim() {
    need_namespaces!();
    let done = run(&["--init"], "echo $$ $PPID", true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout.trim(), "2 1");
}

#[test]
fn without_init_the_program_has_envshims_pid() {
    need_namespaces!();
    let done = run(&[], "echo $$", true);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stdout.trim(), "1");
}

// ---------------------------------------------------------------- signals

/// Appends each trapped signal's name to `$D/got`; TERM also exits 42.
const TRAPS: &str = r#"
for s in HUP INT QUIT USR1 USR2 TSTP CONT WINCH TTIN TTOU; do trap "echo $s >> $D/got" $s; done
trap 'echo TERM >> $D/got; exit 42' TERM
: > $D/ready
while :; do sleep 0.02; done
"#;

#[test]
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

#[test]
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
    command(false)
        .args(["run", "--init", "--termination-log"])
        .arg(log)
        .arg("--")
        .arg(program)
        .output()
        .unwrap()
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

/// Runs `command` under `script`, on a new pseudo-terminal; None without `script`.
fn on_a_terminal(command: &str) -> Option<String> {
    let out = Command::new("script").args(["-qec", command, "/dev/null"]).env_remove(TEST_BIN_VAR).stdin(Stdio::null()).output().ok()?;
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).replace('\r', ""))
}

/// Prints the program's pid, its process group and the terminal's foreground group.
const PGRP: &str = r#"sh -c 'read -r stat < /proc/$$/stat; set -- ${stat##*)}; echo $$ $3 $6'"#;

fn pids(text: &str) -> Vec<i64> {
    text.split_whitespace().map(|w| w.parse().unwrap()).collect()
}

#[test]
fn the_program_gets_its_own_group_and_the_terminal() {
    let command = format!("{} run --init --no-expand-args -- {PGRP}", bin());
    let Some(out) = on_a_terminal(&command) else {
        eprintln!("skipped: needs script(1)");
        return;
    };
    let p = pids(&out);
    assert_eq!(p.len(), 3, "{out:?}");
    assert_eq!(p[1], p[0], "the program leads its own process group");
    assert_eq!(p[2], p[0], "its group is the terminal's foreground");
}

#[test]
fn a_background_envshim_does_not_take_the_terminal() {
    // `set -m`: job control, so the background job has a group of its own.
    let command = format!("sh -c 'set -m; {} run --init --no-expand-args -- {} & wait'", bin(), PGRP.replace('\'', r"'\''"));
    let Some(out) = on_a_terminal(&command) else {
        eprintln!("skipped: needs script(1)");
        return;
    };
    let p = pids(&out);
    assert_eq!(p.len(), 3, "{out:?}");
    assert_eq!(p[1], p[0], "the program leads its own process group");
    assert_ne!(p[2], p[0], "the shell keeps the terminal");
}

// ---------------------------------------------------------------- signals during start-up

/// A cgroup that gives its processes `percent` of one CPU (the v1 `cpu`
/// controller, or v2's `cpu.max`), removed on drop; None (with a message)
/// where neither can be made.
struct CpuLimit(PathBuf);

impl CpuLimit {
    fn new(percent: u32) -> Option<CpuLimit> {
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
                Ok(()) => return Some(CpuLimit(dir.clone())),
                Err(e) => {
                    let _ = fs::remove_dir(dir);
                    why.push(format!("{dir:?}: {e}"));
                }
            }
        }
        eprintln!("skipped: cannot make a cgroup with a CPU limit ({})", why.join("; "));
        None
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

/// A `/proc/PID/status` field (e.g. `SigCgt`) as a number; None once the process is gone.
fn status_mask(pid: i32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let value = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    u64::from_str_radix(value.trim(), 16).ok()
}

fn status_name(pid: i32) -> Option<String> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("Name:")).map(|n| n.trim().to_string())
}

/// SIGTERM while envshim, PID 1 of its namespace, is still reading its
/// (large) manifest, slowed down to a few seconds by a 3% CPU limit: it ends
/// at once with 143 and the program never runs, with and without `--init`.
/// Before, PID 1 had SIGTERM at its default action, which the kernel drops:
/// the program started seconds later as if nothing had happened.
#[test]
fn sigterm_during_start_up_as_pid_1_ends_envshim_at_once_with_143() {
    need_namespaces!();
    let dir = tempfile::tempdir().unwrap();
    // About 1 MB of env entries: ~0.2 s of work for the debug build, seconds at 3%.
    let env: Vec<serde_json::Value> =
        (0..30_000).map(|i| serde_json::json!({"name": format!("V{i}"), "value": "v"})).collect();
    let manifest = dir.path().join("manifest.json");
    fs::write(&manifest, serde_json::to_vec(&serde_json::json!({ "env": env })).unwrap()).unwrap();
    for mode in [&["--init"][..], &[][..]] {
        let Some(limit) = CpuLimit::new(3) else { return };
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
fn a_sigterm_that_ends_the_program_counts_as_success_with_success_exit_143() {
    need_namespaces!();
    let mut r = Run::start(&["--init", "--success-exit", "143"], "trap - TERM; : > $D/ready; while :; do sleep 0.02; done", true);
    r.wait_for("ready", |_| true);
    r.signal(libc::SIGTERM);
    let done = r.finish();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

#[test]
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
