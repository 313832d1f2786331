//! EXPERIMENT (bench/size.sh variant `no-clap`), not part of the build: the
//! command line parsed by hand instead of with clap, to measure what clap costs
//! in size and start-up time. A prototype: help text and messages are not the
//! real ones, and it may need refreshing when src/main.rs or Options change.
#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

const HELP: &str = "A container entrypoint: kubelet-exact env files, fileKeyRef and $(VAR) expansion, then exec.

Usage: envshim <COMMAND>

Commands:
  run      Build the environment, then execve PROGRAM (or supervise it with --init)
  check    Validate everything run would; exec nothing
  render   Print the final environment and where each variable came from
  install  Copy this binary to DEST atomically (no shell needed)
  help     Print this message or the help of the given subcommand(s)

Options (run, check, render):
      --manifest <PATH>          The JSON manifest [env: ENVSHIM_MANIFEST] [default: /etc/envshim/manifest.json if it exists]
      --env-file <PATH>          Load every key of an env file (repeatable)
      --env <NAME=VALUE>         Set a variable, expanded like a manifest env value (repeatable)
      --volume <NAME=DIR>        Mount a volume name on a directory, as in volumeMounts (repeatable)
      --strict-names             Validate names with the strict legacy rule [env: ENVSHIM_STRICT_NAMES]
      --no-service-url           Do not add KUBERNETES_SERVICE_URL
      --termination-log <PATH>   Also write failures here [default: /dev/termination-log if it exists and is writable]
run:  --no-expand-args --init --init-group --term-delay <DURATION> [--] PROGRAM [ARGS...]
render: --format <env|json> --show-values
  -h, --help     Print help
  -V, --version  Print version
";

fn duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("expected a whole number and a unit (500ms, 5s, 1m, 1h), got {text:?}");
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u32 = number.parse().map_err(|_| bad())?;
    let millis: u64 = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(u64::from(n) * millis))
}

fn env_flag(name: &str) -> Result<bool, String> {
    let Some(v) = std::env::var_os(name) else { return Ok(false) };
    match v.to_str().map(str::to_ascii_lowercase).as_deref() {
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        _ => Err(format!("{name} must be one of 1/0, true/false, yes/no, on/off")),
    }
}

fn parse(args: Vec<OsString>) -> Result<i32, String> {
    let mut it = args.into_iter().skip(1).peekable();
    let sub = it.next().ok_or("a subcommand is required: run, check, render or install (see envshim --help)")?;
    let sub = sub.to_str().unwrap_or("").to_owned();
    match sub.as_str() {
        "-h" | "--help" | "help" => { print!("{HELP}"); return Ok(0); }
        "-V" | "--version" => { println!("envshim {}", env!("CARGO_PKG_VERSION")); return Ok(0); }
        "install" => {
            let dest = it.next().ok_or("install needs DEST")?;
            return Ok(envshim::install(&PathBuf::from(dest)));
        }
        "run" | "check" | "render" => {}
        other => return Err(format!("unrecognized subcommand '{other}' (see envshim --help)")),
    }
    let mut o = envshim::Options::default();
    let mut format = envshim::Format::Env;
    let mut show_values = false;
    while let Some(a) = it.next() {
        let b = a.as_bytes();
        if b == b"--" { o.program.extend(it.by_ref()); break; }
        if !b.starts_with(b"-") { o.program.push(a); o.program.extend(it.by_ref()); break; }
        let (flag, inline) = match b.iter().position(|&c| c == b'=') {
            Some(i) if b.starts_with(b"--") => (&b[..i], Some(OsString::from(std::ffi::OsStr::from_bytes(&b[i + 1..])))),
            _ => (b, None),
        };
        let mut value = |name: &str| -> Result<OsString, String> {
            inline.clone().or_else(|| it.next()).ok_or_else(|| format!("a value is required for '{name}' but none was supplied (see envshim --help)"))
        };
        match flag {
            b"--manifest" => o.manifest = Some(value("--manifest <PATH>")?),
            b"--env-file" => o.env_files.push(value("--env-file <PATH>")?),
            b"--env" => o.envs.push(value("--env <NAME=VALUE>")?),
            b"--volume" => o.volumes.push(value("--volume <NAME=DIR>")?),
            b"--termination-log" => o.termination_log = Some(value("--termination-log <PATH>")?),
            b"--strict-names" => o.strict_names = true,
            b"--no-service-url" => o.no_service_url = true,
            b"--no-expand-args" if sub == "run" => o.no_expand_args = true,
            b"--init" if sub == "run" => o.init = true,
            b"--init-group" if sub == "run" => o.init_group = true,
            b"--term-delay" if sub == "run" => o.term_delay = Some(duration(&value("--term-delay")?.to_string_lossy())?),
            b"--show-values" if sub == "render" => show_values = true,
            b"--format" if sub == "render" => format = match value("--format")?.as_bytes() { b"env" => envshim::Format::Env, b"json" => envshim::Format::Json, _ => return Err("invalid value for '--format' [possible values: env, json]".into()) },
            b"-h" | b"--help" => { print!("{HELP}"); return Ok(0); }
            _ => return Err(format!("unexpected argument '{}' found (see envshim --help)", a.to_string_lossy())),
        }
    }
    if o.manifest.is_none() { o.manifest = std::env::var_os("ENVSHIM_MANIFEST"); }
    o.strict_names |= env_flag("ENVSHIM_STRICT_NAMES")?;
    Ok(match sub.as_str() {
        "run" => {
            o.init |= env_flag("ENVSHIM_INIT")?;
            if !o.init && (o.init_group || o.term_delay.is_some()) {
                return Err("--init-group and --term-delay need --init (or ENVSHIM_INIT)".into());
            }
            envshim::run(&o)
        }
        "check" => { if !o.program.is_empty() { return Err("check takes no program line".into()); } envshim::check(&o) }
        _ => envshim::render(&o, format, show_values),
    })
}

#[no_mangle]
extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    match parse(unsafe { envshim::sys::args(argc, argv) }) {
        Ok(s) => s,
        Err(m) => { eprintln!("envshim: {m}"); envshim::error::code::USAGE }
    }
}
