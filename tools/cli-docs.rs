//! Generates the shell completions and the man pages from the command line's
//! definition (src/cli.rs, the very text the binary is built from), at build
//! time: `cargo run --example cli-docs -- DIR` writes
//!   DIR/completions/envshim.bash, DIR/completions/_envshim (zsh),
//!   DIR/completions/envshim.fish,
//!   DIR/man/envshim.1 and one page per subcommand (envshim-run.1, ...);
//! the same for the converter, from kubectl-envshim/src/cli.rs:
//!   DIR/completions/{kubectl-envshim.bash,_kubectl-envshim,kubectl-envshim.fish},
//!   DIR/man/kubectl-envshim.1 and kubectl-envshim-{convert,manifest,krm}.1.
//! musl-build.sh runs it into dist/. An example, not part of the binary: the
//! shim gains no byte and no dependency (clap_complete and clap_mangen are
//! dev-dependencies).
#![allow(dead_code)]

include!("../src/cli.rs");

/// The converter's command line (a module: its names are the shim's too).
mod converter {
    include!("../kubectl-envshim/src/cli.rs");
}

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
    // The converter's is `kubectl-envshim` on PATH (its help says `kubectl envshim`).
    let commands = [(Cli::command(), "envshim"), (converter::Cli::command(), "kubectl-envshim")];
    for (command, name) in &commands {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let path = clap_complete::generate_to(shell, &mut command.clone(), *name, &completions)?;
            if shell == Shell::Bash && name.contains('-') {
                // clap_complete 4.6 names a subcommand's case `kubectl__subcmd__envshim__subcmd__convert`
                // where its loop sets `kubectl__envshim__subcmd__convert` (a `-` in the binary's
                // name): the options after a subcommand were never offered.
                let text = std::fs::read_to_string(&path)?;
                let wrong = name.replace('-', "__subcmd__");
                std::fs::write(&path, text.replace(&format!("{wrong}__subcmd__"), &format!("{}__subcmd__", name.replace('-', "__"))))?;
            }
            println!("cli-docs: {}", path.display());
        }
        // The man page's VERSION section: the version alone (the generator's own
        // commit, target and compiler are not the binary's).
        clap_mangen::generate_to(command.clone().long_version(None), &man)?;
    }
    let mut pages: Vec<_> = std::fs::read_dir(&man)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    pages.sort();
    for page in pages {
        println!("cli-docs: {}", page.display());
    }
    Ok(())
}
