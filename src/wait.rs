//! `--wait DURATION` (docs/reference.md §9.2): waiting for missing files that a sidecar
//! writes after the start.
//!
//! The files are looked for again every 100 ms, the way the read will open
//! them (inside the volume as `/`, symlinks resolved there), so what ends the
//! wait is exactly what makes the read find the file: no watch on a directory
//! can miss a change behind a symlink or a directory that appears later. A
//! look is a few `openat` calls; between looks envshim sleeps in
//! `sigtimedwait`, with SIGTERM and SIGINT blocked, so either ends the wait at
//! once (also as PID 1, where a signal without a handler would be dropped).
//! SIGHUP and SIGQUIT end it the same way.
//!
//! The wait says what it waits for: one line when it begins, then one every
//! [`WAIT_REPORT`] naming the files still missing (the first
//! [`MAX_WAIT_FILES_SHOWN`], then a count).

use std::time::{Duration, Instant};

use crate::error::{Error, ExitCode};
use crate::files::Awaited;
use crate::limits::{MAX_WAIT_FILES_SHOWN, WAIT_POLL, WAIT_REPORT};
use crate::report;
use crate::sys::{self, SigSet};

/// How a wait ended (a signal ends it with an error).
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// Every file is there (or fails otherwise than missing).
    Present,
    /// The deadline passed first.
    TimedOut,
}

/// The signals that end a wait (each with 128 + its number), and their names.
const STOPS: [(libc::c_int, &str); 4] = [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT"), (libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")];

/// Waits until every file of `files` exists, or `deadline` (None: never);
/// `how_long` says for how long when the wait begins (`up to 30s`).
/// Err: SIGTERM, SIGINT, SIGHUP or SIGQUIT came (exit 128 + the signal; the
/// message names the files still missing), or a system call failed.
pub fn until_present(files: &[Awaited], deadline: Option<Instant>, how_long: &str) -> Result<Waited, Error> {
    let os_error = |call: &str, e: std::io::Error| Error::new(ExitCode::OsErr, format!("--wait: {call} failed ({})", crate::error::os_reason(&e)));
    let mut stop = SigSet::empty();
    for (sig, _) in STOPS {
        // A blocked signal is queued even when ignored: one inherited as
        // ignored (`nohup`) stays ignored, as during the rest of the start-up.
        if !sys::is_ignored(sig).map_err(|e| os_error("sigaction", e))? {
            stop.add(sig).map_err(|e| os_error("sigaddset", e))?;
        }
    }
    let old = sys::block_signals(&stop).map_err(|e| os_error("sigprocmask", e))?;
    let result = look(files, deadline, how_long, &stop);
    // A signal that came after the last look stays pending, and is delivered here.
    sys::set_signal_mask(&old).map_err(|e| os_error("sigprocmask", e))?;
    result
}

fn look(files: &[Awaited], deadline: Option<Instant>, how_long: &str, stop: &SigSet) -> Result<Waited, Error> {
    let mut missing: Vec<&Awaited> = files.iter().collect();
    let mut report_at: Option<Instant> = None;
    loop {
        missing.retain(|f| !f.exists());
        let now = Instant::now();
        match report_at {
            _ if missing.is_empty() => {}
            None => {
                report::say(&format!("waiting {how_long} for {}", names(&missing)));
                report_at = now.checked_add(WAIT_REPORT);
            }
            Some(at) if now >= at => {
                let left = deadline.map_or(String::new(), |d| format!(" ({} left)", whole_seconds(d.saturating_duration_since(now))));
                report::say(&format!("still waiting for {}{left}", names(&missing)));
                report_at = at.checked_add(WAIT_REPORT);
            }
            Some(_) => {}
        }
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        // Once every file is there, one look without sleeping for a signal that
        // came meanwhile: as PID 1 it would be dropped when the mask is restored.
        let nap = match left {
            _ if missing.is_empty() => Duration::ZERO,
            Some(Duration::ZERO) => return Ok(Waited::TimedOut),
            Some(l) => l.min(WAIT_POLL),
            None => WAIT_POLL,
        };
        let signal = sys::wait_signal(stop, Some(nap))
            .map_err(|e| Error::new(ExitCode::OsErr, format!("--wait: sigtimedwait failed ({})", crate::error::os_reason(&e))))?;
        if let Some(sig) = signal {
            let name = STOPS.iter().find(|(s, _)| *s == sig).map_or("a signal", |(_, n)| n);
            let names = if missing.is_empty() { "none left".to_string() } else { names(&missing) };
            return Err(Error::new(ExitCode::Status(128 + sig as u8), format!("{name} while waiting (--wait) for missing files: {names}")));
        }
        if missing.is_empty() {
            return Ok(Waited::Present);
        }
    }
}

/// The files as a message lists them: the first [`MAX_WAIT_FILES_SHOWN`], then a count.
#[cfg_attr(envshim_size, optimize(size))]
fn names(files: &[&Awaited]) -> String {
    let mut names = String::new();
    for f in files.iter().take(MAX_WAIT_FILES_SHOWN) {
        if !names.is_empty() {
            names.push_str(", ");
        }
        names.push_str(&f.display);
    }
    if files.len() > MAX_WAIT_FILES_SHOWN {
        names.push_str(&format!(" and {} more", files.len() - MAX_WAIT_FILES_SHOWN));
    }
    names
}

/// Time left, in whole seconds rounded up (`0s` only once it is over).
fn whole_seconds(d: Duration) -> String {
    format!("{}s", d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// A duration as messages show it: `1500ms`, `30s`.
#[cfg_attr(envshim_size, optimize(size))]
pub fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// A duration as `--wait` and `--term-delay` take it (and `kubectl envshim
/// convert --wait` checks it): a whole number and a unit, ms, s, m or h; a
/// bare number is seconds.
#[cfg_attr(envshim_size, optimize(size))]
pub fn duration(text: &str) -> Result<Duration, String> {
    let bad = || "expected a whole number and a unit (500ms, 5s, 1m, 1h)".to_string();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u32 = number.parse().map_err(|_| bad())?;
    let millis: u64 = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(bad()),
    };
    Ok(Duration::from_millis(u64::from(n) * millis))
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
