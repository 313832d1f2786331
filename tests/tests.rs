//! The shim's integration tests: one test binary (as ripgrep and fd have), so
//! the suite links once and runs in one process. Each module is one subject;
//! `cargo test --test tests cli::` runs one of them. The black-box modules run
//! the binary `ENVSHIM_TEST_BIN` names (default: the one cargo built; see
//! `common::bin`), so the same suite checks a release build too (tests/all.sh).

// Tests may sort with std: clippy.toml's rule of the shim's own sort is for the binary's size.
#![allow(clippy::disallowed_methods)]

mod common;

mod bounded;
mod budgets;
mod check;
mod cli;
mod cli_docs;
mod config_values;
mod converted;
mod env_dir;
mod failures;
mod file_env;
mod fmt;
mod fmt_props;
mod fmt_replace;
mod grammar;
mod habits;
mod hostile;
mod init;
mod kubelet;
mod kubelet_grammar;
mod layers;
mod leak;
mod listen;
mod manifest_json;
mod mistakes;
mod newcomer;
mod precedence;
mod props;
mod render;
mod shipped;
mod signals;
mod suite_files;
mod wait;
mod watch;

#[test]
fn every_test_file_is_a_module_of_the_suite() {
    suite_files::assert_every_file_is_a_module(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
}
