//! envshim: build a container's environment the way the kubelet would
//! (env files, `fileKeyRef`, relaxed names, `$(VAR)` expansion), then exec.
//!
//! Data flows one way: options and manifest → sources (volumes, files) →
//! environment → program line → exec. `main.rs` parses the command line into
//! [`Options`] (and [`RunOptions`] or [`CheckOptions`]) and calls [`run`],
//! [`check`], [`render`] or [`install`]; `commands` holds what each does,
//! `pipeline` the steps they share. This file is the binary's front door
//! alone (the modules, the entry points): no module uses anything of it
//! (tests/layers.rs). Every module is private but two: [`converter`], the
//! one door of the converter (`kubectl envshim`, which names no other
//! `envshim::` path), and `internals` (hidden), what the shim's own
//! benches, fuzz targets, tools and tests reach.
// The release build (musl-build.sh, pinned nightly) sets `envshim_size`:
// `#[cfg_attr(envshim_size, optimize(size))]` builds a function as at opt-level
// "z" (its closures are not). On the rare paths (install, render, check's
// report, --init, --watch, --listen, the messages of failures) and on four
// functions a start runs once (`env_from`, `check_sizes`, `Pair::split`,
// `Plan::target`): -8.3 KB, instructions of `run` unchanged
// (docs/performance-history.md, round 5). The release build also inlines
// only by request: a call where it costs nothing (the callee's only caller, a
// body smaller than the call) or where the callee has `#[inline]`, up to a
// small cost (musl-build.sh). The helpers each name, key or token goes through
// ask: `index::mix`, `keys`, `same` and `NameIndex::reserve`,
// `EnvFile::name_of` and `value_of`, `Environment::set_hashed`,
// `Reader::enter`, the arena's `push_free` (called, they cost `run` ~65 K
// instructions, +5%), and the few that must be inlined whatever their cost are
// `#[inline(always)]` (docs/performance-history.md, inlining by request).
#![cfg_attr(envshim_size, feature(optimize_attribute))]

mod cli;
mod commands;
pub mod converter;
mod engine;
mod envdir;
mod envfile;
mod environment;
mod error;
mod exec;
mod expand;
mod filenv;
mod files;
mod fmt;
mod hints;
mod index;
mod init;
mod install;
#[doc(hidden)]
pub mod internals;
mod limits;
mod listen;
mod manifest;
mod names;
mod pipeline;
mod program;
mod render;
mod report;
mod sort;
mod sources;
mod suggest;
mod sys;
mod wait;
mod watch;
mod words;

// The entry points: one a subcommand, each returning its exit code (`main`
// makes it the process's number).
pub use commands::{check, install, render, run};
// What the binary parses the command line into, and starts from (src/main.rs).
pub use cli::{command as command_line, parse as parse_command_line, Invocation, Refused};
pub use pipeline::{CheckOptions, InitOptions, Options, RunOptions, DEFAULT_MANIFEST};
pub use render::Format;
pub use sys::{Arena, Argv};
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
