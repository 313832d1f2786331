//! `--wait DURATION` (docs/reference.md §9.2), rule by rule, through the binary: files
//! written late by another process (atomically, and into directories that
//! appear later), what is not waited for, the deadline, CPU while waiting, and
//! (in `signals`) SIGTERM/SIGINT during the wait (also as PID 1 of a fresh pid
//! namespace). Every file holds the sentinel; no message or termination log
//! may show it.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;

mod signals;

/// Runs `script` in `sh` in the background, after `delay`: another process
/// writing the files envshim waits for.
struct Writer(Child);

impl Writer {
    fn after(delay: Duration, script: &str) -> Writer {
        let script = format!("sleep {}; {script}", delay.as_secs_f64());
        Writer(Command::new("sh").args(["-ec", &script]).spawn().unwrap())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A shell command writing `content` to `path` atomically (temp file, then
/// rename), creating its directory.
fn atomic(path: &Path, content: &str) -> String {
    let p = path.display();
    format!("mkdir -p \"$(dirname '{p}')\"; printf '%s' '{content}' > '{p}.tmp'; mv '{p}.tmp' '{p}'; ")
}

const LATE: Duration = Duration::from_millis(400);

/// A run that waited: its stderr starts with the line saying what it waits
/// for (`envshim: waiting up to DURATION for FILE, ...`); the lines of the
/// wait are taken out, so that what follows checks the rest as usual.
trait Waited {
    fn waited(self) -> Out;
}

impl Waited for Out {
    #[track_caller]
    fn waited(mut self) -> Out {
        let text = String::from_utf8(self.stderr.clone()).unwrap();
        assert!(text.starts_with("envshim: waiting up to "), "no line saying what it waits for: {text}");
        assert_no_sentinel(text.as_bytes(), "stderr");
        let wait_line = |l: &&str| l.starts_with("envshim: waiting ") || l.starts_with("envshim: still waiting for ");
        let rest: String = text.split_inclusive('\n').filter(|l| !wait_line(l)).collect();
        self.stderr = rest.into_bytes();
        self
    }
}

// ---------------------------------------------------------------- what is waited for

/// fileKeyRef, fileRef, --env-file and NAME_FILE files, each written late by
/// another process (two of them in directories that do not exist yet).
#[test]
fn every_kind_of_required_file_is_waited_for() {
    let vol = Volume::new();
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "envFrom": [file_ref("v", "all.env", false, Some("ALL_"))],
        "env": [file_key_ref("KEY", "v", "not-yet/there/key.env", "K", false)],
    }));
    let cli = d.join("later/cli.env");
    let secret = d.join("run/secrets/db_password");
    let script = [
        atomic(&vol.join("all.env"), &format!("X={SENTINEL}\n")),
        atomic(&vol.join("not-yet/there/key.env"), &format!("K={SENTINEL}\n")),
        atomic(&cli, &format!("CLI={SENTINEL}\n")),
        atomic(&secret, &format!("{SENTINEL}\n")),
    ]
    .concat();
    let _w = Writer::after(LATE, &script);
    let out = envshim(["run", "--manifest", &m, "--env-file", cli.to_str().unwrap(), "--file-env", "DB_PASSWORD", "--wait", "15s", "--"])
        .env("DB_PASSWORD_FILE", &secret)
        .args(print_env())
        .run()
        .waited();
    out.ok();
    let env = out.env_map();
    for n in ["ALL_X", "KEY", "CLI", "DB_PASSWORD"] {
        assert_eq!(env.get(n).map(String::as_str), Some(SENTINEL), "{n} in {env:?}");
    }
    assert!(!env.contains_key("DB_PASSWORD_FILE"));
    assert!(out.elapsed >= LATE, "{:?}", out.elapsed);
}

/// The directory appears first, the file a moment later (written in place, not renamed).
#[test]
fn a_directory_that_appears_later_then_its_file() {
    let vol = Volume::new();
    let file = vol.join("a/b/c/late.env");
    let script = format!("mkdir -p '{}'; sleep 0.3; printf 'L={SENTINEL}\\n' > '{}'", file.parent().unwrap().display(), file.display());
    let _w = Writer::after(Duration::from_millis(200), &script);
    let out = envshim(["run", "--volume", &vol.volume_arg("v"), "--wait", "15", "--env-file", file.to_str().unwrap(), "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["L"], SENTINEL);
    assert!(out.elapsed >= Duration::from_millis(500), "{:?}", out.elapsed);
}

/// A file in a volume reached through an absolute symlink, which resolves
/// inside the volume (as `/`): the wait looks where the read will look.
#[test]
fn a_file_behind_a_symlink_inside_the_volume() {
    let vol = Volume::new();
    vol.symlink("current", "/releases/v2");
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "env": [file_key_ref("K", "v", "current/app.env", "K", false)],
    }));
    let _w = Writer::after(LATE, &atomic(&vol.join("releases/v2/app.env"), &format!("K={SENTINEL}\n")));
    let out = envshim(["run", "--manifest", &m, "--wait", "15s", "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["K"], SENTINEL);
}

/// The mountPath is a symlink that a writer flips atomically to a new
/// directory holding the file (git-sync and other "write a new directory,
/// then swap" writers): each look and the final read resolve it afresh.
#[test]
fn a_mount_path_symlink_flipped_to_a_new_directory() {
    let d = Volume::new();
    d.subdir("empty");
    d.symlink("current", "empty");
    let current = d.join("current");
    let m = d.manifest(&json!({
        "volumeMounts": [{"name": "v", "mountPath": current}],
        "env": [file_key_ref("K", "v", "app.env", "K", false)],
    }));
    let (new, link) = (d.join("rev-2"), d.join("current.tmp"));
    let script = format!(
        "{} ln -s rev-2 '{}'; mv -T '{}' '{}'",
        atomic(&new.join("app.env"), &format!("K={SENTINEL}\n")),
        link.display(),
        link.display(),
        current.display()
    );
    let _w = Writer::after(LATE, &script);
    let out = envshim(["run", "--manifest", &m, "--wait", "15s", "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["K"], SENTINEL);
    assert!(out.elapsed >= LATE, "{:?}", out.elapsed);
}

/// A filled directory renamed over the empty one that was the mountPath at
/// the start (`--volume`, and an `--env-file` beside it to show both paths).
#[test]
fn a_filled_directory_renamed_over_the_mount_path() {
    let d = Volume::new();
    let mount_path = d.subdir("vol");
    let m = d.manifest(&json!({
        "volumeMounts": [{"name": "v", "mountPath": mount_path}],
        "envFrom": [file_ref("v", "all.env", false, Some("ALL_"))],
    }));
    let staged = d.join("vol.new");
    let script = format!("mkdir '{s}'; printf 'X={SENTINEL}\\n' > '{s}/all.env'; mv -T '{s}' '{mp}'", s = staged.display(), mp = mount_path.display());
    let _w = Writer::after(LATE, &script);
    let out = envshim(["run", "--manifest", &m, "--wait", "15s", "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["ALL_X"], SENTINEL);
}

/// The Kubernetes atomic writer: `..data` swapped inside a mount that stays
/// where it is, keys as links through it.
#[test]
fn a_kubernetes_data_swap_inside_a_fixed_mount() {
    let vol = Volume::new();
    vol.subdir("..2026_01_01_00_00_00.1");
    vol.symlink("..data", "..2026_01_01_00_00_00.1");
    vol.symlink("app.env", "..data/app.env");
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "env": [file_key_ref("K", "v", "app.env", "K", false)],
    }));
    let (ts, tmp) = (vol.join("..2026_01_01_00_00_01.2"), vol.join("..data_tmp"));
    let script = format!(
        "{} ln -s ..2026_01_01_00_00_01.2 '{}'; mv -T '{}' '{}'",
        atomic(&ts.join("app.env"), &format!("K={SENTINEL}\n")),
        tmp.display(),
        tmp.display(),
        vol.join("..data").display()
    );
    let _w = Writer::after(LATE, &script);
    let out = envshim(["run", "--manifest", &m, "--wait", "15s", "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["K"], SENTINEL);
}

/// A file that appears may name another missing one (an env file setting
/// NAME_FILE): that one is waited for too, within the same deadline.
#[test]
fn a_file_that_appears_can_name_another_to_wait_for() {
    let d = Volume::new();
    let env_file = d.join("late.env");
    let secret = d.join("secret");
    let script = format!("{} sleep 0.3; {}", atomic(&env_file, &format!("S_FILE={}\n", secret.display())), atomic(&secret, SENTINEL));
    let _w = Writer::after(Duration::from_millis(200), &script);
    let out = envshim(["run", "--env-file", env_file.to_str().unwrap(), "--file-env", "S", "--wait", "15s", "--"]).args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env_map()["S"], SENTINEL);
}

#[test]
fn check_and_render_wait_too() {
    let d = Volume::new();
    let f = d.join("late.env");
    let _w = Writer::after(LATE, &atomic(&f, &format!("A={SENTINEL}\n")));
    let out = envshim(["check", "--env-file", f.to_str().unwrap(), "--wait", "15s"]).run().waited();
    out.ok();
    assert!(out.elapsed >= LATE);

    let g = d.join("later.env");
    let _w = Writer::after(LATE, &atomic(&g, &format!("B={SENTINEL}\n")));
    let out = envshim(["render", "--env-file", g.to_str().unwrap(), "--wait", "15s"]).run().waited();
    out.ok().no_sentinel();
    assert_eq!(out.stdout_str(), format!("# env files read with envshim's grammar\n# B from {}:1\nB=<set, {} bytes>\n", g.display(), SENTINEL.len()));
}

#[test]
fn envshim_wait_sets_it_and_is_not_passed_on() {
    let d = Volume::new();
    let f = d.join("late.env");
    let _w = Writer::after(LATE, &atomic(&f, "A=1\n"));
    let out = envshim(["run", "--env-file", f.to_str().unwrap(), "--"]).env("ENVSHIM_WAIT", "15s").args(print_env()).run().waited();
    out.ok();
    assert_eq!(out.env0(), [("A".to_string(), "1".to_string())]);
}

// ---------------------------------------------------------------- what is not waited for

/// Each of these fails (or succeeds) at once, with `--wait 60s`.
#[test]
fn optional_files_the_manifest_missing_keys_and_other_failures_are_not_waited_for() {
    let vol = Volume::new();
    vol.file("exists.env", format!("OTHER={SENTINEL}\n"));
    vol.file("bad.env", format!("{SENTINEL}\n"));
    vol.subdir("a-dir");
    let at_once = |rest: serde_json::Value| {
        let d = Volume::new();
        let mut m = json!({"volumeMounts": [mount("v", &vol)]});
        for (k, val) in rest.as_object().unwrap() {
            m[k] = val.clone();
        }
        let out = envshim(["run", "--manifest", &d.manifest(&m), "--wait", "60s", "--", "/bin/true"]).run();
        assert!(out.elapsed < Duration::from_secs(5), "waited {:?}: {}", out.elapsed, out.stderr_str());
        out.no_sentinel();
        assert!(!out.stderr_str().contains("after waiting"), "{}", out.stderr_str());
        out
    };
    at_once(json!({"env": [file_key_ref("A", "v", "missing.env", "A", true)], "envFrom": [file_ref("v", "missing2.env", true, None)]})).ok();
    at_once(json!({"env": [file_key_ref("A", "v", "exists.env", "MISSING_KEY", false)]})).fails_with(66, &["key \"MISSING_KEY\" not found"]);
    at_once(json!({"env": [file_key_ref("A", "v", "a-dir", "A", false)]})).fails_with(78, &["not a regular file"]);
    at_once(json!({"env": [file_key_ref("A", "v", "bad.env", "A", false)]})).fails_with(65, &["volume v, path bad.env, line 1"]);
    at_once(json!({"env": [file_key_ref("A", "v", "../up.env", "A", false)]})).fails_with(78, &["'..'"]);
    at_once(json!({"env": [file_key_ref("A", "nope", "x.env", "A", false)]})).fails_with(78, &["not in volumeMounts"]);

    let d = Volume::new();
    let out = envshim(["run", "--manifest", d.join("manifest.json").to_str().unwrap(), "--wait", "60s", "--", "/bin/true"]).run();
    out.fails_with(78, &["not found"]);
    assert!(out.elapsed < Duration::from_secs(5));
    // A mountPath that does not exist is a configuration error, not a missing file.
    let m = d.manifest(&json!({
        "volumeMounts": [{"name": "v", "mountPath": d.join("no-mount")}],
        "env": [file_key_ref("A", "v", "a.env", "A", false)],
    }));
    let out = envshim(["run", "--manifest", &m, "--wait", "60s", "--", "/bin/true"]).run();
    out.fails_with(78, &["mountPath"]);
    assert!(out.elapsed < Duration::from_secs(5));
}

/// The other problems are reported once the wait is over, with their own code.
#[test]
fn other_problems_are_reported_after_the_wait() {
    let d = Volume::new();
    let f = d.join("late.env");
    let m = d.manifest(&json!({"env": [{"name": "BAD=NAME", "value": SENTINEL}]}));
    let _w = Writer::after(LATE, &atomic(&f, "A=1\n"));
    let out = envshim(["check", "--manifest", &m, "--env-file", f.to_str().unwrap(), "--wait", "15s"]).run().waited();
    out.fails_with(78, &["env[0].name", "not a valid variable name"]);
    out.no_sentinel();
    assert!(out.elapsed >= LATE, "{:?}", out.elapsed);
}

#[test]
fn without_wait_a_missing_file_fails_at_once() {
    let d = Volume::new();
    let out = envshim(["check", "--env-file", d.join("late.env").to_str().unwrap()]).run();
    let line = out.fails_with(66, &["late.env", "not found"]);
    assert!(!line.contains("after waiting"));
}

// ---------------------------------------------------------------- the deadline

#[test]
fn when_time_runs_out_the_usual_failure_says_after_waiting() {
    let vol = Volume::new();
    vol.file("present.env", format!("P={SENTINEL}\n"));
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "env": [file_key_ref("P", "v", "present.env", "P", false), file_key_ref("A", "v", "absent.env", "A", false)],
    }));
    let log = d.join("termination-log");
    let out = envshim(["run", "--manifest", &m, "--wait", "700ms", "--termination-log", log.to_str().unwrap(), "--", "/bin/true"]).run().waited();
    let line = out.fails_with(66, &["manifest: env[1] (A): file v/absent.env not found after waiting 700ms"]);
    out.no_sentinel();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("{line}\n"));
    assert!(out.elapsed >= Duration::from_millis(700) && out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);

    // A bare number is seconds; NAME_FILE and --env-file files say it too.
    let out =
        envshim(["check", "--wait", "1", "--file-env", "S", "--env-file", d.join("nope.env").to_str().unwrap()]).env("S_FILE", d.join("secret")).run().waited();
    let lines = out.fails(66);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].ends_with("nope.env: file not found after waiting 1s"), "{lines:?}");
    assert!(lines[1].contains("S_FILE") && lines[1].ends_with("not found after waiting 1s"), "{lines:?}");
    assert!(out.elapsed >= Duration::from_secs(1) && out.elapsed < Duration::from_secs(5), "{:?}", out.elapsed);
}

#[test]
fn bad_durations_are_usage_errors() {
    for bad in ["", "x", "1.5s", "5x", "-1", "1 s", "99999999999"] {
        let out = envshim(["check", &format!("--wait={bad}")]).run();
        out.fails_with(2, &["--wait"]);
        let out = envshim(["check"]).env("ENVSHIM_WAIT", bad).run();
        out.fails_with(2, &["ENVSHIM_WAIT"]);
    }
    use std::os::unix::ffi::OsStrExt;
    let out = envshim(["check"]).env("ENVSHIM_WAIT", std::ffi::OsStr::from_bytes(b"1\xffs")).run();
    out.fails_with(2, &["ENVSHIM_WAIT: not UTF-8"]);
    for good in ["0", "500ms", "2s", "1m", "1h"] {
        envshim(["check", "--wait", good]).run().ok();
    }
}

/// Nothing changes for 3 s: envshim sleeps (a busy wait would use ~3 s of CPU).
#[test]
fn no_cpu_while_nothing_changes() {
    let d = Volume::new();
    let start = Instant::now();
    // Reaped by wait4 below, which also gives its CPU time.
    #[allow(clippy::zombie_processes)]
    let child =
        command(false).args(["check", "--wait", "3s", "--env-file", d.join("never.env").to_str().unwrap()]).env_clear().stderr(Stdio::null()).spawn().unwrap();
    let (status, usage) = wait4(child.id() as i32);
    let elapsed = start.elapsed();
    assert_eq!(libc::WEXITSTATUS(status), 66);
    let cpu = cpu_time(&usage);
    assert!(cpu < Duration::from_millis(150), "CPU {cpu:?} during a 3 s wait");
    assert!(elapsed >= Duration::from_secs(3) && elapsed < Duration::from_secs(6), "{elapsed:?}");
    eprintln!("a 3 s wait: {elapsed:?} wall, {cpu:?} CPU");
}

// Test set-up, not in nix: wait4 (nix has no rusage).
#[allow(unsafe_code)]
fn wait4(pid: i32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: zeroed rusage is valid storage; the kernel fills it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are writable; the child is ours.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    (status, usage)
}

fn cpu_time(u: &libc::rusage) -> Duration {
    let t = |tv: libc::timeval| Duration::from_secs(tv.tv_sec as u64) + Duration::from_micros(tv.tv_usec as u64);
    t(u.ru_utime) + t(u.ru_stime)
}
