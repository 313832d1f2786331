//! `kubectl envshim convert`: workloads written with native `fileKeyRef`
//! (Kubernetes 1.34+), rewritten to run envshim, so they run on any cluster.
//!
//! The input is a YAML stream or a JSON stream. Each document is parsed on
//! its own; one the conversion does not change is written back as the very
//! text it was read from (byte for byte: comments, quoting, order), one it
//! changes is written anew from its parsed tree (field order kept).
//!
//! `main` parses the command line (`cli.rs`) and runs one subcommand:
//! `convert`, `manifest` (one container's manifest) or `krm` (kpt's and
//! kustomize's function protocols, `krm.rs`).

mod cli;
mod convert;
mod input;
mod krm;
mod manifest;
mod stream;
mod tree;
mod warn;
mod yaml;

use std::ffi::OsString;
use std::io::Write;

use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, Command, ConvertArgs, Options};
use convert::{Naming, Settings, DEFAULT_SHIM_PATH};

/// Exit codes: envshim's own table, which names the converter's too.
pub use envshim::error::code;

/// No input is read past this (all inputs together): a stream of workloads is far smaller.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

fn main() {
    let args: Vec<OsString> = std::env::args_os().collect();
    // Its help names it as users type it (`kubectl envshim`); the generated
    // completions and man pages, as the file on PATH (`kubectl-envshim`).
    let parsed = Cli::command().bin_name("kubectl envshim").try_get_matches_from(&args).and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            std::process::exit(code::OK);
        }
        Err(e) => std::process::exit(usage(&cli::usage_line(&e, &args))),
    };
    // As ripgrep ends: stdout is flushed already (`write_stdout`), nothing else is left to drop.
    std::process::exit(match cli.command {
        Command::Convert(args) => convert_command(args),
        // Whole trees read, walked and compared: on the YAML reader's stack.
        Command::Manifest(args) => stream::on_yaml_stack(|| manifest::command(&args)),
        Command::Krm(args) => stream::on_yaml_stack(|| krm::command(&args)),
    })
}

/// One `kubectl-envshim: ` line on stderr (a closed stderr is not a reason to panic).
pub fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "kubectl-envshim: {message}");
}

pub fn usage(message: &str) -> i32 {
    say(message);
    code::USAGE
}

/// Each error on its own line; the exit code is the first one's.
pub fn fail(errors: &[(i32, String)]) -> i32 {
    for (_, e) in errors {
        say(e);
    }
    // Not reached without an error (a step that fails says why); were it
    // reached, the run still fails, with a code of the table, never 0.
    errors.first().map_or(code::CONFIG, |e| e.0)
}

/// The conversion's settings from the options (the command line's, or a
/// function's config, as `naming` says); Err: what is wrong, for a usage error.
pub fn settings(o: &Options, naming: Naming) -> Result<Settings, String> {
    let opt = |key: &str| naming.option(key);
    let baked_in = o.shim_path != DEFAULT_SHIM_PATH;
    if baked_in && o.shim_image.is_some() {
        return Err(format!(
            "{} is for the envshim-install initContainer, which {} (envshim in the image) leaves out: give one",
            opt("shim-image"),
            opt("shim-path")
        ));
    }
    if !o.shim_path.starts_with('/') {
        return Err(format!("{} must be an absolute path, got {:?}", opt("shim-path"), o.shim_path));
    }
    if !matches!(o.env_grammar.as_str(), "kubelet" | "envshim") {
        return Err(format!("--env-grammar: expected kubelet or envshim, got {:?}", o.env_grammar));
    }
    if let Some(w) = &o.wait {
        envshim::wait::duration(w).map_err(|e| format!("{}: {e}", opt("wait")))?;
    }
    for (key, value) in [("installer-cpu", &o.installer_cpu), ("installer-memory", &o.installer_memory)] {
        if !cli::quantity(value) {
            return Err(format!("{}: {value:?} is not a Kubernetes quantity (100m, 0.1, 32Mi)", opt(key)));
        }
    }
    let mut entrypoints: Vec<(String, Vec<String>)> = Vec::new();
    let mut warnings = Vec::new();
    let option = opt("entrypoint");
    for e in &o.entrypoint {
        let Some((name, program)) = e.split_once('=') else {
            return Err(format!("{option} {e:?}: expected CONTAINER=PROGRAM"));
        };
        let words: Vec<String> = if program.trim_start().starts_with('[') {
            serde_json::from_str(program).map_err(|err| format!("{option} {name}: PROGRAM is not a JSON array of strings ({err})"))?
        } else {
            vec![program.to_string()]
        };
        if name.is_empty() || words.is_empty() || words[0].is_empty() {
            return Err(format!("{option} {e:?}: expected CONTAINER=PROGRAM with a container name and a program"));
        }
        if entrypoints.iter().any(|(n, _)| n == name) {
            return Err(format!("{option} {name}: given twice"));
        }
        if let [word] = &words[..] {
            warnings.extend(one_word_with_blanks(name, word, naming));
        }
        entrypoints.push((name.to_string(), words));
    }
    let no_shim_image = || match naming {
        Naming::Flags => NO_SHIM_IMAGE.to_string(),
        Naming::Config => "no envshim image: set the config's data.shim-image to IMAGE (best pinned: REGISTRY/envshim@sha256:DIGEST)".to_string(),
    };
    Ok(Settings {
        shim_path: o.shim_path.clone(),
        shim_image: if baked_in { None } else { Some(o.shim_image.clone().or_else(default_shim_image).ok_or_else(no_shim_image)?) },
        entrypoints,
        wait: o.wait.clone(),
        envshim_grammar: o.env_grammar == "envshim",
        installer_cpu: o.installer_cpu.clone(),
        installer_memory: o.installer_memory.clone(),
        naming,
        warnings,
    })
}

/// `--entrypoint web=/docker-entrypoint.sh nginx -g daemon off;`: one word,
/// which the runtime runs as a program of that whole name (and fails to
/// find). The warning shows the JSON list of its blank-separated words.
fn one_word_with_blanks(name: &str, word: &str, naming: Naming) -> Option<String> {
    if !word.contains([' ', '\t']) {
        return None;
    }
    let list = serde_json::to_string(&word.split([' ', '\t']).filter(|w| !w.is_empty()).collect::<Vec<_>>()).unwrap_or_default();
    let form = match naming {
        Naming::Flags => format!("--entrypoint '{name}={list}'"),
        Naming::Config => format!("the line {name}={list} in data.entrypoint"),
    };
    Some(format!(
        "{} {name}: the program is one word with blanks, so the container would run a program of that whole name; \
         for a program and its arguments give a JSON list, one string a word: {form} \
         (split here at each blank: keep in one string what is one argument, as the image's ENTRYPOINT and CMD do)",
        naming.option("entrypoint")
    ))
}

/// The envshim image when `--shim-image` is not given: `KUBECTL_ENVSHIM_SHIM_IMAGE`,
/// else the one release/build.sh compiles in (REPO@sha256:DIGEST of the release's
/// image). A plain build has none and never guesses one: a short name like
/// `envshim:0.1.0` would be resolved by each node, from whatever registry answers.
fn default_shim_image() -> Option<String> {
    let from_env = std::env::var("KUBECTL_ENVSHIM_SHIM_IMAGE").ok().filter(|v| !v.is_empty());
    from_env.or_else(|| option_env!("KUBECTL_ENVSHIM_RELEASE_IMAGE").filter(|v| !v.is_empty()).map(str::to_string))
}

const NO_SHIM_IMAGE: &str = "no envshim image: pass --shim-image IMAGE (best pinned: REGISTRY/envshim@sha256:DIGEST) or set KUBECTL_ENVSHIM_SHIM_IMAGE (a release's converter defaults to its own image)";

/// Reads every input, converts every document; writes the result only when
/// every document converted.
fn convert_command(args: ConvertArgs) -> i32 {
    if let Some(stray) = args.stray.first() {
        return usage(&cli::stray(stray, "convert"));
    }
    let settings = match settings(&args.options, Naming::Flags) {
        Ok(s) => s,
        Err(e) => return usage(&e),
    };
    for w in &settings.warnings {
        say(&format!("warning: {w}"));
    }
    let inputs = match input::read_all(&args.input) {
        Ok(inputs) => inputs,
        Err(e) => return fail(&[e]),
    };
    let outputs = match convert_all(&inputs, &settings) {
        Ok(outputs) => outputs,
        Err(errors) => return fail(&errors),
    };
    // What would change (--check, as `gofmt -l` lists files), or what the
    // converted pods run without (warnings): stderr, names only, no value.
    for (shown, out) in &outputs {
        for (n, note) in &out.notes {
            if args.check {
                say(&format!("{shown}: document {n} ({}): would convert containers {}", note.object, note.containers.join(", ")));
                if settings.envshim_grammar {
                    say(&format!(
                        "{shown}: document {n} ({}): they would read env files with envshim's grammar (--env-grammar envshim), not the kubelet's: \
                         check the files with envshim check --env-grammar kubelet before the cluster reads fileKeyRef itself",
                        note.object
                    ));
                }
            }
            for w in &note.warnings {
                say(&format!("warning: {shown}: document {n} ({}): {w}", note.object));
            }
        }
    }
    if args.check {
        let changed = outputs.iter().any(|(_, o)| !o.notes.is_empty());
        return if changed { code::CHANGED } else { code::OK };
    }
    write_stdout(joined(&outputs).as_bytes())
}

/// Each input's name and its conversion.
type Converted<'i> = Vec<(&'i String, stream::Output)>;

/// Every input converted; Err: every problem of every input.
fn convert_all<'i>(inputs: &'i input::Texts, settings: &Settings) -> Result<Converted<'i>, Vec<(i32, String)>> {
    let mut errors: Vec<(i32, String)> = Vec::new();
    let mut outputs = Vec::new();
    for (shown, text) in inputs {
        match text {
            Ok(text) => match stream::convert(text, shown, settings) {
                Ok(out) => outputs.push((shown, out)),
                Err(mut es) => errors.append(&mut es),
            },
            Err(e) => errors.push((code::DATAERR, format!("{shown}: {e}"))),
        }
    }
    if errors.is_empty() { Ok(outputs) } else { Err(errors) }
}

/// The outputs as one stream: several files' YAML documents separated by
/// `---`, JSON values one after the other (a stream kubectl reads).
fn joined(outputs: &Converted) -> String {
    let mut all = String::new();
    let any_yaml = outputs.iter().any(|(_, o)| !o.json);
    for (i, (_, out)) in outputs.iter().enumerate() {
        if i > 0 {
            if !all.is_empty() && !all.ends_with('\n') {
                all.push('\n');
            }
            if any_yaml && !out.text.trim_start().starts_with("---") {
                all.push_str("---\n");
            }
        }
        all.push_str(&out.text);
    }
    all
}

/// Writes `bytes` to stdout: OK, or IOERR when it cannot (a closed pipe is not an error).
pub fn write_stdout(bytes: &[u8]) -> i32 {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => code::OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code::OK,
        Err(e) => {
            say(&format!("cannot write to stdout ({})", input::io_reason(&e)));
            code::IOERR
        }
    }
}
