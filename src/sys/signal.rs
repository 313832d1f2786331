//! Signals: sets and masks, dispositions and handlers, waiting for one, sending one.
//!
//! Sets, masks and `sigtimedwait` are the kernel's own, through raw system
//! calls: the C library leaves out of `sigfillset` and `sigaddset` the
//! real-time signals it reserves for itself (32-34 with musl, 32-33 with
//! glibc) and glibc's `sigprocmask` removes them from a mask, yet the kernel
//! delivers them like any other: `--init` must block, wait for and forward
//! every signal up to 64 (SIGRTMAX), those included. Dispositions and `kill`
//! stay `libc`: [`catch_if_default`] must read an action without installing
//! one, which `nix`'s `sigaction` cannot.

use std::io;

use super::cvt;

/// The kernel's number of signals (`_NSIG - 1`), the same on every architecture envshim is built for.
const KERNEL_SIGNALS: libc::c_int = 64;

/// A set of signals as the kernel takes it: bit N-1 is signal N.
#[derive(Clone, Copy)]
pub struct SigSet(u64);

impl SigSet {
    /// The empty set.
    pub fn empty() -> SigSet {
        SigSet(0)
    }

    /// Every signal, the C library's reserved ones included.
    pub fn full() -> SigSet {
        SigSet(u64::MAX)
    }

    /// Adds `sig`; EINVAL when it is not a signal number.
    pub fn add(&mut self, sig: libc::c_int) -> io::Result<()> {
        self.0 |= bit(sig)?;
        Ok(())
    }

    /// The kernel's set, for a system call.
    pub(super) fn as_ptr(&self) -> *const u64 {
        &self.0
    }

    /// Removes `sig`; EINVAL when it is not a signal number.
    pub fn remove(&mut self, sig: libc::c_int) -> io::Result<()> {
        self.0 &= !bit(sig)?;
        Ok(())
    }
}

fn bit(sig: libc::c_int) -> io::Result<u64> {
    if (1..=KERNEL_SIGNALS).contains(&sig) {
        Ok(1 << (sig - 1))
    } else {
        Err(io::Error::from_raw_os_error(libc::EINVAL))
    }
}

/// `rt_sigprocmask(how, set)`; returns the previous mask.
fn sigprocmask(how: libc::c_int, set: &SigSet) -> io::Result<SigSet> {
    let mut old = SigSet::empty();
    // SAFETY: both sets are 8 bytes, the size passed, and outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigprocmask, how, &set.0 as *const u64, &mut old.0 as *mut u64, 8usize) };
    cvt(r as libc::c_int)?;
    Ok(old)
}

/// `sigprocmask(SIG_SETMASK)`: blocks exactly `set`; returns the previous mask.
pub fn set_signal_mask(set: &SigSet) -> io::Result<SigSet> {
    sigprocmask(libc::SIG_SETMASK, set)
}

/// `sigprocmask(SIG_BLOCK)`: blocks `set` as well; returns the previous mask.
pub fn block_signals(set: &SigSet) -> io::Result<SigSet> {
    sigprocmask(libc::SIG_BLOCK, set)
}

/// What a signal does when it is delivered.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Disposition {
    Default,
    Ignore,
}

/// The kernel's `struct sigaction` (x86_64 and aarch64 alike), for the
/// raw `rt_sigaction`: the C library's refuses its reserved signals.
#[repr(C)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// `rt_sigaction(2)` setting `SIG_DFL` or `SIG_IGN`, for any signal up to 64
/// (no handler: neither needs the C library's restorer).
pub fn set_disposition(sig: libc::c_int, disposition: Disposition) -> io::Result<()> {
    let handler = match disposition {
        Disposition::Default => libc::SIG_DFL,
        Disposition::Ignore => libc::SIG_IGN,
    };
    let action = KernelSigaction { handler, flags: 0, restorer: 0, mask: 0 };
    // SAFETY: `action` is the kernel's layout, its mask 8 bytes (the size
    // passed), valid for the call; the previous action is not asked for.
    let r = unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, &action as *const KernelSigaction, std::ptr::null_mut::<KernelSigaction>(), 8usize) };
    cvt(r as libc::c_int).map(drop)
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
    // SAFETY: `set` (8 bytes, the size passed), `info` and `ts` (when given) outlive the call.
    let sig = unsafe { libc::syscall(libc::SYS_rt_sigtimedwait, &set.0 as *const u64, &mut info as *mut libc::siginfo_t, ts_ptr, 8usize) } as libc::c_int;
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
