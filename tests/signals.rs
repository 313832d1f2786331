//! envshim must hand the program the signal dispositions it was given:
//! Rust's runtime would ignore SIGPIPE, and that would survive execve.

use std::process::Command;

fn sig_ign(shell: &str) -> u64 {
    let out = Command::new("/bin/sh").arg("-c").arg(shell).env("E", env!("CARGO_BIN_EXE_envshim")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let hex = text.trim().strip_prefix("SigIgn:").unwrap().trim();
    u64::from_str_radix(hex, 16).unwrap()
}

const SIGPIPE_BIT: u64 = 1 << (libc::SIGPIPE - 1);

#[test]
fn sigpipe_is_not_ignored_in_the_program() {
    let ign = sig_ign(r#"trap - PIPE; exec "$E" run -- /bin/grep SigIgn /proc/self/status"#);
    assert_eq!(ign & SIGPIPE_BIT, 0, "SigIgn {ign:x}");
}

#[test]
fn an_inherited_ignored_sigpipe_is_kept() {
    let ign = sig_ign(r#"trap '' PIPE; exec "$E" run -- /bin/grep SigIgn /proc/self/status"#);
    assert_ne!(ign & SIGPIPE_BIT, 0, "SigIgn {ign:x}");
}
