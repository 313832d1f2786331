//! A newcomer's three tasks each open few files (docs/contributing.md),
//! and these tests keep it so where a test can see it: adding a setting to
//! `--watch` is its definition, the code that uses it and the docs (the
//! converter flattens the definition: the setting is its option too, and the
//! converter's tests derive their lists from it); fixing a rule of the watcher is
//! its pure decision and that decision's unit tests; changing a rule of the
//! env-file grammar is its tokenizer (src/envfile/lex.rs), the table its
//! tests read (tests/data/envfile-grammar.json) and docs/reference.md §4.

use std::path::{Path, PathBuf};

use clap::Args;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Rust files under `dir`, recursively.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// A file's lines that are not whole-line comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

/// `--watch`'s settings, from their definition: each as its long name
/// (`watch-settle`) and its id (`settle`, the field's name), the ways a list
/// of them could be typed.
fn watch_settings() -> Vec<[String; 2]> {
    let defined = envshim::WatchOptions::augment_args(clap::Command::new("run"));
    defined.get_arguments().map(|a| [a.get_long().unwrap().to_string(), a.get_id().to_string()]).collect()
}

/// No list of the watch settings is typed anywhere but their definition (as
/// `HIDDEN_IN_RENDER` and `WATCH_SETTINGS` once were, string lists of their
/// ids that nothing checked): a file of either crate spelling two of them or
/// more in a string (`"watch-settle"`, `"--watch-settle"`, `"settle"`) would
/// be another place to change when one is added. (The converter's options
/// are envshim's definition, flattened.)
#[test]
fn the_watch_settings_are_listed_only_where_they_are_defined() {
    let settings = watch_settings();
    assert!(settings.len() >= 6, "{settings:?}");
    let definition = root().join("src/watch/settings.rs");
    let mut lists = Vec::new();
    for file in rust_files(&root().join("src")).into_iter().chain(rust_files(&root().join("kubectl-envshim/src"))) {
        let code = code(&file);
        let quoted = |w: &String| code.contains(&format!("\"{w}\"")) || code.contains(&format!("\"--{w}\""));
        let named: Vec<&String> = settings.iter().filter(|s| s.iter().any(quoted)).map(|s| &s[0]).collect();
        if file != definition && named.len() > 1 {
            lists.push(format!("{}: {named:?}", file.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(code(&definition).matches("#[arg(long").count() >= settings.len(), "the definition is where the watch settings are spelt");
    assert!(lists.is_empty(), "a list of the watch settings outside their definition (derive it from WatchOptions):\n{}", lists.join("\n"));
}

/// SPEC 14's rules are one pure decision: events, reads and the clock in,
/// actions out, with no process, file, clock or sleep of its own, so each
/// rule has a unit test beside it that runs in microseconds.
#[test]
fn the_watchers_rules_are_a_pure_decision_with_a_unit_test_each() {
    let text = std::fs::read_to_string(root().join("src/watch/decide.rs")).unwrap();
    let (rules, tests) = text.split_once("#[cfg(test)]").expect("decide.rs has its unit tests");
    for effect in ["Instant::now", "sleep", "std::fs", "crate::sys", "nix::", "report::", "print!", "println!", "eprintln!", "std::process"] {
        assert!(!rules.contains(effect), "src/watch/decide.rs's rules use {effect}: an effect belongs in src/watch.rs, the decision only says what to do");
    }
    // SPEC 14, one test at least a rule (named for it).
    for rule in ["quiet_period", "poll", "read_twice", "invalid", "one_program_at_a_time", "sigterm", "splay", "signal"] {
        assert!(tests.lines().any(|l| l.trim_start().starts_with("fn ") && l.contains(rule)), "no unit test of the rule {rule:?} in src/watch/decide.rs");
    }
}

/// The env-file grammar is its parser's (src/envfile/) and the table its
/// tests read (tests/data/envfile-grammar.json): no other module of the
/// shim parses an env file's syntax itself. Inside src/envfile/, each rule
/// (comments, `export`, where an unquoted value ends, escapes) is written once,
/// in the tokenizer (lex.rs) that the parsers, the reference and the portable
/// writer share: no other file of it spells a rule's own bytes. (The fast
/// path's test of a line's first `#` is its shortcut, held to the general
/// parser by its tests; the unit tests spell inputs.)
#[test]
fn the_env_file_grammar_lives_in_its_parser() {
    let table = std::fs::read_to_string(root().join("tests/data/envfile-grammar.json")).unwrap();
    assert!(table.len() > 1000, "the grammar's table is data");
    let lexer = root().join("src/envfile/lex.rs");
    let shortcut = (root().join("src/envfile/fast.rs"), "data[pos] == b'#'");
    // The rules' own bytes: the comment's `#`, `export`, an escape's letter.
    let rules = ["b'#'", "b\"export\"", "b'n' =>"];
    for file in rust_files(&root().join("src")) {
        let relative = file.strip_prefix(root()).unwrap();
        let code = code(&file);
        if relative.starts_with("src/envfile") || relative == Path::new("src/envfile.rs") {
            let code = if file == shortcut.0 { code.replacen(shortcut.1, "", 1) } else { code };
            if file == lexer || relative.ends_with("tests.rs") {
                continue;
            }
            for word in rules {
                assert!(!code.contains(word), "{} spells a rule of the env-file grammar ({word}); the rules belong in src/envfile/lex.rs", relative.display());
            }
            continue;
        }
        // The grammar's own words: its quoting and `export` rules.
        for word in ["b\"export\"", "\"export \"", "b'\\''"] {
            assert!(!code.contains(word), "{} parses env-file syntax ({word}); the grammar belongs in src/envfile/", relative.display());
        }
    }
    for word in rules {
        assert!(code(&lexer).contains(word), "src/envfile/lex.rs holds the rule spelt {word}");
    }
}
