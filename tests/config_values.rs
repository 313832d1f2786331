//! A configuration value refused, an option's or its `ENVSHIM_*`
//! variable's: one line naming the option or variable and what it takes,
//! exit 2, and never the value, on stderr or in the termination log (a
//! Secret's key imported by `envFrom` can be a configuration variable). The
//! options and variables are read from the definition, so one added later is
//! covered too.

use std::ffi::OsString;

use crate::common::*;

/// One option that takes a value (or a flag, given one anyway): its
/// subcommand, long name, variable, and whether the sentinel is a value it
/// refuses.
struct Valued {
    sub: String,
    long: String,
    variable: Option<String>,
    refuses: bool,
}

/// Every long option of every subcommand, from the definition.
fn options() -> Vec<Valued> {
    use clap::CommandFactory;
    let mut cli = envshim::internals::Cli::command();
    cli.build();
    let mut all = Vec::new();
    for sub in cli.get_subcommands().filter(|s| s.get_name() != "help") {
        for arg in sub.get_arguments().filter(|a| !["help", "version"].contains(&a.get_id().as_str())) {
            let Some(long) = arg.get_long() else { continue };
            // The option alone, its value the sentinel: does its parser take it?
            let alone = clap::Command::new("x").arg(arg.clone()).try_get_matches_from(["x".to_string(), format!("--{long}={SENTINEL}")]);
            all.push(Valued {
                sub: sub.get_name().to_string(),
                long: long.to_string(),
                variable: arg.get_env().map(|v| v.to_string_lossy().into_owned()),
                refuses: alone.is_err(),
            });
        }
    }
    all
}

/// `install` writes no termination log (it runs outside a pod's container).
fn takes_no_log(o: &Valued) -> bool {
    o.sub == "install"
}

/// `envshim SUB` with `extra` after its termination log (when it has one),
/// the environment `vars`; what it printed and what the log holds.
fn refused(o: &Valued, extra: &[OsString], vars: &[(&str, &str)]) -> (Out, String) {
    let d = Volume::new();
    let log = d.join("termination-log");
    let mut args: Vec<OsString> = vec![o.sub.clone().into()];
    if !takes_no_log(o) {
        args.extend([os("--termination-log"), log.clone().into_os_string()]);
    }
    args.extend(extra.iter().cloned());
    args.extend(match o.sub.as_str() {
        "install" => vec![d.join("dest").into_os_string()],
        "render" => vec![],
        _ => vec![os("--"), os("/bin/true")],
    });
    let out = envshim(args).envs(vars.iter().copied()).run();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    (out, logged)
}

#[test]
fn a_refused_value_is_named_never_shown() {
    let all = options();
    // The definition's parsers refuse it: durations, signals, switches, words, codes.
    for needed in ["wait", "restart-signal", "watch-splay", "on-change", "env-grammar", "format", "success-exit", "verbose"] {
        assert!(all.iter().any(|o| o.long == needed && o.refuses), "--{needed} is not among the options refusing the sentinel");
    }
    let mut tried = 0;
    for o in all.iter().filter(|o| o.refuses) {
        let option = format!("--{}", o.long);
        let (out, log) = refused(o, &[os(&format!("{option}={SENTINEL}"))], &[]);
        out.fails_with(2, &[&option]);
        out.no_sentinel();
        assert_no_sentinel(log.as_bytes(), &format!("the termination log of {} {option}", o.sub));
        if !takes_no_log(o) {
            assert!(log.contains(&option), "{} {option}: the termination log lacks the message: {log:?}", o.sub);
        }
        tried += 1;
        let Some(var) = &o.variable else { continue };
        let (out, log) = refused(o, &[], &[(var.as_str(), SENTINEL)]);
        out.fails_with(2, &[var]);
        out.no_sentinel();
        assert_no_sentinel(log.as_bytes(), &format!("the termination log of {} {var}", o.sub));
        assert!(log.contains(var.as_str()), "{} {var}: the termination log lacks the message: {log:?}", o.sub);
        tried += 1;
    }
    assert!(tried > 40, "only {tried} cases");
}
