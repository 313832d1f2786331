//! The differences from the kubelet that no other test pinned
//! (docs/kubelet-differences.md lists every difference and its test), through
//! the binary.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use crate::common::*;
use serde_json::json;

/// `K= 'v' x`: the kubelet skips the line; envshim fails the whole file (65),
/// naming the line, as for anything after a closing quote, and never shows the text.
#[test]
fn blank_then_quoted_value_then_text_fails_the_file() {
    for line in [format!("K= 'v' {SENTINEL}"), format!("K=\t\"v\"{SENTINEL}"), format!("export K= 'v' {SENTINEL}")] {
        let (_v, _d, m) = setup(&[("a.env", &format!("A=1\n{line}\n"))], json!({"env": [file_key_ref("A", "v", "a.env", "A", false)]}));
        let out = envshim(["run", "--manifest", &m, "--", "/bin/true"]).run();
        out.fails_with(65, &["volume v, path a.env", "line 2"]);
        out.no_sentinel();
    }
}

/// `K= 'v'`: the kubelet assigns the empty string (then treats it as not
/// found); envshim reads `v`, the blanks after `=` being ignored as everywhere.
#[test]
fn blank_then_quoted_value_is_the_quoted_value() {
    let (_v, _d, m) = setup(&[("a.env", "K= 'v'\nD=\t\"w x\"\n")], json!({"envFrom": [file_ref("v", "a.env", false, None)]}));
    let env = envshim(["run", "--manifest", &m, "--"]).args(print_env()).run().ok().env_map();
    assert_eq!((env["K"].as_str(), env["D"].as_str()), ("v", "w x"));
}

/// An invalid UTF-8 byte after `$` is copied as it is (the kubelet's Go
/// strings write U+FFFD instead), in an `--env` value and in the program line.
#[test]
fn invalid_utf8_after_dollar_is_copied() {
    let mut value = b"V=a$".to_vec();
    value.extend_from_slice(&[0xff, b'b']);
    let mut arg = b"x$".to_vec();
    arg.push(0xfe);
    let out = envshim(["run", "--env"])
        .arg(OsString::from_vec(value))
        .args(["--", "/bin/sh", "-c", "printf '%s\\0' \"$V\" \"$1\"", "sh"])
        .arg(OsString::from_vec(arg))
        .run();
    out.ok();
    let printed: Vec<&[u8]> = out.stdout.split(|&b| b == 0).collect();
    assert_eq!(printed[0], b"a$\xffb");
    assert_eq!(printed[1], b"x$\xfe");
}

/// The kubelet expands a container's args once; in baked-in use envshim expands
/// what reaches it again. `$$(VAR)` in a Pod's args reaches envshim as `$(VAR)`
/// (the kubelet's pass), which envshim then resolves from the environment it built.
#[test]
fn a_program_line_is_expanded_again_by_envshim() {
    let (_v, _d, m) = setup(&[("a.env", "VAR=from-file\n")], json!({"envFrom": [file_ref("v", "a.env", false, None)]}));
    // What the kubelet leaves of `$$(VAR)` and `$$$$(VAR)`.
    let out = envshim(["run", "--manifest", &m, "--"]).args(print_args("p", &["$(VAR)", "$$(VAR)"])).run();
    out.ok();
    assert_eq!(out.args0(), ["p", "from-file", "$(VAR)"]);
}
