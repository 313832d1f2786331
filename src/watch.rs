//! `--watch` (docs/reference.md §14, docs/init.md): `--init`'s supervision,
//! plus a re-read of every source when one may have changed, and a restart
//! (or an exit, or a signal) only when the environment or the program line
//! built from them differs from the running program's.
//!
//! Events (inotify on the sources' directories and volume roots) and the
//! poll are only reasons to read again; the decision is made on content:
//! after the quiet period, a read that differs from the running program's
//! must be read the same once more, a quiet period later, before envshim acts.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, Instant};

use libc::{c_int, pid_t};

use crate::environment::Environment;
use crate::error::{code, escape, Error};
use crate::exec::{self, Lookup};
use crate::init::{self, Settings, TermDelay};
use crate::limits::{MAX_CHANGED_NAMES_SHOWN, MAX_SHOWN_NAME_BYTES, MAX_WATCHES};
use crate::program::Word;
use crate::report;
use crate::sys::{self, Notify, WatchDescriptor};

/// `--watch`'s settings (the defaults are the options').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// `--on-change`.
    pub on_change: OnChange,
    /// `--restart-signal`: what stops the program for a restart or an exit.
    pub restart_signal: c_int,
    /// `--restart-timeout`: then SIGKILL to its process group.
    pub restart_timeout: Duration,
    /// `--watch-settle`: the quiet period before a read, and between the two identical reads.
    pub settle: Duration,
    /// `--watch-poll`: a read without an event, this often.
    pub poll: Duration,
    /// `--watch-splay`: a random delay of up to this long before acting.
    pub splay: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions {
            on_change: OnChange::Restart,
            restart_signal: libc::SIGTERM,
            restart_timeout: Duration::from_secs(10),
            settle: Duration::from_secs(1),
            poll: Duration::from_secs(60),
            splay: Duration::ZERO,
        }
    }
}

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnChange {
    Restart,
    Exit,
    /// Only this signal to the program (which reads its files itself).
    Signal(c_int),
}

/// `--on-change`: `restart`, `exit` or `signal:SIG`.
pub fn parse_on_change(text: &str) -> Result<OnChange, String> {
    match text {
        "restart" => Ok(OnChange::Restart),
        "exit" => Ok(OnChange::Exit),
        _ => match text.strip_prefix("signal:") {
            Some(sig) => parse_signal(sig).map(OnChange::Signal),
            None => Err("expected restart, exit or signal:SIG".into()),
        },
    }
}

/// `--watch-poll`: a duration, more than 0.
pub fn parse_poll(text: &str) -> Result<Duration, String> {
    match crate::wait::duration(text)? {
        d if d.is_zero() => Err("must be more than 0".into()),
        d => Ok(d),
    }
}

/// A signal to send (`--restart-signal`, `signal:SIG`): a name or number, not 0.
pub fn parse_signal(text: &str) -> Result<c_int, String> {
    match init::signal_number(text)? {
        0 => Err("0 is no signal".into()),
        sig => Ok(sig),
    }
}

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

impl Build {
    /// The same environment (names, values, order) and program line.
    fn same(&self, other: &Build) -> bool {
        self.argv == other.argv && self.env.len() == other.env.len() && self.env.vars().map(|v| v.text).eq(other.env.vars().map(|v| v.text))
    }
}

/// What the reads and the supervision need from the caller.
pub struct Hooks<'a> {
    /// A read of every source with the start's validation.
    pub read: &'a mut dyn FnMut() -> Result<Build, Vec<Error>>,
    /// `--verbose`: each variable's source and size, before a program starts.
    pub verbose: Option<&'a dyn Fn(&Environment)>,
    /// A failure of envshim's own: reported, its exit code returned.
    pub fail: &'a dyn Fn(Error) -> i32,
}

/// What happens once the stopping program is reaped.
enum After {
    Start(Box<Build>),
    Exit,
}

/// Supervises `first`'s program as `--init` does, and applies the changes
/// of its sources. Returns envshim's exit code.
pub fn supervise<'a>(first: Build, settings: Settings<'a>, opts: &'a WatchOptions, hooks: Hooks<'a>) -> i32 {
    let waited = match init::configure_signals() {
        Ok(set) => set,
        Err(e) => return (hooks.fail)(e),
    };
    let signals = match sys::signal_fd(&waited) {
        Ok(fd) => fd,
        Err(e) => return (hooks.fail)(init::os_error("signalfd", e)),
    };
    init::register_subreaper();
    let foreground = init::owns_terminal();
    let mut w = Watch { opts, settings, hooks, foreground, running: first, child: 0, pending: None, due: None, stopping: None, problem: None, ending: false };
    if let Err(e) = w.start() {
        return (w.hooks.fail)(e);
    }
    match w.run(&signals) {
        Ok(code) => code,
        Err(e) => (w.hooks.fail)(e),
    }
}

struct Watch<'a> {
    opts: &'a WatchOptions,
    settings: Settings<'a>,
    hooks: Hooks<'a>,
    foreground: bool,
    running: Build,
    child: pid_t,
    /// A read that differs from the running program's, to be read the same once more.
    pending: Option<Build>,
    /// When to read the sources next.
    due: Option<Instant>,
    /// The program is being stopped: SIGKILL at the instant (None: sent), then what follows.
    stopping: Option<(Option<Instant>, After)>,
    /// The last invalid change's message, said once.
    problem: Option<String>,
    /// envshim was told to stop (SIGTERM): no change is applied any more.
    ending: bool,
}

impl Watch<'_> {
    /// Starts the running build's program.
    fn start(&mut self) -> Result<(), Error> {
        let b = &self.running;
        let target = exec::prepare(&b.line, b.argv.clone(), &b.env, Lookup::Verify).map_err(|mut e| e.swap_remove(0))?;
        self.child = init::spawn(&target, self.foreground)?;
        Ok(())
    }

    /// The supervision loop: signals, events, the program's exit, the reads.
    fn run(&mut self, signals: &OwnedFd) -> Result<i32, Error> {
        let mut term = TermDelay::new(self.settings.term_delay);
        let mut notify = Notifier::arm(&self.running.files, None);
        let mut next_poll = Instant::now() + self.opts.poll;
        // A change between the first read and the watches is seen by a read now.
        let started = Instant::now();
        self.due = Some(started);
        loop {
            let deadline = [self.due, (!self.ending).then_some(next_poll), self.stopping.as_ref().and_then(|s| s.0), term.remaining().map(|r| Instant::now() + r)]
                .into_iter()
                .flatten()
                .min();
            let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let ready = match notify.notify.as_ref() {
                Some(n) => sys::poll_readable(&[signals.as_fd(), n.fd()], timeout),
                None => sys::poll_readable(&[signals.as_fd()], timeout),
            }
            .map_err(|e| init::os_error("poll", e))?;
            self.signals(signals, &mut term)?;
            if ready & 2 != 0 && notify.changed() && !self.ending {
                self.due = Some(Instant::now() + self.opts.settle);
            }
            if let Some(status) = init::reap_zombies(self.child)? {
                match self.reaped(status)? {
                    Some(code) => return Ok(code),
                    None => continue,
                }
            }
            let now = Instant::now();
            self.kill_when_late(now);
            if !self.ending && now >= next_poll {
                next_poll = now + self.opts.poll;
                self.due.get_or_insert(now);
            }
            if !self.ending && self.stopping.is_none() && self.due.is_some_and(|d| now >= d) {
                // Armed before the read (a change during it is an event), but
                // not again for the read that follows the first arming.
                if self.due != Some(started) {
                    notify = Notifier::arm(&self.running.files, Some(notify));
                }
                self.due = None;
                self.read_again();
            }
        }
    }

    /// The signals received: forwarded as `--init` does; a SIGTERM also
    /// ends the watch (no change is applied once envshim is told to stop).
    fn signals(&mut self, signals: &OwnedFd, term: &mut TermDelay) -> Result<(), Error> {
        while let Some(sig) = sys::read_signal(signals.as_fd()).map_err(|e| init::os_error("signalfd", e))? {
            if sig == libc::SIGTERM {
                self.ending = true;
                self.due = None;
                self.pending = None;
            }
            match sig {
                libc::SIGCHLD => {}
                libc::SIGTERM if term.hold() => {}
                sig => init::forward(self.child, self.settings.rewrite(sig), self.settings.group),
            }
        }
        if term.due() {
            init::forward(self.child, self.settings.rewrite(libc::SIGTERM), self.settings.group);
        }
        Ok(())
    }

    /// The program ended with `status`: the next one starts (a restart), or
    /// envshim's exit code (Some).
    fn reaped(&mut self, status: c_int) -> Result<Option<i32>, Error> {
        match self.stopping.take() {
            Some((_, After::Start(next))) if !self.ending => {
                self.running = *next;
                if let Some(verbose) = self.hooks.verbose {
                    verbose(&self.running.env);
                }
                self.start()?;
                if self.hooks.verbose.is_some() {
                    report::say(&format!("watch: the program stopped ({}) and started again (pid {})", status_text(status), self.child));
                }
                Ok(None)
            }
            Some((_, After::Exit)) if !self.ending => Ok(Some(code::TEMPFAIL)),
            _ => Ok(Some(self.settings.exit(init::exit_code(status)))),
        }
    }

    /// A stopping program past `--restart-timeout`: SIGKILL to its process group.
    fn kill_when_late(&mut self, now: Instant) {
        if let Some((kill, _)) = &mut self.stopping {
            if kill.is_some_and(|at| now >= at) {
                *kill = None;
                report::say(&format!("watch: the program did not stop within {}: SIGKILL to its process group", crate::wait::show(self.opts.restart_timeout)));
                init::forward(self.child, libc::SIGKILL, true);
            }
        }
    }

    /// Reads every source again and decides.
    fn read_again(&mut self) {
        let build = match (self.hooks.read)() {
            Ok(b) => b,
            Err(errors) => {
                self.pending = None;
                let more = if errors.len() > 1 { format!(" (and {} more problems)", errors.len() - 1) } else { String::new() };
                let message = format!("watch: a change is not applied, the program keeps running: {}{more}", errors[0]);
                if self.problem.as_ref() != Some(&message) {
                    report::say(&message);
                    self.problem = Some(message);
                }
                return;
            }
        };
        if self.problem.take().is_some() && build.same(&self.running) {
            report::say("watch: the sources are valid again, and as the program has them");
        }
        if build.same(&self.running) {
            self.pending = None;
            // The files may have moved (a manifest naming others, the same values).
            self.running.files = build.files;
            return;
        }
        match self.pending.take() {
            Some(p) if p.same(&build) => self.act(build),
            _ => {
                self.pending = Some(build);
                self.due = Some(Instant::now() + self.opts.settle + splay(self.opts.splay));
            }
        }
    }

    /// Applies `build`, read twice the same.
    fn act(&mut self, build: Build) {
        let what = describe(&self.running, &build);
        match self.opts.on_change {
            OnChange::Signal(sig) => {
                report::say(&format!("watch: {what}: signal {sig} sent to the program, which keeps its environment"));
                init::forward(self.child, sig, self.settings.group);
                self.running = build;
            }
            on_change => {
                let then = if on_change == OnChange::Exit {
                    report::say(&format!("watch: {what}: stopping the program, then exiting ({})", code::TEMPFAIL));
                    After::Exit
                } else {
                    report::say(&format!("watch: {what}: restarting the program"));
                    After::Start(Box::new(build))
                };
                init::forward(self.child, self.opts.restart_signal, self.settings.group);
                self.stopping = Some((Some(Instant::now() + self.opts.restart_timeout), then));
            }
        }
    }
}

/// `changed A, B; added C; removed D; program line changed`: names only.
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

/// How a program ended, as the shell would say it.
fn status_text(status: c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    }
}

/// `--watch-splay`: a delay up to `max`, from the clock's nanoseconds (the
/// replicas of a workload are all PID 1; they differ in when they woke).
fn splay(max: Duration) -> Duration {
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

/// The inotify watches of one read: each directory, and the names of its
/// entries that matter (none listed: every entry).
struct Notifier {
    notify: Option<Notify>,
    names: Vec<(WatchDescriptor, Option<Vec<Vec<u8>>>)>,
    /// inotify is unavailable: said once, then the poll alone.
    off: bool,
}

impl Notifier {
    /// A fresh instance watching the directories of `files` (a directory
    /// replaced since the last read is watched anew); `old` is the one it replaces.
    fn arm(files: &[Watched], old: Option<Notifier>) -> Notifier {
        let off = old.as_ref().is_some_and(|o| o.off);
        drop(old);
        if off {
            return Notifier { notify: None, names: Vec::new(), off };
        }
        let notify = match Notify::new() {
            Ok(n) => n,
            Err(e) => {
                report::warn(&format!("--watch: inotify is unavailable ({}); the sources are read again every --watch-poll only", crate::error::os_reason(&e)));
                return Notifier { notify: None, names: Vec::new(), off: true };
            }
        };
        let mut n = Notifier { notify: Some(notify), names: Vec::new(), off: false };
        for (dir, name) in directories(files) {
            if n.names.len() >= MAX_WATCHES {
                break;
            }
            n.add(dir, name);
        }
        n
    }

    /// Watches `dir` for `name` (None: any entry); a directory that does not
    /// exist yet is watched through its nearest existing parent.
    fn add(&mut self, mut dir: Vec<u8>, mut name: Option<Vec<u8>>) {
        let Some(notify) = &self.notify else { return };
        for _ in 0..64 {
            let shown = if dir.is_empty() { OsStr::new(".") } else { OsStr::from_bytes(&dir) };
            match notify.watch(shown) {
                Ok(wd) => {
                    match self.names.iter_mut().find(|(w, _)| *w == wd) {
                        None => self.names.push((wd, name.map(|n| vec![n, b"..data".to_vec()]))),
                        Some((_, list)) => match (list.as_mut(), name) {
                            (Some(names), Some(n)) if !names.contains(&n) => names.push(n),
                            (Some(_), None) => *list = None,
                            _ => {}
                        },
                    }
                    return;
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) && !dir.is_empty() && dir != b"/" => {
                    let (parent, last) = split(&dir);
                    name = Some(last.to_vec());
                    dir = parent.to_vec();
                }
                // Other directories may still be watched; the poll covers this one.
                Err(_) => return,
            }
        }
    }

    /// Whether an event since the last call concerns a source.
    fn changed(&mut self) -> bool {
        let Some(notify) = &self.notify else { return false };
        let Ok(events) = notify.events() else { return true };
        events.iter().any(|e| {
            e.whole
                || match self.names.iter().find(|(w, _)| *w == e.watch) {
                    Some((_, Some(names))) => e.name.as_ref().is_some_and(|n| names.iter().any(|m| m.as_slice() == n.as_bytes())),
                    Some((_, None)) => true,
                    None => false,
                }
        })
    }
}

/// The directories to watch for `files`, each with the entry that matters
/// in it (None: every entry): a file's directory for its name, a volume's
/// root for the path's first component (and its `..data`, in every list).
fn directories(files: &[Watched]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut dirs = Vec::new();
    for f in files {
        let path = f.path.trim_ascii_end().strip_suffix(b"/").unwrap_or(&f.path);
        match &f.root {
            Some(root) => {
                let root = root.as_bytes();
                let first = path.split(|&b| b == b'/').find(|c| !c.is_empty()).unwrap_or(path);
                dirs.push((root.to_vec(), Some(first.to_vec())));
                let (parent, name) = split(path);
                if !parent.is_empty() {
                    dirs.push((join(root, parent), Some(name.to_vec())));
                }
            }
            None => {
                let (parent, name) = split(path);
                dirs.push((parent.to_vec(), Some(name.to_vec())));
                if f.dir {
                    dirs.push((path.to_vec(), None));
                }
            }
        }
    }
    dirs.dedup();
    dirs
}

/// `a/b/c` → (`a/b`, `c`); `c` → (``, `c`); `/c` → (`/`, `c`).
fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(0) => (&path[..1], &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&path[..0], path),
    }
}

fn join(root: &[u8], path: &[u8]) -> Vec<u8> {
    let mut p = root.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(path.strip_prefix(b"/").unwrap_or(path));
    p
}

/// `--watch`'s warning about files that are mounts of their own (what a
/// `subPath` mount is: the file bound alone from the volume, on another
/// device than the directory it appears in): Kubernetes never updates them.
/// Said once.
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
    fn directories_of_volume_files_and_paths() {
        let files = [
            Watched { root: Some("/v".into()), path: b"a/b.env".to_vec(), dir: false },
            Watched { root: None, path: b"app.env".to_vec(), dir: false },
            Watched { root: None, path: b"/run/secrets".to_vec(), dir: true },
        ];
        let dirs = directories(&files);
        let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
            (b"/v".to_vec(), Some(b"a".to_vec())),
            (b"/v/a".to_vec(), Some(b"b.env".to_vec())),
            (b"".to_vec(), Some(b"app.env".to_vec())),
            (b"/run".to_vec(), Some(b"secrets".to_vec())),
            (b"/run/secrets".to_vec(), None),
        ];
        assert_eq!(dirs, want);
        assert_eq!(split(b"/x"), (&b"/"[..], &b"x"[..]));
    }

    #[test]
    fn splay_stays_below_its_bound() {
        assert_eq!(splay(Duration::ZERO), Duration::ZERO);
        for _ in 0..100 {
            assert!(splay(Duration::from_millis(5)) < Duration::from_millis(5));
        }
    }
}
