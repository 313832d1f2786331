//! Helpers of the converter's tests: the generated workloads, the harness
//! that converts and runs them, a model of the kubelet, and the quoted YAML
//! reader.

pub mod generate;
pub mod harness;
pub mod kubelet;
pub mod quoted_yaml;

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The envshim image the converter gets through KUBECTL_ENVSHIM_SHIM_IMAGE in
/// every run (a plain build has none of its own), unless a test sets or removes it.
pub const SHIM_IMAGE: &str = "registry.example.com/envshim@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// Runs `command` with `stdin` written to it (from a thread: it may not read
/// it all before it writes) and its stdout and stderr collected.
pub fn piped(command: &mut Command, stdin: &str) -> Output {
    if !command.get_envs().any(|(k, _)| k == "KUBECTL_ENVSHIM_SHIM_IMAGE") {
        command.env("KUBECTL_ENVSHIM_SHIM_IMAGE", SHIM_IMAGE);
    }
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
