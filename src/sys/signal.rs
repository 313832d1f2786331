//! Signals: sets and masks, dispositions and handlers, waiting for one, sending one.
//!
//! Sets and masks go through `nix`. Dispositions, `sigtimedwait` and `kill`
//! stay raw `libc`: `nix`'s `Signal` has no real-time signals, which `--init`
//! forwards and resets in its child (every signal up to `SIGRTMAX`); its
//! `sigaction` cannot read an action without installing one, and
//! [`catch_if_default`] must not replace an inherited `SIG_IGN` even for an
//! instant; and it has no `sigtimedwait`.

use std::io;

use nix::sys::signal::{sigprocmask, SigmaskHow, Signal};

use super::cvt;

/// A set of signals (`sigset_t`).
#[derive(Clone, Copy)]
pub struct SigSet(nix::sys::signal::SigSet);

impl SigSet {
    /// The empty set.
    pub fn empty() -> SigSet {
        SigSet(nix::sys::signal::SigSet::empty())
    }

    /// Every signal.
    pub fn full() -> SigSet {
        SigSet(nix::sys::signal::SigSet::all())
    }

    /// Adds `sig`; EINVAL when it is not a signal number (or a real-time one).
    pub fn add(&mut self, sig: libc::c_int) -> io::Result<()> {
        self.0.add(Signal::try_from(sig)?);
        Ok(())
    }

    /// Removes `sig`; EINVAL when it is not a signal number (or a real-time one).
    pub fn remove(&mut self, sig: libc::c_int) -> io::Result<()> {
        self.0.remove(Signal::try_from(sig)?);
        Ok(())
    }

    fn as_ptr(&self) -> *const libc::sigset_t {
        self.0.as_ref()
    }
}

/// `sigprocmask(SIG_SETMASK)`: blocks exactly `set`; returns the previous mask.
pub fn set_signal_mask(set: &SigSet) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&set.0), Some(&mut old.0))?;
    Ok(old)
}

/// `sigprocmask(SIG_BLOCK)`: blocks `set` as well; returns the previous mask.
pub fn block_signals(set: &SigSet) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    sigprocmask(SigmaskHow::SIG_BLOCK, Some(&set.0), Some(&mut old.0))?;
    Ok(old)
}

/// What a signal does when it is delivered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Disposition {
    Default,
    Ignore,
}

/// `sigaction(2)` setting `SIG_DFL` or `SIG_IGN`.
pub fn set_disposition(sig: libc::c_int, disposition: Disposition) -> io::Result<()> {
    // SAFETY: a zeroed `sigaction` is valid: no flags, an empty mask.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = match disposition {
        Disposition::Default => libc::SIG_DFL,
        Disposition::Ignore => libc::SIG_IGN,
    };
    // SAFETY: `action` is valid for the call; the previous action is not asked for.
    cvt(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) }).map(drop)
}

/// What a signal caught by [`catch_if_default`] does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Handler {
    /// Ends the process at once with exit code 128 + the signal number.
    Exit,
    /// Nothing: the system call that raised it (a write to a closed pipe) fails instead.
    Nothing,
}

extern "C" fn exit_128_plus(sig: libc::c_int) {
    // SAFETY: _exit is async-signal-safe and has no preconditions.
    unsafe { libc::_exit(128 + sig) }
}

extern "C" fn do_nothing(_sig: libc::c_int) {}

/// Installs `handler` for `sig` when its disposition is the default, and
/// returns whether it did: an inherited "ignore" is left alone. `execve`
/// resets a caught signal to the default, so a program started afterwards
/// inherits the same disposition envshim did.
pub fn catch_if_default(sig: libc::c_int, handler: Handler) -> io::Result<bool> {
    if disposition(sig)? != libc::SIG_DFL {
        return Ok(false);
    }
    let f: extern "C" fn(libc::c_int) = match handler {
        Handler::Exit => exit_128_plus,
        Handler::Nothing => do_nothing,
    };
    // SAFETY: a zeroed `sigaction` is valid: no flags, an empty mask.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = f as libc::sighandler_t;
    // SAFETY: `action` is valid for the call, and both handlers are
    // async-signal-safe (one calls only `_exit`, the other nothing).
    cvt(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) })?;
    Ok(true)
}

/// The current action of `sig`: `SIG_DFL`, `SIG_IGN` or a handler.
fn disposition(sig: libc::c_int) -> io::Result<libc::sighandler_t> {
    // SAFETY: a zeroed `sigaction` is valid storage; the kernel fills it.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: asks for the current action only (no new one is given).
    cvt(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction)
}

/// Whether `sig` is ignored (an inherited `SIG_IGN`, as under `nohup`).
pub fn is_ignored(sig: libc::c_int) -> io::Result<bool> {
    Ok(disposition(sig)? == libc::SIG_IGN)
}

/// `sigtimedwait(2)`: takes the next pending signal of `set` (which must be
/// blocked), waiting at most `timeout` (None: without limit). Ok(None) when
/// the time ran out or the wait was interrupted (a stop and continue).
pub fn wait_signal(set: &SigSet, timeout: Option<std::time::Duration>) -> io::Result<Option<libc::c_int>> {
    // Clamped to what a 32-bit time_t holds (68 years).
    let ts = timeout.map(|t| libc::timespec { tv_sec: t.as_secs().min(i32::MAX as u64) as _, tv_nsec: t.subsec_nanos() as _ });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: a zeroed `siginfo_t` is valid storage; the kernel fills it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set`, `info` and `ts` (when given) outlive the call.
    let sig = unsafe { libc::sigtimedwait(set.as_ptr(), &mut info, ts_ptr) };
    if sig >= 0 {
        return Ok(Some(sig));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EINTR) => Ok(None),
        _ => Err(e),
    }
}

/// `kill(2)`: `pid` > 0 is a process, `-pgid` a process group.
pub fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall on integers.
    cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}
