//! Both crates build one test binary from `tests/tests.rs` (`autotests =
//! false`), so a new `tests/NAME.rs` runs only once it is named there as a
//! module: this check, shared by both suites, fails until it is.

use std::path::Path;

/// Asserts every `*.rs` of `dir` but `tests.rs` is a `mod NAME;` of `dir/tests.rs`.
pub fn assert_every_file_is_a_module(dir: &Path) {
    let suite = std::fs::read_to_string(dir.join("tests.rs")).unwrap();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let (Some(stem), Some("rs")) = (path.file_stem().and_then(|s| s.to_str()), path.extension().and_then(|e| e.to_str())) else { continue };
        if stem != "tests" {
            assert!(suite.contains(&format!("\nmod {stem};\n")), "{}: {stem}.rs is not a module of tests.rs", dir.display());
        }
    }
}
