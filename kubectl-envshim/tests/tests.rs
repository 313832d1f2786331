//! The converter's integration tests: one test binary (as ripgrep and fd
//! have), so the suite links once. Each module is one subject;
//! `cargo test -p kubectl-envshim --test tests exact::` runs one of them.

#[path = "../../tests/suite_files.rs"]
mod suite_files;
mod support;

mod convert;
mod exact;
mod examples;
mod messages;
mod pipelines;
mod unconvert;
mod validate;
mod yaml;

#[test]
fn every_test_file_is_a_module_of_the_suite() {
    suite_files::assert_every_file_is_a_module(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"));
}
