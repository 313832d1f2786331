//! Hostile input, black box: runs the built binary the way a compromised
//! neighbour container, a broken manifest or an odd volume would meet it.
//!
//! - Generated garbage (seeded, deterministic): hundreds of env files and
//!   manifests; never a panic (101) or a signal, never a hang, every stderr
//!   line starts `envshim: `, and a sentinel planted in values never reaches
//!   stderr, the termination log or masked `render` output.
//! - Bounded reads: `/dev/zero`, FIFOs, directories, sockets, character
//!   devices and a 50 MB file, as `--env-file`, through a volume, and as the
//!   manifest, fail well under a second with a clear error, and the 50 MB file
//!   does not raise peak memory (measured with `wait4`).
//! - Path escapes: `..`, absolute symlinks and symlink chains climbing out of
//!   the volume never read outside it; the ConfigMap `..data` layout works.
//!   The same table runs with `openat2` refused by a seccomp filter (ENOSYS,
//!   as on kernels before 5.6, and EPERM, as under old container profiles),
//!   so the fallback resolver is tested for real.
//! - Permission denied (as uid 65534, when run as root): exit 77 naming the
//!   file and the uid.
//! - `execve` limits: a `NAME=VALUE` over 131,071 bytes is refused (126)
//!   naming the variable, exactly at the boundary, and expansion that
//!   multiplies a value is refused without exhausting memory.
mod bounded_reads;
mod execve_limits;
mod garbage_env_files;
mod garbage_manifests;
mod path_escapes;
mod permissions;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{am_root, assert_no_sentinel, deny_openat2, envshim, os, Out, Shim, SENTINEL_FRAGMENT, SENTINEL_NOT_A_NAME};

/// Exit codes docs/reference.md §7 allows.
const EXIT_CODES: &[i32] = &[0, 2, 65, 66, 77, 78, 126, 127];

/// `envshim ARGS` as every hostile run is made: only `PATH` inherited, killed after 10 s.
fn shim<S: AsRef<OsStr>>(args: &[S]) -> Shim {
    envshim(args).env("PATH", "/usr/bin:/bin").timeout(Duration::from_secs(10))
}

/// The checks every run gets: no panic, no signal, a known exit code, every
/// stderr line `envshim: `-prefixed.
fn sane(out: &Out, what: &str) {
    assert!(out.code >= 0, "{what}: killed by signal {}; stderr: {}", -out.code, out.stderr_str());
    let code = out.code;
    assert_ne!(code, 101, "{what}: panic: {}", out.stderr_str());
    assert!(EXIT_CODES.contains(&code), "{what}: exit {code}: {}", out.stderr_str());
    for line in out.stderr_str().lines() {
        assert!(line.starts_with("envshim: "), "{what}: stderr line without prefix: {line:?}");
    }
}

/// The name libtest knows a test of module `module` (`module_path!()`) by, for `--exact`.
fn test_name(module: &str, test: &str) -> String {
    let module = module.split_once("::").map_or("", |(_, m)| m);
    format!("{module}::{test}")
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------
// A deterministic RNG (xorshift64*), so every run generates the same cases.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}
