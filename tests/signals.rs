//! envshim must hand the program the signal dispositions it was given:
//! Rust's runtime would ignore SIGPIPE, and that would survive execve.

use std::process::Command;

use crate::common::{bin, command, TEST_BIN_VAR};

fn sig_ign(shell: &str) -> u64 {
    let out = Command::new("/bin/sh").arg("-c").arg(shell).env("E", bin()).env_remove(TEST_BIN_VAR).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text.trim().strip_prefix("SigIgn:").unwrap().trim();
    u64::from_str_radix(hex, 16).unwrap()
}

const SIGPIPE_BIT: u64 = 1 << (libc::SIGPIPE - 1);

#[test]
fn sigpipe_is_not_ignored_in_the_program() {
    let ign = sig_ign(r#"trap - PIPE; exec "$E" run -- /bin/grep SigIgn /proc/self/status"#);
    assert_eq!(ign & SIGPIPE_BIT, 0, "SigIgn {ign:x}");
}

#[test]
fn an_inherited_ignored_sigpipe_is_kept() {
    let ign = sig_ign(r#"trap '' PIPE; exec "$E" run -- /bin/grep SigIgn /proc/self/status"#);
    assert_ne!(ign & SIGPIPE_BIT, 0, "SigIgn {ign:x}");
}

/// The signals envshim catches during its start-up (TERM, INT, HUP, QUIT,
/// and PIPE) reach the program at their default: `execve` resets a caught
/// signal, and none of them is left ignored or caught.
#[test]
fn the_signals_envshim_catches_reach_the_program_at_their_default() {
    let caught = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT, libc::SIGPIPE];
    let bits: u64 = caught.iter().map(|s| 1u64 << (s - 1)).sum();
    let shell = r#"trap - TERM INT HUP QUIT PIPE; exec "$E" run -- /bin/grep -E '^Sig(Ign|Cgt)' /proc/self/status"#;
    let out = Command::new("/bin/sh").arg("-c").arg(shell).env("E", bin()).env_remove(TEST_BIN_VAR).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let (field, hex) = line.split_once(':').unwrap();
        let mask = u64::from_str_radix(hex.trim(), 16).unwrap();
        assert_eq!(mask & bits, 0, "{field} {mask:x}");
    }
}

#[test]
fn an_inherited_ignored_sigterm_is_kept() {
    let ign = sig_ign(r#"trap '' TERM; exec "$E" run -- /bin/grep SigIgn /proc/self/status"#);
    assert_ne!(ign & (1 << (libc::SIGTERM - 1)), 0, "SigIgn {ign:x}");
}

// ------------------------------------------------ envshim's own output (SIGPIPE)

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Output, Stdio};

/// The write end of a pipe whose read end is already closed.
fn closed_pipe() -> Stdio {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    drop(read);
    Stdio::from(write)
}

/// envshim with `args`, SIGPIPE at its default (as a container starts it).
// Test set-up only: pre_exec.
#[allow(unsafe_code)]
fn envshim(args: &[&str], stdout: Stdio, stderr: Stdio) -> Output {
    let mut cmd = command(false);
    cmd.args(args).env_clear().stdin(Stdio::null()).stdout(stdout).stderr(stderr);
    // SAFETY: signal() is async-signal-safe; nothing else runs in the hook.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            Ok(())
        })
    };
    cmd.output().unwrap()
}

/// `render | head -c1`: a reader that stops early is not a failure (0), and
/// envshim is not killed by SIGPIPE (it was: 141 in a shell).
#[test]
fn render_into_a_closed_pipe_exits_0() {
    let out = envshim(&["render", "--env", "A=1"], closed_pipe(), Stdio::piped());
    assert_eq!((out.status.code(), out.status.signal()), (Some(0), None), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stderr, b"");
}

/// A failing run whose stderr is a closed pipe: its own exit code (78, not
/// death by SIGPIPE), and the termination log written all the same.
#[test]
fn a_failure_with_stderr_a_closed_pipe_keeps_its_code_and_writes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let args = ["run", "--manifest", "/nonexistent/manifest.json", "--termination-log", log.to_str().unwrap(), "--", "true"];
    let out = envshim(&args, Stdio::null(), closed_pipe());
    assert_eq!((out.status.code(), out.status.signal()), (Some(78), None));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "envshim: manifest /nonexistent/manifest.json not found\n");
}

/// `render > /dev/full`: 74 (EX_IOERR), a documented code, with one line.
#[test]
fn render_that_cannot_write_exits_74() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = envshim(&["render", "--env", "A=1"], Stdio::from(full), Stdio::piped());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert_eq!(stderr, "envshim: render: cannot write to stdout (No space left on device)\n");
}

/// The same with `--init`, whose child resets every signal to its default
/// before `execve`: an exec failure there keeps its code (126) and its log,
/// not a death by SIGPIPE (141).
#[test]
fn an_init_exec_failure_with_stderr_a_closed_pipe_keeps_126() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("termination-log");
    let program = dir.path().join("not-a-program");
    std::fs::write(&program, b"\x7fELF garbage").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let args = ["run", "--init", "--termination-log", log.to_str().unwrap(), "--", program.to_str().unwrap()];
    let out = envshim(&args, Stdio::null(), closed_pipe());
    assert_eq!((out.status.code(), out.status.signal()), (Some(126), None));
    assert!(std::fs::read_to_string(&log).unwrap().starts_with("envshim: program "));
}
