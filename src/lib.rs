//! envshim: build a container's environment the way the kubelet would
//! (env files, `fileKeyRef`, relaxed names, `$(VAR)` expansion), then exec.
//!
//! Data flows one way: options and manifest → sources (volumes, files) →
//! environment → program line → exec. `main.rs` parses the command line into
//! [`Options`] (and [`RunOptions`] or [`CheckOptions`]) and calls [`run`],
//! [`check`], [`render`] or [`install`]; `commands` holds what each does,
//! `pipeline` the steps they share. [`fmt`] is the converter's
//! (`kubectl envshim fmt`): the shim's binary does not call it, so it is
//! not in it. This file is the front door
//! alone (the modules, the entry points): no module uses anything of it
//! (tests/layers.rs).

pub mod cli;
mod commands;
mod envdir;
pub mod engine;
pub mod envfile;
mod environment;
pub mod error;
mod exec;
pub mod expand;
mod files;
mod filenv;
mod fmt;
mod hints;
mod index;
mod init;
mod install;
mod listen;
pub mod limits;
pub mod manifest;
pub mod names;
mod pipeline;
mod program;
mod render;
pub mod report;
mod sort;
pub mod sources;
pub mod suggest;
pub mod sys;
pub mod wait;
mod watch;
mod words;

// The entry points: one a subcommand, each returning its exit code (`main`
// makes it the process's number).
pub use commands::{check, install, render, run};
// The converter's entry point (kubectl-envshim/src/main.rs).
pub use fmt::fmt;
pub use pipeline::{CheckOptions, InitOptions, Options, RunOptions, DEFAULT_MANIFEST};
pub use render::Format;
pub use watch::{OnChange, WatchOptions};

/// What the binary does first, before it reads its command line. Until it
/// execs the program (or, with `--init`, blocks signals to supervise it):
/// SIGTERM, SIGINT, SIGHUP and SIGQUIT end envshim at once with 128 + the
/// signal number, also as PID 1, where the kernel drops a signal left at its
/// default action; and a closed stdout or stderr makes a write fail (EPIPE)
/// instead of killing envshim with SIGPIPE. Only signals inherited at their
/// default are caught, and `execve` resets caught signals to the default, so
/// the program inherits the dispositions envshim inherited (docs/security.md).
pub fn start() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // Fails only for an invalid signal number.
        let _ = sys::catch_if_default(sig, sys::Handler::Exit);
    }
    let _ = sys::catch_if_default(libc::SIGPIPE, sys::Handler::Nothing);
}
