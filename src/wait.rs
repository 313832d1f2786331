//! `--wait DURATION` (SPEC §9.2): waiting for missing files that a sidecar
//! writes after the start.
//!
//! The files are looked for again every 100 ms, the way the read will open
//! them (inside the volume as `/`, symlinks resolved there), so what ends the
//! wait is exactly what makes the read find the file: no watch on a directory
//! can miss a change behind a symlink or a directory that appears later. A
//! look is a few `openat` calls; between looks envshim sleeps in
//! `sigtimedwait`, with SIGTERM and SIGINT blocked, so either ends the wait at
//! once (also as PID 1, where a signal without a handler would be dropped).

use std::time::{Duration, Instant};

use crate::error::{code, Error};
use crate::files::Awaited;
use crate::limits::WAIT_POLL;
use crate::sys::{self, SigSet};

/// How a wait ended (a signal ends it with an error).
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// Every file is there (or fails otherwise than missing).
    Present,
    /// The deadline passed first.
    TimedOut,
}

/// Waits until every file of `files` exists, or `deadline` (None: never).
/// Err: SIGTERM or SIGINT came (exit 128 + the signal; the message names the
/// files still missing), or a system call failed.
pub fn until_present(files: &[Awaited], deadline: Option<Instant>) -> Result<Waited, Error> {
    let os_error = |call: &str, e: std::io::Error| Error::new(code::OSERR, format!("--wait: {call} failed ({})", crate::error::os_reason(&e)));
    let mut stop = SigSet::empty();
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // A blocked signal is queued even when ignored: one inherited as
        // ignored (`nohup`) stays ignored, as during the rest of the start-up.
        if !sys::is_ignored(sig).map_err(|e| os_error("sigaction", e))? {
            stop.add(sig).map_err(|e| os_error("sigaddset", e))?;
        }
    }
    let old = sys::block_signals(&stop).map_err(|e| os_error("sigprocmask", e))?;
    let result = look(files, deadline, &stop);
    // A signal that came after the last look stays pending, and is delivered here.
    sys::set_signal_mask(&old).map_err(|e| os_error("sigprocmask", e))?;
    result
}

fn look(files: &[Awaited], deadline: Option<Instant>, stop: &SigSet) -> Result<Waited, Error> {
    let mut missing: Vec<&Awaited> = files.iter().collect();
    loop {
        missing.retain(|f| !f.exists());
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        // Once every file is there, one look without sleeping for a signal that
        // came meanwhile: as PID 1 it would be dropped when the mask is restored.
        let nap = match left {
            _ if missing.is_empty() => Duration::ZERO,
            Some(Duration::ZERO) => return Ok(Waited::TimedOut),
            Some(l) => l.min(WAIT_POLL),
            None => WAIT_POLL,
        };
        let signal = sys::wait_signal(stop, Some(nap)).map_err(|e| Error::new(code::OSERR, format!("--wait: sigtimedwait failed ({})", crate::error::os_reason(&e))))?;
        if let Some(sig) = signal {
            let name = if sig == libc::SIGTERM { "SIGTERM" } else { "SIGINT" };
            let names: Vec<&str> = missing.iter().map(|f| &*f.display).collect();
            let names = if names.is_empty() { "none left".to_string() } else { names.join(", ") };
            return Err(Error::new(128 + sig, format!("{name} while waiting (--wait) for missing files: {names}")));
        }
        if missing.is_empty() {
            return Ok(Waited::Present);
        }
    }
}

/// A duration as messages show it: `1500ms`, `30s`.
pub fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_show_in_seconds_when_whole() {
        assert_eq!(show(Duration::from_millis(500)), "500ms");
        assert_eq!(show(Duration::from_millis(1500)), "1500ms");
        assert_eq!(show(Duration::from_secs(120)), "120s");
        assert_eq!(show(Duration::ZERO), "0s");
    }
}
