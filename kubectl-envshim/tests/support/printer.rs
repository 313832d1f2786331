//! The program a converted container runs in `tests/exact.rs`: it writes its
//! argv and its environment to stdout, each item followed by a NUL
//! (`argc`, then the argv, then `NAME=VALUE` items), and exits 0.
//! Built by the test with rustc (no dependency), exec'd by absolute path.
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

fn main() {
    let mut out = Vec::new();
    let args: Vec<_> = std::env::args_os().collect();
    out.extend_from_slice(args.len().to_string().as_bytes());
    out.push(0);
    for a in &args {
        out.extend_from_slice(a.as_bytes());
        out.push(0);
    }
    for (k, v) in std::env::vars_os() {
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    std::io::stdout().write_all(&out).expect("write stdout");
}
