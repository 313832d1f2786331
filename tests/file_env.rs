//! `--file-env NAME` (docs/reference.md §9.1): the `NAME_FILE` convention, rule by rule,
//! through the binary. Every secret file holds the sentinel; no failure,
//! termination log or masked render may show it.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

/// The secret as written by `echo SENTINEL > file`.
fn secret_file(v: &Volume, rel: &str) -> String {
    v.file_str(rel, format!("{SENTINEL}\n"))
}

/// `run --file-env NAMES... -- /usr/bin/env -0` with `vars` inherited: the program's environment.
fn env_with(args: &[&str], vars: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    let out = envshim(["run"]).args(args).envs(vars.iter().copied()).args(["--"]).args(print_env()).run();
    out.ok();
    out.env_map()
}

// ---------------------------------------------------------------- the value

#[test]
fn name_is_set_from_the_file_and_name_file_is_removed() {
    let v = Volume::new();
    let pw = secret_file(&v, "db_password");
    let env = env_with(&["--file-env", "DB_PASSWORD"], &[("DB_PASSWORD_FILE", &pw), ("OTHER", "1")]);
    assert_eq!(env.get("DB_PASSWORD").map(String::as_str), Some(SENTINEL));
    assert!(!env.contains_key("DB_PASSWORD_FILE"), "{env:?}");
    assert_eq!(env.get("OTHER").map(String::as_str), Some("1"));
}

#[test]
fn every_trailing_newline_is_removed_and_nothing_else() {
    let v = Volume::new();
    let cases: &[(&str, &str)] = &[
        ("s\n\n\n", "s"),
        ("two\nlines\n", "two\nlines"),
        ("crlf\r\n", "crlf\r"),
        ("  blanks\t", "  blanks\t"),
        ("\n", ""),
        ("", ""),
        ("$(HOME) is never expanded", "$(HOME) is never expanded"),
    ];
    for (i, (content, want)) in cases.iter().enumerate() {
        let p = v.file_str(&format!("f{i}"), content);
        let env = env_with(&["--file-env", "S"], &[("S_FILE", &p), ("HOME", "/root")]);
        assert_eq!(env.get("S").map(String::as_str), Some(*want), "content {content:?}");
    }
}

#[test]
fn the_value_limit_is_32768_bytes_after_the_newlines_go() {
    let v = Volume::new();
    let at_limit = v.file_str("at", format!("{}\n\n", "x".repeat(32_768)));
    let env = env_with(&["--file-env", "S"], &[("S_FILE", &at_limit)]);
    assert_eq!(env["S"].len(), 32_768);

    let over = v.file_str("over", format!("{SENTINEL}{}\n", "x".repeat(32_769 - SENTINEL.len())));
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &over).run();
    out.fails_with(65, &["S_FILE", &over, "32769 bytes", "32768"]);
    out.no_sentinel();
}

#[test]
fn a_nul_byte_is_refused() {
    let v = Volume::new();
    let p = v.file_str("nul", format!("{SENTINEL}\0x\n"));
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &p).run();
    out.fails_with(65, &["S_FILE", &p, "NUL"]);
    out.no_sentinel();
}

// ---------------------------------------------------------------- when nothing happens

#[test]
fn name_file_unset_or_empty_leaves_name_as_it_was() {
    let env = env_with(&["--file-env", "DB_PASSWORD"], &[("DB_PASSWORD", "kept")]);
    assert_eq!(env.get("DB_PASSWORD").map(String::as_str), Some("kept"));
    let env = env_with(&["--file-env", "DB_PASSWORD"], &[("DB_PASSWORD", "kept"), ("DB_PASSWORD_FILE", "")]);
    assert_eq!(env.get("DB_PASSWORD").map(String::as_str), Some("kept"));
    // Nothing happens: the empty NAME_FILE stays too.
    assert_eq!(env.get("DB_PASSWORD_FILE").map(String::as_str), Some(""));
    let env = env_with(&["--file-env", "DB_PASSWORD"], &[]);
    assert!(!env.contains_key("DB_PASSWORD"));
}

#[test]
fn both_set_is_an_error_but_an_empty_name_is_replaced() {
    let v = Volume::new();
    let pw = secret_file(&v, "pw");
    let log = v.join("termination-log");
    let out = envshim(["run", "--file-env", "DB_PASSWORD", "--termination-log", log.to_str().unwrap(), "--"])
        .args(print_env())
        .env("DB_PASSWORD", SENTINEL)
        .env("DB_PASSWORD_FILE", &pw)
        .run();
    let line = out.fails_with(78, &["both DB_PASSWORD and DB_PASSWORD_FILE are set (but are exclusive)"]);
    out.no_sentinel();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), format!("{line}\n"));

    let env = env_with(&["--file-env", "DB_PASSWORD"], &[("DB_PASSWORD", ""), ("DB_PASSWORD_FILE", &pw)]);
    assert_eq!(env.get("DB_PASSWORD").map(String::as_str), Some(SENTINEL));
}

// ---------------------------------------------------------------- order of application

/// After step 3: `NAME_FILE` may come from an env file, the manifest or
/// `--env` (expanded); `env` values were expanded before (they do not see the
/// value), the program line after (it does).
#[test]
fn applied_after_env_and_before_the_program_line() {
    let v = Volume::new();
    secret_file(&v, "secrets/pw");
    let files = v.file_str("from-file.env", format!("A_FILE={}\n", v.join("secrets/pw").display()));
    let m = v.manifest(&serde_json::json!({
        "env": [{"name": "B_FILE", "value": "$(DIR)/secrets/pw"}, {"name": "SEES_B", "value": "[$(B)]"}],
    }));
    let out = envshim(["run", "--manifest", &m, "--env-file", &files, "--file-env", "A,B,C"])
        .args(["--env", "C_FILE=$(DIR)/secrets/pw", "--env", "SEES_C=[$(C)]"])
        .env("DIR", v.dir())
        .args(["--"])
        .args(print_args("prog", &["$(A)", "$(B)", "$(C)"]))
        .run();
    out.ok();
    assert_eq!(out.args0(), ["prog", SENTINEL, SENTINEL, SENTINEL]);

    let env = env_with(
        &["--manifest", &m, "--env-file", &files, "--file-env", "A,B,C", "--env", "C_FILE=$(DIR)/secrets/pw", "--env", "SEES_C=[$(C)]"],
        &[("DIR", &v.dir())],
    );
    assert_eq!(env["SEES_B"], "[$(B)]");
    assert_eq!(env["SEES_C"], "[$(C)]");
    for n in ["A", "B", "C"] {
        assert_eq!(env[n], SENTINEL);
        assert!(!env.contains_key(&format!("{n}_FILE")));
    }
}

/// Names are applied in the order given: `B_FILE` then `B` differs from `B`
/// then `B_FILE` (the first one's result feeds the second).
#[test]
fn names_apply_in_the_order_given() {
    let v = Volume::new();
    let second = v.file_str("second", "from-second\n");
    let first = v.file_str("first", format!("{second}\n"));
    let vars = [("B_FILE_FILE", first.as_str())];
    // B_FILE first: B_FILE = content of `first` (the path of `second`); then B = content of `second`.
    let env = env_with(&["--file-env", "B_FILE,B"], &vars);
    assert_eq!(env.get("B").map(String::as_str), Some("from-second"));
    assert!(!env.contains_key("B_FILE") && !env.contains_key("B_FILE_FILE"));
    // B first: B_FILE is unset then (nothing happens); then B_FILE = the path of `second`.
    let env = env_with(&["--file-env", "B,B_FILE"], &vars);
    assert!(!env.contains_key("B"));
    assert_eq!(env.get("B_FILE").map(String::as_str), Some(second.as_str()));
}

/// A NAME_FILE removed by one name and set again by a later one is a new
/// variable: it comes last, once, like every variable set for the first time.
#[test]
fn a_removed_name_file_set_again_comes_last_once() {
    let v = Volume::new();
    let (b, b_file) = (v.file_str("b", "value-of-b\n"), v.file_str("b_file", "value-of-b-file\n"));
    let out = envshim(["run", "--file-env", "B,B_FILE", "--"])
        .envs([("A", "1"), ("B_FILE", b.as_str()), ("B_FILE_FILE", b_file.as_str()), ("C", "3")])
        .args(print_env())
        .run();
    out.ok();
    let env = out.env0();
    let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
    let at = |n: &str| names.iter().position(|&x| x == n).unwrap_or_else(|| panic!("{n} not in {names:?}"));
    assert!(at("A") < at("C") && at("C") < at("B") && at("B") < at("B_FILE"), "{names:?}");
    assert_eq!(names.iter().filter(|&&n| n == "B_FILE").count(), 1, "{names:?}");
    assert!(!names.contains(&"B_FILE_FILE"), "{names:?}");
    let map = out.env_map();
    assert_eq!((map["B"].as_str(), map["B_FILE"].as_str()), ("value-of-b", "value-of-b-file"));
}

/// Thousands of names (each removal is constant time; bench/scaling.py
/// measures the growth): every one set, every NAME_FILE gone.
#[test]
fn thousands_of_names() {
    let v = Volume::new();
    let n = 3000;
    let paths: Vec<String> = (0..n).map(|i| v.file_str(&format!("s{i}"), format!("{i}\n"))).collect();
    let vars: Vec<(String, String)> = (0..n).map(|i| (format!("S{i}_FILE"), paths[i].clone())).collect();
    let names: Vec<String> = (0..n).map(|i| format!("S{i}")).collect();
    let out = envshim(["run", "--file-env", &names.join(","), "--"]).envs(vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))).args(print_env()).run();
    out.ok();
    let env = out.env_map();
    for i in 0..n {
        assert_eq!(env.get(&format!("S{i}")).map(String::as_str), Some(i.to_string().as_str()));
        assert!(!env.contains_key(&format!("S{i}_FILE")));
    }
}

#[test]
fn lists_are_comma_separated_repeatable_and_come_from_envshim_file_env() {
    let v = Volume::new();
    let p = secret_file(&v, "s");
    let vars = [("A_FILE", p.as_str()), ("B_FILE", p.as_str()), ("C_FILE", p.as_str())];
    let env = env_with(&["--file-env", "A,B", "--file-env", "C"], &vars);
    assert!(["A", "B", "C"].iter().all(|n| env[*n] == SENTINEL), "{env:?}");

    let mut with_var = vars.to_vec();
    with_var.push(("ENVSHIM_FILE_ENV", "A,C"));
    let env = env_with(&[], &with_var);
    assert_eq!(env["A"], SENTINEL);
    assert_eq!(env["C"], SENTINEL);
    assert!(!env.contains_key("B") && env.contains_key("B_FILE"));
    assert!(!env.contains_key("ENVSHIM_FILE_ENV"));
    // The option, when given, replaces the variable (as --manifest does ENVSHIM_MANIFEST).
    let env = env_with(&["--file-env", "B"], &with_var);
    assert!(env.contains_key("B") && !env.contains_key("A") && env.contains_key("A_FILE"));
}

// ---------------------------------------------------------------- the path

#[test]
fn the_path_is_relative_to_the_working_directory_and_symlinks_are_followed() {
    let v = Volume::new();
    secret_file(&v, "real/pw");
    v.symlink("link", "real/pw");
    let out = envshim(["run", "--file-env", "R,L"]).env("R_FILE", "real/pw").env("L_FILE", "link").cwd(v.path()).args(["--"]).args(print_env()).run();
    out.ok();
    let env = out.env_map();
    assert_eq!(env["R"], SENTINEL);
    assert_eq!(env["L"], SENTINEL);
}

#[test]
fn missing_is_66_not_regular_is_78_and_a_fifo_fails_at_once() {
    let v = Volume::new();
    let missing = v.join("nope/pw");
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &missing).run();
    out.fails_with(66, &["S_FILE", missing.to_str().unwrap(), "not found"]);

    let dir = v.subdir("a-dir");
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &dir).run();
    out.fails_with(78, &["S_FILE", "not a regular file"]);

    let fifo = v.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &fifo).run();
    out.fails_with(78, &["S_FILE", "not a regular file"]);
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", "/dev/zero").run();
    out.fails_with(78, &["S_FILE", "/dev/zero", "not a regular file"]);
}

#[test]
fn permission_denied_is_77_and_names_the_uid() {
    let v = Volume::new();
    let p = secret_file(&v, "pw");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (shim, uid) = envshim(["check", "--file-env", "S"]).env("S_FILE", &p).unprivileged();
    if uid == 0 {
        return;
    }
    let out = shim.run();
    out.fails_with(77, &["S_FILE", &p, "permission denied", &format!("uid {uid}")]);
    out.no_sentinel();
}

/// A file larger than the limit is refused from its size, without being read.
#[test]
fn a_huge_file_fails_fast() {
    let v = Volume::new();
    let p = v.file_str("huge", SENTINEL);
    std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(10 << 30).unwrap();
    let out = envshim(["check", "--file-env", "S"]).env("S_FILE", &p).run();
    out.fails_with(65, &["S_FILE", "larger than 65536 bytes"]);
    out.no_sentinel();
    assert!(out.elapsed < std::time::Duration::from_secs(2), "{:?}", out.elapsed);
}

// ---------------------------------------------------------------- names

#[test]
fn each_name_is_checked_with_the_rule_in_force() {
    // Relaxed: '=' and the empty name are invalid.
    let out = envshim(["check", "--file-env", "A=B"]).run();
    out.fails_with(78, &["--file-env \"A=B\"", "not a valid variable name"]);
    let out = envshim(["check", "--file-env", "A,,B"]).run();
    out.fails_with(78, &["--file-env \"\"", "not a valid variable name"]);
    let out = envshim(["check"]).env("ENVSHIM_FILE_ENV", "").run();
    out.fails_with(78, &["--file-env \"\"", "not a valid variable name"]);
    // "1A" passes the relaxed rule, not the strict one.
    let v = Volume::new();
    let p = secret_file(&v, "pw");
    let env = env_with(&["--file-env", "1A"], &[("1A_FILE", &p)]);
    assert_eq!(env["1A"], SENTINEL);
    let out = envshim(["check", "--strict-names", "--file-env", "1A"]).env("1A_FILE", &p).run();
    out.fails_with(78, &["--file-env \"1A\"", "--strict-names"]);
    let out = envshim(["check", "--file-env", "1A"]).env("ENVSHIM_STRICT_NAMES", "1").run();
    out.fails_with(78, &["--file-env \"1A\""]);
}

// ---------------------------------------------------------------- render, check, messages

#[test]
fn render_shows_the_source_as_name_file_and_path_and_masks_the_value() {
    let v = Volume::new();
    let p = secret_file(&v, "run/secrets/db_password");
    let out = envshim(["render", "--file-env", "DB_PASSWORD"]).env("DB_PASSWORD_FILE", &p).run();
    out.ok().no_sentinel();
    assert_eq!(out.stdout_str(), format!("# DB_PASSWORD from DB_PASSWORD_FILE {p}\nDB_PASSWORD=<set, {} bytes>\n", SENTINEL.len()));

    let out = envshim(["render", "--format", "json", "--file-env", "DB_PASSWORD"]).env("DB_PASSWORD_FILE", &p).run();
    out.ok().no_sentinel();
    assert_eq!(out.json(), serde_json::json!({"DB_PASSWORD": {"source": format!("DB_PASSWORD_FILE {p}"), "bytes": SENTINEL.len()}}));

    let map = render_values(["--file-env", "DB_PASSWORD"]);
    assert!(map.is_empty(), "no DB_PASSWORD_FILE, nothing set: {map:?}");
}

#[test]
fn check_reports_every_problem_and_no_value() {
    let v = Volume::new();
    let big = v.file_str("big", format!("{SENTINEL}{}", "y".repeat(40_000)));
    let log = v.join("log");
    let out = envshim(["check", "--file-env", "A,B,C", "--termination-log", log.to_str().unwrap()])
        .env("A_FILE", v.join("missing"))
        .env("B", SENTINEL)
        .env("B_FILE", &big)
        .env("C_FILE", &big)
        .run();
    let lines = out.fails(66);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].contains("A_FILE") && lines[0].contains("not found"));
    assert!(lines[1].contains("both B and B_FILE are set (but are exclusive)"));
    assert!(lines[2].contains("C_FILE") && lines[2].contains("40021 bytes"));
    out.no_sentinel();
    assert_no_sentinel(&std::fs::read(&log).unwrap(), "the termination log");
}

#[test]
fn without_the_option_name_file_is_an_ordinary_variable() {
    let v = Volume::new();
    let p = secret_file(&v, "pw");
    let env = env_with(&[], &[("DB_PASSWORD_FILE", &p)]);
    assert_eq!(env.get("DB_PASSWORD_FILE"), Some(&p));
    assert!(!env.contains_key("DB_PASSWORD"));
}
