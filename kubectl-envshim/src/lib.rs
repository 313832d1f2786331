//! `kubectl envshim convert`: workloads written with native `fileKeyRef`
//! (Kubernetes 1.34+), rewritten to run envshim, so they run on any cluster.
//!
//! The input is a YAML stream or a JSON stream. Each document is parsed on
//! its own; one the conversion does not change is written back as the very
//! text it was read from (byte for byte: comments, quoting, order), one it
//! changes is written anew from its parsed tree (field order kept).
//!
//! `main.rs` parses the command line (`cli.rs`, clap) and calls one of the
//! subcommands here: [`convert`], [`unconvert`], [`manifest`] (one
//! container's manifest), [`krm`] (kpt's and kustomize's function protocols, `krm.rs`)
//! or [`fmt`] (env files in the form the kubelet reads, envshim's code). This
//! file holds the entry points alone: no module uses anything of it.
//! Errors are envshim's own type (`envshim::converter::Error`: an exit code of
//! envshim's table, a subject, a JSON path, what is wrong).

// clippy.toml's rule of the shim's own sort is the shim's: the converter's size does not count.
#![allow(clippy::disallowed_methods)]

pub mod cli;
mod convert;
mod input;
mod installer;
mod krm;
mod manifest;
mod report;
mod settings;
mod stream;
mod tree;
mod unconvert;
mod validate;
mod warn;
mod yaml;

use envshim::converter::ExitCode;

use cli::{ConvertArgs, FmtArgs, KrmArgs, ManifestArgs, UnconvertArgs};
use report::{fail, say, usage};
use settings::{settings, Naming};

/// Reads every input, converts every document; writes the result only when
/// every document converted. `given`: the matches `args` was parsed from.
pub fn convert(args: &ConvertArgs, given: &clap::ArgMatches) -> ExitCode {
    if let Some(stray) = args.rewrite.stray.first() {
        return usage(&cli::stray(stray, "convert"));
    }
    let settings = match settings(&args.options, given, Naming::Flags) {
        Ok(s) => s,
        Err(e) => return fail(&[e]),
    };
    let inputs = match input::read_all(&args.input) {
        Ok(inputs) => inputs,
        Err(e) => return fail(&[e]),
    };
    let converted = stream::convert_all(&inputs, &settings);
    // An --entrypoint for a container the input lacks (a typo) first: it
    // explains a "no command" of the container meant. Not when a document
    // did not parse (its containers are unknown).
    let parsed = converted.as_ref().err().is_none_or(|errors| errors.iter().all(|e| e.code == ExitCode::Config));
    if let Err(e) = settings.unknown_entrypoints().or_else(|e| if parsed { Err(e) } else { Ok(()) }) {
        return fail(&[e]);
    }
    let outputs = match converted {
        Ok(outputs) => outputs,
        Err(errors) => return fail(&errors),
    };
    let changed = outputs.iter().any(|(_, o)| !o.notes.is_empty());
    // A pod written converted names the image (--check writes none).
    if changed && !args.rewrite.check {
        if let Err(e) = settings.image_needed_by_pods() {
            return fail(&[e]);
        }
    }
    // What would change (--check, as `gofmt -l` lists files), or what the
    // converted pods run without (warnings): stderr, names only, no value.
    for (shown, out) in &outputs {
        for (n, note) in &out.notes {
            if args.rewrite.check {
                let again = if note.again { " again, from the originals they carry, with these settings" } else { "" };
                say(&format!("{shown}: document {n} ({}): would convert containers {}{again}", note.object, note.containers.join(", ")));
                if settings.envshim_grammar {
                    say(&format!(
                        "{shown}: document {n} ({}): they would read env files with envshim's grammar (--env-grammar envshim), not the kubelet's: \
                         lint the files with kubectl envshim fmt --check before the cluster reads fileKeyRef itself",
                        note.object
                    ));
                }
            }
            for w in &note.warnings {
                say(&format!("warning: {shown}: document {n} ({}): {w}", note.object));
            }
        }
    }
    if args.rewrite.check {
        return if changed { ExitCode::Changed } else { ExitCode::Ok };
    }
    report::write_stdout(stream::joined(&outputs).as_bytes())
}

/// Turns converted workloads back into native `fileKeyRef` ones
/// (`unconvert.rs`); writes the result only when every document could be.
pub fn unconvert(args: &UnconvertArgs) -> ExitCode {
    unconvert::command(args)
}

/// Prints one container's manifest. Whole trees read, walked and compared:
/// on the YAML reader's stack.
pub fn manifest(args: &ManifestArgs) -> ExitCode {
    stream::on_yaml_stack(|| manifest::command(args))
}

/// Runs as a KRM function or a kustomize exec transformer plugin (on the
/// YAML reader's stack, as [`manifest`]).
pub fn krm(args: &KrmArgs) -> ExitCode {
    stream::on_yaml_stack(|| krm::command(args))
}

/// `kubectl envshim fmt`: envshim's own code (`envshim::converter::fmt`, which the shim's
/// binary leaves out), its failures said as the converter says them.
pub fn fmt(args: &FmtArgs) -> ExitCode {
    envshim::converter::fmt(&args.files, args.check, &mut |e| say(&e.to_string()))
}

/// A command line clap refused: its one line, exit 2.
pub fn refused(e: &clap::Error, args: &[std::ffi::OsString]) -> ExitCode {
    usage(&cli::usage_line(e, args))
}
