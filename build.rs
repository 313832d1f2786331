//! What `envshim --version` says besides the version: the commit, the target
//! and the compiler, as `BUILD_*` variables for `env!` (src/cli.rs; not
//! `ENVSHIM_*`: cargo sets them for the tests' processes too, and envshim
//! warns about an `ENVSHIM_*` variable it does not know).
//! Without git (a source tarball), or when the package is not
//! the top of its git checkout (vendored inside another repository), the commit
//! is `unknown` unless `ENVSHIM_BUILD_COMMIT` gives it.
use std::path::Path;
use std::process::Command;

/// A command's trimmed standard output, when it succeeds and prints something.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok().filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=ENVSHIM_BUILD_COMMIT");
    let here = std::env::var("CARGO_MANIFEST_DIR").ok().and_then(|d| Path::new(&d).canonicalize().ok());
    let ours = output("git", &["rev-parse", "--show-toplevel"]).and_then(|t| Path::new(&t).canonicalize().ok()).is_some_and(|top| Some(top) == here);
    let commit = std::env::var("ENVSHIM_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| ours.then(|| output("git", &["rev-parse", "--short=12", "HEAD"])).flatten());
    if ours {
        // Build again when HEAD moves: HEAD itself, the branch it points to, packed refs.
        let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
        watched.extend(output("git", &["symbolic-ref", "-q", "HEAD"]));
        for name in watched {
            // A path that does not exist would make cargo run this script at every build.
            if let Some(path) = output("git", &["rev-parse", "--git-path", &name]).filter(|p| Path::new(p).exists()) {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["-V"]).map(|v| v.trim_start_matches("rustc ").to_string());
    println!("cargo:rustc-env=BUILD_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
    println!("cargo:rustc-env=BUILD_TARGET={}", std::env::var("TARGET").unwrap_or_else(|_| "unknown".into()));
    println!("cargo:rustc-env=BUILD_RUSTC={}", version.as_deref().unwrap_or("unknown"));
}
