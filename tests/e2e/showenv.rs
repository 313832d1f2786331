//! showenv: the static test program the e2e tests run inside containers.
//! It needs no libc at run time and no shell.
//!
//!   showenv [ARGS...]            print pid, argv and environment, exit 0
//!   showenv write PATH CONTENT   write CONTENT to PATH (an "initContainer" that
//!                                writes an env file), exit 0
//!   showenv exit N               exit with code N
//!   showenv sleep N              print `sleeping`, then sleep N seconds (a program
//!                                with no signal handler, for the stop tests), exit 0
//!
//! Output, one item per line: `arch=ARCH`, `pid=N`, `ppid=N`, `pid1=COMM` (the name of
//! PID 1, e.g. `app`, `docker-init`), `argc=N`, `argv[i]=...`,
//! `env:NAME=VALUE` (environment sorted by name).
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

fn main() {
    let args: Vec<_> = std::env::args_os().collect();
    if args.len() == 4 && args[1] == "write" {
        std::fs::write(&args[2], args[3].as_bytes()).expect("write");
        return;
    }
    if args.len() == 3 && args[1] == "exit" {
        std::process::exit(args[2].to_str().and_then(|s| s.parse().ok()).unwrap_or(1));
    }
    if args.len() == 3 && args[1] == "sleep" {
        println!("sleeping");
        let secs = args[2].to_str().and_then(|s| s.parse().ok()).unwrap_or(60);
        std::thread::sleep(std::time::Duration::from_secs(secs));
        return;
    }
    let mut out = Vec::new();
    let ppid = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| s.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1).map(String::from)))
        .unwrap_or_else(|| "?".into());
    writeln!(out, "arch={}", std::env::consts::ARCH).unwrap();
    writeln!(out, "pid={}", std::process::id()).unwrap();
    writeln!(out, "ppid={ppid}").unwrap();
    let pid1 = std::fs::read_to_string("/proc/1/comm").unwrap_or_else(|_| "?".into());
    writeln!(out, "pid1={}", pid1.trim_end()).unwrap();
    writeln!(out, "argc={}", args.len()).unwrap();
    for (i, a) in args.iter().enumerate() {
        out.extend_from_slice(format!("argv[{i}]=").as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.push(b'\n');
    }
    let mut env: Vec<_> = std::env::vars_os().collect();
    env.sort();
    for (k, v) in env {
        out.extend_from_slice(b"env:");
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v.as_bytes());
        out.push(b'\n');
    }
    std::io::stdout().write_all(&out).unwrap();
}
