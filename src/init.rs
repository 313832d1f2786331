//! `--init` (docs/reference.md §8): stay as PID 1, run the program as a child, forward
//! signals to it, reap every zombie, and exit as the child did. Modelled on
//! tini; `docs/init.md` says where it differs.
//!
//! [`supervise`] reads as the steps of a run: configure the signals, register
//! as a subreaper, spawn the child, then wait, forward and reap until the
//! child has exited (`supervisor.rs`: the one loop, which `--watch` rides).

use std::io;
use std::time::{Duration, Instant};

use libc::{c_int, pid_t};

use crate::error::{Error, ExitCode};
use crate::exec::{self, Exec};
use crate::listen::Handed;
use crate::report;
use crate::sys::{self, Disposition, SigSet};

mod handover;
mod supervisor;
use supervisor::Supervisor;
pub(crate) use supervisor::{Order, Rider};

/// How `--init` supervises the program.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings<'a> {
    /// `--init-group`: signal the child's whole process group, not only the child.
    pub group: bool,
    /// `--term-delay`: how long the first SIGTERM is held before it is forwarded.
    pub term_delay: Option<Duration>,
    /// `--success-exit`: the program's exit codes (128 + N for signal N) that make envshim exit 0.
    pub success_exits: &'a [u8],
    /// `--rewrite-signal FROM:TO`: a received FROM is forwarded as TO (0: not at all).
    pub rewrites: &'a [(c_int, c_int)],
    /// `--verbose`: what a stop did, step by step.
    pub verbose: bool,
    /// `--listen`, `--on-change handover`: the sockets and variables every program gets.
    pub handed: Option<&'a Handed>,
}

impl Settings<'_> {
    /// The signal forwarded for a received `sig` (0: none); the last rewrite of it wins.
    pub(crate) fn rewrite(&self, sig: c_int) -> c_int {
        self.rewrites.iter().rev().find(|(from, _)| *from == sig).map_or(sig, |&(_, to)| to)
    }

    /// How envshim ends for the program's `code`.
    pub(crate) fn exit(&self, code: u8) -> ExitCode {
        if self.success_exits.contains(&code) {
            ExitCode::Ok
        } else {
            ExitCode::Status(code)
        }
    }
}

/// `--rewrite-signal FROM:TO`: each a signal's name (`TERM`, `SIGTERM`, any
/// case) or number; FROM one that `--init` forwards, TO any signal or 0 (drop it).
#[cfg_attr(envshim_size, optimize(size))]
pub fn parse_rewrite(text: &str) -> Result<(c_int, c_int), String> {
    let (from, to) = text.split_once(':').ok_or_else(|| "expected FROM:TO (TERM:QUIT, 15:3)".to_string())?;
    let (from, to) = (signal_number(from)?, signal_number(to)?);
    if !forwarded(from) {
        return Err(format!("signal {from} cannot be rewritten (--init never receives or never forwards it)"));
    }
    Ok((from, to))
}

/// A signal by name (with or without `SIG`, any case) or number (0 to SIGRTMAX).
#[cfg_attr(envshim_size, optimize(size))]
pub fn signal_number(text: &str) -> Result<c_int, String> {
    // Linux numbers them 1 to 31 in this order, on every architecture envshim is built for.
    const NAMES: [&str; 31] = [
        "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL", "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD", "CONT", "STOP",
        "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ", "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS",
    ];
    let name = match text.get(..3) {
        Some(sig) if sig.eq_ignore_ascii_case("SIG") => &text[3..],
        _ => text,
    };
    if let Some(i) = NAMES.iter().position(|n| n.eq_ignore_ascii_case(name)) {
        return Ok(i as c_int + 1);
    }
    match text.parse::<u32>() {
        Ok(n) if n <= libc::SIGRTMAX() as u32 && !text.starts_with('+') => Ok(n as c_int),
        _ => Err(format!("expected a signal (a name like TERM or SIGTERM, or a number from 0 to {})", libc::SIGRTMAX())),
    }
}

/// Signals `--rewrite-signal` may name as FROM: those `--init` waits for and
/// forwards (not SIGKILL and SIGSTOP, which no process can catch, nor SIGCHLD,
/// the synchronous ones and the terminal stops, which it never forwards).
pub fn forwarded(sig: c_int) -> bool {
    (1..=libc::SIGRTMAX()).contains(&sig)
        && ![libc::SIGKILL, libc::SIGSTOP, libc::SIGCHLD].contains(&sig)
        && !SYNCHRONOUS.contains(&sig)
        && !TERMINAL_STOPS.contains(&sig)
}

/// Signals raised by a fault of the process itself: never waited for, so a
/// fault in envshim kills envshim, and never forwarded.
const SYNCHRONOUS: [c_int; 7] = [libc::SIGFPE, libc::SIGILL, libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT, libc::SIGTRAP, libc::SIGSYS];

/// The terminal's stops for a background read or write: ignored by envshim,
/// which hands the terminal to the child and must never stop for it; not
/// forwarded (the terminal sends them to the child's group itself).
const TERMINAL_STOPS: [c_int; 2] = [libc::SIGTTIN, libc::SIGTTOU];

/// Runs `target` as a child and supervises it; returns the child's exit code
/// (128 + the signal number when a signal killed it), or `fail`'s code when
/// envshim cannot supervise. `target` has been looked up and verified already.
#[cfg_attr(envshim_size, optimize(size))]
pub(crate) fn supervise(target: &Exec, settings: Settings, fail: &dyn Fn(Error) -> ExitCode) -> ExitCode {
    let run = || {
        let mut supervisor = Supervisor::new(settings)?;
        supervisor.start(target)?;
        supervisor.run(None::<&mut dyn Rider>)
    };
    run().unwrap_or_else(fail)
}

/// As [`supervise`], with `rider` (`--watch`) on the loop: it gives the
/// program to start, at first and after each stop it asks for.
#[cfg_attr(envshim_size, optimize(size))]
pub(crate) fn supervise_with(rider: &mut dyn Rider, settings: Settings, fail: &dyn Fn(Error) -> ExitCode) -> ExitCode {
    let mut run = || {
        let mut supervisor = Supervisor::new(settings)?;
        supervisor.start(&rider.program()?)?;
        supervisor.run(Some(rider))
    };
    run().unwrap_or_else(fail)
}

/// Blocks every signal envshim waits for (all but the synchronous ones and
/// the terminal stops), ignores the terminal stops, and makes sure SIGCHLD
/// is not ignored (the kernel would then reap the child, status and all).
/// Returns the set to wait for.
pub(crate) fn configure_signals() -> Result<SigSet, Error> {
    let mut waited = SigSet::full();
    for sig in SYNCHRONOUS.into_iter().chain(TERMINAL_STOPS) {
        waited.remove(sig).map_err(|e| os_error("sigdelset", e))?;
    }
    sys::set_signal_mask(&waited).map_err(|e| os_error("sigprocmask", e))?;
    for sig in TERMINAL_STOPS {
        sys::set_disposition(sig, Disposition::Ignore).map_err(|e| os_error("sigaction", e))?;
    }
    sys::set_disposition(libc::SIGCHLD, Disposition::Default).map_err(|e| os_error("sigaction", e))?;
    Ok(waited)
}

/// When envshim is not PID 1, orphans would go to the real init (or the
/// nearest subreaper); as a subreaper it gets them and reaps them itself.
pub(crate) fn register_subreaper() {
    if std::process::id() == 1 {
        return;
    }
    if let Err(e) = sys::set_child_subreaper() {
        report::warn(&format!(
            "--init: not PID 1 and cannot become a child subreaper ({}); orphaned processes will not be reaped by envshim",
            crate::error::os_reason(&e)
        ));
    }
}

/// True when stdin is the controlling terminal and envshim's group is in its
/// foreground: only then does the child take the terminal (a job started in
/// the background must not steal it from the shell).
pub(crate) fn owns_terminal() -> bool {
    matches!(sys::tcgetpgrp(sys::stdin()), Ok(pgrp) if pgrp == sys::getpgrp())
}

/// Starts the child, which prepares itself and execs the program. It shares
/// envshim's memory until then ([`sys::spawn_shared`]: no page tables copied,
/// no copy-on-write faults), so it allocates nothing and leaves what failed,
/// if anything, for envshim to report (the same message and exit code as a
/// failed exec without `--init`).
#[cfg_attr(envshim_size, optimize(size))]
pub(crate) fn spawn(target: &Exec, foreground: bool, handed: Option<&Handed>) -> Result<pid_t, Error> {
    let mut failed: Option<ChildFailure> = None;
    let envp = handed.map(|h| h.envp(&target.envp));
    let pid = sys::spawn_shared(&mut || {
        let prepared = prepare_child(foreground).and_then(|()| handed.map_or(Ok(()), Handed::in_child));
        failed = Some(match prepared {
            Ok(()) => ChildFailure::Exec(exec::exec_only(target, envp.as_ref())),
            Err((call, e)) => ChildFailure::Call(call, e),
        });
        ExitCode::NoExec.number()
    })
    .map_err(|e| os_error("clone", e))?;
    let Some(failure) = failed else { return Ok(pid) };
    // The child has exited: reap it before saying why.
    let _ = sys::wait_for(pid);
    Err(match failure {
        ChildFailure::Exec(e) => exec::exec_error(target, e),
        ChildFailure::Call(call, e) => os_error(call, e),
    })
}

/// What the child could not do: a call that prepares it, or the exec.
enum ChildFailure {
    Call(&'static str, io::Error),
    Exec(io::Error),
}

/// In the child: its own process group, the terminal's foreground (with
/// SIGTTOU still ignored, so taking it cannot stop the child), then default
/// dispositions for every signal and an empty mask. Allocates nothing.
fn prepare_child(foreground: bool) -> Result<(), (&'static str, io::Error)> {
    sys::setpgid(0, 0).map_err(|e| ("setpgid", e))?;
    if foreground {
        take_terminal()?;
    }
    reset_signals()
}

fn take_terminal() -> Result<(), (&'static str, io::Error)> {
    match sys::tcsetpgrp(sys::stdin(), sys::getpgrp()) {
        Ok(()) => Ok(()),
        // The terminal went away (hung up) since the parent looked: run without it.
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::ENXIO)) => Ok(()),
        Err(e) => Err(("tcsetpgrp", e)),
    }
}

fn reset_signals() -> Result<(), (&'static str, io::Error)> {
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // Raw: the C library's reserved real-time signals too (an inherited
        // SIG_IGN of one would survive execve).
        sys::set_disposition(sig, Disposition::Default).map_err(|e| ("sigaction", e))?;
    }
    sys::set_signal_mask(&SigSet::empty()).map(drop).map_err(|e| ("sigprocmask", e))
}

/// The program: its pid, which is also the id of the process group made for
/// it ([`prepare_child`]). Signals reach no process and no group but these.
pub(crate) struct Program {
    pub(crate) pid: pid_t,
    /// Reaped: the pid may be another process's now, and is never signalled again.
    reaped: bool,
    /// It was seen out of its process group, and that was said.
    said_left: bool,
}

impl Program {
    pub(crate) fn new(pid: pid_t) -> Self {
        Program { pid, reaped: false, said_left: false }
    }

    /// The program has been reaped.
    pub(crate) fn reaped(&mut self) {
        self.reaped = true;
    }

    /// Sends `sig` (0, a signal rewritten to nothing: none) to the program,
    /// or with `group` to the process group made for it: its id is the
    /// program's pid, which no other process or group can have while the
    /// program is unreaped or the group has a member. A program that left
    /// that group (a `setpgid` of its own) gets `sig` by its pid as well; the
    /// group it moved into (envshim's own, say) is never signalled.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn signal(&mut self, sig: c_int, group: bool) {
        // No pid yet (0 would be envshim's own group): nothing to signal.
        if sig == 0 || self.pid <= 0 {
            return;
        }
        if !self.reaped && (!group || self.left_group()) {
            send(self.pid, sig, "process", self.pid);
        }
        if group {
            send(-self.pid, sig, "process group", self.pid);
        }
    }

    /// Whether the unreaped program is out of the group made for it; said once.
    fn left_group(&mut self) -> bool {
        let left = matches!(sys::getpgid(self.pid), Ok(pgid) if pgid != self.pid);
        if left && !std::mem::replace(&mut self.said_left, true) {
            let rest = if self.group_remains() { "it and to what is left of the group" } else { "it alone: the group is gone" };
            report::warn(&format!("--init: the program (pid {}) has left its process group: signals go to {rest}", self.pid));
        }
        left
    }

    /// Whether any process of the group made for the program is left (envshim
    /// has reaped those that were its children).
    pub(crate) fn group_remains(&self) -> bool {
        self.pid > 0 && !matches!(sys::kill(-self.pid, 0), Err(e) if e.raw_os_error() == Some(libc::ESRCH))
    }
}

/// `kill(target, sig)`; a target already gone is being reaped.
#[cfg_attr(envshim_size, optimize(size))]
fn send(target: pid_t, sig: c_int, whom: &str, pid: pid_t) {
    match sys::kill(target, sig) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
        // The child stays supervised: a lost signal is not worth killing it for.
        Err(e) => report::warn(&format!("--init: cannot forward signal {sig} to the program's {whom} {pid} ({})", crate::error::os_reason(&e))),
    }
}

/// Reaps every child that has terminated: the program, a handover's other
/// program (`other`; 0: none), and every orphan re-parented to envshim.
/// Returns the wait status of each of the two that is among them.
pub(crate) fn reap_zombies(child: pid_t, other: pid_t) -> Result<(Option<c_int>, Option<c_int>), Error> {
    let mut statuses = (None, None);
    loop {
        match sys::reap_one() {
            Ok(Some((pid, status))) if pid == child => statuses.0 = Some(status),
            Ok(Some((pid, status))) if pid == other && other != 0 => statuses.1 = Some(status),
            Ok(Some(_orphan)) => {}
            Ok(None) => return Ok(statuses),
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(statuses),
            Err(e) => return Err(os_error("waitpid", e)),
        }
    }
}

/// The exit code a shell would report: the child's own, or 128 + the signal.
pub(crate) fn exit_code(status: c_int) -> u8 {
    // Both fit: an exit status is its low 8 bits, a signal number below 128.
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status) as u8
    } else {
        128 + libc::WTERMSIG(status) as u8
    }
}

#[cfg_attr(envshim_size, optimize(size))]
pub(crate) fn os_error(call: &str, e: io::Error) -> Error {
    Error::new(ExitCode::OsErr, format!("--init: {call} failed ({})", crate::error::os_reason(&e)))
}

/// `--term-delay`: the first SIGTERM starts the delay and is forwarded when
/// it ends; SIGTERMs during the delay are absorbed into it; after it, SIGTERM
/// is forwarded at once like any signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TermDelay {
    Armed(Duration),
    Holding(Instant),
    Spent,
}

impl TermDelay {
    pub(crate) fn new(delay: Option<Duration>) -> Self {
        match delay {
            Some(d) if !d.is_zero() => TermDelay::Armed(d),
            _ => TermDelay::Spent,
        }
    }

    /// On SIGTERM: true when it is held rather than forwarded now.
    pub(crate) fn hold(&mut self) -> bool {
        match *self {
            TermDelay::Armed(d) => {
                *self = TermDelay::Holding(Instant::now() + d);
                true
            }
            TermDelay::Holding(_) => true,
            TermDelay::Spent => false,
        }
    }

    /// How long the wait for a signal may last: until the held SIGTERM is due.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        match *self {
            TermDelay::Holding(at) => Some(at.saturating_duration_since(Instant::now())),
            _ => None,
        }
    }

    /// True, once, when the held SIGTERM is due.
    pub(crate) fn due(&mut self) -> bool {
        match *self {
            TermDelay::Holding(at) if Instant::now() >= at => {
                *self = TermDelay::Spent;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(exit_code(7 << 8), 7);
        assert_eq!(exit_code(libc::SIGKILL), 137);
        assert_eq!(exit_code(libc::SIGTERM | 0x80), 143); // core dumped
    }

    #[test]
    fn rewrite_options_parse() {
        assert_eq!(parse_rewrite("TERM:QUIT"), Ok((libc::SIGTERM, libc::SIGQUIT)));
        assert_eq!(parse_rewrite("sigterm:SIGquit"), Ok((libc::SIGTERM, libc::SIGQUIT)));
        assert_eq!(parse_rewrite("15:3"), Ok((15, 3)));
        assert_eq!(parse_rewrite("HUP:0"), Ok((libc::SIGHUP, 0)));
        assert_eq!(parse_rewrite("TERM:KILL"), Ok((libc::SIGTERM, libc::SIGKILL)));
        for bad in ["TERM", "KILL:TERM", "STOP:TERM", "9:15", "0:15", "CHLD:TERM", "TERM:65", "TERM:-1", "TERM:+3", "TERM:FOO", ":", "TERM:QUIT:1"] {
            assert!(parse_rewrite(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rewrites_and_success_exits() {
        let rewrites = [(libc::SIGTERM, libc::SIGQUIT), (libc::SIGHUP, 0), (libc::SIGTERM, libc::SIGINT)];
        let s = Settings { success_exits: &[143, 3], rewrites: &rewrites, ..Settings::default() };
        assert_eq!(s.rewrite(libc::SIGTERM), libc::SIGINT);
        assert_eq!(s.rewrite(libc::SIGHUP), 0);
        assert_eq!(s.rewrite(libc::SIGUSR1), libc::SIGUSR1);
        assert_eq!((s.exit(143), s.exit(3), s.exit(137), s.exit(0)), (ExitCode::Ok, ExitCode::Ok, ExitCode::Status(137), ExitCode::Status(0)));
        assert!(forwarded(libc::SIGTERM) && forwarded(libc::SIGRTMAX()));
        let names = [(libc::SIGHUP, "HUP"), (libc::SIGTERM, "term"), (libc::SIGWINCH, "SIGWINCH"), (libc::SIGSYS, "SYS"), (libc::SIGIO, "IO")];
        for (n, name) in names {
            assert_eq!(signal_number(name), Ok(n), "{name}");
        }
        assert!(![0, libc::SIGKILL, libc::SIGSTOP, libc::SIGCHLD, libc::SIGSEGV, libc::SIGTTIN, 65].into_iter().any(forwarded));
    }

    #[test]
    fn term_delay_holds_the_first_sigterm_and_absorbs_repeats() {
        let mut t = TermDelay::new(Some(Duration::from_secs(3600)));
        assert_eq!(t.remaining(), None);
        assert!(t.hold());
        assert!(t.remaining().is_some_and(|r| r > Duration::from_secs(3500)));
        assert!(t.hold());
        assert!(!t.due());
    }

    #[test]
    fn term_delay_is_spent_once_due() {
        let mut t = TermDelay::new(Some(Duration::from_nanos(1)));
        assert!(t.hold());
        std::thread::sleep(Duration::from_millis(1));
        assert!(t.due());
        assert!(!t.due());
        assert!(!t.hold());
        assert_eq!(t.remaining(), None);
    }

    #[test]
    fn no_or_zero_delay_forwards_at_once() {
        assert!(!TermDelay::new(None).hold());
        assert!(!TermDelay::new(Some(Duration::ZERO)).hold());
    }
}
