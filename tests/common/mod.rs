//! Helpers for the black-box tests: temp volumes (`volume`), volumes as the
//! kubelet writes and updates them (`atomic_writer`), running the built
//! binary hermetically (`shim`: cleared environment, explicit variables, a
//! timeout), checks on what it printed (`out`), runs signalled from outside
//! (`background`) and waited on (`run`: the `--init` and `--watch` tests'),
//! what `/proc` says of them (`procfs`);
//! here, which binary runs and the sentinel.
#![allow(dead_code)]

mod atomic_writer;
mod background;
mod out;
mod procfs;
mod run;
mod shim;
mod volume;

// The tests use every helper as `common::NAME`.
pub use atomic_writer::*;
pub use background::*;
pub use out::*;
pub use procfs::*;
pub use run::*;
pub use shim::*;
pub use volume::*;

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::OnceLock;

/// The binary cargo built.
pub const CARGO_BIN: &str = env!("CARGO_BIN_EXE_envshim");

/// The variable naming another binary to test. It is in envshim's own
/// namespace, so every command that runs envshim without clearing its
/// environment removes it ([`command`]): envshim would warn about it.
pub const TEST_BIN_VAR: &str = "ENVSHIM_TEST_BIN";

/// The binary the black-box tests run: `ENVSHIM_TEST_BIN` when set (any
/// build, such as the shipped dist/envshim-linux-amd64: tests/all.sh), else
/// [`CARGO_BIN`].
pub fn bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os(TEST_BIN_VAR) {
        // Absolute: runs change their working directory.
        Some(p) if !p.is_empty() => {
            let p = std::path::absolute(&p).expect("ENVSHIM_TEST_BIN");
            assert!(p.is_file(), "ENVSHIM_TEST_BIN={}: no such file", p.display());
            // Run under the name `envshim` (dist/envshim-linux-amd64 is not):
            // tests read it back as the process name and in usage lines.
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-bin");
            std::fs::create_dir_all(&dir).unwrap();
            let link = dir.join("envshim");
            let tmp = dir.join(format!("envshim.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&p, &tmp).unwrap();
            std::fs::rename(&tmp, &link).unwrap();
            link.into_os_string().into_string().expect("ENVSHIM_TEST_BIN: a UTF-8 path")
        }
        _ => CARGO_BIN.to_string(),
    })
}

/// The converter's binary, `kubectl-envshim` (`kubectl envshim fmt` is
/// its): cargo builds it beside [`CARGO_BIN`], in the same profile; built
/// (or found up to date) once a run, also when only this package's tests
/// were built (`cargo test -p envshim`).
pub fn converter() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = Path::new(CARGO_BIN).with_file_name("kubectl-envshim");
        let profile = match bin.parent().and_then(Path::file_name).and_then(OsStr::to_str) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let built = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "kubectl-envshim", "--bin", "kubectl-envshim", "--profile", profile])
            .status()
            .expect("cargo");
        assert!(built.success() && bin.is_file(), "cargo build -p kubectl-envshim: {built}, {}", bin.display());
        bin.into_os_string().into_string().expect("a UTF-8 path")
    })
}

/// The one sentinel's text, written once for both forms below.
macro_rules! sentinel {
    () => {
        "SENTINEL-s3cr3t-VALUE"
    };
}

/// A secret-looking value that must never be printed (the same text as the
/// `sentinel` field of tests/data/envfile-grammar.json).
pub const SENTINEL: &str = sentinel!();
/// The sentinel between two non-ASCII characters, so it can never be part of
/// a valid variable name (names from files are printed in the skipped-keys
/// warning, and that is allowed): for generated input that may put a value
/// where a name goes (tests/hostile).
pub const SENTINEL_NOT_A_NAME: &str = concat!("秘", sentinel!(), "秘");
/// A fragment of it: a truncated or partly escaped leak still shows this.
pub const SENTINEL_FRAGMENT: &str = "s3cr3t";

/// True when the tests run as root (and so can drop privileges).
pub fn am_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Asserts `bytes` holds neither the sentinel nor a fragment of it.
#[track_caller]
pub fn assert_no_sentinel(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert!(!text.contains(SENTINEL) && !text.contains(SENTINEL_FRAGMENT), "the sentinel leaked into {what}:\n{text}");
}

pub fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> OsString {
    s.as_ref().to_os_string()
}
