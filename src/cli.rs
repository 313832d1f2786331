//! The command line (docs/reference.md §1), defined once: each option's name,
//! configuration variable, help and default are written here, with clap's
//! derive, and nowhere else; but `--watch`'s settings, which the watcher
//! defines itself (`watch::WatchOptions`, in src/watch/settings.rs: the
//! definition is also the library's value) and `Watching` flattens. The
//! binary parses with it ([`parse`]), the man pages and completions are
//! generated from it (tools/cli-docs.rs), and the tests read it.
//!
//! clap does the whole job: it reads the options and their `ENVSHIM_*`
//! variables (`env`), each value with clap's own parser (a plain `fn` of
//! `values.rs`, or a few words), into these structs. What the library sees
//! is the plain values [`parse`] builds from them ([`Invocation`]):
//! `options.rs` makes them, with the rules clap has no setting for (a
//! variable that adds to its option, settings that need `--init` or
//! `--watch`), reading the few facts the structs do not hold (did a value
//! come from the variable?) from clap's matches by the ids of this
//! definition; `usage.rs` turns any refused command line into one line.
//! What clap cannot do, and the smallest code that does it, beside each:
//! the habits rewritten before clap reads the line (`options.rs`), a bad
//! variable named without its value, also when its option wins
//! (`usage::bad_variable`), the completions' words of a parser of text
//! (`Words`, src/words.rs).
//!
//! Adding an option (docs/contributing.md): a field of a group here, with
//! its help and, if it has one, its variable (`env = "ENVSHIM_..."`); the
//! field of the library's options it fills (`pipeline::Options` and its
//! kin), set in `options.rs`; and the code that uses it.

mod options;
mod usage;
pub mod values;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::envfile::Grammar;
use crate::error::{exit_code_help, Tool};
use crate::watch::WatchOptions;

pub use options::{command, parse, Invocation, Refused};
pub use usage::{refused_line, refused_value};

/// The end of `--help` (and of `run`, `check` and `render --help`), made
/// from the table of exit codes at compile time.
const EXIT_CODES: &str = exit_code_help(Tool::Envshim);

/// `--version`: the crate's version, then what build.rs found (a build without
/// git, from a source tarball, says `unknown` unless ENVSHIM_BUILD_COMMIT is set).
pub const LONG_VERSION: &str =
    concat!(env!("CARGO_PKG_VERSION"), "\ncommit: ", env!("BUILD_COMMIT"), "\ntarget: ", env!("BUILD_TARGET"), "\nrustc: ", env!("BUILD_RUSTC"),);

/// `--env-file`'s variable, which adds to the option rather than standing in
/// for it (`options.rs` reads it itself when the option is given).
const ENV_FILE_VAR: &str = "ENVSHIM_ENV_FILE";

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

impl Command {
    /// `--termination-log`, of the subcommands that take it.
    pub fn termination_log(&self) -> Option<&OsString> {
        match self {
            Command::Run(a) => a.reading.log.termination_log.as_ref(),
            Command::Check(a) => a.reading.log.termination_log.as_ref(),
            Command::Render(a) => a.reading.log.termination_log.as_ref(),
            Command::Install(_) => None,
        }
    }
}

#[derive(Args)]
#[group(skip)]
pub struct RunArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub reading: Reading,
    #[command(flatten)]
    pub starting: Starting,
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
    pub starting: Starting,
    #[command(flatten)]
    pub supervision: Supervision,
    #[command(flatten)]
    pub watching: Watching,
    /// Fail on every warning too (exit 78 unless the problem has a code of its own)
    #[arg(long)]
    pub strict: bool,
    // (Each format is a word of clap's `PossibleValuesParser`, the one parser
    // of all such options: a `ValueEnum` is a parser of its own for each.)
    /// text (the default) or json: every problem and warning in one document on stdout
    #[arg(long, value_name = "text|json", value_parser = ["text", "json"])]
    pub format: Option<String>,
    /// The program line to check, as run would take it (after -- or the first non-option word)
    #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
    pub program: Vec<OsString>,
}

// `render` starts no program: the options that only concern one (the groups
// `Starting`, `Supervision` and `Watching`) are not in its help. They are
// still accepted (docs/reference.md §1: one table of options for run, check
// and render, so one command line serves the three), and change nothing.
// (`//`: a doc comment would be render's help.)
#[derive(Args)]
#[group(skip)]
#[command(mut_args = hide_program_options())]
pub struct RenderArgs {
    #[command(flatten)]
    pub sources: Sources,
    #[command(flatten)]
    pub reading: Reading,
    #[command(flatten)]
    pub starting: Starting,
    #[command(flatten)]
    pub supervision: Supervision,
    #[command(flatten)]
    pub watching: Watching,
    /// env (an env file with sources as comments) or json
    #[arg(long, value_parser = ["env", "json"], default_value = "env")]
    pub format: String,
    /// Print values (they are masked by default)
    #[arg(long)]
    pub show_values: bool,
}

/// `render`'s `mut_args`: hides the options of `Starting`, `Supervision` and
/// `Watching`, known by their ids in those groups' own definition. (clap's
/// `hide` is an option's, not a group's: `#[arg(hide = true)]` would hide
/// them from `run` too.)
fn hide_program_options() -> impl FnMut(clap::Arg) -> clap::Arg {
    let program = Watching::augment_args(Supervision::augment_args(Starting::augment_args(clap::Command::new("render"))));
    move |a| {
        let hide = program.get_arguments().any(|p| p.get_id() == a.get_id());
        if hide {
            a.hide(true)
        } else {
            a
        }
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

// The options of run, check and render (one table for the three), in groups
// by concern, with clap's derive like every other definition here: an
// option is one field, its doc comment its help. A configuration variable is
// `env = "ENVSHIM_..."`; its value is never shown in the help
// (`hide_env_values`: `ENVSHIM_MANIFEST_JSON` is a whole manifest). The
// groups are `#[group(skip)]` (no `ArgGroup` to build at every start) but
// `WatchOptions` (src/watch/settings.rs), whose group is how `options.rs`
// finds them. (`//` comments: a doc comment on these structs would be the
// subcommands' help.)

#[derive(Args)]
#[group(skip)]
pub struct Sources {
    /// The JSON manifest [default: /etc/envshim/manifest.json if it exists]
    #[arg(long, value_name = "PATH", env = "ENVSHIM_MANIFEST", hide_env_values = true)]
    pub manifest: Option<OsString>,
    /// The manifest's JSON text itself, instead of a file
    #[arg(long, value_name = "TEXT", env = crate::engine::MANIFEST_VAR, hide_env_values = true)]
    pub manifest_json: Option<OsString>,
    /// Use the container NAME of a Pod, workload or List manifest
    #[arg(long, value_name = "NAME", env = "ENVSHIM_CONTAINER", hide_env_values = true)]
    pub container: Option<OsString>,
    /// Load every key of an env file (repeatable; the files of ENVSHIM_ENV_FILE, comma-separated, come after these)
    #[arg(long = "env-file", value_name = "PATH", allow_hyphen_values = true, env = ENV_FILE_VAR, hide_env_values = true)]
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
    #[arg(long, value_name = "NAME[,NAME...]", value_delimiter = ',', env = "ENVSHIM_FILE_ENV", hide_env_values = true)]
    pub file_env: Vec<OsString>,
}

#[derive(Args)]
#[group(skip)]
pub struct Reading {
    /// How env files are read: envshim (its grammar: unquoted, single- and double-quoted values, the last occurrence wins) or kubelet (exactly as the kubelet 1.35: NAME='value' only, the first occurrence wins; with check, also lists every line the kubelet would reject or read differently) [default: envshim]
    #[arg(long, value_name = "envshim|kubelet", value_parser = values::env_grammar(), hide_possible_values = true, env = "ENVSHIM_ENV_GRAMMAR", hide_env_values = true)]
    pub env_grammar: Option<Grammar>,
    /// Validate names with the strict legacy rule
    #[arg(long, value_parser = values::switch, env = "ENVSHIM_STRICT_NAMES", hide_env_values = true)]
    pub strict_names: bool,
    /// Wait up to DURATION for missing files that are not optional (500ms, 30s, 2m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = values::duration, env = "ENVSHIM_WAIT", hide_env_values = true)]
    pub wait: Option<Duration>,
    /// Do not add KUBERNETES_SERVICE_URL
    #[arg(long)]
    pub no_service_url: bool,
    #[command(flatten)]
    pub log: TerminationLog,
}

// `--termination-log`, a group of its own: the id of its option, read from
// this definition, finds it in what clap read of a refused command line
// (`usage.rs`), where the other values may not be whole.
#[derive(Args)]
#[group(skip)]
pub struct TerminationLog {
    /// Also write failures here [default: /dev/termination-log if it exists and is writable]
    #[arg(long, value_name = "PATH")]
    pub termination_log: Option<OsString>,
}

// What only concerns a program (and so `render` does not show): how its
// line is read, and what envshim says before it starts.
#[derive(Args)]
#[group(skip)]
pub struct Starting {
    /// Do not expand $(VAR) in the trailing PROGRAM/ARGS
    #[arg(long, value_parser = values::switch, env = "ENVSHIM_NO_EXPAND_ARGS", hide_env_values = true)]
    pub no_expand_args: bool,
    /// Print each variable's source and size on stderr first
    #[arg(short, long, value_parser = values::switch, env = "ENVSHIM_VERBOSE", hide_env_values = true)]
    pub verbose: bool,
    /// Listen on ADDR (tcp:HOST:PORT, tcp::PORT, unix:PATH) before the program starts, and hand the socket to it (and to every restart) as fd 3, 4, ... with LISTEN_FDS (repeatable, comma-separated)
    #[arg(long, value_name = "ADDR", value_parser = crate::listen::parse, value_delimiter = ',', env = "ENVSHIM_LISTEN", hide_env_values = true)]
    pub listen: Vec<crate::listen::Address>,
}

#[derive(Args)]
#[group(skip)]
pub struct Supervision {
    /// Stay as PID 1: fork, exec the program, forward signals, reap zombies
    #[arg(long, value_parser = values::switch, env = "ENVSHIM_INIT", hide_env_values = true)]
    pub init: bool,
    /// With --init, forward signals to the child's whole process group (and to the child if it left it)
    #[arg(long)]
    pub init_group: bool,
    /// With --init, hold the first SIGTERM this long before forwarding it (500ms, 5s, 1m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = values::duration)]
    pub term_delay: Option<Duration>,
    /// With --init, the program's exit code CODE (0-255; 128+N for signal N) counts as success: envshim exits 0 (repeatable)
    #[arg(long = "success-exit", value_name = "CODE", value_parser = values::exit_code)]
    pub success_exits: Vec<u8>,
    /// With --init, forward a received signal FROM as TO (TERM:QUIT, 15:3; TO 0 drops it) (repeatable)
    #[arg(long = "rewrite-signal", value_name = "FROM:TO", value_parser = values::rewrite_signal)]
    pub rewrite_signals: Vec<(i32, i32)>,
}

#[derive(Args)]
#[group(skip)]
pub struct Watching {
    /// Restart the program when a file its environment or program line came from changes (implies --init)
    #[arg(long, value_parser = values::switch, env = "ENVSHIM_WATCH", hide_env_values = true)]
    pub watch: bool,
    #[command(flatten)]
    pub settings: WatchOptions,
}
