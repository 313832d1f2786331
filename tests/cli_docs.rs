//! `--version`, `--help`'s exit codes, and the shell completions and man pages
//! generated from the command line's definition (tools/cli-docs.rs, which
//! musl-build.sh runs into dist/): the bash completion is run in bash, and what
//! it offers is checked against the built binary.

#[path = "../tools/cli-docs.rs"]
#[allow(unused)]
mod generator;

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

/// The configuration variables the binary knows: those of the definition.
fn variables() -> Vec<String> {
    use clap::CommandFactory;
    let mut cli = envshim::internals::Cli::command();
    cli.build();
    let run = cli.find_subcommand("run").expect("run");
    run.get_arguments().filter_map(|a| Some(a.get_env()?.to_str()?.to_string())).collect()
}

/// Generates everything into a temp dir, as musl-build.sh does into dist/.
fn generated() -> Volume {
    let d = Volume::new();
    generator::write(d.path()).expect("cli-docs");
    d
}

/// What the bash completion offers for the words `line` (the last one is being
/// completed), as bash's programmable completion calls it.
fn complete(script: &std::path::Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let cword = line.len() - 1;
    let prev = if cword > 0 { line[cword - 1] } else { "" };
    let program = format!(
        "source '{}' || exit 9\ncomplete -p {bin} >/dev/null || exit 8\nCOMP_WORDS=({})\nCOMP_CWORD={cword}\nCOMP_LINE='{}'\nCOMP_POINT=${{#COMP_LINE}}\n_{} {bin} '{}' '{}'\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(), words.join(" "), line.join(" "), line[0].replace('-', "__"), line[cword], prev, bin = line[0]
    );
    let out = std::process::Command::new("bash").args(["--norc", "--noprofile", "-c", &program]).output().expect("bash");
    assert!(out.status.success(), "bash failed: {:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn bash_completes_options_and_subcommands_the_binary_accepts() {
    let d = generated();
    let bash = d.join("completions/envshim.bash");
    // `envshim run --man<TAB>`
    let offered = complete(&bash, &["envshim", "run", "--man"]);
    assert!(offered.iter().any(|w| w == "--manifest"), "{offered:?}");
    assert!(offered.iter().all(|w| w.starts_with("--man")), "{offered:?}");
    // `envshim <TAB>`: every subcommand, and each one the binary knows.
    let offered = complete(&bash, &["envshim", ""]);
    for sub in ["run", "check", "render", "install"] {
        assert!(offered.iter().any(|w| w == sub), "{sub} not offered: {offered:?}");
    }
    for sub in offered.iter().filter(|w| !w.starts_with('-')) {
        // `help` is clap's: `envshim help` prints the help.
        let args = if sub == "help" { vec![sub.as_str()] } else { vec![sub.as_str(), "--help"] };
        envshim(args).run().ok();
    }
    // `envshim render --format <TAB>`: the values the binary takes.
    let offered = complete(&bash, &["envshim", "render", "--format", ""]);
    assert_eq!(offered, ["env", "json"]);
    // Every option offered after `run` is one `run --help` documents.
    let help = envshim(["run", "--help"]).run();
    help.ok();
    let offered = complete(&bash, &["envshim", "run", "--"]);
    assert!(offered.len() > 10, "{offered:?}");
    for option in offered.iter().filter(|w| w.starts_with("--")) {
        assert!(help.stdout_str().contains(option.as_str()), "{option} is not in run --help");
    }
}

#[test]
fn zsh_fish_completions_and_man_pages_are_generated() {
    let d = generated();
    for (file, needle) in [("completions/_envshim", "#compdef envshim"), ("completions/envshim.fish", "complete -c envshim")] {
        let text = std::fs::read_to_string(d.join(file)).unwrap();
        assert!(text.contains(needle) && text.contains("manifest"), "{file}:\n{text}");
    }
    let page = std::fs::read_to_string(d.join("man/envshim.1")).unwrap();
    assert!(page.starts_with(".ie \\n(.g") || page.contains(".TH envshim 1"), "{page}");
    assert!(page.contains("EXIT STATUS") && page.contains("127"), "{page}");
    for sub in ["run", "check", "render", "install"] {
        let page = std::fs::read_to_string(d.join(&format!("man/envshim-{sub}.1"))).unwrap();
        assert!(page.contains(&format!(".TH envshim-{sub} 1")), "{page}");
    }
    let run = std::fs::read_to_string(d.join("man/envshim-run.1")).unwrap();
    assert!(run.contains("manifest") && run.contains("EXIT STATUS"), "{run}");
}

#[test]
fn the_converters_completions_and_man_pages_are_generated_too() {
    let d = generated();
    let bash = d.join("completions/kubectl-envshim.bash");
    let offered = complete(&bash, &["kubectl-envshim", ""]);
    for sub in ["convert", "unconvert", "manifest", "krm", "fmt"] {
        assert!(offered.iter().any(|w| w == sub), "{sub} not offered: {offered:?}");
    }
    // The options after a subcommand (`kubectl-envshim convert --inst<TAB>`).
    assert_eq!(complete(&bash, &["kubectl-envshim", "convert", "--inst"]), ["--installer-cpu", "--installer-memory"]);
    let offered = complete(&bash, &["kubectl-envshim", "convert", "--"]);
    for option in ["--filename", "--recursive", "--shim-image", "--check", "--wait", "--entrypoint"] {
        assert!(offered.iter().any(|w| w == option), "{option} not offered: {offered:?}");
    }
    assert!(complete(&bash, &["kubectl-envshim", "manifest", "--"]).iter().any(|w| w == "--container"));
    for (file, needle) in [("completions/_kubectl-envshim", "#compdef kubectl-envshim"), ("completions/kubectl-envshim.fish", "complete -c kubectl-envshim")] {
        let text = std::fs::read_to_string(d.join(file)).unwrap();
        assert!(text.contains(needle) && text.contains("installer-memory"), "{file}:\n{text}");
    }
    for page in
        ["kubectl-envshim", "kubectl-envshim-convert", "kubectl-envshim-unconvert", "kubectl-envshim-manifest", "kubectl-envshim-krm", "kubectl-envshim-fmt"]
    {
        let text = std::fs::read_to_string(d.join(&format!("man/{page}.1"))).unwrap();
        assert!(text.contains(&format!(".TH {page} 1")), "{text}");
    }
    let convert = std::fs::read_to_string(d.join("man/kubectl-envshim-convert.1")).unwrap();
    assert!(convert.contains("recursive") && convert.contains("installer\\-cpu"), "{convert}");
    // Each page: the exit codes and examples; convert's, krm's and the main one: every functionConfig key.
    for page in ["kubectl-envshim", "kubectl-envshim-convert", "kubectl-envshim-manifest", "kubectl-envshim-krm"] {
        let text = std::fs::read_to_string(d.join(&format!("man/{page}.1"))).unwrap();
        assert!(text.contains(".SH \"EXIT STATUS\"") && text.contains("78     a pod that cannot be converted"), "{page}: {text}");
        let examples = text.split(".SH \"EXAMPLES\"").nth(1).unwrap_or_else(|| panic!("{page}: no EXAMPLES: {text}"));
        assert!(examples.contains(".nf\n  kubectl"), "{page}: no command in its examples: {examples}");
        if page == "kubectl-envshim-manifest" {
            continue;
        }
        assert!(text.contains(".SH \"KRM FUNCTION CONFIG\""), "{page}: {text}");
        let options = <kubectl_envshim::cli::Options as clap::Args>::augment_args(clap::Command::new("options"));
        // A hidden option (the pod's index, which the converter writes itself) is no key.
        for arg in options.get_arguments() {
            let key = arg.get_long().unwrap();
            let listed = text.contains(&format!("\n  {}: ", key.replace('-', "\\-")));
            assert_eq!(listed, !arg.is_hide_set(), "{page}: key {key}");
        }
        assert!(options.get_arguments().any(|a| a.get_long() == Some("watch-splay")), "the watch settings are keys");
    }
}

/// What `kubectl __complete envshim WORDS...` offers (the shell's side of
/// `kubectl envshim WORDS<TAB>`), with `dir` first on PATH.
fn kubectl_complete(dir: &std::path::Path, words: &[&str]) -> Vec<String> {
    let path = format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("kubectl")
        .arg("__complete")
        .arg("envshim")
        .args(words)
        .env("PATH", path)
        .output()
        .expect("kubectl runs (tests/e2e/deps.sh installs it)");
    assert!(out.status.success(), "kubectl __complete: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

#[test]
#[ignore = "needs kubectl"]
fn kubectl_completes_the_plugin_through_kubectl_complete_envshim() {
    let d = generated();
    let script = d.join("completions/kubectl_complete-envshim");
    assert!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o111 != 0, "not executable");
    // kubectl finds a plugin by its name on PATH: a stand-in does (the completion never runs it).
    let bin = Volume::new();
    let plugin = bin.file("kubectl-envshim", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let without = kubectl_complete(bin.path(), &["co"]);
    // Without the completion executable kubectl has nothing to offer.
    assert_eq!(without, [":0"]);
    std::fs::copy(&script, bin.join("kubectl_complete-envshim")).unwrap();
    assert_eq!(kubectl_complete(bin.path(), &["co"]), ["convert", ":4"]);
    let offered = kubectl_complete(bin.path(), &[""]);
    for sub in ["convert", "manifest", "krm", ":4"] {
        assert!(offered.iter().any(|w| w == sub), "{sub} not offered: {offered:?}");
    }
    assert_eq!(kubectl_complete(bin.path(), &["convert", "--inst"]), ["--installer-cpu", "--installer-memory", ":4"]);
    // A file name is the shell's to complete, as kubectl's own -f.
    assert_eq!(kubectl_complete(bin.path(), &["convert", "-f", ""]), [":0"]);
}

#[test]
fn version_names_the_commit_target_and_compiler() {
    let out = envshim(["--version"]).run();
    out.ok();
    let text = out.stdout_str();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("envshim {}", env!("CARGO_PKG_VERSION")), "{text}");
    assert_eq!(lines.len(), 4, "{text}");
    let commit = lines[1].strip_prefix("commit: ").expect(&text);
    assert!(commit == "unknown" || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())), "{text}");
    // This test and the binary are built for the same target by the same rustc.
    assert!(lines[2].starts_with("target: ") && lines[2].len() > "target: x-y".len(), "{text}");
    assert!(std::env::consts::ARCH.split('_').next().is_some_and(|a| lines[2].contains(a)), "{text}");
    assert!(lines[3].starts_with("rustc: 1."), "{text}");
    // -V stays one line, the version alone.
    let out = envshim(["-V"]).run();
    out.ok();
    assert_eq!(out.stdout_str(), format!("envshim {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn help_ends_with_the_exit_codes() {
    for args in [&["--help"][..], &["run", "--help"], &["check", "--help"], &["render", "--help"]] {
        let out = envshim(args.iter().copied()).run();
        out.ok();
        let text = out.stdout_str();
        let table = &text[text.find("Exit codes:").unwrap_or_else(|| panic!("{args:?}: no exit codes\n{text}"))..];
        for code in ["0 ", "2 ", "65 ", "66 ", "73 ", "77 ", "78 ", "126 ", "127 ", "128+N "] {
            assert!(table.lines().any(|l| l.trim_start().starts_with(code)), "{args:?}: no {code}\n{table}");
        }
        assert_eq!(
            table.trim_end().lines().last().map(str::trim_start).map(|l| l.starts_with("128+N")),
            Some(true),
            "{args:?}: the table is not the end\n{text}"
        );
    }
}

#[test]
fn man_pages_describe_formats_environment_exit_status_files_and_examples() {
    let d = generated();
    for page in ["envshim", "envshim-run", "envshim-check", "envshim-render"] {
        let text = std::fs::read_to_string(d.join(&format!("man/{page}.1"))).unwrap();
        for section in ["DESCRIPTION", "OPTIONS", "THE MANIFEST", "ENV FILES", "ENVIRONMENT", "EXIT STATUS", "FILES", "EXAMPLES"] {
            assert!(text.contains(&format!(".SH \"{section}\"")) || text.contains(&format!(".SH {section}")), "{page}: no {section}\n{text}");
        }
        // Every configuration variable the binary knows is in ENVIRONMENT.
        let environment = &text[text.find(".SH \"ENVIRONMENT\"").unwrap()..];
        let vars = variables();
        assert!(vars.len() >= 10, "{vars:?}");
        for var in &vars {
            assert!(environment.contains(var), "{page}: no {var}");
        }
        assert!(text.contains("127") && text.contains("/etc/envshim/manifest.json"), "{page}");
    }
    // Each subcommand's page describes that subcommand.
    let check = std::fs::read_to_string(d.join("man/envshim-check.1")).unwrap();
    assert!(check.contains("executes nothing"), "{check}");
    let install = std::fs::read_to_string(d.join("man/envshim-install.1")).unwrap();
    assert!(install.contains("atomically") && install.contains(".SH \"EXIT STATUS\""), "{install}");
}

#[test]
fn bash_completes_check_format_values_and_render_help_lists_only_what_it_uses() {
    let d = generated();
    let offered = complete(&d.join("completions/envshim.bash"), &["envshim", "check", "--format", ""]);
    assert_eq!(offered, ["text", "json"]);
    let help = envshim(["render", "--help"]).run();
    help.ok();
    let text = help.stdout_str();
    let text = &text[..text.find("Exit codes:").unwrap()];
    for gone in ["--init", "--success-exit", "--rewrite-signal", "--term-delay", "--no-expand-args", "--verbose"] {
        assert!(!text.contains(gone), "render --help lists {gone}:\n{text}");
    }
    assert!(text.contains("--show-values") && text.contains("--env-dir"), "{text}");
    // Still accepted (one table of options for run, check and render): a run's command line renders.
    let out = envshim(["render", "--init", "--verbose", "--rewrite-signal", "TERM:QUIT", "--env", "A=1"]).run();
    out.ok();
    assert!(out.stdout_str().contains("A=<set, 1 bytes>"), "{}", out.stdout_str());
}

/// docs/reference.md §1 is tested against the definition: every option of
/// run, check and render, and every configuration variable, has its row; and
/// §7's table has a row for each exit code of `--help`'s.
#[test]
fn the_reference_names_every_option_variable_and_exit_code_of_the_definition() {
    use clap::CommandFactory;
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference.md")).unwrap();
    let section = |n: &str, next: &str| text[text.find(n).unwrap()..text.find(next).unwrap()].to_string();
    let options = section("## 1. Command line", "## 2. ");
    let mut cli = envshim::internals::Cli::command();
    cli.build();
    for sub in ["run", "check", "render"] {
        for arg in cli.find_subcommand(sub).unwrap().get_arguments() {
            let Some(long) = arg.get_long().filter(|l| !["help", "version"].contains(l)) else { continue };
            assert!(options.contains(&format!("`--{long}")), "reference §1 has no row for {sub} --{long}");
            if let Some(var) = arg.get_env() {
                assert!(options.contains(&format!("`{}`", var.to_str().unwrap())), "reference §1 does not name {var:?}");
            }
            // Its row of the table of shared options: the option as the definition spells it, then its variable.
            let shared = &options[..options.find("Only for some subcommands").unwrap()];
            let Some(row) = shared.lines().find(|l| l.starts_with(&format!("| `--{long} ")) || l.starts_with(&format!("| `--{long}`"))) else { continue };
            let cells: Vec<String> = row.replace("\\|", "/").split('|').skip(1).map(|c| c.trim().to_string()).collect();
            let value = arg.get_value_names().filter(|_| arg.get_action().takes_values()).map(|v| format!(" {}", v[0].replace('|', "/"))).unwrap_or_default();
            assert!(cells[0].starts_with(&format!("`--{long}{value}`")), "reference §1: the row of --{long} is not `--{long}{value}`: {row}");
            let var = arg.get_env().map(|v| format!("`{}`", v.to_str().unwrap())).unwrap_or_default();
            assert!(
                cells[1].starts_with(&var) && (var.is_empty() == cells[1].is_empty()),
                "reference §1: the row of --{long} does not name its variable {var}: {row}"
            );
        }
    }
    let codes = section("## 7. Failures and exit codes", "## 8. ");
    // The library's table of exit codes: each of envshim's has its row.
    let envshim_codes =
        envshim::internals::ExitCode::ALL.into_iter().filter(|c| c.meaning(envshim::internals::Tool::Envshim).is_some()).map(|c| c.number().to_string());
    for code in envshim_codes.chain(["128+N".to_string()]) {
        assert!(codes.contains(&format!("\n| {code} |")), "reference §7 has no row for exit code {code}");
    }
}

/// Each subcommand's help starts with its own one line (not a comment of
/// the definition's structs).
#[test]
fn each_subcommands_help_starts_with_what_it_does() {
    for (sub, first) in [
        ("run", "Build the environment, then execve PROGRAM (or supervise it with --init)"),
        ("check", "Validate everything run would; exec nothing"),
        ("render", "Print the final environment and where each variable came from"),
    ] {
        let out = envshim([sub, "--help"]).run();
        out.ok();
        assert_eq!(out.stdout_str().lines().next(), Some(first), "{sub} --help");
    }
}

/// `kubectl envshim fmt --help` and its man page say what the kubelet's
/// grammar cannot express (each refusal of src/envfile/portable.rs) and the
/// ways around it; the shim has neither the subcommand nor its page.
#[test]
fn the_converters_fmt_says_what_cannot_be_expressed_and_the_ways_around() {
    let out = kubectl_envshim(["fmt", "--help"]).run();
    out.ok();
    let help = out.stdout_str();
    assert!(help.starts_with("Rewrite env files in place so that the kubelet's grammar and envshim's read the same variables from them\n"), "{help}");
    let d = generated();
    let page = std::fs::read_to_string(d.join("man/kubectl-envshim-fmt.1")).unwrap().replace("\\-", "-");
    let description = page.split(".SH DESCRIPTION").nth(1).unwrap_or_else(|| panic!("no DESCRIPTION: {page}"));
    let cannot = ["single quote", "carriage return", "empty value", "export hid", "64 KiB or more without a line feed", "over 64 KiB"];
    let around = ["secretKeyRef", "--file-env", "base64", "--env-grammar envshim", "value: \"\"", "rename", "split"];
    // As a reader reads them: lines joined.
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let (help, description) = (words(&help), words(description));
    for part in cannot.iter().chain(&around) {
        assert!(help.contains(part), "fmt --help lacks {part:?}: {help}");
        assert!(description.contains(part), "the man page's DESCRIPTION lacks {part:?}: {description}");
    }
    assert!(page.contains(".SH \"EXIT STATUS\"") && page.contains("listed on stdout"), "{page}");
    assert!(!page.contains("KRM FUNCTION CONFIG"), "{page}");
    assert!(!d.join("man/envshim-fmt.1").exists());
}

/// The words each option takes, as the completions of both binaries offer
/// them: `(binary, subcommand, option, words)`.
const VALUE_SETS: [(&str, &str, &str, &[&str]); 6] = [
    ("envshim", "run", "--env-grammar", &["envshim", "kubelet"]),
    ("envshim", "run", "--on-change", &["restart", "handover", "exit", "signal:HUP", "signal:USR1", "signal:USR2"]),
    ("envshim", "check", "--format", &["text", "json"]),
    ("envshim", "render", "--format", &["env", "json"]),
    ("kubectl-envshim", "convert", "--env-grammar", &["envshim", "kubelet"]),
    ("kubectl-envshim", "convert", "--on-change", &["restart", "handover", "exit", "signal:HUP", "signal:USR1", "signal:USR2"]),
];

#[test]
fn every_shell_offers_the_words_an_option_takes() {
    let d = generated();
    for (bin, sub, option, words) in VALUE_SETS {
        // bash, run.
        let offered = complete(&d.join(&format!("completions/{bin}.bash")), &[bin, sub, option, ""]);
        assert_eq!(offered, words, "bash: {bin} {sub} {option}");
        // Each word is one the binary takes (a value it refuses is exit 2).
        if bin == "envshim" {
            for w in words {
                let given = format!("{option}={w}");
                let program: &[&str] = if sub == "render" { &[] } else { &["--", "/bin/true"] };
                envshim([sub, "--watch", &given].iter().chain(program)).run().ok();
            }
        }
        // zsh: the option's spec ends with its words, `:` escaped.
        let zsh = std::fs::read_to_string(d.join(&format!("completions/_{bin}"))).unwrap();
        let list = format!("({})'", words.iter().map(|w| w.replace(':', "\\:")).collect::<Vec<_>>().join(" "));
        assert!(
            zsh.lines().any(|l| l.starts_with(&format!("'{option}=")) && l.trim_end_matches([' ', '\\']).ends_with(&list)),
            "zsh: {bin} {option}: no {list}"
        );
        // fish: the option's line under the subcommand, each word an argument.
        let fish = std::fs::read_to_string(d.join(&format!("completions/{bin}.fish"))).unwrap();
        let under = format!("using_subcommand {sub}\" -l {}", &option[2..]);
        let start = fish.find(&under).unwrap_or_else(|| panic!("fish: {bin} {sub} {option}"));
        // Its words go on over the lines up to the next `complete`.
        let line = fish[start..].split("\ncomplete ").next().unwrap();
        for w in words {
            assert!(line.contains(&format!("{w}\\t")), "fish: {bin} {sub} {option}: no {w}: {line}");
        }
    }
}

/// kubectl's plugin completion offers the converter's words too.
#[test]
#[ignore = "needs kubectl"]
fn kubectl_offers_the_words_a_converter_option_takes() {
    let d = generated();
    let bin = Volume::new();
    let plugin = bin.file("kubectl-envshim", "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::copy(d.join("completions/kubectl_complete-envshim"), bin.join("kubectl_complete-envshim")).unwrap();
    for (_, sub, option, words) in VALUE_SETS.iter().filter(|v| v.0 == "kubectl-envshim") {
        let offered = kubectl_complete(bin.path(), &[sub, option, ""]);
        let expected: Vec<String> = words.iter().map(|w| w.to_string()).chain([":4".to_string()]).collect();
        assert_eq!(offered, expected, "kubectl envshim {sub} {option}");
    }
}

/// `words` into lines of 100 columns at most, the first starting at column
/// `first`, the others under `indent`.
fn wrap(words: &[String], first: usize, indent: usize) -> String {
    let mut lines = vec![String::new()];
    for w in words {
        let start = if lines.len() == 1 { first } else { indent };
        if lines.last().is_some_and(|l| !l.is_empty() && start + l.len() + 1 + w.len() > 100) {
            lines.push(String::new());
        }
        let line = lines.last_mut().unwrap();
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    lines.join(&format!("\n{}", " ".repeat(indent)))
}

/// The converter's synopsis, rendered from its definition: a line a
/// subcommand, in their order, `[--long VALUE]` an option (its short form if
/// it has one), `...` a repeatable one, then the arguments; the settings of
/// `--watch` (envshim's `WatchOptions`, flattened) inside `[--watch [...]]`
/// on lines of their own; wrapped under the subcommand's name.
fn converter_synopsis() -> String {
    use clap::{ArgAction, Args, CommandFactory};
    let watch = envshim::converter::WatchOptions::augment_args(clap::Command::new("watch"));
    let of_watch = |a: &clap::Arg| watch.get_arguments().any(|w| w.get_id() == a.get_id());
    let item = |a: &clap::Arg| {
        let value = a.get_value_names().map(|v| v[0].to_string());
        let repeated = matches!(a.get_action(), ArgAction::Append) || a.get_num_args().is_some_and(|n| n.max_values() > 1);
        let more = if repeated { "..." } else { "" };
        match (a.get_short(), a.get_long()) {
            (None, None) if a.is_required_set() => format!("{}{more}", value.unwrap()),
            (None, None) => format!("[{}]{more}", value.unwrap()),
            (short, long) => {
                let name = short.map_or_else(|| format!("--{}", long.unwrap()), |s| format!("-{s}"));
                let value = value.filter(|_| a.get_action().takes_values()).map(|v| format!(" {v}")).unwrap_or_default();
                format!("[{name}{value}]{more}")
            }
        }
    };
    let cli = kubectl_envshim::cli::Cli::command();
    let mut out = String::new();
    for sub in cli.get_subcommands() {
        let head = format!("kubectl envshim {} ", sub.get_name());
        let visible: Vec<&clap::Arg> = sub.get_arguments().filter(|a| !a.is_hide_set()).collect();
        let (options, arguments): (Vec<&clap::Arg>, Vec<&clap::Arg>) = visible.into_iter().partition(|a| a.get_long().is_some() || a.get_short().is_some());
        // Runs of plain options, each wrapped; `--watch` and its settings a block of their own.
        let (mut blocks, mut run): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
        for a in &options {
            if of_watch(a) {
                continue;
            }
            if a.get_long() == Some("watch") {
                blocks.extend((!run.is_empty()).then(|| wrap(&std::mem::take(&mut run), head.len(), head.len())));
                let settings: Vec<String> = options.iter().filter(|s| of_watch(s)).map(|s| item(s)).collect();
                let indent = head.len() + "[--watch ".len();
                blocks.push(format!("[--watch {}]", wrap(&settings, indent, indent)));
                continue;
            }
            run.push(item(a));
        }
        run.extend(arguments.iter().map(|a| item(a)));
        blocks.extend((!run.is_empty()).then(|| wrap(&run, head.len(), head.len())));
        out += &format!("{head}{}\n", blocks.join(&format!("\n{}", " ".repeat(head.len()))));
    }
    out + "kubectl envshim --version | --help\n"
}

/// The converter's synopsis in the README and in the reference (§10) is
/// the one its definition renders: an option added, renamed or dropped
/// fails here until both copies say it.
#[test]
fn the_docs_synopsis_of_the_converter_is_its_definitions() {
    let rendered = converter_synopsis();
    for (doc, after) in [("README.md", "## The converter"), ("docs/reference.md", "## 10. ")] {
        let text = std::fs::read_to_string(format!("{}/{doc}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let section = &text[text.find(after).unwrap()..];
        let start = section.find("```text\nkubectl envshim convert ").unwrap_or_else(|| panic!("{doc}: no synopsis of the converter")) + "```text\n".len();
        let block = &section[start..start + section[start..].find("```").unwrap()];
        assert_eq!(block, rendered, "{doc}'s synopsis of the converter is not its definition's; it renders as:\n{rendered}");
    }
}
