//! The command line (SPEC §1). Parses flags and configuration variables into
//! plain options and hands them to the library.
//!
//! `no_main`: Rust's runtime start-up sets SIGPIPE to ignored before `main`,
//! and an ignored signal stays ignored across `execve`, so every program
//! started by envshim would inherit it. Starting from C's `main` leaves the
//! dispositions envshim inherited untouched (and skips the runtime's other
//! start-up system calls, which a container start pays for nothing).
#![no_main]

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "envshim", version, about = "A container entrypoint: kubelet-exact env files, fileKeyRef and $(VAR) expansion, then exec.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the environment, then execve PROGRAM (or supervise it with --init)
    Run {
        #[command(flatten)]
        common: Common,
        /// Do not expand $(VAR) in the trailing PROGRAM/ARGS
        #[arg(long)]
        no_expand_args: bool,
        /// Stay as PID 1: fork, exec the program, forward signals, reap zombies [env: ENVSHIM_INIT]
        #[arg(long)]
        init: bool,
        /// With --init, forward signals to the child's whole process group
        #[arg(long)]
        init_group: bool,
        /// The program line: PROGRAM [ARGS...] (after -- or the first non-option word)
        #[arg(trailing_var_arg = true, value_name = "PROGRAM")]
        program: Vec<OsString>,
    },
    /// Validate everything run would; exec nothing
    Check {
        #[command(flatten)]
        common: Common,
    },
    /// Print the final environment and where each variable came from
    Render {
        #[command(flatten)]
        common: Common,
        #[arg(long, value_enum, default_value = "env")]
        format: Format,
        /// Print values (they are masked by default)
        #[arg(long)]
        show_values: bool,
    },
    /// Copy this binary to DEST atomically (no shell needed)
    Install { dest: PathBuf },
}

#[derive(Args)]
struct Common {
    /// The JSON manifest [env: ENVSHIM_MANIFEST] [default: /etc/envshim/manifest.json if it exists]
    #[arg(long, value_name = "PATH")]
    manifest: Option<OsString>,
    /// Load every key of an env file (repeatable)
    #[arg(long = "env-file", value_name = "PATH")]
    env_files: Vec<OsString>,
    /// Set a variable, expanded like a manifest env value (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE")]
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
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Env,
    Json,
}

/// A boolean configuration variable: 1/0, true/false, yes/no, on/off.
fn env_flag(name: &str) -> Result<bool, String> {
    let Some(v) = std::env::var_os(name) else { return Ok(false) };
    match v.to_str().map(str::to_ascii_lowercase).as_deref() {
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        _ => Err(format!("{name} must be one of 1/0, true/false, yes/no, on/off")),
    }
}

fn options(common: Common) -> Result<envshim::Options, String> {
    Ok(envshim::Options {
        manifest: common.manifest.or_else(|| std::env::var_os("ENVSHIM_MANIFEST")),
        env_files: common.env_files,
        envs: common.envs,
        volumes: common.volumes,
        strict_names: common.strict_names || env_flag("ENVSHIM_STRICT_NAMES")?,
        no_service_url: common.no_service_url,
        termination_log: common.termination_log,
        ..Default::default()
    })
}

#[no_mangle]
extern "C" fn main(argc: libc::c_int, argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: these are C main's own arguments.
    let cli = Cli::parse_from(unsafe { envshim::sys::args(argc, argv) });
    match dispatch(cli.command) {
        Ok(status) => status,
        Err(message) => {
            eprintln!("envshim: {message}");
            envshim::error::code::USAGE
        }
    }
}

fn dispatch(command: Command) -> Result<i32, String> {
    Ok(match command {
        Command::Run { common, no_expand_args, init, init_group, program } => {
            let opts = envshim::Options {
                no_expand_args,
                init: init || env_flag("ENVSHIM_INIT")?,
                init_group,
                program,
                ..options(common)?
            };
            envshim::run(&opts)
        }
        Command::Check { common } => envshim::check(&options(common)?),
        Command::Render { common, format, show_values } => {
            let format = match format {
                Format::Env => envshim::Format::Env,
                Format::Json => envshim::Format::Json,
            };
            envshim::render(&options(common)?, format, show_values)
        }
        Command::Install { dest } => envshim::install(&dest),
    })
}
