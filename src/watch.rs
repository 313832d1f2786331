//! `--watch` (docs/reference.md §13, docs/init.md): `--init`'s supervision,
//! plus a re-read of every source when one may have changed, and a restart
//! (or an exit, or a signal) only when the environment or the program line
//! built from them differs from the running program's.
//!
//! Events (inotify on the sources' directories and volume roots) and the
//! poll are only reasons to read again; the decision is made on content:
//! after the quiet period, a read that differs from the running program's
//! must be read the same once more, a quiet period later, before envshim acts.

use std::ffi::OsString;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use crate::environment::Environment;
use crate::error::{escape, Error, ExitCode};
use crate::exec::{self, Exec, Lookup};
use crate::init::{self, Order, Rider, Settings};
use crate::limits::{MAX_CHANGED_NAMES_SHOWN, MAX_SHOWN_NAME_BYTES};
use crate::program::Word;
use crate::report;
use crate::sys;

mod decide;
mod notifier;
mod settings;
use decide::{Action, Content, Decision};
use notifier::{join, split, Notifier};

pub use settings::{on_change_words, parse_on_change, parse_poll, parse_replicas, parse_signal, OnChange, WatchOptions};

/// A source to watch: `path` inside the volume mounted at `root`, or as
/// given (relative to the working directory) when `root` is None; `dir`:
/// an `--env-dir`, whose every entry counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    pub root: Option<OsString>,
    pub path: Vec<u8>,
    pub dir: bool,
}

/// A complete, valid build: what a program is started with.
pub struct Build {
    pub env: Environment,
    pub line: Vec<Word>,
    /// The program line, expanded.
    pub argv: Vec<Vec<u8>>,
    /// Every source it was read from.
    pub files: Vec<Watched>,
}

impl Content for Build {
    #[cfg_attr(envshim_size, optimize(size))]
    fn same(&self, other: &Build) -> bool {
        self.argv == other.argv && self.env.len() == other.env.len() && self.env.vars().map(|v| v.text).eq(other.env.vars().map(|v| v.text))
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn describe(&self, new: &Build) -> String {
        describe(self, new)
    }
}

/// What the reads and the supervision need from the caller.
pub struct Hooks<'a> {
    /// A read of every source with the start's validation.
    pub read: &'a mut dyn FnMut() -> Result<Build, Vec<Error>>,
    /// `--verbose`: each variable's source and size, before a program starts.
    pub verbose: Option<&'a dyn Fn(&Environment)>,
    /// A failure of envshim's own: reported, its exit code returned.
    pub fail: &'a dyn Fn(Error) -> ExitCode,
}

/// Supervises `first`'s program as `--init` does, and applies the changes
/// of its sources: the decision ([`decide`]) and the watches ride on
/// `--init`'s loop. Returns envshim's exit code.
#[cfg_attr(envshim_size, optimize(size))]
pub fn supervise<'a>(first: Build, settings: Settings<'a>, opts: &'a WatchOptions, hooks: Hooks<'a>) -> ExitCode {
    let fail = hooks.fail;
    let mut watch = Watch {
        notifier: Notifier::new(&first.files),
        decision: Decision::new(first, *opts, Instant::now()),
        opts,
        hooks,
        armed_for_first_read: true,
        started: false,
    };
    init::supervise_with(&mut watch, settings, fail)
}

/// The watch on the loop: the decision, the watches, the reads.
struct Watch<'a> {
    decision: Decision<Build>,
    notifier: Notifier,
    opts: &'a WatchOptions,
    hooks: Hooks<'a>,
    /// The watches were armed for the first read already.
    armed_for_first_read: bool,
    /// The first program has been started (the caller said its variables).
    started: bool,
}

impl Rider for Watch<'_> {
    fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.notifier.notify().map(sys::Notify::fd)
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn deadline(&self) -> Option<Instant> {
        self.decision.deadline()
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn wake(&mut self, event: bool, now: Instant) -> Option<Order> {
        if event && self.notifier.changed() {
            self.decision.changed(now);
        }
        let mut order = None;
        if self.decision.tick(now) == Some(Action::Read) {
            // Armed before the read, so that a change during it is an event.
            if !std::mem::take(&mut self.armed_for_first_read) {
                self.notifier.rearm(&self.decision.running().files);
            }
            let read = (self.hooks.read)().map_err(|errors| {
                let more = if errors.len() > 1 { format!(" (and {} more problems)", errors.len() - 1) } else { String::new() };
                format!("{}{more}", errors[0])
            });
            for action in self.decision.read(read, Instant::now(), splay(self.opts)) {
                match action {
                    Action::Say(line) => report::say(&line),
                    Action::Signal(sig) => order = Some(Order::Signal(sig)),
                    Action::Stop => order = Some(Order::Stop { signal: self.opts.restart_signal(), timeout: self.opts.restart_timeout() }),
                    Action::Handover => {
                        let o = self.opts;
                        let ready_delay = Some(o.ready_delay()).filter(|d| !d.is_zero());
                        order =
                            Some(Order::Handover { signal: o.restart_signal(), timeout: o.restart_timeout(), ready_timeout: o.ready_timeout(), ready_delay });
                    }
                    Action::Read => {}
                }
            }
        }
        self.follow_sources(now);
        order
    }

    fn terminated(&mut self) {
        self.decision.terminated();
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn handed(&mut self, outcome: Result<(), String>) {
        for action in self.decision.handed(outcome) {
            if let Action::Say(line) = action {
                report::say(&line);
            }
        }
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn stopped(&mut self) -> Option<ExitCode> {
        match self.decision.stopped() {
            decide::Next::Exit(code) => Some(code),
            decide::Next::Start | decide::Next::Keep => {
                self.follow_sources(Instant::now());
                None
            }
        }
    }

    #[cfg_attr(envshim_size, optimize(size))]
    fn program(&mut self) -> Result<Exec<'_>, Error> {
        let b = self.decision.to_start();
        if let (Some(verbose), true) = (self.hooks.verbose, std::mem::replace(&mut self.started, true)) {
            verbose(&b.env);
        }
        exec::prepare(&b.line, b.argv.clone(), &b.env, Lookup::Verify).map_err(|mut e| e.swap_remove(0))
    }
}

impl Watch<'_> {
    /// The watches follow the running program's sources (a restart, or a
    /// read with the same values, may have named other files); a read after
    /// sees what changed before they were armed.
    #[cfg_attr(envshim_size, optimize(size))]
    fn follow_sources(&mut self, now: Instant) {
        if !self.decision.busy() && !self.notifier.follows(&self.decision.running().files) {
            self.notifier.rearm(&self.decision.running().files);
            self.decision.changed(now);
        }
    }
}

/// `changed A, B; added C; removed D; program line changed`: names only.
#[cfg_attr(envshim_size, optimize(size))]
fn describe(old: &Build, new: &Build) -> String {
    let (mut changed, mut added, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for v in new.env.vars() {
        match old.env.get(v.name) {
            None => added.push(v.name),
            Some(value) if value != v.value => changed.push(v.name),
            Some(_) => {}
        }
    }
    removed.extend(old.env.vars().map(|v| v.name).filter(|n| new.env.get(n).is_none()));
    let mut parts = Vec::new();
    for (what, names) in [("changed", changed), ("added", added), ("removed", removed)] {
        if !names.is_empty() {
            parts.push(format!("{what} {}", names_list(&names)));
        }
    }
    if old.argv != new.argv {
        parts.push("program line changed".into());
    }
    if parts.is_empty() {
        // Only the order of the variables.
        parts.push("the environment's order changed".into());
    }
    parts.join("; ")
}

#[cfg_attr(envshim_size, optimize(size))]
fn names_list(names: &[&[u8]]) -> String {
    let mut shown: Vec<String> = names
        .iter()
        .take(MAX_CHANGED_NAMES_SHOWN)
        .map(|n| {
            let cut = &n[..n.len().min(MAX_SHOWN_NAME_BYTES)];
            format!("{}{}", escape(cut), if cut.len() < n.len() { "..." } else { "" })
        })
        .collect();
    if names.len() > MAX_CHANGED_NAMES_SHOWN {
        shown.push(format!("and {} more", names.len() - MAX_CHANGED_NAMES_SHOWN));
    }
    shown.join(", ")
}

/// `--watch-splay`: this replica's slot of it when it has an index and the
/// replicas are known (replica I acts at (I mod R)/R of it), else [`random`].
#[cfg_attr(envshim_size, optimize(size))]
fn splay(opts: &WatchOptions) -> Duration {
    match (opts.index(), opts.replicas) {
        (Some(i), Some(r)) => slot(opts.splay(), i, r),
        _ => random(opts.splay()),
    }
}

/// Replica `i`'s delay of `max`: (i mod r)/r of it.
fn slot(max: Duration, i: u32, r: u32) -> Duration {
    let r = r.max(1);
    max.mul_f64(f64::from(i % r) / f64::from(r))
}

/// A delay up to `max`, from the clock's nanoseconds (the replicas of a
/// workload are all PID 1; they differ in when they woke).
fn random(max: Duration) -> Duration {
    if max.is_zero() {
        return max;
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() ^ u64::from(d.subsec_nanos()) << 20);
    // splitmix64's finaliser.
    let mut x = nanos ^ (u64::from(std::process::id()) << 32);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    // Milliseconds are fine enough for a spread of restarts.
    Duration::from_millis(x % (max.as_secs().saturating_mul(1000) + u64::from(max.subsec_millis())).max(1))
}

/// `--watch`'s warning about files that are mounts of their own (what a
/// `subPath` mount is: the file bound alone from the volume, on another
/// device than the directory it appears in): Kubernetes never updates them.
/// Said once.
#[cfg_attr(envshim_size, optimize(size))]
pub fn warn_fixed_files(files: &[Watched]) {
    let mut fixed = Vec::new();
    for f in files.iter().filter(|f| !f.dir) {
        let path = match &f.root {
            Some(root) => join(root.as_bytes(), &f.path),
            None => f.path.clone(),
        };
        let parent = match split(&path).0 {
            b"" => &b"."[..],
            p => p,
        };
        let dev = |p: &[u8]| std::ffi::CString::new(p).ok().and_then(|c| sys::stat(&c).ok()).map(|st| (st.st_dev, st.st_mode & libc::S_IFMT));
        // A file (links followed) on another device than its directory.
        if let (Some((file, libc::S_IFREG)), Some((dir, _))) = (dev(&path), dev(parent)) {
            if file != dir && !fixed.contains(&path) {
                fixed.push(path);
            }
        }
    }
    if !fixed.is_empty() {
        let shown: Vec<String> = fixed.iter().take(MAX_CHANGED_NAMES_SHOWN).map(|p| escape(p)).collect();
        report::warn(&format!(
            "--watch: {} is mounted on its own (a subPath mount?): Kubernetes never updates such a file, so its changes cannot reach the program",
            shown.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_change_and_signals_parse() {
        assert_eq!(parse_on_change("restart"), Ok(OnChange::Restart));
        assert_eq!(parse_on_change("exit"), Ok(OnChange::Exit));
        assert_eq!(parse_on_change("signal:HUP"), Ok(OnChange::Signal(libc::SIGHUP)));
        assert_eq!(parse_on_change("signal:10"), Ok(OnChange::Signal(10)));
        for bad in ["", "Restart", "signal:", "signal:0", "signal:FOO", "kill"] {
            assert!(parse_on_change(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_signal("KILL"), Ok(libc::SIGKILL));
    }

    #[test]
    fn splay_stays_below_its_bound() {
        assert_eq!(random(Duration::ZERO), Duration::ZERO);
        for _ in 0..100 {
            assert!(random(Duration::from_millis(5)) < Duration::from_millis(5));
        }
    }

    #[test]
    fn an_index_takes_its_slot_of_the_splay() {
        let s = Duration::from_secs(60);
        let slots: Vec<Duration> = (0..4).map(|i| slot(s, i, 3)).collect();
        assert_eq!(slots, [Duration::ZERO, Duration::from_secs(20), Duration::from_secs(40), Duration::ZERO]);
        let mut opts = WatchOptions {
            on_change: Some(OnChange::Restart),
            restart_signal: Some(15),
            restart_timeout: Some(s),
            settle: Some(s),
            poll: Some(s),
            splay: Some(s),
            replicas: Some(3),
            index: Some(settings::PodIndex(Some(2))),
            ready_timeout: Some(s),
            ready_delay: None,
        };
        assert_eq!(splay(&opts), Duration::from_secs(40));
        // Without the replicas (or the index): random.
        opts.replicas = None;
        assert!(splay(&opts) < s);
    }
}
