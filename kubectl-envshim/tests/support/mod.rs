//! Helpers of the converter's tests: the generated workloads, the harness
//! that converts and runs them, a model of the kubelet, and the quoted YAML
//! reader.

pub mod generate;
pub mod harness;
pub mod kubelet;
pub mod quoted_yaml;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `command` with `stdin` written to it (from a thread: it may not read
/// it all before it writes) and its stdout and stderr collected.
pub fn piped(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {:?}: {e} (tests/e2e/deps.sh installs what the tests run)", command.get_program()));
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}
