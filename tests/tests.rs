//! The shim's integration tests: one test binary (as ripgrep and fd have), so
//! the suite links once and runs in one process. Each module is one subject;
//! `cargo test --test tests cli::` runs one of them. The black-box modules run
//! the binary `ENVSHIM_TEST_BIN` names (default: the one cargo built; see
//! `common::bin`), so the same suite checks a release build too (tests/all.sh).

mod common;

mod bounded;
mod check;
mod cli;
mod cli_docs;
mod converted;
mod env_dir;
mod failures;
mod file_env;
mod grammar;
mod habits;
mod hostile;
mod init;
mod kubelet;
mod layers;
mod leak;
mod manifest_json;
mod mistakes;
mod precedence;
mod props;
mod render;
mod signals;
mod wait;

/// Cargo builds only this file's tree (`autotests = false`): a new
/// `tests/NAME.rs` is a module that must be named above, or it never runs.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let suite = std::fs::read_to_string(dir.join("tests.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let (Some(stem), Some("rs")) = (path.file_stem().and_then(|s| s.to_str()), path.extension().and_then(|e| e.to_str())) else { continue };
        if stem != "tests" {
            assert!(suite.contains(&format!("\nmod {stem};\n")), "tests/{stem}.rs is not a module of tests/tests.rs");
        }
    }
}
