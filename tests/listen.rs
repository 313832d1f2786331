//! `--listen` and `--on-change handover` (docs/reference.md §13.2), run for
//! real: the sockets each program gets (descriptors, `LISTEN_*`, nothing
//! else inherited), bad addresses and binds, a unix socket, and each path
//! of a handover. Programs are `sh` scripts that log to `$D/log`; a program
//! says it is ready with python3 (`READY=1` on `NOTIFY_SOCKET`). Every
//! value carries the sentinel, which stderr never shows.

use std::fs;
use std::io::Read;
use std::os::unix::net::{UnixDatagram, UnixStream};
use std::os::unix::process::CommandExt;
use std::thread::sleep;
use std::time::Duration;

use crate::common::{assert_no_sentinel, command, envshim, Done, KubeletVolume, Run, SENTINEL};

/// Long enough for several quiet periods and reads to have come and gone.
const QUIET: Duration = Duration::from_millis(600);

/// Sends `READY=1` to `$NOTIFY_SOCKET` (`@` an abstract name), from a child of the program.
const NOTIFY: &str =
    r#"python3 -c 'import os,socket;a=os.environ["NOTIFY_SOCKET"];socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM).sendto(b"READY=1",chr(0)+a[1:])'"#;

/// A program that logs its start, its readiness and its stop with `$A`;
/// `$MODE` says how it becomes ready: `die` (exits 3 first), `never`,
/// `never-slow-stop` (never, and takes 1 s to stop), `wait` (once `$D/go`
/// exists), else at once. It exits 7 on its own once `$D/quit-PID` exists.
fn program() -> String {
    format!(
        r#"trap 'if [ "$MODE" = never-slow-stop ]; then sleep 1; fi; echo "stop $A" >> "$D/log"; exit 0' TERM
echo "start $A $$ $LISTEN_PID" >> "$D/log"; echo "$NOTIFY_SOCKET" > "$D/notify"
case "$MODE" in
  die) exit 3 ;;
  never*) ;;
  wait) while [ ! -e "$D/go" ]; do sleep 0.02; done; echo "ready $A" >> "$D/log"; {NOTIFY} ;;
  *) echo "ready $A" >> "$D/log"; {NOTIFY} ;;
esac
while [ ! -e "$D/quit-$$" ]; do sleep 0.02; done; echo "quit $A" >> "$D/log"; exit 7"#
    )
}

fn env_file(n: u32, mode: &str) -> String {
    format!("A={SENTINEL}-{n}\nMODE={mode}\n")
}

/// `envshim run --watch --watch-settle 50ms ARGS --env-file config/app.env -- sh -c SCRIPT`.
fn watch(args: &[&str], first: &str, script: &str) -> (Run, KubeletVolume) {
    let dir = tempfile::tempdir().unwrap();
    let vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", first)]);
    let mut cmd = command(false);
    cmd.arg("run")
        .args(["--watch", "--watch-settle", "50ms", "--env-file", "config/app.env"])
        .args(args)
        .args(["--no-expand-args", "--", "sh", "-c", script])
        .current_dir(dir.path());
    (Run::spawn(cmd, dir, false), vol)
}

/// The lines of `$D/log` without the sentinel's prefix (`start 1 PID PID`), once there are `n`.
fn lines(run: &mut Run, n: usize) -> Vec<String> {
    run.wait_for("log", |t| t.lines().count() >= n);
    log(run)
}

fn log(run: &Run) -> Vec<String> {
    run.read("log").lines().map(|l| l.replace(&format!("{SENTINEL}-"), "")).collect()
}

/// `start N PID LISTEN_PID` lines stripped to `start N`, asserting the two pids are the same.
fn starts_checked(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
            ["start", n, pid, listen_pid] => {
                // Empty without --listen.
                assert!(listen_pid.is_empty() || pid == listen_pid, "LISTEN_PID is not the program's pid: {l}");
                format!("start {n}")
            }
            _ => l.clone(),
        })
        .collect()
}

fn stop(run: Run) -> Done {
    run.signal(libc::SIGTERM);
    let done = run.finish();
    assert_no_sentinel(done.stderr.as_bytes(), "stderr");
    done
}

/// What the program's shell has open: `N target` for each descriptor,
/// listed by a child (a redirection of the shell's own would open one more).
const FDS: &str = r#"echo "start $A $$ $LISTEN_PID $LISTEN_FDS $LISTEN_FDNAMES" >> "$D/log"; sh -c 'for f in /proc/$0/fd/*; do echo "${f##*/} $(readlink $f)"; done > "$1"' $$ "$D/fds-$$"; echo "fds $$" >> "$D/log"
trap 'exit 0' TERM; while :; do sleep 0.02; done"#;

#[test]
fn every_restart_gets_the_same_sockets_as_fd_3_and_4_its_own_listen_pid_and_nothing_else() {
    // Descriptor 7 inherited by envshim (not close-on-exec): no program gets it.
    let dir = tempfile::tempdir().unwrap();
    let mut vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &env_file(1, "ok"))]);
    let mut cmd = command(false);
    cmd.arg("run")
        .args(["--watch", "--watch-settle", "50ms", "--env-file", "config/app.env", "--listen", "tcp:127.0.0.1:0,unix:s.sock"])
        .args(["--no-expand-args", "--", "sh", "-c", FDS])
        .current_dir(dir.path());
    // SAFETY: dup2 only, between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| if libc::dup2(2, 7) == 7 { Ok(()) } else { Err(std::io::Error::last_os_error()) });
    }
    let mut run = Run::spawn(cmd, dir, false);
    let mut sockets = Vec::new();
    for n in 1..=3u32 {
        if n > 1 {
            vol.swap(&[("app.env", &env_file(n, "ok"))]);
        }
        let got = lines(&mut run, 2 * n as usize);
        let start: Vec<&str> = got[2 * n as usize - 2].split(' ').collect();
        assert_eq!(start[1..], [&n.to_string(), start[2], start[2], "2", "tcp-0:unix-s.sock"][..], "{got:?}");
        let fds = run.read(&format!("fds-{}", start[2]));
        let fds: Vec<(&str, &str)> = fds.lines().map(|l| l.split_once(' ').unwrap()).collect();
        let numbers: Vec<&str> = fds.iter().map(|f| f.0).collect();
        assert_eq!(numbers, ["0", "1", "2", "3", "4"], "only stdio and the sockets: {fds:?}");
        assert!(fds[3].1.starts_with("socket:") && fds[4].1.starts_with("socket:"), "{fds:?}");
        sockets.push((fds[3].1.to_string(), fds[4].1.to_string()));
    }
    assert!(sockets.windows(2).all(|w| w[0] == w[1]), "the same sockets across restarts: {sockets:?}");
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

#[test]
fn without_init_the_program_exec_d_directly_gets_the_sockets_and_its_pid_is_listen_pid() {
    let dir = tempfile::tempdir().unwrap();
    let script = r#"echo "$$ $LISTEN_PID $LISTEN_FDS $LISTEN_FDNAMES"; ls /proc/$$/fd"#;
    let out = envshim(["run", "--listen", "unix:s.sock", "--no-expand-args", "--", "sh", "-c", script]).cwd(dir.path()).run();
    out.code(0);
    let stdout = out.stdout_str();
    let lines: Vec<&str> = stdout.lines().collect();
    let ids: Vec<&str> = lines[0].split(' ').collect();
    assert_eq!((ids[0] == ids[1], ids[2], ids[3]), (true, "1", "unix-s.sock"), "{stdout}");
    assert_eq!(lines[1..], ["0", "1", "2", "3"], "{stdout}");
}

#[test]
fn a_program_accepts_on_the_unix_socket_and_an_old_socket_file_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // A socket left by an earlier run.
    let old = std::os::unix::net::UnixListener::bind(dir.path().join("s.sock")).unwrap();
    drop(old);
    let server = r#"import socket;s=socket.socket(fileno=3);c,_=s.accept();c.sendall(b"hello")"#;
    let mut cmd = command(false);
    cmd.args(["run", "--listen", "unix:s.sock", "--", "python3", "-c", server]).current_dir(dir.path());
    let mut child = cmd.spawn().unwrap();
    let mut stream = None;
    for _ in 0..3000 {
        match UnixStream::connect(dir.path().join("s.sock")) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(_) => sleep(Duration::from_millis(10)),
        }
    }
    let mut got = String::new();
    stream.expect("connect").read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello");
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_bad_address_is_a_usage_error_naming_listen_and_a_failed_bind_runs_nothing() {
    for bad in [format!("tcp:{SENTINEL}:80"), "tcp::99999".into(), format!("udp::{SENTINEL}"), "unix:".into(), SENTINEL.into()] {
        let out = envshim(["run", "--listen", &bad, "--", "true"]).run();
        out.no_sentinel().fails_with(2, &["--listen"]);
    }
    let out = envshim(["run", "--", "true"]).env("ENVSHIM_LISTEN", format!("tcp::1,{SENTINEL}")).run();
    out.no_sentinel().fails_with(2, &["ENVSHIM_LISTEN"]);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let program = ["sh", "-c", "touch \"$0\"", marker.to_str().unwrap()];
    // In use: the address and the reason, exit 71, no program.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = format!("tcp:127.0.0.1:{}", taken.local_addr().unwrap().port());
    for init in [&[][..], &["--init"], &["--watch"]] {
        let out = envshim(["run", "--listen", "unix:ok.sock", "--listen", &addr]).args(init).arg("--").args(program).cwd(dir.path()).run();
        out.fails_with(71, &[&format!("--listen {addr}: cannot listen"), "in use"]);
    }
    // A file that is not a socket is never replaced.
    fs::write(dir.path().join("data"), SENTINEL).unwrap();
    envshim(["run", "--listen", "unix:data", "--"])
        .args(program)
        .cwd(dir.path())
        .run()
        .fails_with(71, &["--listen unix:data: cannot listen"])
        .contains("exists");
    assert_eq!(fs::read_to_string(dir.path().join("data")).unwrap(), SENTINEL);
    assert!(!marker.exists(), "a program ran");
}

#[test]
fn a_handover_starts_the_new_program_and_stops_the_old_one_only_once_the_new_one_is_ready() {
    let (mut run, mut vol) = watch(&["--on-change", "handover", "--listen", "tcp:127.0.0.1:0"], &env_file(1, "ok"), &program());
    lines(&mut run, 2);
    vol.swap(&[("app.env", &env_file(2, "wait"))]);
    let got = lines(&mut run, 3);
    sleep(QUIET);
    assert_eq!(starts_checked(&log(&run)), ["start 1", "ready 1", "start 2"], "the old one serves until the new one is ready: {got:?}");
    fs::write(run.path("go"), "").unwrap();
    let got = starts_checked(&lines(&mut run, 5));
    assert_eq!(got, ["start 1", "ready 1", "start 2", "ready 2", "stop 1"]);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stderr.matches("watch: changed A, MODE: starting the new program beside the old one").count(), 1, "{}", done.stderr);
}

#[test]
fn a_new_program_that_dies_before_it_is_ready_leaves_the_old_one_serving_and_a_later_change_applies() {
    let (mut run, mut vol) = watch(&["--on-change", "handover"], &env_file(1, "ok"), &program());
    lines(&mut run, 2);
    vol.swap(&[("app.env", &env_file(2, "die"))]);
    run.wait_for("stderr", |t| t.contains("ended before it was ready"));
    sleep(QUIET);
    assert_eq!(starts_checked(&log(&run)), ["start 1", "ready 1", "start 2"], "the old one keeps serving, the same change not tried again");
    vol.swap(&[("app.env", &env_file(3, "ok"))]);
    assert_eq!(starts_checked(&lines(&mut run, 6))[3..], ["start 3", "ready 3", "stop 1"]);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let line = "envshim: watch: a change is not applied, the old program keeps serving: the new one ended before it was ready (exit 3)";
    assert_eq!(done.stderr.matches(line).count(), 1, "{}", done.stderr);
}

#[test]
fn a_new_program_never_ready_is_stopped_at_the_limit_and_ready_1_from_another_process_is_ignored() {
    let (mut run, mut vol) = watch(&["--on-change", "handover", "--ready-timeout", "5s", "-v"], &env_file(1, "ok"), &program());
    lines(&mut run, 2);
    vol.swap(&[("app.env", &env_file(2, "never"))]);
    lines(&mut run, 3);
    // The new program's NOTIFY_SOCKET, said READY=1 to by this test: not the new program.
    let notify = run.wait_for("notify", |t| t.starts_with('@') && t.ends_with('\n'));
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(&notify.trim_end().as_bytes()[1..]).unwrap();
    UnixDatagram::unbound().unwrap().send_to_addr(b"READY=1", &addr).unwrap();
    // Received and ignored (it names this test's pid), before the limit.
    let ignored = format!("watch: READY=1 from pid {} ignored: not the new program nor its process group", std::process::id());
    let stderr = run.wait_for("stderr", |t| t.contains(&ignored) || t.contains("was not ready within"));
    assert!(stderr.contains(&ignored), "{stderr}");
    run.wait_for("stderr", |t| t.contains("was not ready within 5s"));
    let got = starts_checked(&lines(&mut run, 4));
    assert_eq!(got, ["start 1", "ready 1", "start 2", "stop 2"]);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.stderr.matches("the old program keeps serving: the new one was not ready within 5s").count(), 1, "{}", done.stderr);
}

#[test]
fn ready_delay_hands_over_to_a_program_that_never_notifies() {
    let (mut run, mut vol) = watch(&["--on-change", "handover", "--ready-delay", "200ms"], &env_file(1, "never"), &program());
    lines(&mut run, 1);
    vol.swap(&[("app.env", &env_file(2, "never"))]);
    let mut got = starts_checked(&lines(&mut run, 3));
    // The new one's first line and the old one's stop race (ready by the clock, not by a line).
    got[1..].sort();
    assert_eq!(got, ["start 1", "start 2", "stop 1"]);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

#[test]
fn sigterm_during_a_handover_stops_both_the_new_one_first() {
    // The new one takes 1 s to stop, the old one stops at once: the old one's
    // line comes first unless it has the signal only once the new one is gone.
    let (mut run, mut vol) = watch(&["--on-change", "handover"], &env_file(1, "ok"), &program());
    lines(&mut run, 2);
    vol.swap(&[("app.env", &env_file(2, "never-slow-stop"))]);
    lines(&mut run, 3);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let got: Vec<String> = starts_checked(&done.read("log").lines().map(|l| l.replace(&format!("{SENTINEL}-"), "")).collect::<Vec<_>>());
    assert_eq!(got, ["start 1", "ready 1", "start 2", "stop 2", "stop 1"]);
}

#[test]
fn the_old_program_ending_on_its_own_during_a_handover_stops_the_new_one_and_envshim_exits_with_its_status() {
    let (mut run, mut vol) = watch(&["--on-change", "handover"], &env_file(1, "ok"), &program());
    let first = lines(&mut run, 2);
    let pid = first[0].split(' ').nth(2).unwrap().to_string();
    vol.swap(&[("app.env", &env_file(2, "never"))]);
    lines(&mut run, 3);
    fs::write(run.path(&format!("quit-{pid}")), "").unwrap();
    let done = run.finish();
    assert_no_sentinel(done.stderr.as_bytes(), "stderr");
    assert_eq!(done.code(), Some(7), "the old one's status: {}", done.stderr);
    let got: Vec<String> = starts_checked(&done.read("log").lines().map(|l| l.replace(&format!("{SENTINEL}-"), "")).collect::<Vec<_>>());
    assert_eq!(got, ["start 1", "ready 1", "start 2", "quit 1", "stop 2"], "the new one, not ready, is stopped");
    let line = "envshim: watch: the program ended (exit 7) during a handover: envshim exits with its status once the other one is gone";
    assert_eq!(done.stderr.matches(line).count(), 1, "{}", done.stderr);
}

#[test]
fn a_change_during_a_handover_is_decided_after_it_never_a_third_program() {
    let (mut run, mut vol) = watch(&["--on-change", "handover"], &env_file(1, "ok"), &program());
    lines(&mut run, 2);
    vol.swap(&[("app.env", &env_file(2, "wait"))]);
    lines(&mut run, 3);
    vol.swap(&[("app.env", &env_file(3, "ok"))]);
    sleep(QUIET);
    assert_eq!(log(&run).len(), 3, "no third program while two run: {:?}", log(&run));
    fs::write(run.path("go"), "").unwrap();
    let got = starts_checked(&lines(&mut run, 8));
    assert_eq!(got, ["start 1", "ready 1", "start 2", "ready 2", "stop 1", "start 3", "ready 3", "stop 2"]);
    let done = stop(run);
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}
