//! Generates the shell completions and the man pages from the command line's
//! definition (src/cli.rs, the very text the binary is built from), at build
//! time: `cargo run --example cli-docs -- DIR` writes
//!   DIR/completions/envshim.bash, DIR/completions/_envshim (zsh),
//!   DIR/completions/envshim.fish,
//!   DIR/man/envshim.1 and one page per subcommand (envshim-run.1, ...).
//! musl-build.sh runs it into dist/. An example, not part of the binary: the
//! shim gains no byte and no dependency (clap_complete and clap_mangen are
//! dev-dependencies).
#![allow(dead_code)]

include!("../src/cli.rs");

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
        let path = clap_complete::generate_to(shell, &mut Cli::command(), "envshim", &completions)?;
        println!("cli-docs: {}", path.display());
    }
    // The man page's VERSION section: the version alone (the generator's own
    // commit, target and compiler are not the binary's).
    clap_mangen::generate_to(Cli::command().long_version(None), &man)?;
    let mut pages: Vec<_> = std::fs::read_dir(&man)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    pages.sort();
    for page in pages {
        println!("cli-docs: {}", page.display());
    }
    Ok(())
}
