//! The binary: parses the command line (clap, with the definition of
//! `envshim::parse_command_line`), calls the library, and exits with its code.
//!
//! `no_main`: Rust's runtime start-up sets SIGPIPE to ignored before `main`,
//! and an ignored signal stays ignored across `execve`, so every program
//! started by envshim would inherit it. Starting from C's `main` leaves the
//! dispositions envshim inherited untouched (and skips the runtime's other
//! start-up system calls, which a container start pays for nothing); then
//! `envshim::start` catches the few signals envshim handles itself, which
//! `execve` resets to the default.
// A test build keeps Rust's `main` so the (empty) harness runs, not envshim:
// `cargo test --all-targets` builds and runs it despite `test = false`.
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code, unused_imports))]

use envshim::Invocation;

/// A bump arena instead of musl's allocator, whose system calls were most of
/// a start-up's (src/sys/alloc.rs).
#[global_allocator]
static ALLOC: envshim::Arena = envshim::Arena;

#[cfg(not(test))]
envshim::c_main!(envshim_main);

/// A run, from C's `main`.
#[cfg(not(test))]
fn envshim_main(argv: envshim::Argv) -> i32 {
    envshim::start();
    // The definition, never dropped: the process ends right after (`run`
    // execs, the others exit), and a drop would only walk it to free it
    // (about 8 K instructions at each start, and 1.3 KB of code of its own
    // in this binary).
    let mut command_line = std::mem::ManuallyDrop::new(envshim::command_line());
    let exit = match envshim::parse_command_line(&mut command_line, argv.to_vec()) {
        Ok(Invocation::Run(options, run)) => envshim::run(&options, &run),
        Ok(Invocation::Check(options, check)) => envshim::check(&options, &check),
        Ok(Invocation::Render(options, format, show_values)) => envshim::render(&options, format, show_values),
        Ok(Invocation::Install(dest, force)) => envshim::install(&dest, force),
        Err(refused) => refused.report(),
    };
    exit.number()
}
