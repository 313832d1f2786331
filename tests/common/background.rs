//! Runs a test starts in the background and signals from outside: a plain
//! command running the binary, as PID 1 of a new pid namespace when one can be
//! made.

use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::{am_root, bin, TEST_BIN_VAR};

/// A command running the binary (in the test's environment, less
/// [`TEST_BIN_VAR`]), as PID 1 of a new pid namespace when
/// `in_pid_namespace` (`unshare --pid --fork --mount-proc`; see
/// [`pid_namespaces`]), for the runs a test starts in the background and
/// signals from outside. `--kill-child`: if the test gives up on unshare,
/// envshim (and with it the whole namespace) is killed too.
pub fn command(in_pid_namespace: bool) -> Command {
    let mut c = if in_pid_namespace {
        let mut c = Command::new("unshare");
        c.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()]);
        c
    } else {
        Command::new(bin())
    };
    c.env_remove(TEST_BIN_VAR);
    c
}

/// True when pid namespaces can be made here (root and unshare); says why
/// not, once, otherwise (the tests that need them then fail).
pub fn pid_namespaces() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if !am_root() {
            eprintln!("not root: no pid namespace can be made");
            return false;
        }
        let ok = Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("unshare --pid --fork --mount-proc fails here");
        }
        ok
    })
}
