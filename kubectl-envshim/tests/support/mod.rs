//! Helpers of the converter's tests: the generated workloads, the harness
//! that converts and runs them, a model of the kubelet, and the quoted YAML
//! reader.

pub mod edits;
pub mod generate;
pub mod harness;
pub mod kubelet;
pub mod quoted_yaml;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The converter, as cargo built it.
pub const BIN: &str = env!("CARGO_BIN_EXE_kubectl-envshim");

/// A secret-looking value: no message and no output of a failed run may show it.
pub const SENTINEL: &str = "SENTINEL-s3cr3t-VALUE";

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

/// A finished run: its exit code, stdout and stderr as text, and how long it took.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

/// Runs `command` with `stdin`, as [`piped`] does, and times it.
pub fn run(command: &mut Command, stdin: &str) -> Out {
    let start = Instant::now();
    let out = piped(command, stdin);
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        took: start.elapsed(),
    }
}

impl Out {
    /// A success that said nothing: exit 0, stderr empty. Returns stdout.
    #[track_caller]
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        assert!(self.stderr.is_empty(), "stderr: {}", self.stderr);
        &self.stdout
    }

    /// A success, warnings allowed: exit 0, no sentinel on stderr. Returns stdout.
    #[track_caller]
    pub fn succeeds(&self) -> &str {
        assert_eq!(self.code, 0, "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        self.no_sentinel();
        &self.stdout
    }

    /// A failure: the code, nothing on stdout, every part on stderr, no
    /// sentinel (stderr may hold another program's lines: kpt's, kubectl's).
    /// Returns stderr.
    #[track_caller]
    pub fn failed(&self, code: i32, parts: &[&str]) -> &str {
        assert_eq!(self.code, code, "stdout: {}\nstderr: {}", self.stdout, self.stderr);
        assert!(self.stdout.is_empty(), "stdout of a failed run: {}", self.stdout);
        for p in parts {
            assert!(self.stderr.contains(p), "stderr lacks {p:?}: {}", self.stderr);
        }
        self.no_sentinel();
        &self.stderr
    }

    /// [`Out::failed`], with stderr only `kubectl-envshim: ` lines.
    #[track_caller]
    pub fn fails(&self, code: i32, parts: &[&str]) -> &str {
        assert!(!self.stderr.is_empty());
        for l in self.stderr.lines() {
            assert!(l.starts_with("kubectl-envshim: "), "line {l:?}");
        }
        self.failed(code, parts)
    }

    #[track_caller]
    pub fn no_sentinel(&self) {
        assert!(!self.stderr.contains("s3cr3t"), "a value in a message: {}", self.stderr);
    }
}

/// The documents of a YAML or JSON stream as kubectl reads them, as JSON values (empty ones left out).
pub fn json_docs(text: &str) -> Vec<serde_json::Value> {
    use serde::Deserialize;
    serde_norway::Deserializer::from_str(text).map(|d| serde_json::Value::deserialize(d).unwrap()).filter(|d| !d.is_null()).collect()
}
