//! `--on-change handover` on the loop (docs/reference.md §13.2): the
//! second program of a handover. First the new one, started beside the
//! serving one, until it is ready (`READY=1` from it, or from its process
//! group, on the notify socket; or `--ready-delay`) or fails (it ends, or is
//! not ready within `--ready-timeout`); then the one that leaves (the old
//! one, or the new one that failed), stopped as a restart stops a program.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use libc::{c_int, pid_t};

use super::Program;
use crate::report;
use crate::sys;

/// The other program of a handover.
pub(super) struct Handover {
    /// The new program until it is ready; then the old one. Signalled
    /// only through [`Program`]: it and the group made for it, never another.
    pub(super) program: Program,
    /// Its wait status, once reaped.
    pub(super) status: Option<c_int>,
    /// How a leaving program is stopped: the signal, then SIGKILL after the timeout.
    signal: c_int,
    timeout: Duration,
    ready_timeout: Duration,
    state: State,
}

enum State {
    /// Not ready yet: ready at `after` without `READY=1` (`--ready-delay`), failed at `limit`.
    Starting { limit: Instant, after: Option<Instant> },
    /// Being stopped: SIGKILL at `kill_at` (None: sent); `group`: its
    /// process group had the stop signal (`--init-group`, or after it ended).
    Leaving { kill_at: Option<Instant>, group: bool },
}

/// What became of the other program.
pub(super) enum Step {
    Nothing,
    /// The new program is ready: it serves, the old one is to leave.
    Ready,
    /// The new program failed (why): it leaves, the old one keeps serving.
    Failed(String),
    /// The leaving program and its process group are gone: the handover is over.
    Gone,
}

impl Handover {
    /// The new program has just been started.
    pub(super) fn new(program: Program, (signal, timeout): (c_int, Duration), ready_timeout: Duration, ready_delay: Option<Duration>, now: Instant) -> Self {
        let state = State::Starting { limit: now + ready_timeout, after: ready_delay.map(|d| now + d) };
        Handover { program, status: None, signal, timeout, ready_timeout, state }
    }

    pub(super) fn starting(&self) -> bool {
        matches!(self.state, State::Starting { .. })
    }

    /// When the loop must look again without an event.
    pub(super) fn deadline(&self, recheck: Duration, now: Instant) -> Option<Instant> {
        match self.state {
            State::Starting { limit, after } => Some(after.map_or(limit, |a| a.min(limit))),
            // Reaped, its process group not yet empty: looked at again soon.
            State::Leaving { .. } if self.status.is_some() => Some(now + recheck),
            State::Leaving { kill_at, .. } => kill_at,
        }
    }

    /// It has been reaped with `status`.
    pub(super) fn reaped(&mut self, status: c_int) {
        self.status = Some(status);
        self.program.reaped();
    }

    /// The program is to leave: its stop signal (to its process group with
    /// `--init-group`), SIGKILL after the timeout.
    pub(super) fn leave(&mut self, now: Instant, group: bool) {
        if self.status.is_none() {
            self.program.signal(self.signal, group);
        }
        self.state = State::Leaving { kill_at: Some(now + self.timeout), group };
    }

    /// After a wake (`ready`: `READY=1` came from it).
    pub(super) fn step(&mut self, now: Instant, ready: bool, verbose: bool) -> Step {
        match &mut self.state {
            State::Starting { limit, after } => match self.status {
                Some(status) => Step::Failed(format!("ended before it was ready ({})", super::supervisor::status_text(status))),
                None if ready || after.is_some_and(|a| now >= a) => Step::Ready,
                None if now >= *limit => Step::Failed(format!("was not ready within {}", crate::wait::show(self.ready_timeout))),
                None => Step::Nothing,
            },
            State::Leaving { kill_at, group } => {
                if kill_at.is_some_and(|at| now >= at) {
                    *kill_at = None;
                    let whom = if self.status.is_some() { "what is left of its process group" } else { "it and its process group" };
                    report::say(&format!(
                        "watch: the program stopped in a handover did not stop within {}: SIGKILL to {whom}",
                        crate::wait::show(self.timeout)
                    ));
                    self.program.signal(libc::SIGKILL, true);
                }
                if self.status.is_none() {
                    return Step::Nothing;
                }
                if !self.program.group_remains() {
                    return Step::Gone;
                }
                if !std::mem::replace(group, true) {
                    if verbose {
                        report::say(&format!(
                            "watch: the program stopped in a handover ended, its process group outlives it: signal {} to the group",
                            self.signal
                        ));
                    }
                    self.program.signal(self.signal, true);
                }
                Step::Nothing
            }
        }
    }
}

/// Reads the datagrams waiting on the notify socket (at most 64 a wake, so
/// a flood cannot hold the loop; none left to fill its queue, on which a
/// program's `sd_notify` would block): true when one says `READY=1` and came
/// from `pid` or a process of its group (0: none is awaited).
pub(super) fn notified(fd: BorrowedFd, pid: pid_t, verbose: bool) -> bool {
    let mut buf = [0u8; 4096];
    let mut ready = false;
    for _ in 0..64 {
        let Ok(Some((sender, n))) = sys::recv_notify(fd, &mut buf) else { break };
        if !buf[..n].split(|&b| b == b'\n').any(|line| line == b"READY=1") || pid == 0 {
            continue;
        }
        if sender > 0 && (sender == pid || sys::getpgid(sender).is_ok_and(|g| g == pid)) {
            ready = true;
        } else if verbose {
            report::say(&format!("watch: READY=1 from pid {sender} ignored: not the new program nor its process group"));
        }
    }
    ready
}
