//! The command line (docs/reference.md §1), defined once: each option's name,
//! configuration variable, help and default are written here, for clap (its
//! derive for the subcommands, `group!` for the option groups), and nowhere
//! else. The binary parses with it ([`parse`]), the man pages and
//! completions are generated from it (tools/cli-docs.rs), and the tests read
//! it. What the library sees is the plain values [`parse`] builds from
//! clap's result ([`Invocation`]): `options.rs` makes them, `usage.rs` turns
//! a refused command line into one line.
//!
//! Adding an option (docs/contributing.md): an entry of a group here, with
//! its help and, if it has one, its variable (`.env("ENVSHIM_...")`); the
//! field of the library's options it fills (`pipeline::Options` and its
//! kin), set in `options.rs`; and the code that uses it.

mod group;
mod options;
mod usage;
pub mod values;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Arg, Args, Parser, Subcommand, ValueEnum};

use crate::envfile::Grammar;
use crate::error::{exit_code_help, with_exit_codes, Tool};
use crate::watch::OnChange;
use group::{group, Spec};

pub use options::{parse, Invocation, Refused};
pub use usage::{refused_line, refused_value};

/// The end of `--help` (and of `run`, `check` and `render --help`), made
/// from the table of exit codes at compile time.
const EXIT_CODES: &str = exit_code_help(Tool::Envshim);

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
    /// Rewrite env files in place so that the kubelet's grammar and envshim's read the same variables from them
    #[command(after_help = FMT_EXIT_CODES)]
    Fmt(FmtArgs),
}

/// The end of `fmt --help`: what it makes of a file, then its exit codes.
const FMT_EXIT_CODES: &str = with_exit_codes!(
    "\
Each entry becomes NAME='VALUE' (export and the blanks around the name dropped),
a name given twice keeps the occurrence envshim reads (the last), comments and
blank lines stay. A value the kubelet's grammar cannot hold (one holding ', an
empty one) leaves its file untouched and is reported; the other files are done.",
    Tool::Fmt
);

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
#[command(mut_args(hidden_in_render))]
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

/// The options [`RenderArgs`] takes but does not show.
const HIDDEN_IN_RENDER: [&str; 14] = [
    "no_expand_args",
    "init",
    "init_group",
    "term_delay",
    "success_exits",
    "rewrite_signals",
    "watch",
    "on_change",
    "restart_signal",
    "restart_timeout",
    "watch_settle",
    "watch_poll",
    "watch_splay",
    "verbose",
];

/// Hides `arg` when it is one of [`HIDDEN_IN_RENDER`] (one pass over the
/// arguments, in place: a `mut_arg` each grew the binary, docs/performance.md).
fn hidden_in_render(arg: Arg) -> Arg {
    let hide = HIDDEN_IN_RENDER.contains(&arg.get_id().as_str());
    if hide {
        arg.hide(true)
    } else {
        arg
    }
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

#[derive(Args)]
#[group(skip)]
pub struct FmtArgs {
    /// The env files to rewrite in place (-: read stdin, write stdout)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<OsString>,
    /// Change nothing; print the files that would change, and exit 1 if there are any
    #[arg(long)]
    pub check: bool,
}

// The options of run, check and render (one table for the three), in four
// groups by concern, each declared with `group!` (src/cli/group.rs: an
// option is one entry, its doc comment its help). A configuration variable
// is `.env("ENVSHIM_...")`; its value is never shown in the help
// (`ENVSHIM_MANIFEST_JSON` is a whole manifest). (`//` comments: a doc
// comment on these structs would be the subcommands' help.)

group! {
    /// Where the environment comes from: the manifest, env files and directories, variables and volumes.
    pub struct Sources {
        /// The JSON manifest [default: /etc/envshim/manifest.json if it exists]
        pub manifest: Option<OsString> = Spec::value("manifest", "PATH").env("ENVSHIM_MANIFEST"),
        /// The manifest's JSON text itself, instead of a file
        pub manifest_json: Option<OsString> = Spec::value("manifest-json", "TEXT").env("ENVSHIM_MANIFEST_JSON"),
        /// Use the container NAME of a Pod, workload or List manifest
        pub container: Option<OsString> = Spec::value("container", "NAME").env("ENVSHIM_CONTAINER"),
        /// Load every key of an env file (repeatable; the files of ENVSHIM_ENV_FILE, comma-separated, come after these)
        pub env_files: Vec<OsString> = Spec::value("env-file", "PATH").many().hyphen().env("ENVSHIM_ENV_FILE"),
        /// Every regular file directly in DIR becomes a variable named after it, its bytes the value (repeatable, comma-separated)
        pub env_dirs: Vec<OsString> = Spec::value("env-dir", "DIR[,DIR...]").many().delimiter(',').env("ENVSHIM_ENV_DIR"),
        /// Set a variable, expanded like a manifest env value (repeatable)
        pub envs: Vec<OsString> = Spec::value("env", "NAME=VALUE").many().hyphen(),
        /// Mount a volume name on a directory, as in volumeMounts (repeatable)
        pub volumes: Vec<OsString> = Spec::value("volume", "NAME=DIR").many(),
        /// When NAME_FILE is set, set NAME from the file it names and remove NAME_FILE (repeatable, comma-separated)
        pub file_env: Vec<OsString> = Spec::value("file-env", "NAME[,NAME...]").many().delimiter(',').env("ENVSHIM_FILE_ENV"),
    }
}

group! {
    /// How the sources are read and checked, and what envshim reports.
    pub struct Reading {
        /// How env files are read: envshim (its grammar: unquoted, single- and double-quoted values, the last occurrence wins) or kubelet (exactly as the kubelet 1.35: NAME='value' only, the first occurrence wins; with check, also lists every line the kubelet would reject or read differently) [default: envshim]
        pub env_grammar: Option<Grammar> = Spec::value("env-grammar", "envshim|kubelet").env("ENVSHIM_ENV_GRAMMAR").parser(values::env_grammar()),
        /// Validate names with the strict legacy rule
        pub strict_names: bool = Spec::flag("strict-names").env("ENVSHIM_STRICT_NAMES").parser(values::switch),
        /// Wait up to DURATION for missing files that are not optional (500ms, 30s, 2m; a bare number is seconds)
        pub wait: Option<Duration> = Spec::value("wait", "DURATION").parser(crate::wait::duration).env("ENVSHIM_WAIT"),
        /// Do not add KUBERNETES_SERVICE_URL
        pub no_service_url: bool = Spec::flag("no-service-url"),
        /// Do not expand $(VAR) in the trailing PROGRAM/ARGS
        pub no_expand_args: bool = Spec::flag("no-expand-args").env("ENVSHIM_NO_EXPAND_ARGS").parser(values::switch),
        /// Also write failures here [default: /dev/termination-log if it exists and is writable]
        pub termination_log: Option<OsString> = Spec::value("termination-log", "PATH"),
        /// Print each variable's source and size on stderr first
        pub verbose: bool = Spec::flag("verbose").short('v').env("ENVSHIM_VERBOSE").parser(values::switch),
    }
}

group! {
    /// `--init`: envshim stays as PID 1 and supervises the program.
    pub struct Supervision {
        /// Stay as PID 1: fork, exec the program, forward signals, reap zombies
        pub init: bool = Spec::flag("init").env("ENVSHIM_INIT").parser(values::switch),
        /// With --init, forward signals to the child's whole process group
        pub init_group: bool = Spec::flag("init-group"),
        /// With --init, hold the first SIGTERM this long before forwarding it (500ms, 5s, 1m; a bare number is seconds)
        pub term_delay: Option<Duration> = Spec::value("term-delay", "DURATION").parser(crate::wait::duration),
        /// With --init, the program's exit code CODE (0-255; 128+N for signal N) counts as success: envshim exits 0 (repeatable)
        pub success_exits: Vec<u8> = Spec::value("success-exit", "CODE").many().parser(values::exit_code),
        /// With --init, forward a received signal FROM as TO (TERM:QUIT, 15:3; TO 0 drops it) (repeatable)
        pub rewrite_signals: Vec<(i32, i32)> = Spec::value("rewrite-signal", "FROM:TO").many().parser(crate::init::parse_rewrite),
    }
}

group! {
    /// `--watch`: envshim restarts (or signals) the program when its sources change.
    pub struct Watching {
        /// Restart the program when a file its environment or program line came from changes (implies --init)
        pub watch: bool = Spec::flag("watch").env("ENVSHIM_WATCH").parser(values::switch),
        /// With --watch, what a change does: restart (the program), exit, or signal:SIG (only send it SIG) [default: restart]
        pub on_change: Option<OnChange> = Spec::value("on-change", "ACTION").env("ENVSHIM_ON_CHANGE").parser(values::on_change()),
        /// With --watch, the signal that stops the program for a restart [default: TERM]
        pub restart_signal: Option<i32> = Spec::value("restart-signal", "SIG").env("ENVSHIM_RESTART_SIGNAL").parser(crate::watch::parse_signal),
        /// With --watch, how long a stopping program gets before SIGKILL to its process group [default: 10s]
        pub restart_timeout: Option<Duration> = Spec::value("restart-timeout", "DURATION").env("ENVSHIM_RESTART_TIMEOUT").parser(crate::wait::duration),
        /// With --watch, the quiet time after a change before the files are read again [default: 1s]
        pub watch_settle: Option<Duration> = Spec::value("watch-settle", "DURATION").env("ENVSHIM_WATCH_SETTLE").parser(crate::wait::duration),
        /// With --watch, how often the files are read again without an event [default: 60s]
        pub watch_poll: Option<Duration> = Spec::value("watch-poll", "DURATION").env("ENVSHIM_WATCH_POLL").parser(crate::watch::parse_poll),
        /// With --watch, a random delay of up to DURATION before a change is acted on [default: 0]
        pub watch_splay: Option<Duration> = Spec::value("watch-splay", "DURATION").env("ENVSHIM_WATCH_SPLAY").parser(crate::wait::duration),
    }
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
