//! A program that leaves its process group (`setpgid` into another group of
//! the session, as a program may) and ignores the restart signal: the
//! restart's `SIGKILL` reaches it by its pid and what is left of its group,
//! and no other group is signalled, envshim's own least of all. The programs
//! are python3 (`sh` cannot call `setpgid`); envshim runs in a process group
//! of its own, so that nothing of the test's is ever in reach.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use super::{lines, stop, value, SETTLE};
use crate::common::{command, KubeletVolume, Run, SENTINEL};

/// Version 1 ignores SIGTERM, starts a worker that stays in its group and
/// ignores it too, then moves into the group `$GROUP` names (envshim's when
/// unset) and logs its pid; a later version stops on SIGTERM. Each ends on
/// its own after 20 s, so a broken envshim leaves nothing behind for long.
const PROGRAM: &str = r#"
import os, signal, sys, time
d, a = os.environ["D"], os.environ["A"]
def write(name, text, mode="a"):
    with open(os.path.join(d, name), mode) as f:
        f.write(text)
if a.endswith("-1"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    worker = os.fork()
    if worker == 0:
        time.sleep(20)
        os._exit(0)
    os.setpgid(0, int(os.environ.get("GROUP") or os.getpgid(os.getppid())))
    write("pids", "%d %d" % (os.getpid(), worker), "w")
else:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
write("log", "start %s\n" % a)
time.sleep(20)
"#;

/// `envshim run --watch --restart-timeout 300ms --env-file config/app.env --
/// python3 prog.py`, in a process group of its own (`$GROUP`: `group`).
fn start(group: Option<i32>) -> (Run, KubeletVolume) {
    start_with(PROGRAM, &["--restart-timeout", "300ms"], group)
}

/// As [`start`], `program` with `args`.
fn start_with(program: &str, args: &[&str], group: Option<i32>) -> (Run, KubeletVolume) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("prog.py"), program).unwrap();
    let vol = KubeletVolume::new(&dir.path().join("config"), &[("app.env", &format!("A={}\n", value(1)))]);
    let mut cmd = command(false);
    cmd.args(["run", "--watch", "--watch-settle", SETTLE, "--env-file", "config/app.env"])
        .args(args)
        .args(["--no-expand-args", "--", "python3", "prog.py"])
        .env("GROUP", group.map(|g| g.to_string()).unwrap_or_default())
        .current_dir(dir.path())
        .process_group(0);
    (Run::spawn(cmd, dir, false), vol)
}

/// `sleep 30` in the process group `pgid` (0: one of its own).
fn sleeper(pgid: i32) -> Child {
    Command::new("sleep").arg("30").process_group(pgid).spawn().unwrap()
}

fn gone(pid: i32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}

/// The version 1 program moved (its log line), a change applied: the restart
/// completes (within `Run`'s deadline), the moved program and its worker are
/// gone, `bystander` was not signalled, and it was said once.
fn restart_completes(mut run: Run, mut vol: KubeletVolume, mut bystander: Child) {
    assert_eq!(lines(&mut run, 1), [format!("start {}", value(1))]);
    vol.swap(&[("app.env", &format!("A={}\n", value(2)))]);
    assert_eq!(lines(&mut run, 2)[1], format!("start {}", value(2)), "the restart completes");
    let pids: Vec<i32> = run.read("pids").split(' ').map(|p| p.parse().unwrap()).collect();
    assert!(gone(pids[0]) && gone(pids[1]), "the moved program and the worker it left in its group are killed");
    assert!(bystander.try_wait().unwrap().is_none(), "a process of another group was signalled");
    assert!(run.still_running());
    let done = stop(run);
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(done.read("log").lines().count(), 2, "{}", done.read("log"));
    assert_eq!(done.stderr.matches("did not stop within 300ms: SIGKILL to it and its process group").count(), 1, "{}", done.stderr);
    assert_eq!(done.stderr.matches("left its process group").count(), 1, "{}", done.stderr);
    assert!(!done.stderr.contains(SENTINEL), "{}", done.stderr);
}

#[test]
fn a_program_that_moved_into_envshims_group_is_killed_at_the_timeout_and_envshims_group_is_spared() {
    let (run, vol) = start(None);
    // A process beside envshim in its group: a SIGKILL to that group would end it.
    let bystander = sleeper(run.child.id() as i32);
    restart_completes(run, vol, bystander);
}

#[test]
fn a_program_that_moved_into_another_group_is_killed_at_the_timeout_and_that_group_is_spared() {
    let bystander = sleeper(0);
    let (run, vol) = start(Some(bystander.id() as i32));
    restart_completes(run, vol, bystander);
}

/// Version 1 moves into envshim's group; every version logs its start, and
/// its stop on SIGTERM.
const STOPS: &str = r#"
import os, signal, sys, time
d, a = os.environ["D"], os.environ["A"]
def write(text):
    with open(os.path.join(d, "log"), "a") as f:
        f.write(text)
def stopped(*_):
    write("stop %s\n" % a)
    sys.exit(0)
signal.signal(signal.SIGTERM, stopped)
if a.endswith("-1"):
    os.setpgid(0, os.getpgid(os.getppid()))
write("start %s\n" % a)
time.sleep(20)
"#;

/// A handover with `--init-group`: the old program, out of its group, has
/// the stop signal by its pid (it stops on it, long before the SIGKILL's
/// timeout), and envshim's group (where it went) is not signalled.
#[test]
fn a_handovers_old_program_out_of_its_group_has_the_stop_signal_and_envshims_group_is_spared() {
    let (mut run, mut vol) = start_with(STOPS, &["--on-change", "handover", "--ready-delay", "1s", "--init-group", "--restart-timeout", "60s"], None);
    let mut bystander = sleeper(run.child.id() as i32);
    assert_eq!(lines(&mut run, 1), [format!("start {}", value(1))]);
    vol.swap(&[("app.env", &format!("A={}\n", value(2)))]);
    assert_eq!(lines(&mut run, 3)[1..], [format!("start {}", value(2)), format!("stop {}", value(1))], "the old one stops on the signal");
    assert!(bystander.try_wait().unwrap().is_none(), "envshim's group was signalled");
    let done = stop(run);
    let _ = bystander.kill();
    let _ = bystander.wait();
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert!(!done.stderr.contains("SIGKILL"), "{}", done.stderr);
    assert_eq!(done.stderr.matches("left its process group").count(), 1, "{}", done.stderr);
    assert!(!done.stderr.contains(SENTINEL), "{}", done.stderr);
}
