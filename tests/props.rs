//! Property tests (proptest) for the invariants of hostile input:
//!
//! - expansion of input without `$` is the identity;
//! - escaping every `$` as `$$` and expanding gives the input back;
//! - parsing (env files, manifests) never panics, whatever the bytes;
//! - no error message (env-file parser, manifest parser, the binary's stderr
//!   and termination log) contains a byte sequence longer than 3 bytes of a
//!   value that appeared in the input.
//!
//! The random seed is fixed, so a run is deterministic; set `PROPTEST_RNG_SEED`
//! (and `PROPTEST_CASES`) to explore further. At the end: one regression test
//! per fuzzing finding (inputs in `fuzz/regressions/`).

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::command;
use envshim::internals::expand;
use envshim::internals::EnvFile;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use serde_json::{json, Value};

fn config(cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x656e_7673_6869_6d34);
    }
    // Findings are kept as named regression tests below, not as files.
    c.failure_persistence = None;
    c
}

// ---------------------------------------------------------------------------
// Secrets and the leak check

/// Characters of secret text. None of them appears in any message template,
/// path or JSON path envshim prints, and all but the last two are printable
/// ASCII that `error::escape` would show unchanged, so any 4-byte window of a
/// secret found in a message is a leak, not a coincidence.
const SECRET_CHARS: &[char] = &['@', '%', '^', '&', '*', '!', '|', '{', '}', '<', '>', '~', '?', ';', 'é', '秘'];

fn secret() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(SECRET_CHARS), 4..24).prop_map(|v| v.into_iter().collect())
}

/// Config names (variables, volumes, keys): may be shown, so disjoint from secrets.
fn config_name() -> impl Strategy<Value = String> {
    "[A-Z_][A-Z0-9_]{0,7}"
}

/// The first window of more than 3 bytes of any secret that `message` contains.
fn leak<'a>(message: &[u8], secrets: impl IntoIterator<Item = &'a [u8]>) -> Option<String> {
    let mut seen = HashSet::new();
    for s in secrets {
        for w in s.windows(4) {
            if seen.insert(w) && message.windows(4).any(|m| m == w) {
                return Some(String::from_utf8_lossy(w).into_owned());
            }
        }
    }
    None
}

fn assert_no_leak(message: &[u8], secrets: &[Vec<u8>], what: &str) {
    if let Some(w) = leak(message, secrets.iter().map(Vec::as_slice)) {
        panic!("{what} leaks {w:?} of a value: {:?}", String::from_utf8_lossy(message));
    }
}

// ---------------------------------------------------------------------------
// Expansion

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn expansion_without_dollar_is_identity(
        input in prop::collection::vec(prop_oneof![
            4 => any::<u8>().prop_filter("no $", |&b| b != b'$'),
            1 => prop::sample::select(&b"()"[..]),
        ], 0..200),
    ) {
        // Every name defined: still nothing may change without a `$`.
        prop_assert_eq!(expand(&input, |_| Some(&b"XX"[..])), input.clone());
        prop_assert_eq!(expand(&input, |_| None), input);
    }

    #[test]
    fn expansion_text_without_dollar_is_identity(input in "[^$]{0,100}") {
        prop_assert_eq!(expand(input.as_bytes(), |_| Some(&b""[..])), input.as_bytes());
    }

    #[test]
    fn dollar_doubling_round_trips(
        input in prop::collection::vec(prop_oneof![
            3 => prop::sample::select(&b"$()"[..]),
            2 => any::<u8>(),
            1 => prop::sample::select(&b"AB_"[..]),
        ], 0..200),
    ) {
        let mut escaped = Vec::new();
        for &b in &input {
            escaped.push(b);
            if b == b'$' {
                escaped.push(b'$');
            }
        }
        prop_assert_eq!(expand(&escaped, |_| Some(&b"VALUE"[..])), input.clone());
        prop_assert_eq!(expand(&escaped, |_| None), input);
    }

    #[test]
    fn capped_expansion_is_a_prefix_and_reports_the_whole_length(
        input in "[$()AB x]{0,60}",
        a in "[$()x]{0,40}",
        limit in 0usize..120,
    ) {
        let lookup = |n: &[u8]| match n {
            b"A" => Some(a.as_bytes()),
            b"B" => Some(&b""[..]),
            _ => None,
        };
        let full = expand(input.as_bytes(), lookup);
        let mut out = Vec::new();
        let total = envshim::internals::expand_capped(input.as_bytes(), lookup, &mut out, limit);
        prop_assert_eq!(total, full.len());
        prop_assert!(out.len() <= limit && full.starts_with(&out));
        if limit >= full.len() {
            prop_assert_eq!(out, full);
        }
    }

    #[test]
    fn expansion_never_rescans_values(
        names in prop::collection::vec("[A-C]", 0..10),
        value in "[$()A-C]{0,12}",
    ) {
        // Each `$(X)` becomes exactly the value, whatever the value holds.
        let input: String = names.iter().map(|n| format!("$({n})")).collect();
        let got = expand(input.as_bytes(), |_| Some(value.as_bytes()));
        prop_assert_eq!(got, value.repeat(names.len()).into_bytes());
    }
}

// ---------------------------------------------------------------------------
// Env files: generated garbage with secrets in names and values

const LEADING: &[&[u8]] = &[b"", b"", b" ", b"\t", b"export ", b"export\t"];
const AROUND_EQ: &[&[u8]] = &[b"=", b"=", b" = ", b"=\t", b"= ", b"", b"=="];
const OPEN: &[&[u8]] = &[b"", b"", b"'", b"\"", b"\"\\n", b"'\n", b"\"\n", b"\"\\"];
const CLOSE: &[&[u8]] = &[b"", b"'", b"\"", b"\"", b"\\\"", b"'x'", b"\"\"", b"\n'"];
const TRAILER: &[&[u8]] = &[b"", b"", b" # c", b"#x", b"x", b" ", b"\0", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"$(A)"];
const END: &[&[u8]] = &[b"\n", b"\n", b"\r\n", b"\r", b""];
const TOKENS: &[&[u8]] = &[
    b"=",
    b"'",
    b"\"",
    b"#",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\r",
    b"export ",
    b"\\",
    b"\\n",
    b"\\\"",
    b"\0",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xe2\x82",
    b"$(",
    b")",
    b"$$",
];

/// One line (or a few, with quotes spanning lines) and the secrets in it.
fn env_line() -> impl Strategy<Value = (Vec<u8>, Vec<Vec<u8>>)> {
    let sel = |s: &'static [&'static [u8]]| prop::sample::select(s);
    let structured = (sel(LEADING), secret(), sel(AROUND_EQ), sel(OPEN), secret(), sel(CLOSE), sel(TRAILER), sel(END)).prop_map(
        |(lead, name, eq, open, value, close, trailer, end)| {
            let line = [lead, name.as_bytes(), eq, open, value.as_bytes(), close, trailer, end].concat();
            (line, vec![name.into_bytes(), value.into_bytes()])
        },
    );
    let tokens = prop::collection::vec(
        prop_oneof![3 => sel(TOKENS).prop_map(|t| (t.to_vec(), None)), 2 => secret().prop_map(|s| (s.clone().into_bytes(), Some(s.into_bytes())))],
        0..12,
    )
    .prop_map(|toks| {
        let line = toks.iter().flat_map(|(b, _)| b.clone()).collect();
        (line, toks.into_iter().filter_map(|(_, s)| s).collect())
    });
    // Past a limit: a name over 128 bytes or a value over 32 KiB.
    let big = (secret(), secret(), any::<bool>(), sel(OPEN)).prop_map(|(name, value, long_name, open)| {
        let (names, values) = if long_name { (130 / name.len() + 1, 1) } else { (1, 33_000 / value.len() + 1) };
        let line = [name.repeat(names).as_bytes(), b"=", open, value.repeat(values).as_bytes(), open, b"\n"].concat();
        // Each 4-byte window of a secret repeated lies within two copies of it
        // (a copy is at least 4 bytes): the leak check looks at two, not 33 KB.
        (line, vec![name.repeat(names.min(2)).into_bytes(), value.repeat(values.min(2)).into_bytes()])
    });
    prop_oneof![6 => structured, 3 => tokens, 1 => big]
}

fn env_file() -> impl Strategy<Value = (Vec<u8>, Vec<Vec<u8>>)> {
    (any::<u8>(), prop::collection::vec(env_line(), 0..8)).prop_map(|(bom, lines)| {
        let mut data = if bom < 8 { b"\xef\xbb\xbf".to_vec() } else { Vec::new() };
        let mut secrets = Vec::new();
        for (l, s) in lines {
            data.extend(l);
            secrets.extend(s);
        }
        (data, secrets)
    })
}

proptest! {
    #![proptest_config(config(3000))]

    #[test]
    fn envfile_errors_carry_no_value((data, secrets) in env_file()) {
        if let Err(e) = EnvFile::parse(data) {
            assert_no_leak(e.to_string().as_bytes(), &secrets, "env-file parse error");
        }
    }

    #[test]
    fn envfile_parse_never_panics_on_bytes(data in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = EnvFile::parse(data);
    }

    #[test]
    fn envfile_parse_never_panics_on_tokens(
        toks in prop::collection::vec(prop::sample::select(TOKENS), 0..64),
        name in "[A-Z]{1,3}",
    ) {
        let mut data = Vec::new();
        for t in toks {
            data.extend_from_slice(t);
            data.extend_from_slice(name.as_bytes());
        }
        let _ = EnvFile::parse(data);
    }
}

// ---------------------------------------------------------------------------
// Manifests: generated JSON with secrets in every value, broken in many ways

/// A `fileKeyRef`/`fileRef` object, sometimes with a mistake holding a secret.
fn file_ref(with_key: bool) -> impl Strategy<Value = (Value, Vec<String>)> {
    (config_name(), config_name(), config_name(), secret(), 0..8u8).prop_map(move |(vol, path, key, s, flaw)| {
        let mut m = json!({ "volumeName": vol, "path": format!("{path}.env") });
        if with_key {
            m["key"] = json!(key);
        }
        match flaw {
            0 => m["optional"] = json!(s.clone()),
            1 => m["bogus"] = json!(s.clone()),
            2 => m["path"] = json!([s.clone()]),
            3 => m["key"] = json!(s.clone()),
            4 => m["optional"] = json!(true),
            5 => {
                m.as_object_mut().unwrap().remove("volumeName");
            }
            _ => {}
        }
        (m, vec![s])
    })
}

fn env_entry() -> impl Strategy<Value = (Value, Vec<String>)> {
    prop_oneof![
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "value": s}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "value": s, "valueFrom": {"fieldRef": {"fieldPath": s}}}), vec![s])),
        (config_name(), file_ref(true)).prop_map(|(n, (f, s))| (json!({"name": n, "valueFrom": {"fileKeyRef": f}}), s)),
        (config_name(), file_ref(true), secret()).prop_map(|(n, (f, mut s), v)| {
            s.push(v.clone());
            (json!({"name": n, "valueFrom": {"fileKeyRef": f, "secretKeyRef": {"name": v, "key": v}}}), s)
        }),
        secret().prop_map(|s| (json!({"name": 5, "value": s}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "value": [s, {"x": s}]}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "value": format!("{s}\u{0}{s}")}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "valu": s}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "valueFrom": {"secretKeyRef": {"name": s, "key": s}}}), vec![s])),
        (config_name(), secret()).prop_map(|(n, s)| (json!({"name": n, "valueFrom": s}), vec![s])),
        secret().prop_map(|s| (json!(s), vec![s.clone()])),
    ]
}

fn env_from_entry() -> impl Strategy<Value = (Value, Vec<String>)> {
    prop_oneof![
        (file_ref(false), config_name()).prop_map(|((f, s), p)| (json!({"fileRef": f, "prefix": p}), s)),
        (file_ref(false), secret()).prop_map(|((f, mut s), v)| {
            s.push(v.clone());
            (json!({"fileRef": f, "secretRef": {"name": v}}), s)
        }),
        secret().prop_map(|s| (json!({"configMapRef": {"name": s}, "prefix": 7}), vec![s])),
        secret().prop_map(|s| (json!({"bogus": s}), vec![s])),
    ]
}

fn volume_mount() -> impl Strategy<Value = (Value, Vec<String>)> {
    (config_name(), secret(), 0..5u8).prop_map(|(n, s, flaw)| {
        let v = match flaw {
            0 => json!({"name": n, "mountPath": "/data", "subPath": s}),
            1 => json!({"name": n, "mountPath": [s]}),
            2 => json!({"name": n, "mountPath": "/data", "readOnly": s}),
            3 => json!({"name": n, "mountPth": s}),
            _ => json!({"name": n, "mountPath": "/data", "readOnly": true}),
        };
        (v, vec![s])
    })
}

fn manifest() -> impl Strategy<Value = (Vec<u8>, Vec<Vec<u8>>)> {
    (
        prop::collection::vec(volume_mount(), 0..3),
        prop::collection::vec(env_from_entry(), 0..3),
        prop::collection::vec(env_entry(), 0..6),
        prop::collection::vec(prop_oneof![secret().prop_map(Value::from), Just(json!(1)), Just(json!(null))], 0..3),
        secret(),
        0..6u8,
        any::<prop::sample::Index>(),
    )
        .prop_map(|(vms, efs, envs, command, top, shape, cut)| {
            let mut secrets = vec![top.clone()];
            let mut take = |items: Vec<(Value, Vec<String>)>| -> Vec<Value> {
                items
                    .into_iter()
                    .map(|(v, s)| {
                        secrets.extend(s);
                        v
                    })
                    .collect()
            };
            let mut m = json!({
                "name": "app",
                "image": top,
                "volumeMounts": take(vms),
                "envFrom": take(efs),
                "env": take(envs),
                "command": command.clone(),
            });
            for c in &command {
                if let Some(s) = c.as_str() {
                    secrets.push(s.to_owned());
                }
            }
            match shape {
                0 => m["args"] = json!(top),
                1 => m["env"] = json!({"x": top}),
                2 => m = json!([top]),
                _ => {}
            }
            let mut bytes = serde_json::to_vec_pretty(&m).unwrap();
            // Sometimes cut short: a syntax error somewhere inside a value.
            if shape == 3 {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            (bytes, secrets.into_iter().map(String::into_bytes).collect())
        })
}

proptest! {
    #![proptest_config(config(2000))]

    #[test]
    fn manifest_errors_carry_no_value((bytes, secrets) in manifest()) {
        if let Err(errors) = envshim::internals::parse_manifest(&bytes) {
            prop_assert!(!errors.is_empty());
            for e in errors {
                prop_assert_eq!(e.code, envshim::internals::ExitCode::Config);
                let message = e.to_string();
                prop_assert!(!message.contains('\n'), "{:?}", message);
                assert_no_leak(message.as_bytes(), &secrets, "manifest error");
            }
        }
    }

    #[test]
    fn manifest_parse_never_panics_on_bytes(data in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = envshim::internals::parse_manifest(&data);
    }

    #[test]
    fn manifest_parse_never_panics_on_json_tokens(
        toks in prop::collection::vec(prop::sample::select(&[
            "{", "}", "[", "]", ":", ",", "\"env\"", "\"name\"", "\"value\"", "\"valueFrom\"", "\"fileKeyRef\"",
            "\"envFrom\"", "\"fileRef\"", "\"volumeMounts\"", "\"command\"", "\"args\"", "\"x\"", "1", "null",
            "true", "\"\\u0000\"", "\"\\ud800\"",
        ][..]), 0..80),
    ) {
        let _ = envshim::internals::parse_manifest(toks.concat().as_bytes());
    }
}

// ---------------------------------------------------------------------------
// The binary: stderr and the termination log never show a value

/// Runs the binary with a clean environment and a time limit; returns (exit code, stderr).
fn run_bin(args: &[&std::ffi::OsStr], cwd: &Path) -> (Option<i32>, Vec<u8>) {
    let mut child = command(false)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn envshim");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("envshim {args:?} hung for 10 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    (status.code(), reader.join().unwrap())
}

/// An env file whose names are config names and whose values are secrets,
/// with some lines broken.
fn volume_env_file() -> impl Strategy<Value = (Vec<u8>, Vec<Vec<u8>>, Vec<String>)> {
    prop::collection::vec((config_name(), secret(), 0..10u8), 1..6).prop_map(|lines| {
        let mut data = Vec::new();
        let mut secrets = Vec::new();
        let mut names = Vec::new();
        for (n, s, form) in lines {
            let line = match form {
                0 => format!("{n}='{s}\n"),
                1 => format!("{n}=\"{s}\"{s}\n"),
                2 => format!("{s}\n"),
                3 => format!("{n}={s}\0\n"),
                4 => format!("{n}='{s}'\n"),
                5 => format!("export {n}=\"{s}\\n{s}\"\n"),
                _ => format!("{n}={s}\n"),
            };
            data.extend(line.into_bytes());
            secrets.push(s.into_bytes());
            names.push(n);
        }
        (data, secrets, names)
    })
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn binary_stderr_and_termination_log_carry_no_value(
        (file, mut secrets, names) in volume_env_file(),
        env_value in secret(),
        literal in secret(),
        arg in secret(),
        missing_key in any::<bool>(),
        program in prop::sample::select(&["/bin/true", "/nonexistent/prog", "/etc/hostname"][..]),
    ) {
        secrets.extend([env_value.clone(), literal.clone(), arg.clone()].map(String::into_bytes));
        let dir = tempfile::tempdir().unwrap();
        let vol = dir.path().join("vol");
        std::fs::create_dir(&vol).unwrap();
        std::fs::write(vol.join("app.env"), &file).unwrap();
        let key = if missing_key { "NOT_THERE".to_owned() } else { names[0].clone() };
        let manifest = json!({
            "volumeMounts": [{"name": "cfg", "mountPath": vol}],
            "envFrom": [{"fileRef": {"volumeName": "cfg", "path": "app.env"}, "prefix": "P_"}],
            "env": [
                {"name": "FROM_FILE", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "/app.env", "key": key}}},
                {"name": "LIT", "value": format!("{literal}$(FROM_FILE)")},
            ],
        });
        std::fs::write(dir.path().join("manifest.json"), serde_json::to_vec(&manifest).unwrap()).unwrap();
        let tlog = dir.path().join("termination-log");
        let os = |s: &str| std::ffi::OsString::from(s);
        let common = [
            os("--manifest"), dir.path().join("manifest.json").into_os_string(),
            os("--termination-log"), tlog.clone().into_os_string(),
            os("--env-file"), vol.join("app.env").into_os_string(),
            os("--env"), os(&format!("E1={env_value}")),
        ];
        for sub in [&["check"][..], &["render"][..], &["run", "--", program, "--x=$(LIT)", &arg][..]] {
            let mut args: Vec<std::ffi::OsString> = vec![os(sub[0])];
            args.extend(common.iter().cloned());
            args.extend(sub[1..].iter().map(|s| os(s)));
            let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
            let (code, stderr) = run_bin(&refs, dir.path());
            prop_assert_ne!(code, Some(101), "panic: {}", String::from_utf8_lossy(&stderr));
            prop_assert!(code.is_some(), "killed by a signal");
            assert_no_leak(&stderr, &secrets, &format!("stderr of {sub:?}"));
            if let Ok(log) = std::fs::read(&tlog) {
                prop_assert!(log.len() <= 4096);
                assert_no_leak(&log, &secrets, &format!("termination log of {sub:?}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Regression tests: one per fuzzing finding (see fuzz/regressions/ and docs/security.md)

#[test]
fn the_leak_check_sees_a_window_of_four_bytes() {
    let secrets = ["x@%^&y".as_bytes().to_vec()];
    assert!(leak(b"line 3: @%^&", secrets.iter().map(Vec::as_slice)).is_some());
    assert!(leak(b"line 3: @%^", secrets.iter().map(Vec::as_slice)).is_none());
    assert!(leak("[a秘]".as_bytes(), ["a秘".as_bytes()]).is_some());
    assert!(leak("秘".as_bytes(), ["a秘".as_bytes()]).is_none());
}

/// Finding 1 (docs/security.md): `$(A)` repeated multiplies a value, and
/// chained entries multiply it again; envshim used to build the whole string
/// (1.28 GB for two levels of x200 over a 32 KB value). The capped expansion
/// holds at most the limit and still reports the whole length.
#[test]
fn finding_1_multiplied_expansion_holds_at_most_the_limit() {
    let a = vec![b'x'; 32_000];
    let input = "$(A)".repeat(200);
    let mut out = Vec::new();
    let total = envshim::internals::expand_capped(input.as_bytes(), |n| (n == b"A").then_some(&a[..]), &mut out, 131_071);
    assert_eq!(total, 6_400_000);
    assert!(out.len() <= 131_071);
    assert!(out.capacity() <= 2 * 131_071, "capacity {}", out.capacity());
}

/// Finding 10 (docs/security.md): `export #A=1` gives envshim's grammar a
/// variable `#A`, `export export A=1` one named `export A`; `kubectl envshim fmt`
/// wrote `#A='1'` (a comment line for both grammars: the variable vanished)
/// and `export A='1'` (`A` for envshim's grammar). Such a name has no form
/// without `export`: the file is refused, naming the line.
#[test]
fn finding_10_fmt_refuses_a_name_export_hid() {
    use envshim::internals::portable::{rewrite, Inexpressible};
    for input in ["finding-10-export-hash-name", "finding-10-export-export-name"] {
        let input = std::fs::read(format!("{}/fuzz/regressions/fmt/{input}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert_eq!(rewrite(&input).unwrap().refused(), Some((2, Inexpressible::Name)));
    }
}
