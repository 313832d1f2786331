//! The one supervision loop, for `--init` and `--watch` alike: wait for a
//! signal (or what rides on the loop: `--watch`'s events and deadlines),
//! forward it, reap, and stop the program when asked: the stop sequence
//! (the signal, the process group emptied, `SIGKILL` at the timeout) is
//! written here once.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use libc::c_int;

use super::handover::{notified, Handover, Step};
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
    /// The program to start: at first, after a stop, and a handover's new one.
    fn program(&mut self) -> Result<Exec<'_>, Error>;
    /// A handover's new program is ready (Ok) or failed (Err: why).
    fn handed(&mut self, outcome: Result<(), String>);
}

/// What a rider asks of the loop.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// A signal to the program (its process group with `--init-group`).
    Signal(c_int),
    /// Stop the program: `signal`, then `SIGKILL` to it and to what is left
    /// of its process group after `timeout`; then [`Rider::stopped`].
    Stop { signal: c_int, timeout: Duration },
    /// Start [`Rider::program`] beside the program; once it is ready
    /// (`READY=1`, or `ready_delay` without), stop the old one as `Stop`
    /// does; failed (ended, or not ready within `ready_timeout`): stop it.
    /// Then [`Rider::handed`], and [`Rider::stopped`] once the one stopped is gone.
    Handover { signal: c_int, timeout: Duration, ready_timeout: Duration, ready_delay: Option<Duration> },
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
    /// A handover under way: its other program.
    handover: Option<Handover>,
    /// The program's wait status, when it ended during a handover (envshim
    /// exits with it once the other program is gone).
    ended: Option<c_int>,
    /// A SIGTERM stopped a handover's new program: the program's waits until it is gone.
    new_first: bool,
}

impl<'a> Supervisor<'a> {
    /// The signals configured, envshim a subreaper, the terminal looked at.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(super) fn new(settings: Settings<'a>) -> Result<Self, Error> {
        let waited = configure_signals()?;
        let signals = sys::signal_fd(&waited).map_err(|e| os_error("signalfd", e))?;
        register_subreaper();
        let foreground = owns_terminal();
        Ok(Supervisor {
            program: Program::new(0),
            settings,
            foreground,
            signals,
            term: TermDelay::new(settings.term_delay),
            stop: None,
            ending: false,
            handover: None,
            ended: None,
            new_first: false,
        })
    }

    /// Starts `target` as the program.
    pub(super) fn start(&mut self, target: &Exec) -> Result<(), Error> {
        self.program = Program::new(spawn(target, self.foreground, self.settings.handed)?);
        Ok(())
    }

    /// Waits, forwards, reaps and stops until the program has exited for
    /// good; returns envshim's exit code.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(super) fn run<R: Rider + ?Sized>(&mut self, mut rider: Option<&mut R>) -> Result<ExitCode, Error> {
        loop {
            let (event, notify) = self.wait(rider.as_deref())?;
            self.signals(rider.as_deref_mut())?;
            if let Some(code) = self.reap()? {
                return Ok(code);
            }
            let now = Instant::now();
            if let Some(code) = self.stopping(rider.as_deref_mut(), now)? {
                return Ok(code);
            }
            if let Some(code) = self.handing(rider.as_deref_mut(), now, notify)? {
                return Ok(code);
            }
            if let Some(order) = rider.as_deref_mut().and_then(|r| r.wake(event, now)) {
                self.order(order, rider.as_deref_mut(), now)?;
            }
        }
    }

    /// Blocks until a signal, the rider's event, a notification, or the next
    /// deadline (the held SIGTERM's, the rider's, the stop's, the handover's);
    /// whether the rider's descriptor and the notify socket are readable.
    fn wait<R: Rider + ?Sized>(&self, rider: Option<&R>) -> Result<(bool, bool), Error> {
        let now = Instant::now();
        let stop = self.stop.as_ref();
        let deadline = [
            self.term.remaining().map(|r| now + r),
            rider.and_then(|r| r.deadline()),
            stop.and_then(|s| s.kill_at),
            stop.and_then(|s| s.status).map(|_| now + GROUP_RECHECK),
            self.handover.as_ref().and_then(|h| h.deadline(GROUP_RECHECK, now)),
        ]
        .into_iter()
        .flatten()
        .min();
        let timeout = deadline.map(|d| d.saturating_duration_since(now));
        let (mut fds, mut n, mut bits) = ([self.signals.as_fd(); 3], 1, [0u32; 2]);
        for (i, fd) in [rider.and_then(|r| r.fd()), self.settings.handed.and_then(|h| h.notify())].into_iter().enumerate() {
            if let Some(fd) = fd {
                (fds[n], bits[i], n) = (fd, 1 << n, n + 1);
            }
        }
        let ready = sys::poll_readable(&fds[..n], timeout).map_err(|e| os_error("poll", e))?;
        Ok((ready & bits[0] != 0, ready & bits[1] != 0))
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
                // A handover's new program is stopped first: the program's
                // SIGTERM waits until it is gone.
                if let Some(h) = self.handover.as_mut().filter(|h| h.starting()) {
                    h.leave(Instant::now(), self.settings.group);
                    self.new_first = true;
                }
            }
            match sig {
                libc::SIGCHLD => {}
                libc::SIGTERM if self.term.hold() || self.new_first => {}
                sig => self.program.signal(self.settings.rewrite(sig), self.settings.group),
            }
        }
        if self.term.due() && !self.new_first {
            self.program.signal(self.settings.rewrite(libc::SIGTERM), self.settings.group);
        }
        Ok(())
    }

    /// Reaps every zombie. The program's end is envshim's exit code (Some),
    /// unless it was stopped: then its process group must be gone before
    /// anything follows (without `--init-group` it has not had the signal yet).
    fn reap(&mut self) -> Result<Option<ExitCode>, Error> {
        let (status, other) = reap_zombies(self.program.pid, self.handover.as_ref().map_or(0, |h| h.program.pid))?;
        if let (Some(h), Some(other)) = (self.handover.as_mut(), other) {
            h.reaped(other);
        }
        let Some(status) = status else { return Ok(None) };
        self.program.reaped();
        if let Some(h) = self.handover.as_mut() {
            // Ended on its own during a handover: envshim ends as it did
            // (section 14), once the other is gone (a new one not ready is stopped).
            self.ended = Some(status);
            if !self.ending {
                report::say(&format!(
                    "watch: the program ended ({}) during a handover: envshim exits with its status once the other one is gone",
                    status_text(status)
                ));
            }
            if h.starting() {
                h.leave(Instant::now(), self.settings.group);
            }
            return Ok(None);
        }
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

    fn order<R: Rider + ?Sized>(&mut self, order: Order, rider: Option<&mut R>, now: Instant) -> Result<(), Error> {
        match order {
            Order::Signal(sig) => self.program.signal(sig, self.settings.group),
            Order::Stop { signal, timeout } => {
                self.program.signal(signal, self.settings.group);
                self.stop = Some(Stop { signal, timeout, kill_at: Some(now + timeout), status: None });
            }
            Order::Handover { signal, timeout, ready_timeout, ready_delay } => {
                let Some(rider) = rider else { return Ok(()) };
                // A program that cannot start is a failed handover: the old one keeps serving.
                match rider.program().and_then(|target| spawn(&target, self.foreground, self.settings.handed)) {
                    Ok(pid) => {
                        self.handover = Some(Handover::new(Program::new(pid), (signal, timeout), ready_timeout, ready_delay, now));
                        if self.settings.verbose {
                            report::say(&format!(
                                "watch: the new program started (pid {pid}), the old one (pid {}) serves until it is ready",
                                self.program.pid
                            ));
                        }
                    }
                    Err(e) => {
                        rider.handed(Err(format!("cannot start: {e}")));
                        rider.stopped();
                    }
                }
            }
        }
        Ok(())
    }

    /// A handover under way: the new program ready (the old one leaves) or
    /// failed (it leaves); once the one leaving is gone, the handover is over
    /// (envshim's exit code when the program ended meanwhile, or was told to).
    fn handing<R: Rider + ?Sized>(&mut self, rider: Option<&mut R>, now: Instant, notify: bool) -> Result<Option<ExitCode>, Error> {
        let awaited = self.handover.as_ref().filter(|h| h.starting() && h.status.is_none()).map_or(0, |h| h.program.pid);
        let ready = notify && self.settings.handed.and_then(|h| h.notify()).is_some_and(|fd| notified(fd, awaited, self.settings.verbose));
        let Some(h) = self.handover.as_mut() else { return Ok(None) };
        match h.step(now, ready, self.settings.verbose) {
            Step::Nothing => {}
            Step::Ready => {
                std::mem::swap(&mut self.program, &mut h.program);
                h.leave(now, self.settings.group);
                if self.settings.verbose {
                    report::say(&format!("watch: the new program (pid {}) is ready: stopping the old one (pid {})", self.program.pid, h.program.pid));
                }
                if let Some(r) = rider {
                    r.handed(Ok(()));
                }
            }
            Step::Failed(why) => {
                h.leave(now, self.settings.group);
                if let Some(r) = rider {
                    r.handed(Err(why));
                }
            }
            Step::Gone => {
                self.handover = None;
                if let Some(status) = self.ended {
                    return Ok(Some(self.settings.exit(exit_code(status))));
                }
                // The new one gone, the program has the SIGTERM (unless --term-delay still holds it).
                if std::mem::take(&mut self.new_first) && self.term.remaining().is_none() {
                    self.program.signal(self.settings.rewrite(libc::SIGTERM), self.settings.group);
                }
                if !self.ending {
                    return Ok(rider.and_then(|r| r.stopped()));
                }
            }
        }
        Ok(None)
    }
}

/// How a program ended, as the shell would say it.
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn status_text(status: c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    }
}
