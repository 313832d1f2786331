//! `envshim run --watch` (docs/reference.md §13), run for real: volumes laid out
//! and swapped as the kubelet's atomic writer does (a timestamped directory of
//! the files, `..data` a link to it, each key a link through `..data`; a
//! change is a new timestamped directory, a `..data_tmp` link renamed over
//! `..data`, the old directory removed). Programs are `sh` scripts that log
//! to `$D/log`; every value carries the sentinel, which stderr never shows.

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::{am_root, assert_no_sentinel, command, deny_syscall, envshim, rss_kib, Done, KubeletVolume, Run, SENTINEL};

mod left_group;
mod stress;

/// The quiet period of these tests: short, so they are fast.
const SETTLE: &str = "50ms";
/// Long enough for several quiet periods and reads to have come and gone.
const QUIET: Duration = Duration::from_millis(600);

/// A program that logs its start and its stop (on SIGTERM) with `$A`.
const PROGRAM: &str = r#"echo "start $A" >> "$D/log"; trap 'echo "stop $A" >> "$D/log"; exit 0' TERM; while :; do sleep 0.02; done"#;

/// A value of the variable A: the sentinel, and which version it is.
fn value(n: u32) -> String {
    format!("{SENTINEL}-{n}")
}

/// `envshim run --watch --watch-settle 50ms ARGS --no-expand-args -- sh -c SCRIPT` in `dir` ($D).
fn watch(dir: tempfile::TempDir, args: &[&str], script: &str) -> Run {
    let mut cmd = command(false);
    cmd.arg("run").args(["--watch", "--watch-settle", SETTLE]).args(args).args(["--no-expand-args", "--", "sh", "-c", script]).current_dir(dir.path());
    Run::spawn(cmd, dir, false)
}

/// The lines of `$D/log`.
fn log(run: &Run) -> Vec<String> {
    run.read("log").lines().map(str::to_string).collect()
}

/// Waits for `$D/log` to have `n` lines.
fn lines(run: &mut Run, n: usize) -> Vec<String> {
    run.wait_for("log", |t| t.lines().count() >= n);
    log(run)
}

/// SIGTERM to envshim, then its end; stderr never shows the sentinel.
fn stop(run: Run) -> Done {
    run.signal(libc::SIGTERM);
    let done = run.finish();
    assert_no_sentinel(done.stderr.as_bytes(), "stderr");
    done
}

fn env_file(n: u32) -> String {
    format!("# version {n}\nA={}\n", value(n))
}

#[test]
fn a_changed_value_restarts_the_program_once_with_it_after_the_old_one_ended() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut run = watch(dir, &["--env-file", "config/app.env"], PROGRAM);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    let got = lines(&mut run, 3);
    assert_eq!(got, [format!("start {}", value(1)), format!("stop {}", value(1)), format!("start {}", value(2))]);
    sleep(QUIET);
    assert_eq!(log(&run).len(), 3, "one restart only: {:?}", log(&run));
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stderr.matches("watch: changed A: restarting the program").count(), 1, "{}", done.stderr);
}

#[test]
fn a_swap_with_the_same_content_a_touch_and_a_comment_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut run = watch(dir, &["--env-file", "config/app.env"], PROGRAM);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(1))]);
    sleep(QUIET);
    let file = run.path("config/app.env");
    fs::File::options().append(true).open(&file).unwrap().set_modified(std::time::SystemTime::now()).unwrap();
    vol.swap(&[("app.env", &format!("# another comment\n{}", env_file(1)))]);
    sleep(QUIET);
    assert_eq!(log(&run).len(), 1, "{:?}", log(&run));
    // Still watching: a real change is applied.
    vol.swap(&[("app.env", &env_file(2))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(2)));
    let done = stop(run);
    assert!(!done.stderr.contains("not applied"), "{}", done.stderr);
}

#[test]
fn an_invalid_change_keeps_the_program_and_is_said_once_then_a_valid_one_applies() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut run = watch(dir, &["--env-file", "config/app.env", "--watch-poll", "100ms"], PROGRAM);
    lines(&mut run, 1);
    // A line that does not parse, holding the sentinel.
    vol.swap(&[("app.env", &format!("A={}\nnot a line {SENTINEL}\n", value(2)))]);
    run.wait_for("stderr", |t| t.contains("not applied"));
    // Several polls later: still the first program, and said once.
    sleep(QUIET);
    assert_eq!(log(&run).len(), 1, "{:?}", log(&run));
    vol.swap(&[("app.env", &env_file(3))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(3)));
    let done = stop(run);
    assert_eq!(done.stderr.matches("a change is not applied, the program keeps running: env file config/app.env, line 2").count(), 1, "{}", done.stderr);
}

#[test]
fn a_burst_of_swaps_restarts_once_with_the_last_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut run = watch(dir, &["--env-file", "config/app.env"], PROGRAM);
    lines(&mut run, 1);
    for n in 2..=6 {
        vol.swap(&[("app.env", &env_file(n))]);
        sleep(Duration::from_millis(10));
    }
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(6)));
    sleep(QUIET);
    assert_eq!(log(&run).len(), 3, "{:?}", log(&run));
    stop(run);
}

/// Without inotify (the hardest case: no quiet period is seen), a poll
/// reads the first half; the second read, a quiet period later, differs, so
/// the half is never applied.
#[test]
fn a_file_written_in_place_in_two_parts_never_starts_a_program_with_half_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.env");
    fs::write(&file, env_file(1)).unwrap();
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", "400ms", "--watch-poll", "100ms", "--env-file", "app.env", "--no-expand-args", "--", "sh", "-c", PROGRAM])
        .current_dir(dir.path());
    without_inotify(&mut cmd);
    let mut run = Run::spawn(cmd, dir, false);
    lines(&mut run, 1);
    let mut f = fs::File::options().write(true).truncate(true).open(&file).unwrap();
    use std::io::Write;
    let whole = env_file(2);
    let (first, second) = whole.split_at(whole.len() - 4);
    f.write_all(first.as_bytes()).unwrap();
    sleep(Duration::from_millis(150));
    f.write_all(second.as_bytes()).unwrap();
    drop(f);
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(2)));
    sleep(QUIET);
    assert_eq!(log(&run).len(), 3, "{:?}", log(&run));
    stop(run);
}

/// inotify refused (EPERM), as a strict seccomp profile would.
fn without_inotify(cmd: &mut Command) {
    // SAFETY: only prctl runs in the child (deny_syscall).
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| deny_syscall(libc::SYS_inotify_init1, libc::EPERM));
    }
}

#[test]
fn a_program_that_ignores_the_restart_signal_is_killed_after_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let script = r#"echo $$ >> "$D/pids"; echo "start $A" >> "$D/log"; trap '' TERM; while :; do sleep 0.02; done"#;
    let mut run = watch(dir, &["--env-file", "config/app.env", "--restart-timeout", "400ms"], script);
    lines(&mut run, 1);
    let swapped = Instant::now();
    vol.swap(&[("app.env", &env_file(2))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start {}", value(2)));
    assert!(swapped.elapsed() >= Duration::from_millis(400), "{:?}", swapped.elapsed());
    // The new one ignores SIGTERM too: SIGKILL ends envshim, and the test
    // ends the program it leaves behind (in a process group of its own).
    run.signal(libc::SIGKILL);
    let done = run.finish();
    for pid in done.read("pids").lines() {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid.parse().unwrap()), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(done.read("stderr").contains("did not stop within 400ms: SIGKILL to it and its process group"), "{}", done.read("stderr"));
}

#[test]
fn sigterm_during_a_restart_starts_no_new_program() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    // Stopping takes a while, then ends with 3.
    let script = r#"echo "start $A" >> "$D/log"; trap 'trap "" TERM; echo stopping >> "$D/log"; sleep 0.3; exit 3' TERM; while :; do sleep 0.02; done"#;
    let mut run = watch(dir, &["--env-file", "config/app.env"], script);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    lines(&mut run, 2);
    let done = stop(run);
    assert_eq!(done.code(), Some(3), "{}", done.stderr);
    sleep(Duration::from_millis(100));
    assert_eq!(done.read("log").lines().count(), 2, "{}", done.read("log"));
}

#[test]
fn on_change_exit_stops_the_program_and_exits_75() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut run = watch(dir, &["--env-file", "config/app.env", "--on-change", "exit"], PROGRAM);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    let done = run.finish();
    assert_eq!(done.code(), Some(75), "{}", done.stderr);
    assert_eq!(done.read("log").lines().collect::<Vec<_>>(), [format!("start {}", value(1)), format!("stop {}", value(1))]);
    assert!(done.stderr.contains("watch: changed A: stopping the program, then exiting (75)"), "{}", done.stderr);
    assert_no_sentinel(done.stderr.as_bytes(), "stderr");
}

#[test]
fn on_change_signal_sends_it_and_keeps_the_program_and_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let script = r#"echo "start $A" >> "$D/log"; trap 'echo "hup $A" >> "$D/log"' HUP; trap 'exit 0' TERM; while :; do sleep 0.02; done"#;
    let mut run = watch(dir, &["--env-file", "config/app.env", "--on-change", "signal:HUP"], script);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    assert_eq!(lines(&mut run, 2)[1], format!("hup {}", value(1)));
    sleep(QUIET);
    assert_eq!(log(&run).len(), 2, "one signal per change: {:?}", log(&run));
    let done = stop(run);
    assert!(done.stderr.contains("watch: changed A: signal 1 sent to the program"), "{}", done.stderr);
}

#[test]
fn a_changed_manifest_command_restarts_the_new_program() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = |n: u32| {
        let script = format!(r#"echo "start {n} $A" >> "$D/log"; trap 'exit 0' TERM; while :; do sleep 0.02; done"#);
        serde_json::json!({"command": ["sh", "-c", script], "env": [{"name": "A", "value": value(1)}]}).to_string()
    };
    let mut vol = KubeletVolume::new(&dir.path().join("m"), &[("manifest.json", &manifest(1))]);
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--manifest", "m/manifest.json"]).current_dir(dir.path());
    let mut run = Run::spawn(cmd, dir, false);
    assert_eq!(lines(&mut run, 1)[0], format!("start 1 {}", value(1)));
    vol.swap(&[("manifest.json", &manifest(2))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start 2 {}", value(1)));
    let done = stop(run);
    assert!(done.stderr.contains("watch: program line changed: restarting the program"), "{}", done.stderr);
}

#[test]
fn env_dir_and_file_env_sources_are_watched() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("secrets"), &[("A", &value(1))]);
    fs::create_dir(dir.path().join("run")).unwrap();
    fs::write(dir.path().join("run/b"), format!("{SENTINEL}-b1\n")).unwrap();
    let script = r#"echo "start $A $B" >> "$D/log"; trap 'exit 0' TERM; while :; do sleep 0.02; done"#;
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--env-dir", "secrets", "--file-env", "B", "--no-expand-args", "--", "sh", "-c", script])
        .env("B_FILE", "run/b")
        .current_dir(dir.path());
    let mut run = Run::spawn(cmd, dir, false);
    assert_eq!(lines(&mut run, 1)[0], format!("start {} {SENTINEL}-b1", value(1)));
    vol.swap(&[("A", &value(2))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start {} {SENTINEL}-b1", value(2)));
    // A file replaced by a rename, as an editor or a secrets agent does.
    fs::write(run.path("run/b.tmp"), format!("{SENTINEL}-b2\n")).unwrap();
    fs::rename(run.path("run/b.tmp"), run.path("run/b")).unwrap();
    assert_eq!(lines(&mut run, 3)[2], format!("start {} {SENTINEL}-b2", value(2)));
    let done = stop(run);
    assert!(done.stderr.contains("watch: changed B: restarting"), "{}", done.stderr);
}

#[test]
fn without_inotify_the_poll_applies_the_change_after_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let mut cmd = command(false);
    cmd.args([
        "run",
        "--watch",
        "--watch-settle",
        SETTLE,
        "--watch-poll",
        "100ms",
        "--env-file",
        "config/app.env",
        "--no-expand-args",
        "--",
        "sh",
        "-c",
        PROGRAM,
    ])
    .current_dir(dir.path());
    without_inotify(&mut cmd);
    let mut run = Run::spawn(cmd, dir, false);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(2)));
    let done = stop(run);
    assert_eq!(done.stderr.matches("warning: --watch: inotify is unavailable (Operation not permitted)").count(), 1, "{}", done.stderr);
}

#[test]
fn the_watch_options_need_watch_and_valid_values() {
    for (args, vars, want) in [
        (&["--on-change", "exit"][..], &[][..], "envshim: --on-change is a setting of --watch: it needs --watch (or ENVSHIM_WATCH)"),
        (&["--watch-splay", "1s", "--on-change", "exit"][..], &[][..], "envshim: --watch-splay is a setting of --watch: it needs --watch (or ENVSHIM_WATCH)"),
        (&["--watch", "--on-change", "reload"], &[], "--on-change: expected restart, handover, exit or signal:SIG"),
        (&["--watch", "--restart-signal", "0"], &[], "--restart-signal: 0 is no signal"),
        (&["--watch", "--watch-poll", "0"], &[], "--watch-poll: must be more than 0"),
        (&["--watch"], &[("ENVSHIM_WATCH_POLL", "0")], "ENVSHIM_WATCH_POLL: must be more than 0"),
        (&["--watch"], &[("ENVSHIM_RESTART_TIMEOUT", "soon")], "ENVSHIM_RESTART_TIMEOUT: "),
        (&[], &[("ENVSHIM_WATCH", "maybe")], "ENVSHIM_WATCH must be one of"),
        (&["--watch"], &[("ENVSHIM_POD_INDEX", "-1")], "ENVSHIM_POD_INDEX: expected a number from 0"),
        (&["--watch", "--watch-replicas", "0"], &[], "--watch-replicas: must be more than 0"),
    ] {
        let out = envshim(["run"]).args(args).envs(vars.iter().copied()).args(["--", "/bin/true"]).run();
        out.code(2);
        assert!(out.stderr_str().contains(want), "{args:?} {vars:?}: {}", out.stderr_str());
    }
    // Without --watch its variables change nothing, but a bad one is still a mistake.
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_WATCH_POLL", "5s").run().ok();
    envshim(["run", "--", "/bin/true"]).env("ENVSHIM_WATCH_POLL", "0").run().fails_with(2, &["ENVSHIM_WATCH_POLL: must be more than 0"]);
}

/// Replica 3 of 3 acts in slot 0 of an hour's splay: at once (a random
/// delay of up to an hour would not be). An empty index (the downward API's
/// value of a label the pod lacks, on a cluster before 1.28) is none.
#[test]
fn an_index_takes_its_slot_of_the_splay_and_an_empty_one_is_none() {
    for (index, args) in [("3", &["--watch-splay", "1h", "--watch-replicas", "3"][..]), ("", &[])] {
        let dir = tempfile::tempdir().unwrap();
        let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
        let mut cmd = command(false);
        cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--env-file", "config/app.env"]).args(args).args(["--no-expand-args", "--", "sh", "-c", PROGRAM]);
        cmd.env("ENVSHIM_POD_INDEX", index).current_dir(dir.path());
        let mut run = Run::spawn(cmd, dir, false);
        lines(&mut run, 1);
        vol.swap(&[("app.env", &env_file(2))]);
        assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(2)), "index {index:?}");
        let done = stop(run);
        assert_eq!(done.code(), Some(0), "{}", done.stderr);
    }
}

/// A file mounted on its own from another file system (what a `subPath`
/// mount of a volume is) gets one warning from `check --watch`, none without `--watch`.
#[test]
#[ignore = "needs root"]
fn check_watch_warns_about_a_file_that_is_a_mount_of_its_own() {
    assert!(am_root(), "needs root (a bind mount in a mount namespace)");
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("volume")).unwrap();
    fs::write(dir.path().join("app.env"), "").unwrap();
    let shell = |watch: &str| {
        let script = format!(
            r#"mount -t tmpfs none "$D/volume" && printf 'A=%s\n' "$V" > "$D/volume/app.env" && mount --bind "$D/volume/app.env" "$D/app.env" && exec "$E" check {watch} --env-file "$D/app.env""#
        );
        Command::new("unshare")
            .args(["--mount", "sh", "-c", &script])
            .env("D", dir.path())
            .env("V", value(1))
            .env("E", crate::common::bin())
            .env_remove(crate::common::TEST_BIN_VAR)
            .output()
            .unwrap()
    };
    let out = shell("--watch");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("is mounted on its own (a subPath mount?)").count(), 1, "{stderr}");
    assert_no_sentinel(&out.stderr, "stderr");
    let out = shell("");
    assert!(out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("subPath"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A restart reads the changed file with the start's grammar: under
/// `--env-grammar kubelet`, the first occurrence of a name wins and a
/// single-quoted value is kept as written; an unquoted value (which
/// envshim's grammar would take) is an invalid change. The re-read is
/// `run`'s, not `check`'s portability lint (which fails a repeated name).
#[test]
fn a_restart_reads_the_changed_file_with_the_kubelet_grammar_when_it_was_started_so() {
    let dir = tempfile::tempdir().unwrap();
    let kubelet_file = |n: u32| format!("A='{}'\n", value(n));
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &kubelet_file(1))]);
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--watch-poll", "100ms", "--env-grammar", "kubelet", "--env-file", "config/app.env"])
        .args(["--no-expand-args", "--", "sh", "-c", PROGRAM])
        .env("ENVSHIM_WATCH_POL", "1")
        .current_dir(dir.path());
    let mut run = Run::spawn(cmd, dir, false);
    assert_eq!(lines(&mut run, 1)[0], format!("start {}", value(1)));
    let literal = format!("{}-$B-\"q\"", value(2));
    vol.swap(&[("app.env", &format!("A='{literal}'\nA='{}'\n", value(9)))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {literal}"));
    vol.swap(&[("app.env", &format!("A={}\n", value(3)))]);
    run.wait_for("stderr", |t| t.contains("not applied"));
    sleep(QUIET);
    assert_eq!(log(&run).len(), 3, "{:?}", log(&run));
    let done = stop(run);
    assert!(
        done.stderr.contains(
            "a change is not applied, the program keeps running: --env-file: env file config/app.env, line 1: has a value not enclosed in single quotes"
        ),
        "{}",
        done.stderr
    );
    assert_eq!(done.stderr.matches("not applied").count(), 1, "{}", done.stderr);
    // The start's warning (a misspelt variable) is said once, not at each read.
    assert_eq!(done.stderr.matches("warning: ").count(), 1, "{}", done.stderr);
}

/// Each read frees what it read: with the manifest given as text (as a
/// converted container has it) read again at every 10 ms poll, envshim's
/// memory does not grow with the reads (it grew by the manifest's size at
/// each one: tens of MiB a second here).
#[test]
fn memory_does_not_grow_with_the_reads() {
    let dir = tempfile::tempdir().unwrap();
    let env: Vec<_> = (0..350).map(|i| serde_json::json!({"name": format!("V{i:04}"), "value": format!("{SENTINEL}-{i}-{}", "x".repeat(256))})).collect();
    let manifest = serde_json::json!({ "env": env }).to_string();
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--watch-poll", "10ms", "--manifest-json", &manifest, "--no-expand-args", "--", "sh", "-c", PROGRAM])
        .current_dir(dir.path());
    let mut run = Run::spawn(cmd, dir, false);
    lines(&mut run, 1);
    let pid = run.child.id();
    sleep(Duration::from_secs(1));
    let before = rss_kib(pid);
    sleep(Duration::from_secs(2));
    let after = rss_kib(pid);
    assert!(after < before + 2048, "RSS {before} KiB, then {after} KiB two seconds of reads later");
    let done = stop(run);
    assert_eq!(done.read("log").matches("start").count(), 1, "no restart: {}", done.read("log"));
}
