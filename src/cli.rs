//! The command line (docs/reference.md §1), defined once: each option's name,
//! configuration variable, help and default are written here, in clap's
//! derive, and nowhere else. The binary parses with it ([`parse`]), the man
//! pages and completions are generated from it (tools/cli-docs.rs), and the
//! tests read it. What the library sees is the plain values [`parse`] builds
//! from clap's result ([`Invocation`]): `options.rs` makes them, `usage.rs`
//! turns a refused command line into one line.
//!
//! Adding an option (docs/contributing.md): a field here, with its help and,
//! if it has one, its variable (`env = "ENVSHIM_..."`); the field of the
//! library's options it fills (`pipeline::Options` and its kin), set in
//! `options.rs`; and the code that uses it.

mod options;
mod usage;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::envfile::Grammar;
use crate::watch::OnChange;

pub use options::{parse, Invocation, Refused};
pub use usage::refused_line;

/// The end of `--help` (and of `run`, `check` and `render --help`).
pub const EXIT_CODES: &str = "\
Exit codes:
  0      success (run: the program's own code, as envshim becomes the program;
         with --init, also a code given to --success-exit)
  2      usage error: a bad option or configuration variable, no program line
  65     an env file does not parse, has an invalid name or exceeds a limit;
         an --env-dir or NAME_FILE value is too large or holds a NUL
  66     a file, directory or key is missing and not optional (with --wait:
         after waiting)
  71     with --init: a system call envshim needs failed
  73     install cannot create DEST
  74     render cannot write its output
  75     with --watch --on-change exit: a change stopped the program
  77     permission denied reading a file
  78     configuration: the manifest, a volume, a path, an env name; with
         check --strict, a warning
  126    the program cannot be executed, or argv/env too large for execve
  127    the program was not found
  128+N  signal N: the program's, with --init; or envshim's own during start-up";

/// `--version`: the crate's version, then what build.rs found (a build without
/// git, from a source tarball, says `unknown` unless ENVSHIM_BUILD_COMMIT is set).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ", env!("BUILD_COMMIT"),
    "\ntarget: ", env!("BUILD_TARGET"),
    "\nrustc: ", env!("BUILD_RUSTC"),
);

#[derive(Parser)]
#[command(name = "envshim", version, long_version = LONG_VERSION, after_help = EXIT_CODES, about = "A container entrypoint: kubelet-exact env files, fileKeyRef and $(VAR) expansion, then exec.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// `defer`: only the subcommand in use has its arguments built (a start
/// pays for `run`'s, not for every subcommand's).
#[derive(Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Build the environment, then execve PROGRAM (or supervise it with --init)
    #[command(after_help = EXIT_CODES)]
    Run(RunArgs),
    /// Validate everything run would; exec nothing
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Print the final environment and where each variable came from
    #[command(after_help = EXIT_CODES)]
    Render(RenderArgs),
    /// Copy this binary to DEST atomically (no shell needed)
    Install(InstallArgs),
}

#[derive(Args)]
#[group(skip)]
pub struct RunArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub reading: Reading,
    #[command(flatten)]
    pub supervision: Supervision,
    #[command(flatten)]
    pub watching: Watching,
    /// The program line: PROGRAM [ARGS...] (after -- or the first non-option word)
    #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
    pub program: Vec<OsString>,
}

#[derive(Args)]
#[group(skip)]
pub struct CheckArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub reading: Reading,
    #[command(flatten)]
    pub supervision: Supervision,
    #[command(flatten)]
    pub watching: Watching,
    /// Fail on every warning too (exit 78 unless the problem has a code of its own)
    #[arg(long)]
    pub strict: bool,
    /// text (the default) or json: every problem and warning in one document on stdout
    #[arg(long, value_enum, value_name = "text|json")]
    pub format: Option<CheckFormat>,
    /// The program line to check, as run would take it (after -- or the first non-option word)
    #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
    pub program: Vec<OsString>,
}

// `render` starts no program: the options that only concern one are not in
// its help. They are still accepted (docs/reference.md §1: one table of options for run,
// check and render, so one command line serves the three), and change nothing.
// (`//`: a doc comment would be render's help.)
#[derive(Args)]
#[group(skip)]
#[command(
    mut_arg("no_expand_args", |a| a.hide(true)),
    mut_arg("init", |a| a.hide(true)),
    mut_arg("init_group", |a| a.hide(true)),
    mut_arg("term_delay", |a| a.hide(true)),
    mut_arg("success_exits", |a| a.hide(true)),
    mut_arg("rewrite_signals", |a| a.hide(true)),
    mut_arg("watch", |a| a.hide(true)),
    mut_arg("on_change", |a| a.hide(true)),
    mut_arg("restart_signal", |a| a.hide(true)),
    mut_arg("restart_timeout", |a| a.hide(true)),
    mut_arg("watch_settle", |a| a.hide(true)),
    mut_arg("watch_poll", |a| a.hide(true)),
    mut_arg("watch_splay", |a| a.hide(true)),
    mut_arg("verbose", |a| a.hide(true))
)]
pub struct RenderArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub reading: Reading,
    #[command(flatten)]
    pub supervision: Supervision,
    #[command(flatten)]
    pub watching: Watching,
    /// env (an env file with sources as comments) or json
    #[arg(long, value_enum, default_value = "env")]
    pub format: RenderFormat,
    /// Print values (they are masked by default)
    #[arg(long)]
    pub show_values: bool,
}

#[derive(Args)]
#[group(skip)]
pub struct InstallArgs {
    /// Where to copy it (into a directory: DEST/envshim); only an envshim binary is replaced
    #[arg(value_name = "DEST")]
    pub dest: PathBuf,
    /// Replace DEST even if it is not envshim
    #[arg(long)]
    pub force: bool,
}

// The options of run, check and render (one table for the three), in three
// groups by concern. A configuration variable is `env = "ENVSHIM_..."`; its
// value is never shown in the help (`hide_env_values`: `ENVSHIM_MANIFEST_JSON`
// is a whole manifest). (`//` comments: a doc comment on these structs would
// be the subcommands' help.) Each group is built by a function of its own
// (clap's derive writes one per struct): one function for all twenty options
// took a 40 KiB stack frame, ten stack pages faulted in at every start (and
// a group flattened in one struct only was inlined back into it).

// Where the environment comes from: the manifest, env files and directories, variables and volumes.
#[derive(Args)]
#[group(skip)]
pub struct Sources {
    /// The JSON manifest [default: /etc/envshim/manifest.json if it exists]
    #[arg(long, value_name = "PATH", env = "ENVSHIM_MANIFEST", hide_env_values = true)]
    pub manifest: Option<OsString>,
    /// The manifest's JSON text itself, instead of a file
    #[arg(long = "manifest-json", value_name = "TEXT", env = "ENVSHIM_MANIFEST_JSON", hide_env_values = true)]
    pub manifest_json: Option<OsString>,
    /// Use the container NAME of a Pod, workload or List manifest
    #[arg(long, value_name = "NAME", env = "ENVSHIM_CONTAINER", hide_env_values = true)]
    pub container: Option<OsString>,
    /// Load every key of an env file (repeatable; the files of ENVSHIM_ENV_FILE, comma-separated, come after these)
    #[arg(long = "env-file", value_name = "PATH", allow_hyphen_values = true, env = "ENVSHIM_ENV_FILE", hide_env_values = true)]
    pub env_files: Vec<OsString>,
    /// Every regular file directly in DIR becomes a variable named after it, its bytes the value (repeatable, comma-separated)
    #[arg(long = "env-dir", value_name = "DIR[,DIR...]", value_delimiter = ',', env = "ENVSHIM_ENV_DIR", hide_env_values = true)]
    pub env_dirs: Vec<OsString>,
    /// Set a variable, expanded like a manifest env value (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    pub envs: Vec<OsString>,
    /// Mount a volume name on a directory, as in volumeMounts (repeatable)
    #[arg(long = "volume", value_name = "NAME=DIR")]
    pub volumes: Vec<OsString>,
    /// When NAME_FILE is set, set NAME from the file it names and remove NAME_FILE (repeatable, comma-separated)
    #[arg(long = "file-env", value_name = "NAME[,NAME...]", value_delimiter = ',', env = "ENVSHIM_FILE_ENV", hide_env_values = true)]
    pub file_env: Vec<OsString>,
}

// How the sources are read and checked, and what envshim reports.
#[derive(Args)]
#[group(skip)]
pub struct Reading {
    /// How env files are read: envshim (its grammar: unquoted, single- and double-quoted values, the last occurrence wins) or kubelet (exactly as the kubelet 1.35: NAME='value' only, the first occurrence wins; with check, also lists every line the kubelet would reject or read differently) [default: envshim]
    #[arg(long = "env-grammar", value_name = "envshim|kubelet", env = "ENVSHIM_ENV_GRAMMAR", hide_env_values = true, value_parser = env_grammar)]
    pub env_grammar: Option<Grammar>,
    /// Validate names with the strict legacy rule
    #[arg(long, env = "ENVSHIM_STRICT_NAMES", hide_env_values = true, value_parser = switch)]
    pub strict_names: bool,
    /// Wait up to DURATION for missing files that are not optional (500ms, 30s, 2m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = crate::wait::duration, env = "ENVSHIM_WAIT", hide_env_values = true)]
    pub wait: Option<Duration>,
    /// Do not add KUBERNETES_SERVICE_URL
    #[arg(long)]
    pub no_service_url: bool,
    /// Do not expand $(VAR) in the trailing PROGRAM/ARGS
    #[arg(long, env = "ENVSHIM_NO_EXPAND_ARGS", hide_env_values = true, value_parser = switch)]
    pub no_expand_args: bool,
    /// Also write failures here [default: /dev/termination-log if it exists and is writable]
    #[arg(long, value_name = "PATH")]
    pub termination_log: Option<OsString>,
    /// Print each variable's source and size on stderr first
    #[arg(long, short, env = "ENVSHIM_VERBOSE", hide_env_values = true, value_parser = switch)]
    pub verbose: bool,
}

// `--init`: envshim stays as PID 1 and supervises the program.
#[derive(Args)]
#[group(skip)]
pub struct Supervision {
    /// Stay as PID 1: fork, exec the program, forward signals, reap zombies
    #[arg(long, env = "ENVSHIM_INIT", hide_env_values = true, value_parser = switch)]
    pub init: bool,
    /// With --init, forward signals to the child's whole process group
    #[arg(long)]
    pub init_group: bool,
    /// With --init, hold the first SIGTERM this long before forwarding it (500ms, 5s, 1m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = crate::wait::duration)]
    pub term_delay: Option<Duration>,
    /// With --init, the program's exit code CODE (0-255; 128+N for signal N) counts as success: envshim exits 0 (repeatable)
    #[arg(long = "success-exit", value_name = "CODE", value_parser = exit_code)]
    pub success_exits: Vec<u8>,
    /// With --init, forward a received signal FROM as TO (TERM:QUIT, 15:3; TO 0 drops it) (repeatable)
    #[arg(long = "rewrite-signal", value_name = "FROM:TO", value_parser = crate::init::parse_rewrite)]
    pub rewrite_signals: Vec<(i32, i32)>,
}

// `--watch`: envshim restarts (or signals) the program when its sources change.
#[derive(Args)]
#[group(skip)]
pub struct Watching {
    /// Restart the program when a file its environment or program line came from changes (implies --init)
    #[arg(long, env = "ENVSHIM_WATCH", hide_env_values = true, value_parser = switch)]
    pub watch: bool,
    /// With --watch, what a change does: restart (the program), exit, or signal:SIG (only send it SIG) [default: restart]
    #[arg(long = "on-change", value_name = "ACTION", env = "ENVSHIM_ON_CHANGE", hide_env_values = true, value_parser = crate::watch::parse_on_change)]
    pub on_change: Option<OnChange>,
    /// With --watch, the signal that stops the program for a restart [default: TERM]
    #[arg(long = "restart-signal", value_name = "SIG", env = "ENVSHIM_RESTART_SIGNAL", hide_env_values = true, value_parser = crate::watch::parse_signal)]
    pub restart_signal: Option<i32>,
    /// With --watch, how long a stopping program gets before SIGKILL to its process group [default: 10s]
    #[arg(long = "restart-timeout", value_name = "DURATION", env = "ENVSHIM_RESTART_TIMEOUT", hide_env_values = true, value_parser = crate::wait::duration)]
    pub restart_timeout: Option<Duration>,
    /// With --watch, the quiet time after a change before the files are read again [default: 1s]
    #[arg(long = "watch-settle", value_name = "DURATION", env = "ENVSHIM_WATCH_SETTLE", hide_env_values = true, value_parser = crate::wait::duration)]
    pub watch_settle: Option<Duration>,
    /// With --watch, how often the files are read again without an event [default: 60s]
    #[arg(long = "watch-poll", value_name = "DURATION", env = "ENVSHIM_WATCH_POLL", hide_env_values = true, value_parser = crate::watch::parse_poll)]
    pub watch_poll: Option<Duration>,
    /// With --watch, a random delay of up to DURATION before a change is acted on [default: 0]
    #[arg(long = "watch-splay", value_name = "DURATION", env = "ENVSHIM_WATCH_SPLAY", hide_env_values = true, value_parser = crate::wait::duration)]
    pub watch_splay: Option<Duration>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum RenderFormat {
    Env,
    Json,
}

const SWITCH_WORDS: &str = "must be one of 1/0, true/false, yes/no, on/off";

/// The words a boolean configuration variable takes (a flag on the command
/// line is `true`); `options.rs` names the variable in the message.
pub fn switch(text: &str) -> Result<bool, String> {
    // Compared in place, not lower-cased into a new string: clap parses every
    // flag's default ("false") with it at each start.
    let is = |words: [&str; 4]| words.iter().any(|w| w.eq_ignore_ascii_case(text));
    if is(["1", "true", "yes", "on"]) {
        Ok(true)
    } else if is(["0", "false", "no", "off"]) {
        Ok(false)
    } else {
        Err(SWITCH_WORDS.into())
    }
}

/// `--env-grammar`: one of its two words.
fn env_grammar(text: &str) -> Result<Grammar, String> {
    match text {
        "envshim" => Ok(Grammar::Envshim),
        "kubelet" => Ok(Grammar::Kubelet),
        _ => Err("expected envshim or kubelet".into()),
    }
}

/// `--success-exit`: digits only, 0 to 255.
fn exit_code(text: &str) -> Result<u8, String> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok()).flatten().ok_or_else(|| "expected an exit code from 0 to 255".to_string())
}
