//! The binary: parses the command line (clap, with the definition of
//! `kubectl_envshim::cli`), runs one subcommand of the library, and exits
//! with its code.

use clap::{CommandFactory, FromArgMatches};
use envshim::converter::ExitCode;

use kubectl_envshim::cli::{Cli, Command};

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Its help names it as users type it (`kubectl envshim`); the generated
    // completions and man pages, as the file on PATH (`kubectl-envshim`).
    let parsed = Cli::command().bin_name("kubectl envshim").try_get_matches_from(&args).and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let exit = match parsed {
        Ok((cli, m)) => match cli.command {
            // The options passed on to envshim are written as given: their text is the matches'.
            Command::Convert(args) => kubectl_envshim::convert(&args, m.subcommand().map_or(&m, |(_, given)| given)),
            Command::Manifest(args) => kubectl_envshim::manifest(&args),
            Command::Unconvert(args) => kubectl_envshim::unconvert(&args),
            Command::Krm(args) => kubectl_envshim::krm(&args),
            Command::Fmt(args) => kubectl_envshim::fmt(&args),
        },
        // --help, --version: on stdout, exit 0.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            ExitCode::Ok
        }
        Err(e) => kubectl_envshim::refused(&e, &args),
    };
    // As ripgrep ends: stdout is flushed already, nothing else is left to drop.
    std::process::exit(exit.number())
}
