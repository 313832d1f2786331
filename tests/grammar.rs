//! The env-file grammar (docs/reference.md §4) through the binary: every row of
//! tests/data/envfile-grammar.json, invalid UTF-8, the byte-order mark, and
//! each limit at N and N+1.

use std::collections::BTreeMap;

use crate::common::*;
use serde_json::{json, Value};

const TABLE: &str = include_str!("data/envfile-grammar.json");

fn table() -> (String, Vec<Value>) {
    let doc: Value = serde_json::from_str(TABLE).unwrap();
    let sentinel = doc["sentinel"].as_str().unwrap().to_string();
    (sentinel, doc["rows"].as_array().unwrap().clone())
}

/// Expected final variables of a row: last occurrence wins (value and line).
fn expected(row: &Value) -> BTreeMap<String, (String, u64)> {
    let mut map = BTreeMap::new();
    for e in row["entries"].as_array().unwrap() {
        let e = e.as_array().unwrap();
        map.insert(e[0].as_str().unwrap().to_string(), (e[1].as_str().unwrap().to_string(), e[2].as_u64().unwrap()));
    }
    map
}

/// Words a message about each problem must contain (lower-cased).
fn problem_words(problem: &str) -> &'static [&'static str] {
    match problem {
        "ByteOrderMark" => &["byte-order mark"],
        "NoEquals" => &["'='"],
        "EmptyName" => &["empty name"],
        "InvalidName" => &["invalid name"],
        "UnclosedSingleQuote" => &["single quote", "never closed"],
        "UnclosedDoubleQuote" => &["double quote", "never closed"],
        "TextAfterQuote" => &["after a closing quote"],
        "NulInValue" => &["nul"],
        "InvalidUtf8" => &["utf-8"],
        other => panic!("unknown problem {other}"),
    }
}

#[test]
fn the_table_has_its_sentinel_and_rows() {
    let (sentinel, rows) = table();
    assert_eq!(sentinel, SENTINEL, "tests/common SENTINEL must match the table");
    assert!(rows.len() >= 50, "{} rows", rows.len());
    // Every error row carries the sentinel, so the leak checks below mean something,
    // except those whose input is too short to hold it.
    let with = rows.iter().filter(|r| r.get("error").is_some() && r["input"].as_str().unwrap().contains(&sentinel)).count();
    assert!(with >= 14, "{with} error rows with the sentinel");
}

/// Each valid row, as an `--env-file` with an empty environment: names,
/// values and source lines as in the table.
#[test]
fn every_valid_row_through_env_file() {
    let (_, rows) = table();
    let d = Volume::new();
    let mut n = 0;
    for (i, row) in rows.iter().enumerate().filter(|(_, r)| r.get("entries").is_some()) {
        let rule = row["rule"].as_str().unwrap();
        let path = d.file_str(&format!("row{i}.env"), row["input"].as_str().unwrap());
        let out = envshim(["render", "--format", "json", "--show-values", "--env-file", &path]).run();
        assert_eq!(out.code, 0, "rule {rule:?}: {}", out.stderr_str());
        // A row that gives a name twice gets the duplicates warning (by line, never a name or value), and only that.
        for line in out.stderr_lines() {
            assert!(
                line.starts_with(&format!("envshim: warning: env file {path}: the name on line ")) && line.contains("the last one wins"),
                "rule {rule:?}: {line}"
            );
        }
        let got = rendered(&out);
        let want = expected(row);
        let want: BTreeMap<String, (String, String)> = want.into_iter().map(|(k, (v, line))| (k, (format!("{path}:{line}"), v))).collect();
        assert_eq!(got, want, "rule {rule:?}");
        n += 1;
    }
    assert!(n >= 35);
}

/// The same rows through a volume: `envFrom.fileRef` (all keys) and
/// `fileKeyRef` (one key each), sources shown as VOLUME/PATH:LINE.
#[test]
fn every_valid_row_through_a_volume() {
    let (_, rows) = table();
    let vol = Volume::new();
    let d = Volume::new();
    for (i, row) in rows.iter().enumerate().filter(|(_, r)| r.get("entries").is_some()) {
        let rule = row["rule"].as_str().unwrap();
        let rel = format!("dir/row{i}.env");
        vol.file(&rel, row["input"].as_str().unwrap());
        let want = expected(row);
        let mut env = Vec::new();
        for (j, name) in want.keys().enumerate() {
            env.push(file_key_ref(&format!("K{j}"), "v", &rel, name, false));
        }
        let m = d.manifest(&json!({
            "volumeMounts": [mount("v", &vol)],
            "envFrom": [file_ref("v", &rel, false, Some("P_"))],
            "env": env,
        }));
        let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m]).run();
        assert_eq!(out.code, 0, "rule {rule:?}: {}", out.stderr_str());
        let got = rendered(&out);
        let mut expect = BTreeMap::new();
        for (j, (name, (value, line))) in want.iter().enumerate() {
            let source = format!("v/{rel}:{line}");
            expect.insert(format!("P_{name}"), (source.clone(), value.clone()));
            expect.insert(format!("K{j}"), (source, value.clone()));
        }
        assert_eq!(got, expect, "rule {rule:?}");
    }
}

/// Each error row: exit 65, one line naming the file and the line, saying
/// what is wrong, never holding the sentinel; the same through a volume, and
/// whether or not the reference is optional.
#[test]
fn every_error_row_fails_with_file_and_line() {
    let (_, rows) = table();
    let vol = Volume::new();
    let d = Volume::new();
    let mut n = 0;
    for (i, row) in rows.iter().enumerate().filter(|(_, r)| r.get("error").is_some()) {
        let rule = row["rule"].as_str().unwrap();
        let line = row["error"]["line"].as_u64().unwrap();
        let problem = row["error"]["problem"].as_str().unwrap();
        let input = row["input"].as_str().unwrap();

        let path = d.file_str(&format!("row{i}.env"), input);
        let log = d.join(&format!("row{i}.log"));
        let out = envshim(["render", "--show-values", "--termination-log", log.to_str().unwrap(), "--env-file", &path]).run();
        let msg = out.fails_with(65, &[&path, &format!("line {line}")]);
        let lower = msg.to_lowercase();
        for w in problem_words(problem) {
            assert!(lower.contains(w), "rule {rule:?}: message {msg:?} lacks {w:?}");
        }
        out.no_sentinel();
        assert!(out.stdout.is_empty(), "rule {rule:?}: render printed something");
        assert_no_sentinel(&std::fs::read(&log).unwrap(), "the termination log");

        let rel = format!("e/row{i}.env");
        vol.file(&rel, input);
        for optional in [false, true] {
            let m = d.manifest(&json!({
                "volumeMounts": [mount("v", &vol)],
                "envFrom": [file_ref("v", &rel, optional, None)],
            }));
            let out = envshim(["run", "--manifest", &m, "--", "/bin/true"]).run();
            out.fails_with(65, &[&format!("volume v, path {rel}"), &format!("line {line}")]);
            out.no_sentinel();
            let m = d.manifest(&json!({
                "volumeMounts": [mount("v", &vol)],
                "env": [file_key_ref("A", "v", &rel, "A", optional)],
            }));
            let out = envshim(["check", "--manifest", &m]).run();
            out.fails_with(65, &[&format!("volume v, path {rel}"), &format!("line {line}")]);
            out.no_sentinel();
        }
        n += 1;
    }
    assert!(n >= 16);
}

fn render_file(contents: impl AsRef<[u8]>) -> (Volume, String, Out) {
    let d = Volume::new();
    let path = d.file_str("f.env", contents);
    let out = envshim(["render", "--format", "json", "--show-values", "--env-file", &path]).run();
    (d, path, out)
}

#[test]
fn invalid_utf8_names_the_line() {
    let cases: &[(&[u8], u64)] = &[
        (b"A=\xff\n", 1),
        (b"A=1\nB=2\nC=ok\xc3(\n", 3),
        (b"# comment \xfe\n", 1),
        (b"A='multi\nline\n\xed\xa0\x80'\n", 3), // an encoded surrogate is not UTF-8
        (b"A=1\n\xc3", 2),                       // truncated sequence at the end
        (b"A=1\nN\xe9=x\n", 2),                  // Latin-1 in a name
    ];
    for (input, line) in cases {
        let (_d, path, out) = render_file(input);
        let msg = out.fails_with(65, &[&path, &format!("line {line}")]);
        assert!(msg.to_lowercase().contains("utf-8"), "{msg}");
    }
}

#[test]
fn byte_order_mark() {
    for input in [&b"\xef\xbb\xbfA=1\n"[..], b"\xef\xbb\xbf", b"\xef\xbb\xbf# only a comment\r\n"] {
        let (_d, path, out) = render_file(input);
        let msg = out.fails_with(65, &[&path, "line 1"]);
        assert!(msg.contains("byte-order mark"), "{msg}");
    }
    // U+FEFF anywhere else is just a character of a value.
    let (_d, _path, out) = render_file("A=x\u{feff}y\n");
    out.ok();
    assert_eq!(values(&rendered(&out))["A"], "x\u{feff}y");
}

// ---------------------------------------------------------------- limits at N and N+1

const FILE_LIMIT: usize = 65_536;
const NAME_LIMIT: usize = 128;
const VALUE_LIMIT: usize = 32_768;

/// A file of exactly `size` bytes: `A=1`, then comment lines as padding.
fn file_of(size: usize) -> Vec<u8> {
    let mut f = b"A=1\n".to_vec();
    while f.len() < size {
        let room = size - f.len();
        let line = room.min(1000);
        // "#" + filler + "\n", or a lone "\n" when only one byte is left.
        if line == 1 {
            f.push(b'\n');
        } else {
            f.push(b'#');
            f.extend(std::iter::repeat_n(b'x', line - 2));
            f.push(b'\n');
        }
    }
    assert_eq!(f.len(), size);
    f
}

#[test]
fn file_size_limit() {
    let (_d, _path, out) = render_file(file_of(FILE_LIMIT));
    out.ok();
    assert_eq!(values(&rendered(&out))["A"], "1");
    let (_d, path, out) = render_file(file_of(FILE_LIMIT + 1));
    let msg = out.fails_with(65, &[&path]);
    assert!(msg.contains("65536"), "{msg}");
    // Through a volume too.
    let vol = Volume::new();
    vol.file("big.env", file_of(FILE_LIMIT + 1));
    vol.file("ok.env", file_of(FILE_LIMIT));
    let d = Volume::new();
    for (path, code) in [("ok.env", 0), ("big.env", 65)] {
        let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("A", "v", path, "A", true)]}));
        envshim(["check", "--manifest", &m]).run().code(code);
    }
}

#[test]
fn name_length_limit() {
    for (len, code) in [(NAME_LIMIT, 0), (NAME_LIMIT + 1, 65)] {
        let name = "N".repeat(len);
        // Blanks around the name do not count.
        let (_d, path, out) = render_file(format!("A=1\n  {name}  =v\n"));
        if code == 0 {
            out.ok();
            assert_eq!(values(&rendered(&out))[&name], "v");
        } else {
            let msg = out.fails_with(65, &[&path, "line 2"]);
            assert!(!msg.contains(&name), "the name is shown: {msg}");
        }
        // After `export `, as well.
        let (_d, _path, out) = render_file(format!("export {name}=v\n"));
        out.code(code);
    }
}

#[test]
fn value_length_limit() {
    for (len, code) in [(VALUE_LIMIT, 0), (VALUE_LIMIT + 1, 65)] {
        let value = "v".repeat(len);
        let forms = [
            format!("A=1\nK={value}\n"),
            format!("A=1\nK='{value}'\n"),       // the quotes do not count
            format!("A=1\nK=\"{value}\" # c\n"), // nor a comment
            format!("A=1\nK={value}   \t\n"),    // nor trailing blanks
        ];
        for form in forms {
            let (_d, path, out) = render_file(&form);
            if code == 0 {
                out.ok();
                assert_eq!(values(&rendered(&out))["K"], value);
            } else {
                out.fails_with(65, &[&path, "line 2"]);
            }
        }
        // The limit is on the value after escapes: `\n` is one byte.
        let half = len / 2;
        let escaped = format!("K=\"{}{}\"\n", "\\n".repeat(half), "x".repeat(len - half));
        let (_d, path, out) = render_file(&escaped);
        if code == 0 {
            out.ok();
            assert_eq!(values(&rendered(&out))["K"].len(), len);
        } else {
            out.fails_with(65, &[&path, "line 1"]);
        }
        // A multi-line value: the line named is the one where it starts.
        let multi = format!("A=1\n\nK='{}\n{}'\n", "a".repeat(len - 10), "b".repeat(9));
        let (_d, path, out) = render_file(&multi);
        if code == 0 {
            out.ok();
        } else {
            out.fails_with(65, &[&path, "line 3"]);
        }
    }
}

#[test]
fn largest_entry_fits_in_the_largest_file() {
    // A name and a value at their limits in a file at its limit.
    let name = "N".repeat(NAME_LIMIT);
    let value = "v".repeat(VALUE_LIMIT);
    let mut f = format!("{name}={value}\n").into_bytes();
    let pad = FILE_LIMIT - f.len();
    f.push(b'#');
    f.extend(std::iter::repeat_n(b'x', pad - 2));
    f.push(b'\n');
    assert_eq!(f.len(), FILE_LIMIT);
    let (_d, _path, out) = render_file(&f);
    out.ok();
    assert_eq!(values(&rendered(&out))[&name], value);
}

#[test]
fn file_key_ref_key_length_limit() {
    let vol = Volume::new();
    let d = Volume::new();
    let ok = "K".repeat(NAME_LIMIT);
    let long = "K".repeat(NAME_LIMIT + 1);
    vol.file("k.env", format!("{ok}=fine\n"));
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("X", "v", "k.env", &ok, false)]}));
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m]).run();
    out.ok();
    assert_eq!(values(&rendered(&out))["X"], "fine");
    // 129 bytes: a configuration error (78) naming the entry, before any file is read.
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("X", "v", "k.env", &long, true)]}));
    envshim(["check", "--manifest", &m]).run().fails_with(78, &["env[0]", "fileKeyRef.key"]);
}

// ---------------------------------------------------------------- other rules

#[test]
fn names_in_files_use_the_relaxed_rule_whatever_strict_names_says() {
    // Relaxed names parse under --strict-names: the file is valid (the invalid
    // keys are skipped with a warning, not a 65).
    let d = Volume::new();
    let path = d.file_str("r.env", "1ABC=x\nOK=y\n");
    let out = envshim(["render", "--format", "json", "--show-values", "--strict-names", "--env-file", &path]).run();
    out.code(0);
    assert_eq!(values(&rendered(&out)).into_keys().collect::<Vec<_>>(), ["OK"]);
    // And names the relaxed rule refuses fail the file even when not used.
    let path = d.file_str("bad.env", "OK=y\nB\u{7f}=z\n");
    envshim(["render", "--env-file", &path]).run().fails_with(65, &["line 2"]);
}

#[test]
fn duplicates_last_occurrence_wins() {
    let (_d, path, out) = render_file("A=1\nB=x\nA=2\nA='3'\n");
    out.code(0);
    assert_eq!(out.stderr_str(), format!("envshim: warning: env file {path}: the name on line 1 is given again on line 3: the last one wins (the kubelet takes the first); 1 more line gives a name again\n"));
    let r = rendered(&out);
    assert_eq!(r["A"], (format!("{path}:4"), "3".to_string()));
    assert_eq!(r["B"], (format!("{path}:2"), "x".to_string()));
}

#[test]
fn values_from_files_are_not_expanded_by_render() {
    let (_d, _path, out) = render_file("A=$(HOME)\nB=\"$$\"\n");
    out.ok();
    let v = values(&rendered(&out));
    assert_eq!((v["A"].as_str(), v["B"].as_str()), ("$(HOME)", "$$"));
}
