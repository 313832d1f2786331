// The command line of kubectl-envshim: its definition, with the docs `--help`
// shows, and the one-line usage errors. tools/cli-docs.rs includes this file to
// generate the man pages and completions, so it names nothing of the crate
// (clap, std and the envshim library only).

use std::ffi::OsString;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "kubectl-envshim",
    version,
    about = "Converts workloads written with native fileKeyRef (Kubernetes 1.34+) to run envshim, for any cluster.",
    after_help = exit_codes()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The end of `--help`: the exit codes, as envshim's table numbers them.
fn exit_codes() -> String {
    use envshim::error::code::{CHANGED, CONFIG, DATAERR, IOERR, OK, USAGE};
    format!(
        "Exit codes: {OK} done; {CHANGED} --check: something would change; {USAGE} usage; {DATAERR} unreadable or unparsable input; \
         {IOERR} cannot write; {CONFIG} a pod that cannot be converted."
    )
}

#[derive(Subcommand)]
pub enum Command {
    /// Convert the pods of YAML or JSON streams; the result goes to stdout
    Convert(ConvertArgs),
    /// Print one container's manifest as JSON (for --manifest or a ConfigMap)
    Manifest(ManifestArgs),
    /// Run as a KRM function (kpt: a ResourceList on stdin) or a kustomize exec transformer plugin (CONFIG, a stream on stdin)
    Krm(KrmArgs),
}

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

/// The envshim-install initContainer's requests and limits: it copies one
/// file of half a megabyte, in a millisecond of CPU.
pub const DEFAULT_INSTALLER_CPU: &str = "50m";
pub const DEFAULT_INSTALLER_MEMORY: &str = "16Mi";
/// Converted containers read env files as the kubelet will: what runs
/// converted runs the same once the cluster reads `fileKeyRef` itself.
pub const DEFAULT_ENV_GRAMMAR: &str = "kubelet";

/// How pods are converted: the same names in a KRM function's config.
#[derive(Args)]
pub struct Options {
    /// The image whose /envshim the envshim-install initContainer copies [default: $KUBECTL_ENVSHIM_SHIM_IMAGE, else a release's own image, by digest]
    #[arg(long, value_name = "IMAGE")]
    pub shim_image: Option<String>,
    /// Where envshim is in the containers; another path than the default means envshim is in the image (no initContainer, no volume)
    // The default is convert.rs's DEFAULT_SHIM_PATH (a test checks it).
    #[arg(long, value_name = "PATH", default_value = "/.envshim/bin/envshim")]
    pub shim_path: String,
    /// The program the image of container CONTAINER runs, for a container without command: a JSON array of strings or one path (repeatable). The image's ENTRYPOINT and CMD, as JSON lists: docker image inspect -f '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' IMAGE
    #[arg(long, value_name = "CONTAINER=PROGRAM")]
    pub entrypoint: Vec<String>,
    /// Converted containers wait up to DURATION for missing env files (500ms, 30s, 2m; a bare number is seconds)
    #[arg(long, value_name = "DURATION")]
    pub wait: Option<String>,
    /// How converted containers read env files: kubelet (exactly as the kubelet 1.35 will once the cluster reads fileKeyRef itself: NAME='value' lines, the first occurrence wins) or envshim (envshim's more forgiving grammar)
    #[arg(long, value_name = "kubelet|envshim", default_value = DEFAULT_ENV_GRAMMAR)]
    pub env_grammar: String,
    /// The CPU the envshim-install initContainer requests and is limited to
    #[arg(long, value_name = "QUANTITY", default_value = DEFAULT_INSTALLER_CPU)]
    pub installer_cpu: String,
    /// The memory the envshim-install initContainer requests and is limited to
    #[arg(long, value_name = "QUANTITY", default_value = DEFAULT_INSTALLER_MEMORY)]
    pub installer_memory: String,
}

#[derive(Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub input: Input,
    #[command(flatten)]
    pub options: Options,
    // Its help names the exit codes, as envshim's table numbers them.
    #[arg(long, help = format!(
        "Write nothing; list each document that would change on stderr and exit {}, or exit {}",
        envshim::error::code::CHANGED,
        envshim::error::code::OK
    ))]
    pub check: bool,
    /// Files are given with -f (a word here gets a message saying so)
    #[arg(hide = true)]
    pub stray: Vec<OsString>,
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
pub struct KrmArgs {
    /// kustomize's exec transformer plugin: its config file (a ConfigMap), the stream on stdin; none: kpt's ResourceList on stdin
    #[arg(value_name = "CONFIG")]
    pub config: Option<OsString>,
}

/// The first line of clap's message (its usage block and tips dropped),
/// with the closest known name for a misspelt option or subcommand, as
/// envshim's own (`envshim::suggest`).
pub fn usage_line(e: &clap::Error, args: &[OsString]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a subcommand is required: convert, manifest or krm (see kubectl envshim --help)".into();
    }
    let text = e.render().to_string();
    let first: Vec<&str> = text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let first = first.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    let sub = args.get(1).and_then(|a| a.to_str()).filter(|a| SUBCOMMANDS.contains(a));
    let help = match sub {
        Some(sub) => format!("see kubectl envshim {sub} --help"),
        None => "see kubectl envshim --help".into(),
    };
    // A suggestion only for a word it does not know (not for a known option
    // given twice, or with a value it takes none of).
    let wrong = match (e.kind(), e.get(ContextKind::InvalidArg).or_else(|| e.get(ContextKind::InvalidSubcommand))) {
        (ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand, Some(ContextValue::String(s))) => s.split(['=', ' ']).next().unwrap_or(s).to_string(),
        _ => String::new(),
    };
    let known = known_names(e.kind(), sub);
    match envshim::suggest::closest(wrong.as_bytes(), &known.iter().map(String::as_str).collect::<Vec<_>>()).filter(|name| **name != wrong) {
        Some(name) => format!("{first} (did you mean {name}? {help})"),
        None => format!("{first} ({help})"),
    }
}

const SUBCOMMANDS: [&str; 4] = ["convert", "manifest", "krm", "help"];

/// The names a misspelt word may have meant: the subcommands, or the long
/// options of the subcommand `sub`.
fn known_names(kind: clap::error::ErrorKind, sub: Option<&str>) -> Vec<String> {
    use clap::CommandFactory;
    if kind == clap::error::ErrorKind::InvalidSubcommand {
        return SUBCOMMANDS.iter().map(|s| s.to_string()).collect();
    }
    let cli = Cli::command();
    let sub = sub.and_then(|s| cli.find_subcommand(s));
    let mut names: Vec<String> = vec!["--help".into(), "--version".into()];
    names.extend(sub.into_iter().flat_map(|s| s.get_arguments()).filter(|a| !a.is_hide_set()).filter_map(|a| a.get_long()).map(|l| format!("--{l}")));
    names
}

/// The message for a word given where kubectl takes `-f FILE`.
pub fn stray(word: &OsString, sub: &str) -> String {
    let word = word.to_string_lossy();
    if word.starts_with('-') {
        return format!("unexpected argument {word:?} (see kubectl envshim {sub} --help)");
    }
    format!("unexpected argument {word:?}: files are given with -f, as kubectl takes them (kubectl envshim {sub} -f {word})")
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
