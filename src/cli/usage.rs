//! A command line clap refused, as one `envshim: ` line (exit 2): the first
//! line of clap's message, with the closest known name for a misspelt option
//! or subcommand and the hint a common mistake needs. Help and `--version`
//! are clap's own, printed on stdout. Only a refused start comes here, so
//! each function is built for size in the release build (`envshim_size`,
//! src/lib.rs: −256 B).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use clap::builder::ValueParser;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Args;

use super::options::Refused;
use super::values::SWITCH_WORDS;
use super::TerminationLog;

/// What to print for clap's error `e` on the command line `args`; `cmd` is
/// the definition that refused it.
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn refused(e: clap::Error, cmd: &mut clap::Command, args: &[OsString]) -> Refused {
    // --help and --version: printed on stdout, exit 0.
    if !e.use_stderr() {
        return Refused::Shown(e);
    }
    // A bad configuration variable is named as such (clap's message would
    // show its value, and name the option).
    let variable = match (e.kind(), args.get(1)) {
        (ErrorKind::ValueValidation | ErrorKind::InvalidUtf8, Some(sub)) => bad_variable(cmd, &args[0], sub),
        _ => None,
    };
    // Every subcommand's options (`defer`: those not used are not built yet).
    cmd.build();
    let termination_log = termination_log(cmd, args);
    let message = variable.unwrap_or_else(|| usage_line(&e, cmd, args));
    Refused::Usage { message, termination_log }
}

/// The first configuration variable of the subcommand `sub` that its
/// option refuses, as one line naming it, never its value; `cmd` is the
/// definition. Where no option is given, clap reads every variable that is
/// set, in the definition's order, and stops at the first it refuses: so
/// the command line `argv0 sub` alone. (What clap has no setting for: it
/// reads no variable whose option is given, and its message names the
/// option and shows the value.)
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn bad_variable(cmd: &mut clap::Command, argv0: &OsStr, sub: &OsStr) -> Option<String> {
    let e = cmd.try_get_matches_from_mut([argv0, sub]).err()?;
    let sub = cmd.find_subcommand(sub)?;
    let arg = match (e.kind(), e.get(ContextKind::InvalidArg)) {
        (ErrorKind::ValueValidation, Some(ContextValue::String(shown))) => sub.get_arguments().find(|a| a.to_string() == *shown)?,
        // Not UTF-8: clap names no option; the first variable that is not, of an option that reads text.
        (ErrorKind::InvalidUtf8, _) => sub.get_arguments().find(|a| {
            let text = a.get_value_parser().type_id() != ValueParser::os_string().type_id();
            text && a.get_env().and_then(std::env::var_os).is_some_and(|v| v.to_str().is_none())
        })?,
        _ => return None,
    };
    let name = arg.get_env()?.to_string_lossy();
    Some(match std::error::Error::source(&e) {
        // A flag's variable: its words (`switch`) whatever went wrong.
        _ if !arg.get_action().takes_values() => format!("{name} {SWITCH_WORDS}"),
        Some(reason) => format!("{name}: {reason}"),
        None => format!("{name}: not UTF-8"),
    })
}

/// The `--termination-log` of the refused command line `args`, as far as
/// clap read it before the mistake: `cmd` told to keep what it read.
#[cfg_attr(envshim_size, optimize(size))]
fn termination_log(cmd: &mut clap::Command, args: &[OsString]) -> Option<OsString> {
    *cmd = std::mem::take(cmd).ignore_errors(true).mut_subcommands(|s| s.ignore_errors(true));
    let m = cmd.try_get_matches_from_mut(args).ok()?;
    // Not the typed value: the values clap left unread are not whole.
    let log = TerminationLog::augment_args(clap::Command::new("log"));
    let id = log.get_arguments().next()?.get_id();
    let log = m.subcommand()?.1.try_get_one::<OsString>(id.as_str()).ok()??;
    Some(log.clone()).filter(|l| !l.is_empty())
}

/// The first line of clap's message (its usage block and tips dropped),
/// with envshim's hints for the common mistakes.
#[cfg_attr(envshim_size, optimize(size))]
fn usage_line(e: &clap::Error, cli: &clap::Command, args: &[OsString]) -> String {
    let sub = args.get(1).map_or(&b""[..], |a| a.as_bytes());
    // `envshim fmt`, which moved to the converter (nothing of it runs in a container).
    if sub == b"fmt" && e.kind() == ErrorKind::InvalidSubcommand {
        return "fmt is the converter's: kubectl envshim fmt FILE... rewrites env files, kubectl envshim fmt --check FILE... lists the lines the kubelet reads otherwise".into();
    }
    refused_line(e, cli, args, "see envshim --help", |wrong| {
        // `envshim --verbose run`: an option of the subcommands before one.
        if sub.starts_with(b"-") && wrong.starts_with("--") && options_of(cli, Some(&"run".into())).iter().any(|o| o == wrong) {
            return Some(format!("options go after the subcommand: envshim run {wrong} ..., not envshim {wrong} run ..."));
        }
        // `ENTRYPOINT ["/envshim","run"]` with a pod's `args: ["--port=8080"]`.
        (sub == b"run" && wrong.starts_with('-')).then(|| {
            format!("the program's arguments go after --: envshim run [OPTIONS] -- PROGRAM {wrong}; in an image, ENTRYPOINT [\"/envshim\",\"run\",\"--\",\"/app\"] lets a pod's args append")
        })
    })
}

/// The one line for clap's error `e` on the command line `args` of `cli`
/// (envshim's, or its converter's): the first paragraph of clap's message,
/// then in parentheses the closest known name for a misspelt option or
/// subcommand and `see` (where the help is), else `hint` of the word clap
/// did not know ("" for none), else `see`.
#[cfg_attr(envshim_size, optimize(size))]
pub fn refused_line(e: &clap::Error, cli: &clap::Command, args: &[OsString], see: &str, hint: impl FnOnce(&str) -> Option<String>) -> String {
    let subcommands = || cli.get_subcommands().map(|s| s.get_name()).filter(|n| *n != "help");
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let names: Vec<&str> = subcommands().collect();
        if let Some((last, rest)) = names.split_last() {
            return format!("a subcommand is required: {} or {last} ({see})", rest.join(", "));
        }
    }
    // A value refused: the option and what it takes; clap's line would show the value.
    if let Some((option, expected)) = refused_value(e) {
        return format!("{option}: {expected} ({see})");
    }
    let text = e.render().to_string();
    // The first paragraph, on one line.
    let first: Vec<&str> = text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let first = first.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    // A suggestion only for a word it does not know (not for a known
    // option given twice, or with a value it takes none of).
    let wrong = match (e.kind(), e.get(ContextKind::InvalidArg).or_else(|| e.get(ContextKind::InvalidSubcommand))) {
        (ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand, Some(ContextValue::String(s))) => s.split(['=', ' ']).next().unwrap_or(s).to_string(),
        _ => String::new(),
    };
    let known: Vec<String> = match e.kind() {
        ErrorKind::InvalidSubcommand => subcommands().chain(["help"]).map(String::from).collect(),
        _ => options_of(cli, args.get(1)),
    };
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    match crate::suggest::closest(wrong.as_bytes(), &known).filter(|name| **name != wrong) {
        Some(name) => format!("{first} (did you mean {name}? {see})"),
        None => match hint(&wrong) {
            Some(hint) => format!("{first} ({hint})"),
            None => format!("{first} ({see})"),
        },
    }
}

/// `--help`, `--version` and the long options of the subcommand `sub`.
#[cfg_attr(envshim_size, optimize(size))]
fn options_of(cli: &clap::Command, sub: Option<&OsString>) -> Vec<String> {
    let sub = sub.and_then(|a| a.to_str()).and_then(|a| cli.find_subcommand(a));
    let longs = sub.into_iter().flat_map(|s| s.get_arguments()).filter_map(|a| a.get_long());
    ["help", "version"].into_iter().chain(longs).map(|l| format!("--{l}")).collect()
}

/// For a value clap refused (its option's parser failed, or it is none of
/// the option's words): the option's long name (`--wait`) and what it takes,
/// never the value, which may be a secret (a Secret's key imported by
/// `envFrom` becomes a configuration variable). The converter names a
/// functionConfig key with it too.
#[cfg_attr(envshim_size, optimize(size))]
pub fn refused_value(e: &clap::Error) -> Option<(String, String)> {
    if !matches!(e.kind(), ErrorKind::ValueValidation | ErrorKind::InvalidValue | ErrorKind::TooManyValues) {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else { return None };
    // `--wait <DURATION>`: the option alone.
    let option = arg.split([' ', '=']).next().unwrap_or(arg).to_string();
    let expected = match (e.kind(), e.get(ContextKind::ValidValue), std::error::Error::source(e)) {
        // `--verbose=yes`: a flag given a value.
        (ErrorKind::TooManyValues, _, _) => "takes no value".to_string(),
        (ErrorKind::InvalidValue, Some(ContextValue::Strings(words)), _) if !words.is_empty() => format!("expected one of {}", words.join(", ")),
        // No value at all (`--manifest --`): clap's line shows none.
        (ErrorKind::InvalidValue, _, _) => return None,
        (_, _, Some(reason)) => reason.to_string(),
        _ => "a value it does not take".to_string(),
    };
    Some((option, expected))
}
