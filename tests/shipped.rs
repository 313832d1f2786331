//! What ships, held to its size: the amd64 release binary
//! (`./musl-build.sh amd64`, docs/performance.md's current figures). It
//! needs that build, so the quick tier leaves it out; tests/all.sh runs it
//! after its end-to-end stage has built dist/. The binary is
//! `ENVSHIM_TEST_BIN` when that names an `envshim-linux-amd64`, else the
//! checkout's `dist/envshim-linux-amd64`; without one, it fails.

use std::path::{Path, PathBuf};

use crate::common::TEST_BIN_VAR;

/// The size budget of `dist/envshim-linux-amd64` (docs/performance.md).
const AMD64_BUDGET: u64 = 520_000;

/// The name musl-build.sh gives the amd64 binary in dist/.
const AMD64_NAME: &str = "envshim-linux-amd64";

#[test]
#[ignore = "needs the shipped binary: ./musl-build.sh amd64 (tests/all.sh builds it)"]
fn the_shipped_amd64_binary_is_within_its_size_budget() {
    let given = std::env::var_os(TEST_BIN_VAR).map(PathBuf::from).filter(|p| p.file_name().is_some_and(|n| n == AMD64_NAME));
    let path = given.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("dist").join(AMD64_NAME));
    let elf = std::fs::read(&path).unwrap_or_else(|e| panic!("needs the shipped binary, {}: {e} (./musl-build.sh amd64)", path.display()));
    // An x86-64 ELF executable (e_machine 62), so a file of another build under the name cannot pass.
    assert!(elf.starts_with(b"\x7fELF") && elf.get(18..20) == Some(&[62, 0]), "{}: not an x86-64 ELF file", path.display());
    let size = elf.len() as u64;
    let figure = format!("{} is {} B", path.display(), thousands(size));
    assert!(size <= AMD64_BUDGET, "{figure}, over its {} B budget by {} B", thousands(AMD64_BUDGET), thousands(size - AMD64_BUDGET));
    eprintln!("{figure}, {} B under its {} B budget", thousands(AMD64_BUDGET - size), thousands(AMD64_BUDGET));
}

/// `n` with a comma between each group of three digits, as docs/performance.md writes sizes.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    out
}
