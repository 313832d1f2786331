//! The one supervision loop, for `--init` and `--watch` alike: wait for a
//! signal (or what rides on the loop: `--watch`'s events and deadlines),
//! forward it, reap, and stop the program when asked: the stop sequence
//! (the signal, the process group emptied, `SIGKILL` at the timeout) is
//! written here once.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use libc::c_int;

use super::{configure_signals, exit_code, os_error, owns_terminal, reap_zombies, register_subreaper, spawn, Program, Settings, TermDelay};
use crate::error::{Error, ExitCode};
use crate::exec::Exec;
use crate::report;
use crate::sys;

/// What rides on the loop (`--watch`): a descriptor and a deadline waited on
/// with the signals; woken, it says what the program is to be sent.
pub(crate) trait Rider {
    /// A descriptor whose readiness is an event (inotify).
    fn fd(&self) -> Option<BorrowedFd<'_>>;
    /// When to wake it even without an event.
    fn deadline(&self) -> Option<Instant>;
    /// Woken (`event`: its descriptor was readable): what to do, if anything.
    fn wake(&mut self, event: bool, now: Instant) -> Option<Order>;
    /// envshim was told to stop (SIGTERM).
    fn terminated(&mut self);
    /// The program it stopped and its process group are gone: envshim's
    /// exit code, or None to start [`Rider::program`].
    fn stopped(&mut self) -> Option<ExitCode>;
    /// The program to start: at first, and after a stop.
    fn program(&mut self) -> Result<Exec<'_>, Error>;
}

/// What a rider asks of the loop.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// A signal to the program (its process group with `--init-group`).
    Signal(c_int),
    /// Stop the program: `signal`, then `SIGKILL` to it and to what is left
    /// of its process group after `timeout`; then [`Rider::stopped`].
    Stop { signal: c_int, timeout: Duration },
}

/// A stop under way.
struct Stop {
    signal: c_int,
    timeout: Duration,
    /// SIGKILL to the program and its process group at this instant (None: sent).
    kill_at: Option<Instant>,
    /// The program's wait status once it is reaped (its process group may remain).
    status: Option<c_int>,
}

/// While a stopped program's process group outlives it and envshim may not
/// be told of its members' ends (not PID 1 and no subreaper): look this often.
const GROUP_RECHECK: Duration = Duration::from_millis(100);

/// The loop's state: the program, its signals and a stop under way.
pub(super) struct Supervisor<'a> {
    program: Program,
    settings: Settings<'a>,
    /// The program takes the terminal's foreground.
    foreground: bool,
    /// The signals envshim waits for, read from a signalfd.
    signals: OwnedFd,
    term: TermDelay,
    stop: Option<Stop>,
    /// envshim was told to stop (SIGTERM): a stop under way starts nothing.
    ending: bool,
}

impl<'a> Supervisor<'a> {
    /// The signals configured, envshim a subreaper, the terminal looked at.
    pub(super) fn new(settings: Settings<'a>) -> Result<Self, Error> {
        let waited = configure_signals()?;
        let signals = sys::signal_fd(&waited).map_err(|e| os_error("signalfd", e))?;
        register_subreaper();
        let foreground = owns_terminal();
        Ok(Supervisor { program: Program::new(0), settings, foreground, signals, term: TermDelay::new(settings.term_delay), stop: None, ending: false })
    }

    /// Starts `target` as the program.
    pub(super) fn start(&mut self, target: &Exec) -> Result<(), Error> {
        self.program = Program::new(spawn(target, self.foreground)?);
        Ok(())
    }

    /// Waits, forwards, reaps and stops until the program has exited for
    /// good; returns envshim's exit code.
    pub(super) fn run<R: Rider + ?Sized>(&mut self, mut rider: Option<&mut R>) -> Result<ExitCode, Error> {
        loop {
            let ready = self.wait(rider.as_deref())?;
            self.signals(rider.as_deref_mut())?;
            if let Some(code) = self.reap()? {
                return Ok(code);
            }
            let now = Instant::now();
            if let Some(code) = self.stopping(rider.as_deref_mut(), now)? {
                return Ok(code);
            }
            if let Some(order) = rider.as_deref_mut().and_then(|r| r.wake(ready & 2 != 0, now)) {
                self.order(order, now);
            }
        }
    }

    /// Blocks until a signal, the rider's event, or the next deadline (the
    /// held SIGTERM's, the rider's, the stop's).
    fn wait<R: Rider + ?Sized>(&self, rider: Option<&R>) -> Result<u32, Error> {
        let now = Instant::now();
        let stop = self.stop.as_ref();
        let deadline = [
            self.term.remaining().map(|r| now + r),
            rider.and_then(|r| r.deadline()),
            stop.and_then(|s| s.kill_at),
            stop.and_then(|s| s.status).map(|_| now + GROUP_RECHECK),
        ]
        .into_iter()
        .flatten()
        .min();
        let timeout = deadline.map(|d| d.saturating_duration_since(now));
        match rider.and_then(|r| r.fd()) {
            Some(fd) => sys::poll_readable(&[self.signals.as_fd(), fd], timeout),
            None => sys::poll_readable(&[self.signals.as_fd()], timeout),
        }
        .map_err(|e| os_error("poll", e))
    }

    /// Every signal received, forwarded (SIGCHLD excepted; the first SIGTERM
    /// held by `--term-delay`); a SIGTERM also tells the rider.
    fn signals<R: Rider + ?Sized>(&mut self, mut rider: Option<&mut R>) -> Result<(), Error> {
        while let Some(sig) = sys::read_signal(self.signals.as_fd()).map_err(|e| os_error("signalfd", e))? {
            if sig == libc::SIGTERM {
                self.ending = true;
                if let Some(r) = rider.as_deref_mut() {
                    r.terminated();
                }
            }
            match sig {
                libc::SIGCHLD => {}
                libc::SIGTERM if self.term.hold() => {}
                sig => self.program.signal(self.settings.rewrite(sig), self.settings.group),
            }
        }
        if self.term.due() {
            self.program.signal(self.settings.rewrite(libc::SIGTERM), self.settings.group);
        }
        Ok(())
    }

    /// Reaps every zombie. The program's end is envshim's exit code (Some),
    /// unless it was stopped: then its process group must be gone before
    /// anything follows (without `--init-group` it has not had the signal yet).
    fn reap(&mut self) -> Result<Option<ExitCode>, Error> {
        let Some(status) = reap_zombies(self.program.pid)? else { return Ok(None) };
        self.program.reaped();
        match self.stop.as_mut() {
            Some(stop) if !self.ending => {
                stop.status = Some(status);
                if self.program.group_remains() && !self.settings.group {
                    if self.settings.verbose {
                        report::say(&format!("watch: the program ended, its process group outlives it: signal {} to the group", stop.signal));
                    }
                    self.program.signal(stop.signal, true);
                }
                Ok(None)
            }
            _ => Ok(Some(self.settings.exit(exit_code(status)))),
        }
    }

    /// A stop under way: `SIGKILL` when it is late, and once nothing of the
    /// program's group is left, what the rider says follows (Some: envshim's
    /// exit code). A SIGTERM meanwhile: the stopped program's status.
    fn stopping<R: Rider + ?Sized>(&mut self, rider: Option<&mut R>, now: Instant) -> Result<Option<ExitCode>, Error> {
        let Some(stop) = self.stop.as_mut() else { return Ok(None) };
        if stop.kill_at.is_some_and(|at| now >= at) {
            stop.kill_at = None;
            let whom = if stop.status.is_some() { "what is left of its process group" } else { "it and its process group" };
            report::say(&format!("watch: the program did not stop within {}: SIGKILL to {whom}", crate::wait::show(stop.timeout)));
            self.program.signal(libc::SIGKILL, true);
        }
        let Some(status) = stop.status else { return Ok(None) };
        if self.ending {
            return Ok(Some(self.settings.exit(exit_code(status))));
        }
        if self.program.group_remains() {
            return Ok(None);
        }
        self.stop = None;
        let Some(rider) = rider else { return Ok(Some(self.settings.exit(exit_code(status)))) };
        if let Some(code) = rider.stopped() {
            return Ok(Some(code));
        }
        self.start(&rider.program()?)?;
        if self.settings.verbose {
            report::say(&format!("watch: the program stopped ({}) and started again (pid {})", status_text(status), self.program.pid));
        }
        Ok(None)
    }

    fn order(&mut self, order: Order, now: Instant) {
        match order {
            Order::Signal(sig) => self.program.signal(sig, self.settings.group),
            Order::Stop { signal, timeout } => {
                self.program.signal(signal, self.settings.group);
                self.stop = Some(Stop { signal, timeout, kill_at: Some(now + timeout), status: None });
            }
        }
    }
}

/// How a program ended, as the shell would say it.
fn status_text(status: c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    }
}
