//! `kubectl envshim convert`: workloads written with native `fileKeyRef`
//! (Kubernetes 1.34+), rewritten to run envshim, so they run on any cluster.
//!
//! The input is a YAML stream or a JSON stream. Each document is parsed on
//! its own; one the conversion does not change is written back as the very
//! text it was read from (byte for byte: comments, quoting, order), one it
//! changes is written anew from its parsed tree (field order kept).

mod convert;
mod stream;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use convert::{Settings, DEFAULT_SHIM_PATH};

/// Exit codes (sysexits, as envshim's).
pub mod code {
    pub const OK: u8 = 0;
    pub const CHANGED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const DATAERR: u8 = 65;
    pub const CONFIG: u8 = 78;
}

/// No input is read past this: a stream of workloads is far smaller.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Parser)]
#[command(
    name = "kubectl-envshim",
    bin_name = "kubectl envshim",
    version,
    about = "Converts workloads written with native fileKeyRef (Kubernetes 1.34+) to run envshim, for any cluster."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert the pods of a YAML or JSON stream; the result goes to stdout
    Convert(ConvertArgs),
}

#[derive(Args)]
struct ConvertArgs {
    /// A YAML (multi-document) or JSON file; `-` or none: stdin (repeatable)
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    files: Vec<OsString>,
    /// The image whose /envshim the envshim-install initContainer copies [default: $KUBECTL_ENVSHIM_SHIM_IMAGE, else a release's own image, by digest]
    #[arg(long, value_name = "IMAGE")]
    shim_image: Option<String>,
    /// Where envshim is in the containers; another path than the default means envshim is in the image (no initContainer, no volume)
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SHIM_PATH)]
    shim_path: String,
    /// The program the image of container CONTAINER runs, for a container without command: a JSON array of strings or one path (repeatable)
    #[arg(long, value_name = "CONTAINER=PROGRAM")]
    entrypoint: Vec<String>,
    /// Converted containers wait up to DURATION for missing env files (500ms, 30s, 2m; a bare number is seconds)
    #[arg(long, value_name = "DURATION")]
    wait: Option<String>,
    /// Write nothing; exit 1 if anything would change, 0 if not
    #[arg(long)]
    check: bool,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => return ExitCode::from(usage(&first_line(&e))),
    };
    let Command::Convert(args) = cli.command;
    ExitCode::from(convert_command(args))
}

fn first_line(e: &clap::Error) -> String {
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a subcommand is required: convert (see kubectl envshim --help)".into();
    }
    let text = e.render().to_string();
    let first: Vec<&str> = text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let first = first.join(" ");
    format!("{} (see kubectl envshim convert --help)", first.strip_prefix("error: ").unwrap_or(&first))
}

/// One `kubectl-envshim: ` line on stderr (a closed stderr is not a reason to panic).
fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "kubectl-envshim: {message}");
}

fn usage(message: &str) -> u8 {
    say(message);
    code::USAGE
}

fn settings(args: &ConvertArgs) -> Result<Settings, String> {
    let baked_in = args.shim_path != DEFAULT_SHIM_PATH;
    if baked_in && args.shim_image.is_some() {
        return Err("--shim-image is for the envshim-install initContainer, which --shim-path (envshim in the image) leaves out: give one".into());
    }
    if !args.shim_path.starts_with('/') {
        return Err(format!("--shim-path must be an absolute path, got {:?}", args.shim_path));
    }
    if let Some(w) = &args.wait {
        envshim::wait::duration(w).map_err(|e| format!("--wait: {e}"))?;
    }
    let mut entrypoints: Vec<(String, Vec<String>)> = Vec::new();
    for e in &args.entrypoint {
        let Some((name, program)) = e.split_once('=') else {
            return Err(format!("--entrypoint {e:?}: expected CONTAINER=PROGRAM"));
        };
        let words: Vec<String> = if program.trim_start().starts_with('[') {
            serde_json::from_str(program).map_err(|err| format!("--entrypoint {name}: PROGRAM is not a JSON array of strings ({err})"))?
        } else {
            vec![program.to_string()]
        };
        if name.is_empty() || words.is_empty() || words[0].is_empty() {
            return Err(format!("--entrypoint {e:?}: expected CONTAINER=PROGRAM with a container name and a program"));
        }
        if entrypoints.iter().any(|(n, _)| n == name) {
            return Err(format!("--entrypoint {name}: given twice"));
        }
        entrypoints.push((name.to_string(), words));
    }
    Ok(Settings {
        shim_path: args.shim_path.clone(),
        shim_image: if baked_in { None } else { Some(args.shim_image.clone().or_else(default_shim_image).ok_or(NO_SHIM_IMAGE)?) },
        entrypoints,
        wait: args.wait.clone(),
    })
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
fn convert_command(args: ConvertArgs) -> u8 {
    let settings = match settings(&args) {
        Ok(s) => s,
        Err(e) => return usage(&e),
    };
    let files = if args.files.is_empty() { vec![OsString::from("-")] } else { args.files.clone() };
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return usage("stdin (-f -) can be read only once");
    }
    let mut errors: Vec<(u8, String)> = Vec::new();
    let mut outputs = Vec::new();
    let mut changed = false;
    for file in &files {
        let shown = if file == "-" { "stdin".to_string() } else { file.to_string_lossy().into_owned() };
        let text = match read_input(file) {
            Ok(t) => t,
            Err(e) => {
                errors.push((code::DATAERR, format!("{shown}: {e}")));
                continue;
            }
        };
        match stream::convert(&text, &shown, &settings) {
            Ok(out) => {
                changed |= out.changed;
                outputs.push(out);
            }
            Err(mut es) => errors.append(&mut es),
        }
    }
    if !errors.is_empty() {
        for (_, e) in &errors {
            say(e);
        }
        return errors[0].0;
    }
    if args.check {
        return if changed { code::CHANGED } else { code::OK };
    }
    let mut all = String::new();
    let any_yaml = outputs.iter().any(|o| !o.json);
    for (i, out) in outputs.iter().enumerate() {
        if i > 0 {
            if !all.is_empty() && !all.ends_with('\n') {
                all.push('\n');
            }
            // Several files: YAML documents are separated by `---`; JSON values
            // follow each other (a stream kubectl reads).
            if any_yaml && !out.text.trim_start().starts_with("---") {
                all.push_str("---\n");
            }
        }
        all.push_str(&out.text);
    }
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(all.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => code::OK,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code::OK,
        Err(e) => {
            say(&format!("cannot write to stdout ({e})"));
            74
        }
    }
}

/// The whole input, at most [`MAX_INPUT_BYTES`], as UTF-8 text.
fn read_input(file: &OsString) -> Result<String, String> {
    let mut bytes = Vec::new();
    let read = if file == "-" {
        std::io::stdin().lock().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
    } else {
        match std::fs::File::open(file) {
            Ok(f) => {
                if f.metadata().is_ok_and(|m| m.is_dir()) {
                    return Err("is a directory".into());
                }
                f.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes)
            }
            Err(e) => return Err(format!("cannot be read ({})", io_reason(&e))),
        }
    };
    read.map_err(|e| format!("cannot be read ({})", io_reason(&e)))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(format!("is larger than {MAX_INPUT_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|e| format!("is not UTF-8 (byte {})", e.utf8_error().valid_up_to()))
}

/// An I/O error without the "(os error N)" suffix.
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_lowercase(),
        None => s,
    }
}
