//! The house's budgets that a reader cannot see at a glance, checked on the
//! repository's own files (read from `CARGO_MANIFEST_DIR`, `target/` and
//! hidden directories left out): no Rust file over [`MAX_LINES`] lines. (The
//! other, the crate's own sort instead of std's, is clippy's
//! `disallowed-methods` in clippy.toml.)

use std::path::{Path, PathBuf};

/// The most lines a source or test file has; a longer one is split into
/// child modules, one concern each.
const MAX_LINES: usize = 600;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, build outputs (`target/`) and hidden directories
/// (`.git`, `.cargo`) left out, sorted (so the failure lists are stable).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    dirs.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

#[test]
fn no_rust_file_is_over_the_line_budget() {
    let rust: Vec<PathBuf> = files_under(&root()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "rs")).collect();
    assert!(rust.iter().any(|p| p.ends_with("src/lib.rs")), "the walk finds the crate's sources");
    assert!(rust.iter().any(|p| p.ends_with("kubectl-envshim/src/lib.rs")), "and the converter's");
    let over: Vec<String> = rust
        .iter()
        .filter_map(|p| {
            let lines = std::fs::read_to_string(p).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{}: {lines} lines", shown(p)))
        })
        .collect();
    assert!(over.is_empty(), "over {MAX_LINES} lines (split into child modules by concern):\n{}", over.join("\n"));
}
