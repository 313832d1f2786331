//! The leak test (docs/reference.md §7): a sentinel secret placed in every failing input
//! (env files with each kind of error, manifest values, `--env` values,
//! inherited values) never appears on stderr, in the termination log, or in
//! `render` output without `--show-values`.

use crate::common::*;
use serde_json::{json, Value};

/// One failing setup: files in a volume `v`, a manifest (raw text, so it can
/// be invalid JSON), options, inherited variables, a program line for `run`.
struct Case {
    what: String,
    files: Vec<(String, Vec<u8>)>,
    manifest: Option<Vec<u8>>,
    args: Vec<String>,
    inherited: Vec<(String, String)>,
    program: Vec<String>,
    /// Whether `check` must fail as well (false when only exec itself fails).
    check_fails: bool,
}

impl Case {
    fn new(what: impl Into<String>) -> Case {
        Case {
            what: what.into(),
            files: Vec::new(),
            manifest: None,
            args: Vec::new(),
            inherited: Vec::new(),
            program: vec!["/bin/true".into()],
            check_fails: true,
        }
    }
    fn file(mut self, path: &str, contents: impl AsRef<[u8]>) -> Self {
        self.files.push((path.into(), contents.as_ref().to_vec()));
        self
    }
    fn manifest(mut self, m: &Value) -> Self {
        self.manifest = Some(serde_json::to_vec(m).unwrap());
        self
    }
    fn manifest_text(mut self, text: impl AsRef<[u8]>) -> Self {
        self.manifest = Some(text.as_ref().to_vec());
        self
    }
    fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|s| s.to_string()));
        self
    }
    fn inherit(mut self, k: &str, v: &str) -> Self {
        self.inherited.push((k.into(), v.into()));
        self
    }
    fn program(mut self, p: &[&str]) -> Self {
        self.program = p.iter().map(|s| s.to_string()).collect();
        self
    }
    fn only_run_fails(mut self) -> Self {
        self.check_fails = false;
        self
    }

    /// Runs `run`, `check` and `render` (both formats, masked), each with a
    /// termination log, and checks that nothing shows the sentinel.
    fn assert_no_leak(&self) {
        let vol = Volume::new();
        for (p, c) in &self.files {
            vol.file(p, c);
        }
        let d = Volume::new();
        let mut base: Vec<String> = vec!["--volume".into(), vol.volume_arg("v")];
        if let Some(m) = &self.manifest {
            base.push("--manifest".into());
            base.push(d.file_str("manifest.json", m));
        }
        base.extend(self.args.iter().cloned());
        let log = d.join("termination-log");
        let log_arg = log.to_str().unwrap().to_string();

        let mut runs: Vec<(Vec<String>, bool)> = Vec::new();
        let mut run = vec!["run".to_string()];
        run.extend(base.iter().cloned());
        run.push("--".into());
        run.extend(self.program.iter().cloned());
        runs.push((run, true));
        let mut check = vec!["check".to_string()];
        check.extend(base.iter().cloned());
        runs.push((check, self.check_fails));
        for format in ["env", "json"] {
            let mut render = vec!["render".to_string(), "--format".into(), format.into()];
            render.extend(base.iter().cloned());
            runs.push((render, false));
        }
        for (mut argv, must_fail) in runs {
            let _ = std::fs::remove_file(&log);
            argv.insert(1, "--termination-log".into());
            argv.insert(2, log_arg.clone());
            let mut shim = envshim(&argv);
            for (k, v) in &self.inherited {
                shim = shim.env(k, v);
            }
            let out = shim.run();
            if must_fail {
                assert!(out.code != 0, "{}: {:?} should fail:\n{}", self.what, argv, out.stderr_str());
            }
            assert_no_sentinel(&out.stderr, &format!("stderr of {} ({:?})", self.what, argv));
            assert_no_sentinel(&out.stdout, &format!("stdout of {} ({:?})", self.what, argv));
            if out.code != 0 {
                out.fails(out.code);
                let written = std::fs::read(&log).unwrap_or_else(|_| panic!("{}: no termination log for {argv:?}", self.what));
                assert!(!written.is_empty());
                assert_no_sentinel(&written, &format!("termination log of {} ({:?})", self.what, argv));
            }
        }
    }
}

const S: &str = SENTINEL;

/// Every error row of the grammar table (each holds the sentinel), and more
/// failing files, each through `--env-file`, `envFrom` and `fileKeyRef`.
fn failing_files() -> Vec<(String, Vec<u8>)> {
    let doc: Value = serde_json::from_str(include_str!("data/envfile-grammar.json")).unwrap();
    assert_eq!(doc["sentinel"], S);
    let mut files: Vec<(String, Vec<u8>)> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r.get("error").is_some())
        .map(|r| (r["rule"].as_str().unwrap().to_string(), r["input"].as_str().unwrap().as_bytes().to_vec()))
        .collect();
    let more: Vec<(&str, Vec<u8>)> = vec![
        ("value over 32,768 bytes", format!("A=1\nB={S}{}\n", "v".repeat(32_768)).into_bytes()),
        ("quoted value over the limit", format!("B='{}\n{S}'\n", "v".repeat(32_768)).into_bytes()),
        ("name over 128 bytes", format!("{S}{}=1\n", "N".repeat(128)).into_bytes()),
        ("name with a tab", format!("{S}\tX=1\n").into_bytes()),
        ("name with DEL", format!("{S}\x7f=1\n").into_bytes()),
        ("name with an equals-free line", format!("{S}\n").into_bytes()),
        ("name with quotes and no equals", format!("'{S}'\n").into_bytes()),
        ("file over 65,536 bytes", format!("A={S}\n").repeat(3000).into_bytes()),
        ("invalid UTF-8 after the secret", [format!("A={S}").as_bytes(), b"\xff\n"].concat()),
        ("invalid UTF-8 in a secret name", [S.as_bytes(), b"\xc3=1\n"].concat()),
        ("BOM before a secret", [b"\xef\xbb\xbf".as_slice(), format!("{S}=1\n").as_bytes()].concat()),
        ("NUL after a secret", format!("A=\"{S}\0\"\n").into_bytes()),
        ("unclosed double quote with escapes", format!("A=\"{S}\\\"\\n\n").into_bytes()),
        ("text after quote", format!("A=\"x\"{S}\n").into_bytes()),
        ("second quoted secret", format!("A='x' '{S}'\n").into_bytes()),
        ("secret line without equals among valid ones", format!("A=1\n{S} {S}\nB=2\n").into_bytes()),
        ("export secret without equals", format!("export {S}\n").into_bytes()),
    ];
    files.extend(more.into_iter().map(|(w, c)| (w.to_string(), c)));
    files
}

#[test]
fn failing_env_files_never_show_the_secret() {
    for (what, contents) in failing_files() {
        Case::new(format!("--env-file: {what}")).file("bad.env", &contents).assert_no_leak_with_env_file();
        for optional in [false, true] {
            Case::new(format!("envFrom (optional {optional}): {what}"))
                .file("bad.env", &contents)
                .manifest(&json!({"envFrom": [file_ref("v", "bad.env", optional, Some("P_"))]}))
                .assert_no_leak();
            Case::new(format!("fileKeyRef (optional {optional}): {what}"))
                .file("bad.env", &contents)
                .manifest(&json!({"env": [file_key_ref("A", "v", "bad.env", "A", optional)]}))
                .assert_no_leak();
        }
    }
}

impl Case {
    /// The case's one file given with `--env-file` (by absolute path) instead of in the volume.
    fn assert_no_leak_with_env_file(self) {
        let d = Volume::new();
        let (_, contents) = &self.files[0];
        let path = d.file_str("bad.env", contents);
        let mut c = self;
        c.files.clear();
        c.args = vec!["--env-file".into(), path];
        c.assert_no_leak();
    }
}

#[test]
fn valid_files_with_secrets_never_show_them_when_something_else_fails() {
    let secrets = format!("A={S}\nB='{S}'\n1BAD={S}\nLogging:Level=\"{S}\"\n");
    let cases = vec![
        Case::new("missing key in a file of secrets").file("s.env", &secrets).manifest(&json!({"env": [file_key_ref("X", "v", "s.env", "NOPE", false)]})),
        Case::new("skipped keys with secret values, then a missing file")
            .file("s.env", &secrets)
            .manifest(&json!({"envFrom": [file_ref("v", "s.env", false, None), file_ref("v", "gone.env", false, None)]}))
            .args(&["--strict-names"]),
        Case::new("secrets read, then an invalid --env name")
            .file("s.env", &secrets)
            .manifest(&json!({"envFrom": [file_ref("v", "s.env", false, None)], "env": [file_key_ref("K", "v", "s.env", "A", false)]}))
            .args(&["--env", "=x"]),
        Case::new("secrets read, then the program is missing")
            .file("s.env", &secrets)
            .manifest(&json!({"envFrom": [file_ref("v", "s.env", false, None)]}))
            .program(&["/nonexistent/program", "$(A)"])
            .only_run_fails(),
        Case::new("a secret from a file made too large by expansion")
            .file("s.env", format!("A={S}{}\n", "x".repeat(32_000)))
            .manifest(&json!({"env": [file_key_ref("K", "v", "s.env", "A", false), {"name": "BIG", "value": "$(K)$(K)$(K)$(K)$(K)"}]})),
        Case::new("an argument holding a secret made too large by expansion")
            .file("s.env", format!("A={S}{}\n", "x".repeat(32_000)))
            .manifest(&json!({"envFrom": [file_ref("v", "s.env", false, None)], "command": ["/bin/true"], "args": ["$(A)$(A)$(A)$(A)$(A)"]})),
        Case::new("a trailing argument holding a secret made too large")
            .file("s.env", format!("A={S}{}\n", "x".repeat(32_000)))
            .manifest(&json!({"envFrom": [file_ref("v", "s.env", false, None)]}))
            .program(&["/bin/true", "$(A)$(A)$(A)$(A)$(A)"])
            .only_run_fails(),
    ];
    for c in cases {
        c.assert_no_leak();
    }
}

#[test]
fn manifest_values_never_show_the_secret() {
    let cases = vec![
        Case::new("value and valueFrom").manifest(&json!({"env": [{"name": "A", "value": S, "valueFrom": {"fieldRef": {}}}]})),
        Case::new("value of the wrong type").manifest(&json!({"env": [{"name": "A", "value": [S]}]})),
        Case::new("value as an object").manifest(&json!({"env": [{"name": "A", "value": {"k": S}}]})),
        Case::new("secret beside an unknown field").manifest(&json!({"env": [{"name": "A", "value": S, "valu": 1}]})),
        Case::new("secret value then an invalid name").manifest(&json!({"env": [{"name": "A", "value": S}, {"name": "B=", "value": S}]})),
        Case::new("secret value then a missing volume").manifest(&json!({"env": [{"name": "A", "value": S}, file_key_ref("B", "nope", "x.env", "B", false)]})),
        Case::new("command of the wrong type").manifest(&json!({"command": S})),
        Case::new("args with a NUL").manifest(&json!({"args": [format!("{S}\u{0}")]})),
        Case::new("optional of the wrong type")
            .manifest(&json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optional": S}}}]})),
        Case::new("prefix of the wrong type").manifest(&json!({"envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "prefix": [S]}]})),
        Case::new("secret value expanded too large")
            .manifest(&json!({"env": [{"name": "A", "value": format!("{S}{}", "x".repeat(60_000))}, {"name": "B", "value": "$(A)$(A)$(A)"}]})),
        Case::new("unterminated string").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}")),
        Case::new("bad escape").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}\\q\"}}]}}")),
        Case::new("bad unicode escape").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}\\uZZZZ\"}}]}}")),
        Case::new("lone surrogate").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}\\ud800\"}}]}}")),
        Case::new("control character").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}\x01\"}}]}}")),
        Case::new("invalid UTF-8").manifest_text([format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{S}").as_bytes(), b"\xff\"}]}"].concat()),
        Case::new("trailing garbage").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"x\"}}]}} {S}")),
        Case::new("bare word").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": {S}}}]}}")),
        Case::new("number-like secret").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": 12{S}}}]}}")),
        Case::new("over 1 MiB").manifest_text(format!("{{\"env\": [{{\"name\": \"A\", \"value\": \"{}\"}}]}}", S.repeat(60_000))),
    ];
    for c in cases {
        c.assert_no_leak();
    }
}

#[test]
fn env_option_values_never_show_the_secret() {
    let big = format!("{S}{}", "x".repeat(40_000));
    let cases = vec![
        Case::new("--env secret, then an invalid name").args(&["--env", &format!("A={S}"), "--env", &format!("=\"{S}")]),
        Case::new("--env secret under a strict-invalid name").args(&["--strict-names", "--env", &format!("1A={S}")]),
        Case::new("--env secret under a name with a control byte").args(&["--env", &format!("A\u{1}={S}")]),
        Case::new("--env secret, then a missing file").args(&["--env", &format!("A={S}"), "--env-file", "/nonexistent/x.env"]),
        Case::new("--env secret, then a missing program").args(&["--env", &format!("A={S}")]).program(&["/nonexistent/prog", "$(A)"]).only_run_fails(),
        Case::new("--env secret too large once expanded").args(&["--env", &format!("A={big}"), "--env", "B=$(A)$(A)$(A)$(A)"]),
        Case::new("--env secret in a program word too large")
            .args(&["--env", &format!("A={big}")])
            .program(&["/bin/true", "$(A)$(A)$(A)$(A)"])
            .only_run_fails(),
        Case::new("--env secret, program not executable").args(&["--env", &format!("A={S}")]).program(&["/dev/null", S]).only_run_fails(),
    ];
    for c in cases {
        c.assert_no_leak();
    }
}

#[test]
fn inherited_secrets_never_show() {
    let cases = vec![
        Case::new("inherited secret, missing program").inherit("TOKEN", S).program(&["/nonexistent/prog"]).only_run_fails(),
        Case::new("inherited secret, bad file")
            .inherit("TOKEN", S)
            .file("bad.env", "A\n")
            .manifest(&json!({"envFrom": [file_ref("v", "bad.env", false, None)]})),
        Case::new("inherited secret referenced and overflowing")
            .inherit("TOKEN", &format!("{S}{}", "x".repeat(60_000)))
            .args(&["--env", "B=$(TOKEN)$(TOKEN)$(TOKEN)"]),
        Case::new("platform valueFrom of an inherited secret, then an error")
            .inherit("PLAT", S)
            .manifest(&json!({"env": [{"name": "PLAT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}, {"name": "", "value": "x"}]})),
    ];
    for c in cases {
        c.assert_no_leak();
    }
}

#[test]
fn check_with_every_kind_of_problem_at_once_never_shows_the_secret() {
    let mut c = Case::new("everything at once")
        .file("syntax.env", format!("A={S}\nB='{S}\n"))
        .file("name.env", format!("{S}\t=1\n"))
        .file("long.env", format!("V={S}{}\n", "v".repeat(33_000)))
        .file("keys.env", format!("1BAD={S}\nGOOD={S}\n"))
        .manifest(&json!({
            "envFrom": [file_ref("v", "syntax.env", true, None), file_ref("v", "keys.env", false, None)],
            "env": [
                file_key_ref("N", "v", "name.env", "X", true),
                file_key_ref("L", "v", "long.env", "V", false),
                file_key_ref("M", "v", "keys.env", "MISSING", false),
                {"name": "BAD NAME\u{1}", "value": S},
                {"name": "BIG", "value": "$(GOOD)"},
            ],
            "command": ["/nonexistent/cmd", "$(GOOD)"],
        }))
        .args(&["--strict-names", "--env", &format!("1X={S}")]);
    c.inherited.push(("INH".into(), S.into()));
    c.assert_no_leak();
}
