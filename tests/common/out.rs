//! What a run gave and the checks on it (exit code, `envshim: ` lines, no
//! sentinel), the programs that print what they got (their environment, their
//! arguments) with the parsers of their output, and `render`'s JSON as a map.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::Duration;

use super::{assert_no_sentinel, envshim};

/// Prints `"$0" "$@"`, each followed by a NUL (`/bin/sh -c PRINT_ARGS argv0 args...`).
pub const PRINT_ARGS: &str = r#"printf '%s\0' "$0" "$@""#;

/// What a run gave.
#[derive(Debug)]
pub struct Out {
    /// The exit code, or minus the signal that killed it.
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub pid: u32,
    pub shown: String,
    pub elapsed: Duration,
    /// Peak resident set size of the binary, KiB (from wait4).
    pub max_rss_kb: i64,
}

impl Out {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn context(&self) -> String {
        format!("{}\n--- exit {}\n--- stdout:\n{}\n--- stderr:\n{}", self.shown, self.code, self.stdout_str(), self.stderr_str())
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(self.code, expected, "unexpected exit code from {}", self.context());
        self
    }

    /// Asserts exit 0 and an empty stderr (for `check`: only its summary line, `envshim: ok: ...`).
    #[track_caller]
    pub fn ok(&self) -> &Self {
        self.code(0);
        let lines = self.stderr_lines();
        let summary = self.shown.starts_with("envshim check") && lines.len() == 1 && lines[0].starts_with("envshim: ok: ");
        assert!(self.stderr.is_empty() || summary, "unexpected stderr from {}", self.context());
        self
    }

    /// The prefix of the binary's lines: `envshim: ` (`kubectl-envshim: `
    /// for the converter's).
    fn prefix(&self) -> String {
        format!("{}: ", self.shown.split(' ').next().unwrap_or("envshim"))
    }

    /// Asserts a failure: the exit code, and a stderr made only of
    /// `envshim: ` lines (at least one); returns the lines.
    #[track_caller]
    pub fn fails(&self, expected: i32) -> Vec<String> {
        self.code(expected);
        let lines = self.stderr_lines();
        assert!(!lines.is_empty(), "no message on stderr from {}", self.context());
        let prefix = self.prefix();
        for l in &lines {
            assert!(l.starts_with(&prefix), "stderr line {l:?} does not start with {prefix:?} in {}", self.context());
        }
        lines
    }

    /// Asserts a failure with exactly one message line, which contains every `parts`.
    #[track_caller]
    pub fn fails_with(&self, expected: i32, parts: &[&str]) -> String {
        let lines = self.fails(expected);
        let warning = format!("{}warning: ", self.prefix());
        let errors: Vec<&String> = lines.iter().filter(|l| !l.starts_with(&warning)).collect();
        assert_eq!(errors.len(), 1, "expected one error line from {}", self.context());
        for p in parts {
            assert!(errors[0].contains(p), "message {:?} lacks {p:?} in {}", errors[0], self.context());
        }
        errors[0].clone()
    }

    /// Asserts stderr contains `part`.
    #[track_caller]
    pub fn stderr_has(&self, part: &str) -> &Self {
        assert!(self.stderr_str().contains(part), "stderr lacks {part:?} in {}", self.context());
        self
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr_str().lines().map(str::to_string).collect()
    }

    /// Asserts neither stdout nor stderr holds the sentinel (or part of it).
    #[track_caller]
    pub fn no_sentinel(&self) -> &Self {
        assert_no_sentinel(&self.stderr, &format!("stderr of {}", self.shown));
        assert_no_sentinel(&self.stdout, &format!("stdout of {}", self.shown));
        self
    }

    /// Asserts stderr does not hold the sentinel (or part of it).
    #[track_caller]
    pub fn stderr_no_sentinel(&self) -> &Self {
        assert_no_sentinel(&self.stderr, &format!("stderr of {}", self.shown));
        self
    }

    /// The output of `/usr/bin/env -0`, in order.
    #[track_caller]
    pub fn env0(&self) -> Vec<(String, String)> {
        split0(&self.stdout)
            .into_iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("not NAME=VALUE: {kv:?} in {}", self.context()));
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    /// The output of `/usr/bin/env -0`, as a map (asserting no duplicates).
    #[track_caller]
    pub fn env_map(&self) -> BTreeMap<String, String> {
        let list = self.env0();
        let map: BTreeMap<String, String> = list.iter().cloned().collect();
        assert_eq!(map.len(), list.len(), "duplicate variables in {}", self.context());
        map
    }

    /// The output of [`PRINT_ARGS`]: argv[0] (as `$0`) and the arguments.
    pub fn args0(&self) -> Vec<String> {
        split0(&self.stdout)
    }

    /// stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}) in {}", self.context()))
    }
}

fn split0(bytes: &[u8]) -> Vec<String> {
    let s = String::from_utf8(bytes.to_vec()).expect("utf-8 output");
    let s = s.strip_suffix('\0').unwrap_or(&s);
    if s.is_empty() && bytes.is_empty() {
        return Vec::new();
    }
    s.split('\0').map(str::to_string).collect()
}

/// `/usr/bin/env -0`: the program that prints its environment.
pub fn print_env() -> Vec<&'static str> {
    vec!["/usr/bin/env", "-0"]
}

/// `/bin/sh -c PRINT_ARGS` followed by `argv0` and `args`.
pub fn print_args<'a>(argv0: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["/bin/sh", "-c", PRINT_ARGS, argv0];
    v.extend_from_slice(args);
    v
}

/// The `render --format json --show-values` output as name → (source, value).
#[track_caller]
pub fn rendered(out: &Out) -> BTreeMap<String, (String, String)> {
    let json = out.json();
    let obj = json.as_object().unwrap_or_else(|| panic!("not an object: {json}"));
    obj.iter()
        .map(|(k, v)| {
            let source = v["source"].as_str().unwrap_or_else(|| panic!("no source for {k}: {v}")).to_string();
            let value = v["value"].as_str().unwrap_or_else(|| panic!("no value for {k}: {v}")).to_string();
            assert_eq!(v["bytes"].as_u64(), Some(value.len() as u64), "bytes of {k}");
            (k.clone(), (source, value))
        })
        .collect()
}

/// `render --format json --show-values` of `args` with an empty environment
/// (and no service URL), as name → (source, value).
#[track_caller]
pub fn render_values<I, S>(args: I) -> BTreeMap<String, (String, String)>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = envshim(["render", "--format", "json", "--show-values"]).args(args).run();
    out.ok();
    rendered(&out)
}

/// name → value of a render map.
pub fn values(map: &BTreeMap<String, (String, String)>) -> BTreeMap<String, String> {
    map.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()
}
