//! From the words of the command line to the library's plain options: clap
//! reads them (and the configuration variables) with the definition of
//! `cli.rs` into its structs; what clap does not decide is here: the rules
//! that join an option and its variable, the settings that need `--init`
//! or `--watch`, and what the library's values are made of.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches};

use super::{usage, CheckArgs, Cli, Command, InstallArgs, Reading, RenderArgs, RunArgs, Sources, Starting, Supervision, Watching, ENV_FILE_VAR};
use crate::engine::{JsonFrom, MANIFEST_VAR};
use crate::error::{Error, ExitCode};
use crate::pipeline::{CheckOptions, InitOptions, Options, RunOptions};
use crate::render::Format;
use crate::watch::WatchOptions;

/// What the command line asks for, in the library's values. (Made once per
/// process and moved twice: `run`'s options inline cost nothing worth a box.)
#[allow(clippy::large_enum_variant)]
pub enum Invocation {
    Run(Options, RunOptions),
    Check(Options, CheckOptions),
    Render(Options, Format, bool),
    /// DEST, `--force`.
    Install(PathBuf, bool),
}

/// A command line that runs nothing: help or the version (clap prints it
/// on stdout, exit 0), or a usage error (one line, exit 2).
pub enum Refused {
    Shown(clap::Error),
    Usage { message: String, termination_log: Option<OsString> },
}

impl Refused {
    /// Prints what was refused; the exit code.
    pub fn report(self) -> ExitCode {
        match self {
            Refused::Shown(e) => e.exit(),
            Refused::Usage { message, termination_log } => crate::report::fail(&Error::usage(message), &[], termination_log.as_deref()),
        }
    }
}

/// The definition, made once: the binary keeps it for the life of the
/// process.
pub fn command() -> clap::Command {
    Cli::command()
}

/// Reads `args` (the whole argv) with the definition `cmd` ([`command`]): the one parser.
pub fn parse(cmd: &mut clap::Command, args: Vec<OsString>) -> Result<Invocation, Refused> {
    let args = habits(args);
    let mut matches = match cmd.try_get_matches_from_mut(&args) {
        Ok(m) => m,
        Err(e) => return Err(usage::refused(e, cmd, &args)),
    };
    let (name, m) = matches.subcommand().expect("a subcommand is required");
    let read = Read::new(cmd.find_subcommand(name).expect("clap matched it"), m);
    // A variable whose option is also given: clap did not read it, but a bad one is still a mistake.
    let variable = if read.given_too { usage::bad_variable(cmd, &args[0], name.as_ref()) } else { None };
    // Moved out of the matches, not copied (the values are no longer needed there).
    let cli = Cli::from_arg_matches_mut(&mut matches).map_err(|e| usage::refused(e, cmd, &args))?;
    let termination_log = cli.command.termination_log().cloned();
    let usage = |message| Refused::Usage { message, termination_log };
    match variable {
        Some(message) => Err(usage(message)),
        None => invocation(cli.command, read).map_err(usage),
    }
}

/// The habits clap has no setting for, rewritten before it reads the line:
/// tini's `ENTRYPOINT ["/envshim", "--", "/app"]` means `run` (clap has no
/// default subcommand; run's options at the top, `args_conflicts_with_subcommands`,
/// would list them in `envshim --help`); `envshim help --help` (and `-h`)
/// is the help of `help` (clap's would look for a subcommand named `--help`).
fn habits(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|a| a == "--") {
        args.insert(1, "run".into());
    }
    if args.len() == 3 && args[1] == "help" && (args[2] == "--help" || args[2] == "-h") {
        args[2] = "help".into();
    }
    args
}

/// What the values alone do not say, read from clap's matches `m` of the
/// subcommand `sub` (each option by the id its definition gives it).
struct Read {
    /// Did `--manifest-json`'s value come from its variable?
    manifest_json_from_variable: bool,
    /// Did `--env-file`'s come from its variable (no `--env-file` given)?
    env_files_from_variable: bool,
    /// The first of `--watch`'s settings given on the command line, its
    /// long name (without `--watch`, a mistake; their variables are then
    /// not used).
    watch_setting: Option<String>,
    /// Every configuration variable of the subcommand.
    variables: Vec<String>,
    /// A variable is set whose option is given too (clap did not read it).
    given_too: bool,
}

impl Read {
    fn new(sub: &clap::Command, m: &clap::ArgMatches) -> Read {
        let source = |a: &clap::Arg| m.value_source(a.get_id().as_str());
        let from_variable = |var: &str| sub.get_arguments().find(|a| a.get_env() == Some(OsStr::new(var))).and_then(source) == Some(ValueSource::EnvVariable);
        let variables = || sub.get_arguments().filter_map(|a| Some((a, a.get_env()?)));
        let watch_settings = sub.get_groups().filter(|g| Some(g.get_id()) == WatchOptions::group_id().as_ref()).flat_map(|g| g.get_args());
        Read {
            manifest_json_from_variable: from_variable(MANIFEST_VAR),
            env_files_from_variable: from_variable(ENV_FILE_VAR),
            watch_setting: watch_settings
                .filter(|id| m.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .min_by_key(|id| m.index_of(id.as_str()))
                .and_then(|id| Some(format!("--{}", sub.get_arguments().find(|a| a.get_id() == id)?.get_long()?))),
            variables: variables().filter_map(|(_, var)| Some(var.to_str()?.to_string())).collect(),
            given_too: variables().any(|(a, var)| source(a) == Some(ValueSource::CommandLine) && std::env::var_os(var).is_some()),
        }
    }
}

/// The library's values of a parsed command line.
fn invocation(command: Command, read: Read) -> Result<Invocation, String> {
    Ok(match command {
        Command::Run(RunArgs { sources, reading, starting, supervision, watching, program }) => {
            let (options, run) = options(sources, reading, (starting, supervision, watching), read)?;
            Invocation::Run(options, RunOptions { program, ..run })
        }
        Command::Check(CheckArgs { sources, reading, starting, supervision, watching, strict, format, program }) => {
            let (options, run) = options(sources, reading, (starting, supervision, watching), read)?;
            let json = format.as_deref() == Some("json");
            let watch = run.init.as_ref().is_some_and(|init| init.watch.is_some());
            Invocation::Check(options, CheckOptions { program, no_expand_args: run.no_expand_args, verbose: run.verbose, strict, json, watch })
        }
        Command::Render(RenderArgs { sources, reading, starting, supervision, watching, format, show_values }) => {
            let format = if format == "json" { Format::Json } else { Format::Env };
            Invocation::Render(options(sources, reading, (starting, supervision, watching), read)?.0, format, show_values)
        }
        Command::Install(InstallArgs { dest, force }) => Invocation::Install(dest, force),
    })
}

/// The options of run, check and render (docs/reference.md §1: one table for
/// the three): what they share, and what run takes (check takes some of it).
fn options(s: Sources, r: Reading, (starting, supervision, watching): (Starting, Supervision, Watching), read: Read) -> Result<(Options, RunOptions), String> {
    // `--env` and `--env-file` take values starting with `-`, but not `--`, which ends the options.
    if s.envs.iter().chain(&s.env_files).any(|v| v == "--") {
        return Err("--env and --env-file need a value (-- ends the options)".into());
    }
    let watch = watch_options(watching, read.watch_setting)?;
    let init = init_options(supervision, watch)?;
    let options = Options {
        manifest: s.manifest,
        manifest_json: s.manifest_json.map(|text| (if read.manifest_json_from_variable { JsonFrom::Variable } else { JsonFrom::Option }, text)),
        env_files: env_files(s.env_files, read.env_files_from_variable),
        // An empty part of the list names no directory (ENVSHIM_ENV_FILE's rule).
        env_dirs: s.env_dirs.into_iter().filter(|d| !d.is_empty()).map(OsStringExt::into_vec).collect(),
        envs: s.envs,
        volumes: s.volumes,
        strict_names: r.strict_names,
        no_service_url: r.no_service_url,
        termination_log: r.log.termination_log,
        file_env: s.file_env.into_iter().map(OsStringExt::into_vec).collect(),
        wait: r.wait,
        container: s.container,
        env_grammar: r.env_grammar.unwrap_or_default(),
        config_vars: read.variables,
    };
    let run = RunOptions { program: Vec::new(), no_expand_args: starting.no_expand_args, verbose: starting.verbose, init, listen: starting.listen };
    Ok((options, run))
}

/// `--env-file`'s files, then those of its variable (comma-separated,
/// empty parts none): the variable adds to the option rather than standing
/// in for it, so an image's CMD keeps its own files. `from_variable`: clap
/// found no option and took the variable's value as the one file.
fn env_files(given: Vec<OsString>, from_variable: bool) -> Vec<OsString> {
    let (mut files, value) = if from_variable { (Vec::new(), given.into_iter().next()) } else { (given, std::env::var_os(ENV_FILE_VAR)) };
    let value = value.map(OsStringExt::into_vec).unwrap_or_default();
    files.extend(value.split(|&b| b == b',').filter(|f| !f.is_empty()).map(|f| OsStr::from_bytes(f).to_os_string()));
    files
}

/// `--watch`'s settings when `--watch` (or its variable) is on; without it,
/// one of them given on the command line (`on_line`, `--` and its long
/// name) is a usage error, and their variables are not used.
fn watch_options(w: Watching, on_line: Option<String>) -> Result<Option<WatchOptions>, String> {
    match on_line {
        _ if w.watch => Ok(Some(w.settings)),
        Some(option) => Err(format!("{option} is a setting of --watch: it needs --watch (or ENVSHIM_WATCH)")),
        None => Ok(None),
    }
}

/// `--init`'s settings when `--init` (or its variable, or `--watch`, which
/// implies it) is on, else a usage error for any of them given without it.
fn init_options(s: Supervision, watch: Option<WatchOptions>) -> Result<Option<InitOptions>, String> {
    let init = s.init || watch.is_some();
    if !init && (s.init_group || s.term_delay.is_some()) {
        return Err("--init-group and --term-delay need --init (or ENVSHIM_INIT)".into());
    }
    if !init && (!s.success_exits.is_empty() || !s.rewrite_signals.is_empty()) {
        return Err("--success-exit and --rewrite-signal need --init (or ENVSHIM_INIT)".into());
    }
    let settings = InitOptions { group: s.init_group, term_delay: s.term_delay, success_exits: s.success_exits, rewrite_signals: s.rewrite_signals, watch };
    Ok(init.then_some(settings))
}
