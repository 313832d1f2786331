//! Bounded output and bounded work: inputs within
//! the limits (a manifest of 1 MiB, env files of 64 KiB) that repeat a
//! source thousands of times, or make every key invalid, can neither make
//! envshim print without bound nor work without bound. Each test is the
//! adversarial input of the review, run through the binary; the worst-case
//! times and memory are measured in docs/security.md, not asserted here (the
//! common 20 s timeout catches a blow-up).

use crate::common::*;
use serde_json::{json, Value};

/// The longest stderr line, newline included (limits.rs MAX_MESSAGE_BYTES + 1).
const MAX_LINE: usize = 2048 + 1;

/// Writes `m` compactly (a pretty-printed manifest of 20,000 entries would pass 1 MiB).
fn compact_manifest(dir: &Volume, m: &Value) -> String {
    let text = serde_json::to_vec(m).unwrap();
    assert!(text.len() <= 1 << 20, "the manifest must be within its limit: {} bytes", text.len());
    dir.file_str("manifest.json", text)
}

/// A 64 KiB env file of `K0=...` keys (about 9,500), each value a sentinel fragment.
fn many_keys(vol: &Volume, name: &str, key: impl Fn(usize) -> String) -> usize {
    let mut text = String::new();
    let mut n = 0;
    loop {
        let line = format!("{}=s3cr3t\n", key(n));
        if text.len() + line.len() > 65_536 {
            break;
        }
        text.push_str(&line);
        n += 1;
    }
    vol.file(name, text);
    n
}

/// An `envFrom` entry of volume `v`, as short as JSON allows.
fn short_ref(path: &str) -> Value {
    json!({"fileRef": {"volumeName": "v", "path": path}})
}

fn assert_lines_bounded(out: &Out) {
    for line in out.stderr.split_inclusive(|&b| b == b'\n') {
        assert!(line.len() <= MAX_LINE, "a stderr line of {} bytes: {}…", line.len(), String::from_utf8_lossy(&line[..200]));
    }
}

/// Item 1: one `envFrom` whose 10 KB prefix is invalid, over a file of about
/// 9,500 keys. Before: one warning line of 97 MB (384 MB of memory). Now one
/// line listing ten names (the prefix cut in the middle, the key kept) and
/// counting the rest.
#[test]
fn a_skipped_keys_warning_lists_ten_names_and_counts_the_rest() {
    let vol = Volume::new();
    let n = many_keys(&vol, "keys.env", |i| format!("K{i}"));
    let d = Volume::new();
    let prefix = format!("={}", "x".repeat(10_000));
    let m = compact_manifest(&d, &json!({"volumeMounts": [mount("v", &vol)], "envFrom": [file_ref("v", "keys.env", false, Some(&prefix))]}));
    let out = envshim(["render", "--manifest", &m]).run();
    out.code(0).no_sentinel();
    assert_lines_bounded(&out);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    // The ten smallest keys in byte order: K0, K1, K10, K100, ...
    let first = format!("={}...K0, ", "x".repeat(128 - 3 - 3));
    assert!(lines[0].starts_with(&format!("envshim: warning: Keys [{first}")), "{}", &lines[0][..300]);
    assert!(
        lines[0].ends_with(&format!(
            "...K1005] and {} more from the EnvFrom file v/keys.env were skipped since they are considered invalid environment variable names.",
            n - 10
        )),
        "{}",
        lines[0]
    );
}

/// Item 1: many `envFrom` entries over a file whose keys are all invalid
/// under `--strict-names`: sixteen warnings, then one line counting the rest.
#[test]
fn warnings_are_bounded_in_number() {
    let vol = Volume::new();
    let keys: String = (0..100).map(|i| format!("{i}X=s3cr3t\n")).collect();
    vol.file("digits.env", keys);
    let d = Volume::new();
    let refs: Vec<Value> = (0..300).map(|_| file_ref("v", "digits.env", false, None)).collect();
    let m = compact_manifest(&d, &json!({"volumeMounts": [mount("v", &vol)], "envFrom": refs}));
    let out = envshim(["render", "--strict-names", "--manifest", &m]).run();
    out.code(0).no_sentinel();
    assert_lines_bounded(&out);
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 17, "{:?}", &lines[..3]);
    assert!(lines[..16].iter().all(|l| l.starts_with("envshim: warning: Keys [0X, 10X, 11X, ") && l.contains("] and 90 more from")), "{}", lines[0]);
    assert_eq!(lines[16], "envshim: warning: 284 more warnings not shown");
}

/// Errors too: `check` reports every problem, but prints at most 32 lines
/// (then one counting the rest) of at most 2,048 bytes each, so a manifest of
/// a thousand bad entries with 100 KB names prints a bounded amount. The
/// termination log gets the same lines (at most 4,096 bytes).
#[test]
fn error_lines_are_bounded_in_number_and_length() {
    let d = Volume::new();
    let long = format!("BAD={}", "n".repeat(100_000));
    let mut env: Vec<Value> = vec![json!({"name": long, "value": SENTINEL})];
    env.extend((0..999).map(|i| json!({"name": format!("BAD={i}"), "value": SENTINEL})));
    let m = compact_manifest(&d, &json!({ "env": env }));
    let log = d.join("termination-log");
    let out = envshim(["check", "--manifest", &m, "--termination-log", log.to_str().unwrap()]).run();
    let lines = out.fails(78);
    out.no_sentinel();
    assert_lines_bounded(&out);
    assert_eq!(lines.len(), 33);
    assert!(lines[0].starts_with("envshim: manifest: env[0].name: \"BAD=nnnn") && lines[0].ends_with(" [... cut]"), "{}", &lines[0][..100]);
    assert_eq!(lines[1], "envshim: manifest: env[1].name: \"BAD=0\" is not a valid variable name (printable ASCII except '=')");
    assert_eq!(lines[32], "envshim: 968 more errors not shown (the exit code is the first one's)");
    let logged = std::fs::read(&log).unwrap();
    assert!(logged.len() <= 4096 && out.stderr.starts_with(&logged), "{} bytes", logged.len());
}

/// Item 2: the same `envFrom` ~21,700 times (a manifest under 1 MiB) over a
/// 64 KiB file of ~21,800 duplicate lines. Before: every reference imported
/// every line (18-23 s in a release build). Now each reference imports the
/// file's final key set (one key), and the run succeeds at once. The source
/// line is still the last occurrence's.
#[test]
fn a_file_of_duplicates_named_21000_times_imports_its_final_keys_once_per_reference() {
    let vol = Volume::new();
    let mut text = "A=\n".repeat(21_843);
    text.push_str("A=last\n");
    assert!(text.len() <= 65_536);
    vol.file("d", &text);
    let d = Volume::new();
    let refs: Vec<Value> = (0..21_700).map(|_| short_ref("d")).collect();
    let m = compact_manifest(&d, &json!({"volumeMounts": [mount("v", &vol)], "envFrom": refs}));
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m]).run();
    out.code(0);
    // The duplicates: one warning for the file, however many references.
    assert_eq!(
        out.stderr_lines(),
        ["envshim: warning: volume v, path d: the name on line 1 is given again on line 2: the last one wins (the kubelet takes the first); 21842 more lines give a name again"]
    );
    let got = rendered(&out);
    assert_eq!(got.get("A"), Some(&("v/d:21844".to_string(), "last".to_string())));
}

/// Item 2: the same `envFrom` thousands of times over a file of ~9,500
/// distinct keys: the environment never grows (the same names again), so its
/// 6 MiB bound never fires; the imports' own bound (1,000,000 keys in all)
/// stops the run with one error (65) instead of 200 million updates.
#[test]
fn imports_past_their_bound_stop_with_one_error() {
    let vol = Volume::new();
    many_keys(&vol, "k", |i| format!("K{i}"));
    let d = Volume::new();
    let refs: Vec<Value> = (0..21_000).map(|_| short_ref("k")).collect();
    let m = compact_manifest(&d, &json!({"volumeMounts": [mount("v", &vol)], "envFrom": refs}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.fails_with(65, &["manifest: envFrom[195] (v/k): the imports pass 1000000 keys or 67108864 bytes in all"]);
    out.no_sentinel();
}

/// Item 2: a manifest naming hundreds of distinct 64 KiB files (by
/// `fileKeyRef`, into one variable, so the environment never grows). Before:
/// every file was read, parsed and kept (11,700 files: 2.7 GB, 17 s). Now the
/// files read together are bounded (16 MiB): one error (65), nothing more read.
#[test]
fn env_files_read_past_their_bound_stop_with_one_error() {
    let vol = Volume::new();
    let pad = "p".repeat(32_000);
    let content = format!("B={SENTINEL}\nPAD1={pad}\nPAD2={pad}\n");
    assert!(content.len() <= 65_536);
    let env: Vec<Value> = (0..300)
        .map(|i| {
            vol.file(&format!("f/{i}.env"), &content);
            file_key_ref("A", "v", &format!("f/{i}.env"), "B", false)
        })
        .collect();
    let d = Volume::new();
    let m = compact_manifest(&d, &json!({"volumeMounts": [mount("v", &vol)], "env": env}));
    let out = envshim(["check", "--manifest", &m]).run();
    out.fails_with(65, &["volume v, path f/261.env: the env files read pass 16777216 bytes in all; no more are read"]);
    out.no_sentinel();
}
