//! From the words of the command line to the library's plain options: clap
//! reads them (and the configuration variables) with the definition of
//! `cli.rs`; what clap does not decide is here: the rules that join an
//! option and its variable, the settings that need `--init`, and what the
//! library's values are made of.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches};

use super::{
    usage, CheckArgs, CheckFormat, Cli, Command, Hidden, InstallArgs, Reading, RenderArgs, RenderFormat, RunArgs, Sources, Starting, Supervision, Watching,
};
use crate::engine::JsonFrom;
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

/// Reads `args` (the whole argv) with the definition: the one parser.
pub fn parse(args: Vec<OsString>) -> Result<Invocation, Refused> {
    let args = habits(args);
    // Used once, for the life of the process: the names of its configuration
    // variables are borrowed from it, and nothing frees it piece by piece.
    let cmd: &'static mut clap::Command = Box::leak(Box::new(Cli::command()));
    let parsed = cmd.try_get_matches_from_mut(&args);
    let cmd: &'static clap::Command = cmd;
    let mut matches = match parsed {
        Ok(m) => m,
        Err(e) => return Err(usage::refused(e, &args)),
    };
    let (name, sub_matches) = matches.subcommand().expect("a subcommand is required");
    let sub = cmd.find_subcommand(name).expect("clap matched it");
    let termination_log = sub_matches.try_get_one::<OsString>("termination_log").ok().flatten().cloned();
    let usage = |message| Refused::Usage { message, termination_log: termination_log.clone() };
    check_variables(sub, Some(sub_matches)).map_err(usage)?;
    // (`install` has neither option: asked through `try_get_raw`, not `value_source`, which panics on a name it does not know.)
    let from = |id: &str| sub_matches.try_get_raw(id).is_ok_and(|v| v.is_some()) && sub_matches.value_source(id) == Some(ValueSource::EnvVariable);
    let on_line = |id: &str| sub_matches.try_get_raw(id).is_ok_and(|v| v.is_some()) && sub_matches.value_source(id) == Some(ValueSource::CommandLine);
    let watch_settings = sub.get_groups().filter(|g| Some(g.get_id()) == WatchOptions::group_id().as_ref()).flat_map(|g| g.get_args());
    let from = FromVariable {
        manifest_json: from("manifest_json"),
        env_files: from("env_files"),
        // The first of them given on the command line (its long name).
        watch_setting: watch_settings
            .filter(|id| on_line(id.as_str()))
            .min_by_key(|id| sub_matches.index_of(id.as_str()))
            .and_then(|id| sub.get_arguments().find(|a| a.get_id() == id)?.get_long()),
    };
    // Moved out of the matches, not copied (the values are no longer needed there).
    let cli = Cli::from_arg_matches_mut(&mut matches).map_err(|e| usage::refused(e, &args))?;
    invocation(cli.command, sub, from).map_err(usage)
}

/// tini's `ENTRYPOINT ["/envshim", "--", "/app"]` means `run`; `envshim help
/// --help` (and `-h`) is the help of `help` (clap's would look for a
/// subcommand named `--help`).
fn habits(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|a| a == "--") {
        args.insert(1, "run".into());
    }
    if args.len() == 3 && args[1] == "help" && (args[2] == "--help" || args[2] == "-h") {
        args[2] = "help".into();
    }
    args
}

/// Every configuration variable of the subcommand `sub` that is set, read
/// with its option's parser, also when the option is given (it then wins,
/// but a bad variable is still a mistake): the message names the variable
/// and never shows its value. In the definition's order: the first bad one
/// is the message. clap reads them again where their option is not given.
/// `parsed`: what a parse that succeeded matched; then only the variables of
/// options given on the command line are read (clap read the others' and
/// their values passed).
pub(super) fn check_variables(sub: &clap::Command, parsed: Option<&clap::ArgMatches>) -> Result<(), String> {
    for arg in sub.get_arguments() {
        let Some(name) = arg.get_env() else { continue };
        if parsed.is_some_and(|m| m.value_source(arg.get_id().as_str()) != Some(ValueSource::CommandLine)) {
            continue;
        }
        if std::env::var_os(name).is_none() {
            continue;
        }
        // The option alone, with nothing on its command line: clap reads the variable.
        let Err(e) = clap::Command::new("envshim").arg(arg).try_get_matches_from(["envshim"]) else { continue };
        let name = name.to_string_lossy();
        return Err(match std::error::Error::source(&e) {
            // A flag's variable: its words (`switch`) whatever went wrong.
            _ if !arg.get_action().takes_values() => format!("{name} {}", super::values::SWITCH_WORDS),
            Some(reason) => format!("{name}: {reason}"),
            None => format!("{name}: not UTF-8"),
        });
    }
    Ok(())
}

/// The options whose messages name where their value came from: was it
/// their configuration variable? And which of `--watch`'s settings was given
/// first on the command line (without `--watch`, a mistake; their variables
/// are then not used)?
#[derive(Clone, Copy)]
struct FromVariable {
    manifest_json: bool,
    env_files: bool,
    watch_setting: Option<&'static str>,
}

/// The library's values of a parsed command line; `sub` is its subcommand's
/// definition.
fn invocation(command: Command, sub: &'static clap::Command, m: FromVariable) -> Result<Invocation, String> {
    Ok(match command {
        Command::Run(RunArgs { sources, reading, starting, supervision, watching, program }) => {
            let (options, run) = options(sources, reading, (starting, supervision, watching), sub, m)?;
            Invocation::Run(options, RunOptions { program, ..run })
        }
        Command::Check(CheckArgs { sources, reading, starting, supervision, watching, strict, format, program }) => {
            let (options, run) = options(sources, reading, (starting, supervision, watching), sub, m)?;
            let json = matches!(format, Some(CheckFormat::Json));
            let watch = run.init.as_ref().is_some_and(|init| init.watch.is_some());
            Invocation::Check(options, CheckOptions { program, no_expand_args: run.no_expand_args, verbose: run.verbose, strict, json, watch })
        }
        Command::Render(RenderArgs {
            sources,
            reading,
            starting: Hidden(starting),
            supervision: Hidden(supervision),
            watching: Hidden(watching),
            format,
            show_values,
        }) => {
            let format = match format {
                RenderFormat::Env => Format::Env,
                RenderFormat::Json => Format::Json,
            };
            Invocation::Render(options(sources, reading, (starting, supervision, watching), sub, m)?.0, format, show_values)
        }
        Command::Install(InstallArgs { dest, force }) => Invocation::Install(dest, force),
    })
}

/// The options of run, check and render (docs/reference.md §1: one table for
/// the three): what they share, and what run takes (check takes some of it).
fn options(
    s: Sources,
    r: Reading,
    (starting, supervision, watching): (Starting, Supervision, Watching),
    sub: &'static clap::Command,
    from_variable: FromVariable,
) -> Result<(Options, RunOptions), String> {
    // `--env` and `--env-file` take values starting with `-`, but not `--`, which ends the options.
    if s.envs.iter().chain(&s.env_files).any(|v| v == "--") {
        return Err("--env and --env-file need a value (-- ends the options)".into());
    }
    let watch = watch_options(watching, from_variable.watch_setting)?;
    let init = init_options(supervision, watch)?;
    let options = Options {
        manifest: s.manifest,
        manifest_json: s.manifest_json.map(|text| (if from_variable.manifest_json { JsonFrom::Variable } else { JsonFrom::Option }, text)),
        env_files: env_files(s.env_files, from_variable.env_files, variable(sub, "env_files")),
        // An empty part of the list names no directory (ENVSHIM_ENV_FILE's rule).
        env_dirs: s.env_dirs.into_iter().filter(|d| !d.is_empty()).map(OsStringExt::into_vec).collect(),
        envs: s.envs,
        volumes: s.volumes,
        strict_names: r.strict_names,
        no_service_url: r.no_service_url,
        termination_log: r.termination_log,
        file_env: s.file_env.into_iter().map(OsStringExt::into_vec).collect(),
        wait: r.wait,
        container: s.container,
        env_grammar: r.env_grammar.unwrap_or_default(),
        config_vars: Box::leak(sub.get_arguments().filter_map(|a| a.get_env()?.to_str()).collect::<Box<[_]>>()),
    };
    let run = RunOptions { program: Vec::new(), no_expand_args: starting.no_expand_args, verbose: starting.verbose, init, listen: starting.listen };
    Ok((options, run))
}

/// The configuration variable of the option `id` (it has one: the definition says so).
fn variable(sub: &'static clap::Command, id: &str) -> &'static str {
    sub.get_arguments().find(|a| a.get_id() == id).and_then(|a| a.get_env()?.to_str()).expect("an option with a variable")
}

/// `--env-file`'s files, then those of its variable `var` (comma-separated,
/// empty parts none): the variable adds to the option rather than standing
/// in for it, so an image's CMD keeps its own files. `from_variable`: clap
/// found no option and took the variable's value as the one file.
fn env_files(given: Vec<OsString>, from_variable: bool, var: &str) -> Vec<OsString> {
    let (mut files, value) = if from_variable { (Vec::new(), given.into_iter().next()) } else { (given, std::env::var_os(var)) };
    let value = value.map(OsStringExt::into_vec).unwrap_or_default();
    files.extend(value.split(|&b| b == b',').filter(|f| !f.is_empty()).map(|f| OsStr::from_bytes(f).to_os_string()));
    files
}

/// `--watch`'s settings when `--watch` (or its variable) is on; without it,
/// one of them given on the command line (`on_line`, its long name) is a
/// usage error, and their variables are not used.
fn watch_options(w: Watching, on_line: Option<&str>) -> Result<Option<WatchOptions>, String> {
    match on_line {
        _ if w.watch => Ok(Some(w.settings)),
        Some(long) => Err(format!("--{long} is a setting of --watch: it needs --watch (or ENVSHIM_WATCH)")),
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
