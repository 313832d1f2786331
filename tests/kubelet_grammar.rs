//! `--env-grammar kubelet` (docs/reference.md §4): every env file read exactly
//! as the kubelet 1.35 reads it, and `check --env-grammar kubelet`, the
//! portability lint. Through the binary: the kubelet's own cases
//! (`tests/data/kubelet-parse-env.json`), then one test for each class of line
//! that envshim's grammar reads otherwise.

use crate::common::*;
use serde_json::{json, Value};

fn table() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kubelet-parse-env.json");
    let table: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    table["rows"].as_array().unwrap().clone()
}

/// `OUT` from `key` of `content` by `fileKeyRef` (`optional` as given), read with `grammar`.
fn read_as(grammar: &str, content: &str, key: &str, optional: bool) -> Out {
    let (_v, _d, m) = setup(&[("f.env", content)], json!({"env": [file_key_ref("OUT", "v", "f.env", key, optional)]}));
    envshim(["run", "--env-grammar", grammar, "--manifest", &m, "--"]).args(print_env()).run()
}

fn read(content: &str, key: &str, optional: bool) -> Out {
    read_as("kubelet", content, key, optional)
}

/// Every case of the kubelet's table gives what the kubelet gives: the
/// value, nothing (an optional reference is unset; a required one fails,
/// 66), or a failure (65) naming the kubelet's line.
#[test]
fn every_case_of_the_kubelets_table() {
    for row in table() {
        let (name, content, key) = (row["name"].as_str().unwrap(), row["content"].as_str().unwrap(), row["key"].as_str().unwrap());
        let out = read(content, key, true);
        if let Some(e) = row.get("error") {
            let line = format!("line {}", e["line"]);
            out.fails_with(65, &["volume v, path f.env", &format!("{line}:")]);
            continue;
        }
        let env = out.ok().env_map();
        assert_eq!(env.get("OUT").map(String::as_str), row["value"].as_str(), "{name}");
        if row["value"].is_null() {
            read(content, key, false).fails_with(66, &["key", "not found"]);
        }
    }
}

/// Each class of line the two grammars read differently, with a sentinel in
/// its value: (what it is, the file, the key, the kubelet's value or None).
fn classes() -> Vec<(&'static str, String, &'static str, Option<String>)> {
    let s = SENTINEL;
    vec![
        ("a line after the key is not read", format!("K='{s}'\nbroken line {s}\n"), "K", Some(s.to_string())),
        ("the first occurrence wins", format!("K='first'\nK='{s}'\n"), "K", Some("first".into())),
        ("a blank after '=' finds nothing", format!("K= '{s}'\n"), "K", None),
        ("the empty value finds nothing, and hides later lines", format!("K=''\nK='{s}'\n"), "K", None),
        ("export is part of the name", format!("export K='{s}'\n"), "K", None),
    ]
}

/// What the kubelet finds, envshim's grammar reads otherwise: these are
/// the tests that fail without `--env-grammar kubelet`.
#[test]
fn each_class_reads_as_the_kubelet_reads_it() {
    for (what, content, key, kubelet) in classes() {
        let out = read(&content, key, true);
        out.stderr_no_sentinel();
        assert_eq!(out.ok().env_map().get("OUT"), kubelet.as_ref(), "{what}");
        // envshim's grammar fails the file, or reads another value.
        let forgiving = read_as("envshim", &content, key, true);
        assert!(forgiving.code != 0 || forgiving.env_map().get("OUT") != kubelet.as_ref(), "{what}: envshim's grammar reads it alike");
    }
}

/// Lines the kubelet fails on, in the forms people write for Docker's
/// `--env-file`, dotenv and Compose: 65, the file and the line, no value.
#[test]
fn forms_the_kubelet_rejects_fail_with_its_reason() {
    let s = SENTINEL;
    for (line, reason) in [
        (format!("K={s}"), "not enclosed in single quotes"),
        (format!("K=\"{s}\""), "not enclosed in single quotes"),
        ("K=".to_string(), "not enclosed in single quotes"),
        (format!("K ='{s}'"), "a blank before '='"),
        (format!("  K = {s}"), "a blank before '='"),
        (format!("K='{s}' {s}"), "text after a closing quote"),
        (format!("K='{s}"), "never closed"),
    ] {
        let out = read(&format!("A='1'\n{line}\n"), "K", true);
        out.fails_with(65, &["volume v, path f.env, line 2", reason]);
        out.no_sentinel();
    }
}

/// A file imported whole (`--env-file`, `fileRef`) fails at the kubelet's
/// first failing line; its keys are the first occurrences, empty values unset.
#[test]
fn a_whole_file_reads_as_the_kubelet_reads_each_key() {
    let v = Volume::new();
    let good = v.file_str("good.env", "A='1'\nA='2'\nexport B='3'\nC=''\nD= 'x'\n");
    let env = envshim(["run", "--env-grammar", "kubelet", "--env-file", &good, "--"]).args(print_env()).run().ok().env_map();
    assert_eq!(env.get("A").map(String::as_str), Some("1"));
    assert_eq!(env.get("export B").map(String::as_str), Some("3"));
    assert!(!env.contains_key("B") && !env.contains_key("C") && !env.contains_key("D"));
    let bad = v.file_str("bad.env", format!("A='1'\nB={SENTINEL}\n"));
    let out = envshim(["run", "--env-grammar", "kubelet", "--env-file", &bad, "--", "/bin/true"]).run();
    out.fails_with(65, &["--env-file", "bad.env, line 2"]);
    out.no_sentinel();
}

/// The variable ENVSHIM_ENV_GRAMMAR chooses it too; a word that is neither is a usage error.
#[test]
fn the_variable_chooses_the_grammar() {
    let out = read("K=plain\n", "K", true);
    out.code(65);
    let (_v, _d, m) = setup(&[("f.env", "K=plain\n")], json!({"env": [file_key_ref("OUT", "v", "f.env", "K", true)]}));
    envshim(["run", "--manifest", &m, "--", "/bin/true"]).env("ENVSHIM_ENV_GRAMMAR", "kubelet").run().fails_with(65, &["line 1"]);
    envshim(["run", "--manifest", &m, "--", "/bin/true"]).env("ENVSHIM_ENV_GRAMMAR", "envshim").run().ok();
    envshim(["run", "--manifest", &m, "--", "/bin/true"])
        .env("ENVSHIM_ENV_GRAMMAR", "shell")
        .run()
        .fails_with(2, &["ENVSHIM_ENV_GRAMMAR", "envshim or kubelet"]);
    envshim(["run", "--env-grammar", "dotenv", "--manifest", &m, "--", "/bin/true"]).run().fails_with(2, &["--env-grammar", "envshim or kubelet"]);
}

/// The portability lint: every line the kubelet would reject or read
/// otherwise, `FILE:LINE: reason`, exit 65, never a value; in JSON too.
#[test]
fn check_lists_every_line_the_kubelet_reads_otherwise() {
    let s = SENTINEL;
    let content = format!("A='{s}'\nB={s}\nexport C='{s}'\nD= '{s}'\nE=''\nA='{s}'\nF = '{s}'\nG='{s}' {s}\n# fine\nH='{s}'\n");
    let (_v, _d, m) = setup(&[("f.env", &content)], json!({"env": [file_key_ref("OUT", "v", "f.env", "A", false)]}));
    let out = envshim(["check", "--env-grammar", "kubelet", "--manifest", &m, "--", "/bin/true"]).run();
    out.code(65);
    out.no_sentinel();
    let lines = out.stderr_lines();
    for (n, reason) in [
        (2, "single quotes"),
        (3, "'export'"),
        (4, "a blank after '='"),
        (5, "empty value"),
        (6, "first on line 1"),
        (7, "a blank before '='"),
        (8, "text after a closing quote"),
    ] {
        assert!(lines.iter().any(|l| l.contains(&format!("f.env:{n}: ")) && l.contains(reason)), "line {n} ({reason}) not listed: {lines:#?}");
    }
    assert!(!lines.iter().any(|l| l.contains("f.env:1:") || l.contains("f.env:9:") || l.contains("f.env:10:")), "{lines:#?}");

    let out = envshim(["check", "--env-grammar", "kubelet", "--format", "json", "--manifest", &m, "--", "/bin/true"]).run();
    out.code(65);
    out.no_sentinel();
    let doc = out.json();
    let listed: Vec<u64> = doc["errors"].as_array().unwrap().iter().filter(|e| e["file"] == "v/f.env").map(|e| e["line"].as_u64().unwrap()).collect();
    assert_eq!(listed, [2, 3, 4, 5, 6, 7, 8]);

    // envshim's own grammar fails only line 8; a file in the kubelet's grammar passes the lint.
    let lines = envshim(["check", "--manifest", &m, "--", "/bin/true"]).run().fails(65);
    assert!(lines.len() == 1 && lines[0].contains("line 8:"), "{lines:#?}");
    let (_v, _d, m) = setup(&[("f.env", "# ok\n A='1' # c\nB='two\nlines'\n")], json!({"envFrom": [file_ref("v", "f.env", false, None)]}));
    envshim(["check", "--env-grammar", "kubelet", "--strict", "--manifest", &m, "--", "/bin/true"]).run().ok();
}

/// A line the kubelet fails on is reported once for its file, however many
/// entries read past it (each of them fails all the same).
#[test]
fn a_failing_line_is_reported_once_a_file() {
    let content = format!("A={SENTINEL}\nB='2'\n");
    let entries: Vec<Value> = (0..5).map(|i| file_key_ref(&format!("V{i}"), "v", "f.env", "B", false)).collect();
    let (_v, _d, m) = setup(&[("f.env", &content)], json!({"env": entries}));
    let out = envshim(["run", "--env-grammar", "kubelet", "--manifest", &m, "--", "/bin/true"]).run();
    let lines = out.fails(65);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(lines[0].contains("env[0] (V0): volume v, path f.env, line 1:"), "{lines:#?}");
    out.no_sentinel();
}

/// The kubelet reads a file with Go's line scanner, whose lines hold at most
/// 64 KiB with the line feed: a file of one 65,536-byte line without one
/// (the most a file can be) fails its read ("token too long"), whatever the
/// key. `--env-grammar kubelet` fails it on line 1 (the lint too); envshim's
/// grammar reads it; a byte less is read by both.
#[test]
fn a_line_too_long_for_the_kubelets_reader_fails_the_read() {
    let v = Volume::new();
    let line = |len: usize| format!("K='v' #{}", "x".repeat(len - 7));
    let long = v.file_str("long.env", line(65_536));
    for (sub, at) in [("run", "long.env, line 1:"), ("check", "long.env:1:")] {
        let out = envshim([sub, "--env-grammar", "kubelet", "--env-file", &long, "--", "/bin/true"]).run();
        out.fails_with(65, &[at, "without a line feed", "token too long"]);
    }
    let env = envshim(["run", "--env-file", &long, "--"]).args(print_env()).run().ok().env_map();
    assert_eq!(env.get("K").map(String::as_str), Some("v"));
    let shorter = v.file_str("shorter.env", line(65_535));
    let env = envshim(["run", "--env-grammar", "kubelet", "--env-file", &shorter, "--"]).args(print_env()).run().ok().env_map();
    assert_eq!(env.get("K").map(String::as_str), Some("v"));
    // With its line feed, a line of 65,535 bytes fills the scanner's buffer exactly.
    let ended = v.file_str("ended.env", line(65_535) + "\n");
    envshim(["check", "--env-grammar", "kubelet", "--env-file", &ended]).run().ok();
}

/// A file at the size limit made of short lines, the last without a line
/// feed, is no long line: the kubelet's reader takes it line by line (Go's
/// `bufio.Scanner`), and so do the lint, `fmt --check` and the read (the
/// lint and `fmt` measured the whole file as one line).
#[test]
fn a_file_of_short_lines_at_the_size_limit_is_no_long_line() {
    let v = Volume::new();
    let mut text = String::new();
    while text.len() < 65_536 - 200 {
        text += &format!("K{}='{}'\n", text.len(), "v".repeat(100));
    }
    text += &format!("LAST='{}'", "w".repeat(65_536 - text.len() - 7));
    assert_eq!((text.len(), text.lines().count()), (65_536, 596));
    let f = v.file_str("full.env", &text);
    envshim(["check", "--env-grammar", "kubelet", "--env-file", &f]).run().ok();
    let out = kubectl_envshim(["fmt", "--check", &f]).run();
    out.ok();
    assert!(out.stdout.is_empty(), "{}", out.stdout_str());
    let env = envshim(["run", "--env-grammar", "kubelet", "--env-file", &f, "--"]).args(print_env()).run().ok().env_map();
    assert_eq!(env.get("LAST").map(String::len), Some(65_536 - text.rfind('\n').unwrap() - 1 - 7));
}

/// For a file envshim's grammar reads, the lint names every change a line
/// needs at once, and `kubectl envshim fmt` as the fix; a value that has no form in
/// the kubelet's grammar (a `'` in it, the empty value) is said to be one,
/// with what to do instead. Never a value.
#[test]
fn the_lint_lists_every_change_of_a_line_in_one_round() {
    let s = SENTINEL;
    let v = Volume::new();
    let f = v.file_str("team.env", format!("export DB_USER = \"{s}\"\nC='{s}'\nC='{s}-2'\nPW=it's-{s}\nFLAGS=\nOK='{s}'\n"));
    let out = envshim(["check", "--env-grammar", "kubelet", "--env-file", &f]).run();
    let lines = out.fails(65);
    out.no_sentinel();
    let line = |n: usize| lines.iter().find(|l| l.contains(&format!("team.env:{n}: "))).unwrap_or_else(|| panic!("line {n} not listed: {lines:#?}"));
    for part in ["no 'export'", "no blank before '='", "no blank after '='", "single quotes", "(kubectl envshim fmt makes these changes)"] {
        assert!(line(1).contains(part), "{part}: {}", line(1));
    }
    assert!(line(2).contains("given again on line 3") && line(2).contains("kubectl envshim fmt writes"), "{}", line(2));
    for part in ["single quote (')", "cannot express", "--file-env", "base64"] {
        assert!(line(4).contains(part), "{part}: {}", line(4));
    }
    assert!(!line(4).contains("text after a closing quote"), "{}", line(4));
    assert!(line(5).contains("empty") && line(5).contains("cannot express"), "{}", line(5));
    assert_eq!(lines.len(), 4, "{lines:#?}");
    // After `kubectl envshim fmt`, what is left is what it cannot write.
    kubectl_envshim(["fmt", &f]).run().fails(65);
    let fixed = v.file_str("fixed.env", format!("export DB_USER = \"{s}\"\nC='{s}'\nC='{s}-2'\nOK='{s}'\n"));
    kubectl_envshim(["fmt", &fixed]).run().ok();
    envshim(["check", "--env-grammar", "kubelet", "--env-file", &fixed]).run().ok();
}
