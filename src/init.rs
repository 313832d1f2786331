//! `--init` (SPEC §8): stay as PID 1, run the program as a child, forward
//! signals and reap zombies.

use crate::error::{code, Error};
use crate::exec::Exec;

/// Runs `target` as a child and supervises it; returns envshim's exit code.
pub fn supervise(target: &Exec, _group: bool, fail: impl Fn(Error) -> i32) -> i32 {
    let _ = target;
    fail(Error::usage("--init is not available in this build"))
}

#[allow(dead_code)]
const _: i32 = code::OK;
