//! `--watch` under stress: a restart that waits for a program draining
//! slowly (envshim stays blocked), a program that leaves a worker in its
//! process group (nothing of it left when the new one starts), inotify
//! refusing watches (said once, the poll still applies the change), the
//! watches following a restart to the files its manifest names.

use std::fs;
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use super::{env_file, lines, log, stop, value, watch, SETTLE};
use crate::common::{assert_no_sentinel, command, cpu_ticks, KubeletVolume, Run, SENTINEL};

/// A restart waits while the old program drains for 3 s after SIGTERM; the
/// same content is swapped in again meanwhile and polls come and go. envshim
/// stays blocked: it used 1.1 to 1.7 s of CPU in those 3 s when an event or
/// a poll during the stop left it a deadline in the past.
#[test]
fn a_restart_waiting_for_a_slow_program_uses_no_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let script = r#"echo "start $A" >> "$D/log"; trap 'echo "draining $A" >> "$D/log"; sleep 3; exit 0' TERM; while :; do sleep 0.02; done"#;
    let mut run = watch(dir, &["--env-file", "config/app.env", "--watch-poll", "100ms", "--restart-timeout", "20s"], script);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    lines(&mut run, 2);
    let pid = run.child.id();
    let before = cpu_ticks(pid);
    for _ in 0..5 {
        vol.swap(&[("app.env", &env_file(2))]);
        sleep(Duration::from_millis(400));
    }
    let used = cpu_ticks(pid) - before;
    assert_eq!(log(&run).len(), 2, "still draining: {:?}", log(&run));
    eprintln!("envshim's CPU over 2 s of a 3 s drain: {used} ticks");
    assert!(used <= 10, "envshim used {used} ticks of CPU (1/100 s) in 2 s while the program drained");
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(2)));
    stop(run);
}

/// The program leaves a worker in its process group; the new program checks,
/// as it starts, that no worker of an older one is alive. `--verbose` says
/// what envshim did.
fn old_group_is_gone_before_the_new_program(worker_traps: &str, extra: &[&str], said: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1))]);
    let script = format!(
        r#"for p in $(cat "$D/workers" 2>/dev/null); do kill -0 $p 2>/dev/null && echo "old worker $p alive" >> "$D/log"; done
        ( {worker_traps} while :; do sleep 0.02; done ) &
        echo $! >> "$D/workers"; echo "start $A" >> "$D/log"; trap 'exit 0' TERM; while :; do sleep 0.02; done"#
    );
    let mut args = vec!["--env-file", "config/app.env", "--verbose"];
    args.extend_from_slice(extra);
    let mut run = watch(dir, &args, &script);
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2))]);
    let got = lines(&mut run, 2);
    let done = stop(run);
    for pid in done.read("workers").lines() {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid.parse().unwrap()), nix::sys::signal::Signal::SIGKILL);
    }
    assert_eq!(got, [format!("start {}", value(1)), format!("start {}", value(2))], "{}", done.stderr);
    assert!(done.stderr.contains(said), "{}", done.stderr);
}

#[test]
fn a_restart_ends_the_old_programs_worker_before_the_new_program_starts() {
    old_group_is_gone_before_the_new_program("", &[], "watch: the program ended, its process group outlives it: signal 15 to the group");
}

#[test]
fn a_worker_that_ignores_the_restart_signal_is_killed_before_the_new_program_starts() {
    old_group_is_gone_before_the_new_program(
        "trap '' TERM;",
        &["--restart-timeout", "300ms"],
        "did not stop within 300ms: SIGKILL to what is left of its process group",
    );
}

/// A user namespace of its own, where at most `watches` inotify watches may be made.
fn with_watch_limit(cmd: &Command, watches: u32) -> Command {
    let mut script = format!("echo {watches} > /proc/sys/user/max_inotify_watches && exec");
    for word in std::iter::once(cmd.get_program()).chain(cmd.get_args()) {
        script.push_str(&format!(" '{}'", word.to_str().unwrap().replace('\'', r"'\''")));
    }
    let mut limited = Command::new("unshare");
    limited.args(["--user", "--map-root-user", "sh", "-c", &script]);
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => limited.env(k, v),
            None => limited.env_remove(k),
        };
    }
    limited.current_dir(cmd.get_current_dir().unwrap());
    limited
}

/// inotify refuses the second directory (`fs.inotify.max_user_watches`):
/// one warning naming it, the first still watched, and a change in the
/// second applied at the poll.
#[test]
fn watches_inotify_refuses_are_said_once_and_left_to_the_poll() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = KubeletVolume::new(&dir.path().join("first"), &[("app.env", &env_file(1))]);
    let mut second = KubeletVolume::new(&dir.path().join("second"), &[("b.env", &format!("B={SENTINEL}-b1\n"))]);
    let script = r#"echo "start $A $B" >> "$D/log"; trap 'exit 0' TERM; while :; do sleep 0.02; done"#;
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--watch-poll", "300ms", "--env-file", "first/app.env", "--env-file", "second/b.env"])
        .args(["--no-expand-args", "--", "sh", "-c", script])
        .current_dir(dir.path());
    let mut run = Run::spawn(with_watch_limit(&cmd, 1), dir, false);
    lines(&mut run, 1);
    second.swap(&[("b.env", &format!("B={SENTINEL}-b2\n"))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start {} {SENTINEL}-b2", value(1)));
    first.swap(&[("app.env", &env_file(2))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {} {SENTINEL}-b2", value(2)));
    let done = stop(run);
    let warning = "warning: --watch: inotify refused to watch second (No space left on device: the limit is fs.inotify.max_user_watches); a change there is seen at the next --watch-poll only";
    assert_eq!(done.stderr.matches(warning).count(), 1, "{}", done.stderr);
    assert_eq!(done.stderr.matches("warning:").count(), 1, "{}", done.stderr);
}

/// The inode numbers of the directories envshim's inotify instance watches.
fn watched_inodes(pid: u32) -> Vec<u64> {
    let mut inodes = Vec::new();
    for fd in fs::read_dir(format!("/proc/{pid}/fd")).unwrap().flatten() {
        if fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy().contains("inotify")) {
            let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy())).unwrap_or_default();
            let watches = info.lines().filter(|l| l.starts_with("inotify "));
            for word in watches.flat_map(str::split_whitespace).filter_map(|w| w.strip_prefix("ino:")) {
                inodes.push(u64::from_str_radix(word, 16).unwrap());
            }
        }
    }
    inodes
}

/// No `--manifest` and no `/etc/envshim`: nothing can appear there (a volume
/// is mounted at the start or never), so `/etc` costs no watch.
#[test]
fn an_absent_default_manifest_costs_no_watch_on_etc() {
    use std::os::unix::fs::MetadataExt;
    assert!(fs::metadata("/etc/envshim").is_err(), "this test needs a machine without /etc/envshim");
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("config")).unwrap();
    fs::write(dir.path().join("config/app.env"), env_file(1)).unwrap();
    let config = fs::metadata(dir.path().join("config")).unwrap().ino();
    let mut run = watch(dir, &["--env-file", "config/app.env"], super::PROGRAM);
    lines(&mut run, 1);
    let watched = watched_inodes(run.child.id());
    stop(run);
    assert!(watched.contains(&config), "the env file's directory is watched: {watched:?}");
    assert!(!watched.contains(&fs::metadata("/etc").unwrap().ino()), "/etc is watched: {watched:?}");
}

/// A changed manifest names another volume's file: the restart starts the
/// program with it, and a change of that file restarts it again at once (the
/// poll, 30 s here, is not what sees it).
#[test]
fn after_a_restart_the_files_the_new_manifest_names_are_watched_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let manifest = |volume: &str| {
        let script = r#"echo "start $A" >> "$D/log"; trap 'exit 0' TERM; while :; do sleep 0.02; done"#;
        serde_json::json!({
            "volumeMounts": [{"name": "one", "mountPath": format!("{d}/one")}, {"name": "two", "mountPath": format!("{d}/two")}],
            "env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": volume, "path": "app.env", "key": "A"}}}],
            "command": ["sh", "-c", script],
        })
        .to_string()
    };
    let mut m = KubeletVolume::new(&dir.path().join("m"), &[("manifest.json", &manifest("one"))]);
    let _one = KubeletVolume::new(&dir.path().join("one"), &[("app.env", &env_file(1))]);
    let mut two = KubeletVolume::new(&dir.path().join("two"), &[("app.env", &env_file(2))]);
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--watch-poll", "30s", "--manifest", "m/manifest.json"]).current_dir(dir.path());
    let mut run = Run::spawn(cmd, dir, false);
    assert_eq!(lines(&mut run, 1)[0], format!("start {}", value(1)));
    m.swap(&[("manifest.json", &manifest("two"))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start {}", value(2)));
    two.swap(&[("app.env", &env_file(3))]);
    assert_eq!(lines(&mut run, 3)[2], format!("start {}", value(3)));
    let done = stop(run);
    assert_no_sentinel(done.stderr.as_bytes(), "stderr");
}
