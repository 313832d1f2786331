//! Generates the shell completions and the man pages from the command line's
//! definition (`envshim::internals::Cli`, the very one the binary parses with), at build
//! time: `cargo run --example cli-docs -- DIR` writes
//!   DIR/completions/envshim.bash, DIR/completions/_envshim (zsh),
//!   DIR/completions/envshim.fish,
//!   DIR/man/envshim.1 and one page per subcommand (envshim-run.1, ...);
//! the same for the converter, from kubectl-envshim/src/cli.rs:
//!   DIR/completions/{kubectl-envshim.bash,_kubectl-envshim,kubectl-envshim.fish},
//!   DIR/man/kubectl-envshim.1 and kubectl-envshim-{convert,unconvert,manifest,krm,fmt}.1
//!   (with the functionConfig's keys, the exit codes and examples),
//!   and DIR/completions/kubectl_complete-envshim, kubectl's plugin completion.
//! musl-build.sh runs it into dist/. An example, not part of the binary: the
//! shim gains no byte and no dependency (clap_complete and clap_mangen are
//! dev-dependencies).
#![allow(dead_code)]
// A build tool, not in the binary: clippy.toml's rule of the shim's own sort is for the binary's size.
#![allow(clippy::disallowed_methods)]

use envshim::internals::Cli;
use envshim::internals::{exit_code_help, Tool};

/// The converter's command line (a dev-dependency of this package).
use kubectl_envshim::cli as converter;

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: cargo run --example cli-docs -- DIR");
        std::process::exit(2);
    };
    if let Err(e) = write(std::path::Path::new(&dir)) {
        eprintln!("cli-docs: {}: {e}", dir.to_string_lossy());
        std::process::exit(1);
    }
}

pub fn write(dir: &std::path::Path) -> std::io::Result<()> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let completions = dir.join("completions");
    let man = dir.join("man");
    std::fs::create_dir_all(&completions)?;
    std::fs::create_dir_all(&man)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path = clap_complete::generate_to(shell, &mut documented(), "envshim", &completions)?;
        println!("cli-docs: {}", path.display());
    }
    let mut cmd = documented().disable_help_subcommand(true);
    cmd.build();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        page(sub.clone(), &man)?;
    }
    page(cmd, &man)?;
    // The converter's: `kubectl-envshim` on PATH (its help says `kubectl envshim`).
    let converter = converter::Cli::command();
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let path = clap_complete::generate_to(shell, &mut converter.clone(), "kubectl-envshim", &completions)?;
        if shell == Shell::Bash {
            // clap_complete 4.6 names a subcommand's case `kubectl__subcmd__envshim__subcmd__convert`
            // where its loop sets `kubectl__envshim__subcmd__convert` (a `-` in the binary's
            // name): the options after a subcommand were never offered.
            let text = std::fs::read_to_string(&path)?.replace("kubectl__subcmd__envshim__subcmd__", "kubectl__envshim__subcmd__");
            std::fs::write(&path, &text)?;
            kubectl_complete(&text, &completions)?;
        }
        println!("cli-docs: {}", path.display());
    }
    let mut converter = converter.long_version(None).disable_help_subcommand(true);
    converter.build();
    for sub in converter.get_subcommands().filter(|s| !s.is_hide_set()) {
        converter_page(sub.clone(), &man)?;
    }
    converter_page(converter, &man)?;
    let mut pages: Vec<_> = std::fs::read_dir(&man)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    pages.sort();
    for page in pages {
        println!("cli-docs: {}", page.display());
    }
    Ok(())
}

/// `kubectl_complete-envshim`: kubectl (1.26+) completes `kubectl envshim ...`
/// by running this executable, found on PATH, with the words after `envshim`
/// (the last one being completed); it prints one completion a line, then
/// cobra's directive (`:4` no file completion; `:0` the shell's own, here for
/// a file). It runs the converter's bash completion (`bash`) on those words.
fn kubectl_complete(bash: &str, completions: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // A file name is the shell's to complete (`:0`), as kubectl's own `-f` is.
    let bash = bash.replace(r#"COMPREPLY=($(compgen -f "${cur}"))"#, "COMPREPLY=()");
    let driver = r#"
COMP_WORDS=(kubectl-envshim "$@")
COMP_CWORD=$#
COMPREPLY=()
_kubectl__envshim kubectl-envshim "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}" 2>/dev/null
if [ ${#COMPREPLY[@]} -gt 0 ]; then printf '%s\n' "${COMPREPLY[@]}"; echo :4; else echo :0; fi
"#;
    let path = completions.join("kubectl_complete-envshim");
    let head = "#!/usr/bin/env bash\n# kubectl's completion of `kubectl envshim` (kubectl 1.26+): put it on PATH beside kubectl-envshim.\n";
    // The function alone: not the `complete` lines that register it in an interactive shell.
    let function = bash.split("\nif [[ ").next().unwrap_or(&bash);
    std::fs::write(&path, format!("{head}{function}\n{driver}"))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    println!("cli-docs: {}", path.display());
    Ok(())
}

/// The command as the documents show it: the version alone (the binary's
/// `--version` adds its commit, target and compiler).
fn documented() -> clap::Command {
    use clap::CommandFactory;
    Cli::command().long_version(None)
}

/// One man page: clap's title, name, synopsis and options, then the sections
/// written here (what a man page reader looks for: DESCRIPTION, the formats,
/// ENVIRONMENT, EXIT STATUS, FILES, EXAMPLES), then the version.
fn page(cmd: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    // A subcommand's page (`run`), or the main one (`envshim`).
    let sub = (cmd.get_name() != "envshim").then(|| cmd.get_name().to_string());
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    section(&mut out, "DESCRIPTION", description(sub.as_deref()))?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
    if sub.as_deref() != Some("install") {
        section(&mut out, "THE MANIFEST", MANIFEST)?;
        section(&mut out, "ENV FILES", ENV_FILES)?;
        section(&mut out, "ENVIRONMENT", &environment())?;
    }
    let codes = exit_code_help(Tool::Envshim);
    section(&mut out, "EXIT STATUS", codes.strip_prefix("Exit codes:\n").unwrap_or(codes))?;
    section(&mut out, "FILES", FILES)?;
    section(&mut out, "EXAMPLES", EXAMPLES)?;
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    let path = dir.join(man.get_filename());
    std::fs::File::create(path)?.write_all(&out)
}

/// A section of plain text: paragraphs apart, lines that start with blanks kept as they are.
fn section(out: &mut Vec<u8>, title: &str, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    writeln!(out, ".SH \"{title}\"")?;
    for para in text.trim_matches('\n').split("\n\n") {
        let literal = para.lines().any(|l| l.starts_with(' '));
        writeln!(out, "{}", if literal { ".nf" } else { ".PP" })?;
        for line in para.lines() {
            // roff: a backslash is `\e`, a minus `\-`, and a line may not start with `.` or `'`.
            let line = line.replace('\\', "\\e").replace('-', "\\-");
            let lead = if line.starts_with(['.', '\'']) { "\\&" } else { "" };
            writeln!(out, "{lead}{line}")?;
        }
        if literal {
            writeln!(out, ".fi")?;
        }
    }
    Ok(())
}

fn description(sub: Option<&str>) -> &'static str {
    match sub {
        Some("run") => "Builds the program's environment in the kubelet's order (the inherited environment without ENVSHIM_* variables, then each envFrom source and --env-file, --env-dir, then each env entry and --env), validates all of it, expands $(VAR) in env values and in the program line, and only then execs the program: it never starts one with a partial environment. With --init it stays as PID 1 instead: it starts the program as a child, forwards signals and reaps zombies.\n\nThe program line starts after --, or at the first word that is not an option; a manifest's command replaces it. envshim -- PROGRAM [ARGS...] means envshim run -- PROGRAM [ARGS...].",
        Some("check") => "Reads and validates everything run would, including a program line (after -- or the first word that is not an option, or the manifest's command), executes nothing, reports every problem, and exits with the first one's code. It warns about $(NAME) references left unresolved, $$ in the program line, ${NAME} in values and env files given to --env-dir; --strict turns every warning into a failure. On success it ends with one line: envshim: ok: N variables (M from files), program PATH.",
        Some("render") => "Prints the environment run would give the program, each variable with where it came from, values masked unless --show-values is given: as an env file (--format env, sources as comments) or as JSON.",
        Some("install") => "Copies this binary to DEST atomically (a temporary file in the same directory, fsync, mode 0755, rename), without a shell: how an initContainer ships envshim from a FROM scratch image into an emptyDir. An existing DEST is replaced only when it is an envshim binary, unless --force is given.",
        _ => "envshim is a container entrypoint. It reads a Kubernetes container spec (the manifest, JSON), env files and directories of files, builds the program's environment the way the kubelet would (KEP-3721 fileKeyRef and env files, KEP-4369 relaxed names, $(VAR) expansion), validates all of it, then execs the program. It needs no shell, so it fits distroless and scratch images, on any cluster version and any runtime.\n\nrun builds and execs; check validates and execs nothing; render prints the environment; install copies the binary.",
    }
}

const MANIFEST: &str = "A Kubernetes container spec as JSON, by default /etc/envshim/manifest.json when it exists (--manifest, --manifest-json). envshim reads env (name, with value or valueFrom), envFrom (with prefix), volumeMounts (name, mountPath), command and args. valueFrom.fileKeyRef {volumeName, path, key, optional} and envFrom fileRef {volumeName, path, optional} read an env file inside a mounted volume; configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef, configMapRef and secretRef are resolved by the kubelet, and their variables taken from the inherited environment. A Pod, a workload or a List of them is read with --container NAME. YAML is refused: convert it with kubectl envshim manifest -f FILE, or yq (Go yq: yq -o json FILE; Python yq: yq . FILE).";

const ENV_FILES: &str = "At most 65,536 bytes, one NAME=VALUE a line (names at most 128 bytes, values at most 32,768 bytes):\n\n  # comments and blank lines are ignored\n  PLAIN=value with inner blanks   # a comment after a blank\n  export EXPORTED=1\n  SINGLE='literal, may span lines'\n  DOUBLE=\"escapes: \\\\ \\\" \\n \\t \\r \\$\"\n\nUTF-8, LF or CRLF line endings; the last of a duplicate name wins; an error on any line fails the whole file. Values read from files are never expanded.";

/// ENVIRONMENT: each configuration variable and its option, from the definition.
fn environment() -> String {
    use clap::CommandFactory;
    let mut text = String::from("Every inherited variable whose name starts with ENVSHIM_ configures envshim and is removed from the program's environment; an unknown one gets a warning. An option on the command line wins over its variable (a boolean variable is still checked, and adds to its flag; the files of ENVSHIM_ENV_FILE come after those of --env-file). Boolean variables take 1/0, true/false, yes/no, on/off.\n");
    let mut cli = Cli::command();
    cli.build();
    let run = cli.find_subcommand("run").expect("run is defined");
    for arg in run.get_arguments() {
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        let Some(var) = arg.get_env().and_then(|v| v.to_str()) else { continue };
        let long = arg.get_long().expect("an option with a variable is a long option");
        let note = match arg.get_action() {
            clap::ArgAction::SetTrue => " (boolean)",
            _ if help.contains("comma-separated") => ", comma-separated",
            _ => "",
        };
        text += &format!("\n  {var:<24}--{long}{note}");
    }
    text
}

const FILES: &str = "/etc/envshim/manifest.json\n    the manifest when none is named, if it exists\n\n/dev/termination-log\n    where a failure is also written when it exists and is writable (--termination-log)";

const EXAMPLES: &str = "An image's ENTRYPOINT, so that a pod's args append to the program:\n\n  ENTRYPOINT [\"/envshim\", \"run\", \"--\", \"/app\"]\n\nAn env file and a variable expanded from it, then a program:\n\n  envshim run --env-file app.env --env 'URL=http://$(HOST)' -- /app\n\nA Kubernetes Secret volume as variables, under a supervising PID 1:\n\n  envshim run --init --env-dir /run/secrets/app -- /app\n\nA CI gate for an image's configuration and CMD:\n\n  envshim check --strict --manifest manifest.json -- /app --listen=:8080\n\nShip envshim into an emptyDir from an initContainer:\n\n  envshim install /shared/envshim";

/// One of the converter's man pages: clap's title, name, synopsis,
/// description, options and subcommands, then the functionConfig's keys
/// (for `convert` and `krm`, and the main page), EXIT STATUS and EXAMPLES.
fn converter_page(cmd: clap::Command, dir: &std::path::Path) -> std::io::Result<()> {
    use std::io::Write;
    let sub = (cmd.get_name() != "kubectl-envshim").then(|| cmd.get_name().to_string());
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.has_subcommands() {
        man.render_subcommands_section(&mut out)?;
    }
    if !matches!(sub.as_deref(), Some("manifest" | "fmt")) {
        section(&mut out, "KRM FUNCTION CONFIG", &krm_keys())?;
    }
    let codes = exit_code_help(if sub.as_deref() == Some("fmt") { Tool::Fmt } else { Tool::Converter });
    section(&mut out, "EXIT STATUS", codes.strip_prefix("Exit codes:\n").unwrap_or(codes))?;
    section(&mut out, "EXAMPLES", converter_examples(sub.as_deref()))?;
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    std::fs::File::create(dir.join(man.get_filename()))?.write_all(&out)
}

/// The keys of the functionConfig (kpt's function config, kustomize's
/// transformer config): `convert`'s options by their long names, from the definition.
fn krm_keys() -> String {
    use clap::Args;
    let options = converter::Options::augment_args(clap::Command::new("options"));
    let mut text = String::from(
        "Under kpt (kubectl-envshim krm, a ResourceList on stdin) and kustomize (kubectl-envshim krm CONFIG), the options of convert are the data keys of the config, a ConfigMap, each value a string: a repeatable option one value a line, a flag one of true/false, 1/0, yes/no, on/off (quoted). A key that is no option, or a value the option refuses, stops the pipeline (2) with a message naming data.KEY.\n\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: envshim\n  data:\n    shim-image: REGISTRY/envshim@sha256:DIGEST\n    watch: \"true\"\n    watch-splay: 30s\n    entrypoint: |\n      api=[\"/app\",\"serve\"]\n\nThe keys:\n",
    );
    // (Not a hidden one: the pod's index, which the converter writes itself.)
    for arg in options.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(long) = arg.get_long() else { continue };
        let value = match arg.get_action() {
            clap::ArgAction::SetTrue => "true|false".to_string(),
            clap::ArgAction::Append => format!("{}, one a line", arg.get_value_names().and_then(|v| v.first()).map_or("VALUE", |v| v.as_str())),
            _ => arg.get_value_names().and_then(|v| v.first()).map_or("VALUE".to_string(), ToString::to_string),
        };
        text += &format!("\n  {long}: {value}");
    }
    text
}

fn converter_examples(sub: Option<&str>) -> &'static str {
    match sub {
        Some("manifest") => "The manifest envshim reads for the container api, for a ConfigMap or --manifest:\n\n  kubectl envshim manifest -f deploy.yaml -c api",
        Some("fmt") => "Rewrite the env files of a volume in the form the kubelet reads, then check them in CI (exit 1 and every line to fix):\n\n  kubectl envshim fmt config/*.env\n  kubectl envshim fmt --check config/*.env\n\nThe form of one file, on stdout:\n\n  kubectl envshim fmt - < app.env",
        Some("krm") => "A kpt function (the config in the Kptfile's pipeline, or given here):\n\n  kpt fn eval --exec kubectl-envshim --fn-config envshim.yaml\n\nA kustomize exec transformer (kubectl kustomize --enable-alpha-plugins), its config file as the argument:\n\n  kubectl-envshim krm envshim.yaml < stream.yaml",
        _ => "Convert and apply, envshim copied from a pinned image:\n\n  kubectl envshim convert -f deploy.yaml --shim-image REGISTRY/envshim@sha256:DIGEST | kubectl apply -f -\n\nA container without command (its image's ENTRYPOINT and CMD, as a JSON list):\n\n  kubectl envshim convert -f deploy.yaml --entrypoint 'api=[\"/app\",\"serve\"]'\n\nLive update in production: replicas restart at different moments, a slow program gets time to stop:\n\n  kubectl envshim convert -f deploy.yaml --watch --watch-splay 30s --restart-timeout 30s\n\nA CI gate: exit 1 when a document would change (no image needed):\n\n  kubectl envshim convert --check -f k8s/ -R",
    }
}
