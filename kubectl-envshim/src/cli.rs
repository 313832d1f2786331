// The command line of kubectl-envshim: its definition, with the docs `--help`
// shows, and the one-line usage errors; tools/cli-docs.rs generates the man
// pages and completions from it. Each value is checked by envshim's own parser
// (`envshim::converter::values`): it means the same in both binaries.

use std::ffi::OsString;

use clap::builder::UnknownArgumentValueParser;
use clap::{Args, Parser, Subcommand};
use envshim::converter::values::{self, AsWritten};
use envshim::converter::{exit_code_help, ExitCode, Tool};
use envshim::converter::{Grammar, WatchOptions};

use crate::convert::slots::POD_INDEX_VAR;

#[derive(Parser)]
#[command(
    name = "kubectl-envshim",
    version,
    about = "Converts workloads written with native fileKeyRef (Kubernetes 1.34+) to run envshim, for any cluster.",
    after_help = exit_code_help(Tool::Converter)
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// One value, made once a run: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub enum Command {
    /// Convert the pods of YAML or JSON streams; the result goes to stdout
    Convert(ConvertArgs),
    /// Turn converted workloads back into native fileKeyRef ones; the result goes to stdout
    Unconvert(UnconvertArgs),
    /// Print one container's manifest as JSON (for --manifest or a ConfigMap); a converted one as it was written
    Manifest(ManifestArgs),
    /// Run as a KRM function (kpt: a ResourceList on stdin) or a kustomize exec transformer plugin (CONFIG, a stream on stdin)
    Krm(KrmArgs),
    #[command(about = FMT_ABOUT, long_about = FMT_HELP, after_help = exit_code_help(Tool::Fmt))]
    Fmt(FmtArgs),
}

/// `fmt`'s line in the list of subcommands, and the first of its help.
const FMT_ABOUT: &str = "Rewrite env files in place so that the kubelet's grammar and envshim's read the same variables from them";

/// `fmt --help` and its man page: what it writes, what cannot be written in
/// the kubelet's grammar (the portable form's refusals, src/envfile/portable.rs) and the
/// ways around each.
const FMT_HELP: &str = "\
Rewrite env files in place so that the kubelet's grammar and envshim's read the same variables from them

Each entry becomes NAME='VALUE' (export and the blanks around the name dropped);
a name given twice is written once where it was first, with the entry envshim
reads (the last); comments and blank lines stay. A file is replaced only if it
is still the file read, as it was read, and keeps its owner, mode, ACL and
extended attributes. With --check, nothing changes: every line of every file
that the kubelet reads otherwise or cannot read is listed on stdout
(FILE:LINE: what it needs), all at once.

What the kubelet's grammar cannot express, and the ways around it (a file with
such a line is left as it was, and each such line is named):

- A value holding a single quote (its quotes have no escape), or a carriage
return before a line feed (its reader ends the line there): give the value a
source of its own, a key of a Secret or ConfigMap (secretKeyRef,
configMapKeyRef: the value as it is) or, under envshim, a file of its own
(--file-env NAME with NAME_FILE, or --env-dir); or store it base64-encoded; or
keep envshim's grammar for the pod (kubectl envshim convert --env-grammar
envshim), which a cluster that reads fileKeyRef itself will not read alike.

- An empty value (the kubelet reads NAME='' as a key it does not find): give it
a value, set it in the pod (env: [{name: NAME, value: \"\"}]), or remove the
line if the program treats an unset variable as empty.

- A name that export hid (export #A=1, export export A=1): rename the variable.

- A line of 64 KiB or more without a line feed: end it with a line feed.

- A file over 64 KiB once its values are in quotes: split it in two files.";

/// Where the documents come from, as kubectl takes them.
#[derive(Args)]
pub struct Input {
    /// A YAML (multi-document) or JSON file, or a directory of .yaml, .yml and .json files (in name order); `-` or none: stdin (repeatable)
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub files: Vec<OsString>,
    /// Read the directories given with -f and their subdirectories
    #[arg(short = 'R', long)]
    pub recursive: bool,
}

/// Where the envshim-install initContainer puts envshim, in the `envshim` volume.
pub const DEFAULT_SHIM_PATH: &str = "/.envshim/bin/envshim";
/// The envshim-install initContainer's requests and limits: it copies one
/// file of half a megabyte, in a millisecond of CPU.
pub const DEFAULT_INSTALLER_CPU: &str = "50m";
pub const DEFAULT_INSTALLER_MEMORY: &str = "16Mi";
/// Converted containers read env files as the kubelet will: what runs
/// converted runs the same once the cluster reads `fileKeyRef` itself.
pub const DEFAULT_ENV_GRAMMAR: &str = "kubelet";

/// How pods are converted. A KRM function's config gives them too: its
/// `data` keys are their long names, parsed with this very definition
/// (krm.rs), so an option added here is a key there. The options named as
/// one of `envshim run`'s are passed on to it: each given is written to the
/// converted containers as envshim's variable for it, its text as written
/// (settings.rs), and each is checked by envshim's own parser.
#[derive(Args)]
#[command(mut_args = converters)]
pub struct Options {
    /// The image whose /envshim the envshim-install initContainer copies [default: $KUBECTL_ENVSHIM_SHIM_IMAGE, else a release's own image, by digest]
    #[arg(long, value_name = "IMAGE")]
    pub shim_image: Option<String>,
    /// Where envshim is in the containers; another path than the default means envshim is in the image (no initContainer, no volume)
    #[arg(long, value_name = "PATH", default_value = DEFAULT_SHIM_PATH)]
    pub shim_path: String,
    /// The program the image of container CONTAINER runs, for a container without command: a JSON array of strings or one path (repeatable). The image's ENTRYPOINT and CMD, as JSON lists: docker image inspect -f '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' IMAGE
    #[arg(long, value_name = "CONTAINER=PROGRAM")]
    pub entrypoint: Vec<String>,
    /// Converted containers wait up to DURATION for missing env files (500ms, 30s, 2m; a bare number is seconds)
    #[arg(long, value_name = "DURATION", value_parser = AsWritten(values::duration))]
    pub wait: Option<String>,
    /// Converted containers' envshim listens on ADDR (tcp:HOST:PORT, tcp::PORT, unix:PATH; comma-separated) and hands the sockets to the program (fd 3, 4, ... with LISTEN_FDS)
    #[arg(long, value_name = "ADDR", value_parser = AsWritten(values::listen))]
    pub listen: Option<String>,
    /// How converted containers read env files: kubelet (exactly as the kubelet 1.35 will once the cluster reads fileKeyRef itself: NAME='value' lines, the first occurrence wins) or envshim (envshim's more forgiving grammar)
    #[arg(long, value_name = "kubelet|envshim", default_value = DEFAULT_ENV_GRAMMAR, value_parser = values::env_grammar(), hide_possible_values = true)]
    pub env_grammar: Grammar,
    /// Converted containers run envshim with --watch: a changed fileKeyRef file restarts the program with its new values
    #[arg(long)]
    pub watch: bool,
    // `envshim run --watch`'s settings: envshim's own definition, help and
    // defaults (`converters` keeps them from the converter's environment).
    #[command(flatten)]
    pub watch_settings: WatchOptions,
    /// The CPU the envshim-install initContainer requests and is limited to
    #[arg(long, value_name = "QUANTITY", default_value = DEFAULT_INSTALLER_CPU)]
    pub installer_cpu: String,
    /// The memory the envshim-install initContainer requests and is limited to
    #[arg(long, value_name = "QUANTITY", default_value = DEFAULT_INSTALLER_MEMORY)]
    pub installer_memory: String,
}

/// An option as the converter takes it: envshim's settings are never read
/// from the converter's own environment (their `ENVSHIM_*` variables are what
/// it writes), and the one it writes itself for each pod, from the downward
/// API (`--pod-index`), is refused as an argument it does not know.
fn converters(arg: clap::Arg) -> clap::Arg {
    let per_pod = arg.get_env().is_some_and(|v| v == POD_INDEX_VAR);
    let arg = arg.env(None);
    match per_pod {
        true => arg.hide(true).value_parser(UnknownArgumentValueParser::suggest("the converter writes it for each pod, from the downward API")),
        false => arg,
    }
}

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub options: Options,
    #[command(flatten)]
    pub rewrite: Rewrite,
}

/// What `convert` and `unconvert` share after their input.
#[derive(Args)]
#[group(skip)]
pub struct Rewrite {
    // Its help names the exit codes, as envshim's table numbers them.
    #[arg(long, help = format!(
        "Write nothing; list each document that would change on stderr and exit {}, or exit {}",
        ExitCode::Changed.number(),
        ExitCode::Ok.number()
    ))]
    pub check: bool,
    /// Files are given with -f (a word here gets a message saying so)
    #[arg(hide = true)]
    pub stray: Vec<OsString>,
}

#[derive(Args)]
pub struct UnconvertArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub rewrite: Rewrite,
}

/// A KRM function's config: its `data` keys are these long names (krm.rs
/// parses them with this definition): `convert`'s options, and `unconvert`.
#[derive(Args)]
pub struct FunctionConfig {
    #[command(flatten)]
    pub options: Options,
    /// Turn converted workloads back into native fileKeyRef ones (kubectl envshim unconvert) instead of converting
    #[arg(long)]
    pub unconvert: bool,
}

#[derive(Args)]
pub struct ManifestArgs {
    #[command(flatten)]
    pub input: Input,
    /// The container whose manifest is printed (needed when the input has several)
    #[arg(short = 'c', long, value_name = "NAME")]
    pub container: Option<String>,
    /// Files are given with -f (a word here gets a message saying so)
    #[arg(hide = true)]
    pub stray: Vec<OsString>,
}

#[derive(Args)]
pub struct FmtArgs {
    /// The env files to rewrite in place (-: read stdin, write stdout)
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<OsString>,
    /// Change nothing; list every line the kubelet reads otherwise or cannot read, and exit 1 if there is one
    #[arg(long)]
    pub check: bool,
}

#[derive(Args)]
pub struct KrmArgs {
    /// kustomize's exec transformer plugin: its config file (a ConfigMap), the stream on stdin; none: kpt's ResourceList on stdin
    #[arg(value_name = "CONFIG")]
    pub config: Option<OsString>,
}

/// The line for clap's error `e` on the command line `args`: envshim's own
/// (`envshim::converter::refused_line`), pointing at this command's help.
pub fn usage_line(e: &clap::Error, args: &[OsString]) -> String {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    cli.build();
    let sub = args.get(1).and_then(|a| a.to_str()).filter(|a| cli.find_subcommand(a).is_some());
    let see = match sub {
        Some(sub) => format!("see kubectl envshim {sub} --help"),
        None => "see kubectl envshim --help".into(),
    };
    // `kubectl envshim lint`, looked for by name: the lint is `fmt --check`.
    let lint = |wrong: &str| {
        (wrong == "lint").then(|| "the lint is kubectl envshim fmt --check FILE...: every line the kubelet reads otherwise or cannot read".to_string())
    };
    envshim::converter::refused_line(e, &cli, args, &see, lint)
}

/// The message for a word given where kubectl takes `-f FILE`.
pub fn stray(word: &OsString, sub: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let word = envshim::converter::escape(word.as_bytes());
    if word.starts_with('-') {
        return format!("unexpected argument \"{word}\" (see kubectl envshim {sub} --help)");
    }
    format!("unexpected argument \"{word}\": files are given with -f, as kubectl takes them (kubectl envshim {sub} -f {word})")
}

/// Whether `q` is a Kubernetes quantity (`100m`, `0.5`, `32Mi`, `1e3`): a
/// positive decimal number and an optional suffix.
pub fn quantity(q: &str) -> bool {
    let digits = q.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &q[digits.len()..];
    let (number, suffix) = match suffix {
        "" => match digits.split_once(['e', 'E']) {
            Some((n, exp)) => (n, exp.strip_prefix(['+', '-']).unwrap_or(exp).bytes().all(|b| b.is_ascii_digit()).then_some("").filter(|_| !exp.is_empty())),
            None => (digits, Some("")),
        },
        s => (digits, ["m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].contains(&s).then_some(s)),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    suffix.is_some() && !(whole.is_empty() && fraction.is_empty()) && (whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
}
