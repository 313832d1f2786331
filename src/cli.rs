// The command line's definition (docs/reference.md §1): each option, its
// help and its configuration variable (written in its help, `[env: NAME]`,
// as clap's `env` feature shows one) are written here and nowhere else.
// Included by src/main.rs; by build.rs, which generates from it the table of
// the variables (`VARS`) and the reader of the common command lines
// (`common_line`); and by tools/cli-docs.rs, which generates the shell
// completions and the man page from it (musl-build.sh): they are not in the
// binary.
// `include!`d, not a module: the items are main.rs's own. `LONG_VERSION`
// (`--version`'s text) is the includer's: build.rs, which makes what it
// says, cannot read it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The end of `--help` (and of `run`, `check` and `render --help`).
const EXIT_CODES: &str = "\
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
  77     permission denied reading a file
  78     configuration: the manifest, a volume, a path, an env name; with
         check --strict, a warning
  126    the program cannot be executed, or argv/env too large for execve
  127    the program was not found
  128+N  signal N: the program's, with --init; or envshim's own during start-up";

#[derive(Parser)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
#[command(name = "envshim", version, after_help = EXIT_CODES, about = "A container entrypoint: kubelet-exact env files, fileKeyRef and $(VAR) expansion, then exec.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
enum Command {
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

#[derive(Args, Default)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// The program line: PROGRAM [ARGS...] (after -- or the first non-option word)
    #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

#[derive(Args, Default)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
struct CheckArgs {
    #[command(flatten)]
    common: Common,
    /// Fail on every warning too (exit 78 unless the problem has a code of its own)
    #[arg(long)]
    strict: bool,
    /// text (the default) or json: every problem and warning in one document on stdout
    // Not a ValueEnum: its parser is more code than the check of two words.
    #[arg(long, value_name = "text|json")]
    format: Option<OsString>,
    /// The program line to check, as run would take it (after -- or the first non-option word)
    #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
    program: Vec<OsString>,
}

/// `render` starts no program: the options that only concern one are not in
/// its help. They are still accepted (docs/reference.md §1: one table of options for run,
/// check and render, so one command line serves the three), and change nothing.
#[derive(Args)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
#[command(
    mut_arg("no_expand_args", |a| a.hide(true)),
    mut_arg("init", |a| a.hide(true)),
    mut_arg("init_group", |a| a.hide(true)),
    mut_arg("term_delay", |a| a.hide(true)),
    mut_arg("success_exits", |a| a.hide(true)),
    mut_arg("rewrite_signals", |a| a.hide(true)),
    mut_arg("verbose", |a| a.hide(true))
)]
struct RenderArgs {
    #[command(flatten)]
    common: Common,
    /// env (an env file with sources as comments) or json
    #[arg(long, value_enum, default_value = "env")]
    format: Format,
    /// Print values (they are masked by default)
    #[arg(long)]
    show_values: bool,
}

#[derive(Args)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
struct InstallArgs {
    /// Where to copy it (into a directory: DEST/envshim); only an envshim binary is replaced
    #[arg(value_name = "DEST")]
    dest: PathBuf,
    /// Replace DEST even if it is not envshim
    #[arg(long)]
    force: bool,
}

#[derive(Args, Default)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
struct Common {
    /// The JSON manifest [env: ENVSHIM_MANIFEST] [default: /etc/envshim/manifest.json if it exists]
    #[arg(long, value_name = "PATH")]
    manifest: Option<OsString>,
    /// The manifest's JSON text itself, instead of a file [env: ENVSHIM_MANIFEST_JSON]
    #[arg(long = "manifest-json", value_name = "TEXT")]
    manifest_json: Option<OsString>,
    /// Load every key of an env file (repeatable; the files of ENVSHIM_ENV_FILE, comma-separated, come after these) [env: ENVSHIM_ENV_FILE]
    #[arg(long = "env-file", value_name = "PATH", allow_hyphen_values = true)]
    env_files: Vec<OsString>,
    /// Every regular file directly in DIR becomes a variable named after it, its bytes the value (repeatable, comma-separated) [env: ENVSHIM_ENV_DIR]
    #[arg(long = "env-dir", value_name = "DIR[,DIR...]")]
    env_dirs: Vec<OsString>,
    /// Set a variable, expanded like a manifest env value (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE", allow_hyphen_values = true)]
    envs: Vec<OsString>,
    /// Mount a volume name on a directory, as in volumeMounts (repeatable)
    #[arg(long = "volume", value_name = "NAME=DIR")]
    volumes: Vec<OsString>,
    /// Validate names with the strict legacy rule [env: ENVSHIM_STRICT_NAMES]
    #[arg(long)]
    strict_names: bool,
    /// Do not add KUBERNETES_SERVICE_URL
    #[arg(long)]
    no_service_url: bool,
    /// Also write failures here [default: /dev/termination-log if it exists and is writable]
    #[arg(long, value_name = "PATH")]
    termination_log: Option<OsString>,
    /// Do not expand $(VAR) in the trailing PROGRAM/ARGS [env: ENVSHIM_NO_EXPAND_ARGS]
    #[arg(long)]
    no_expand_args: bool,
    /// Stay as PID 1: fork, exec the program, forward signals, reap zombies [env: ENVSHIM_INIT]
    #[arg(long)]
    init: bool,
    /// With --init, forward signals to the child's whole process group
    #[arg(long)]
    init_group: bool,
    /// With --init, hold the first SIGTERM this long before forwarding it (500ms, 5s, 1m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    term_delay: Option<Duration>,
    /// With --init, the program's exit code CODE (0-255; 128+N for signal N) counts as success: envshim exits 0 (repeatable)
    #[arg(long = "success-exit", value_name = "CODE")]
    success_exits: Vec<OsString>,
    /// With --init, forward a received signal FROM as TO (TERM:QUIT, 15:3; TO 0 drops it) (repeatable)
    #[arg(long = "rewrite-signal", value_name = "FROM:TO")]
    rewrite_signals: Vec<OsString>,
    /// When NAME_FILE is set, set NAME from the file it names and remove NAME_FILE (repeatable, comma-separated) [env: ENVSHIM_FILE_ENV]
    #[arg(long = "file-env", value_name = "NAME[,NAME...]")]
    file_env: Vec<OsString>,
    /// Wait up to DURATION for missing files that are not optional (500ms, 30s, 2m; a bare number is seconds) [env: ENVSHIM_WAIT]
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    wait: Option<Duration>,
    /// How env files are read: envshim (its grammar: unquoted, single- and double-quoted values, the last occurrence wins) or kubelet (exactly as the kubelet 1.35: NAME='value' only, the first occurrence wins; with check, also lists every line the kubelet would reject or read differently) [env: ENVSHIM_ENV_GRAMMAR] [default: envshim]
    #[arg(long = "env-grammar", value_name = "envshim|kubelet")]
    env_grammar: Option<OsString>,
    /// Use the container NAME of a Pod, workload or List manifest [env: ENVSHIM_CONTAINER]
    #[arg(long, value_name = "NAME")]
    container: Option<OsString>,
    /// Print each variable's source and size on stderr first [env: ENVSHIM_VERBOSE]
    #[arg(long, short)]
    verbose: bool,
}

#[derive(Clone, Copy, ValueEnum)]
#[cfg_attr(debug_assertions, derive(Debug, PartialEq))]
enum Format {
    Env,
    Json,
}

/// `--term-delay` and `--wait`: a whole number and a unit, ms, s, m or h; a bare number is seconds.
fn duration(text: &str) -> Result<Duration, String> {
    envshim::wait::duration(text)
}
