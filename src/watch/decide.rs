//! `--watch`'s rules (docs/reference.md §13) as a decision apart from its
//! effects: events, reads and the clock come in as plain values, and what to
//! do comes out (read again, say, signal, stop). No process, no file and no
//! clock of its own: `watch.rs` does what it says, and the tests below feed
//! it row by row, as watchexec tests its supervisor.

use std::time::{Duration, Instant};

use libc::c_int;

use super::{OnChange, WatchOptions};
use crate::error::ExitCode;

/// What the decision compares: a build's environment and program line.
pub(crate) trait Content {
    /// The same environment (names, values, order) and program line.
    fn same(&self, other: &Self) -> bool;
    /// What changed from `self` to `new`: names only.
    fn describe(&self, new: &Self) -> String;
}

/// What the caller is to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Read every source again, and hand the result to [`Decision::read`].
    Read,
    /// One line on stderr.
    Say(String),
    /// `--on-change signal:SIG`: SIG to the program, which keeps running.
    Signal(c_int),
    /// Stop the program; [`Decision::stopped`] once it and its process group are gone.
    Stop,
    /// `--on-change handover`: start [`Decision::to_start`]'s program beside the
    /// running one; [`Decision::handed`] once it is ready or has failed, then
    /// [`Decision::stopped`] once the program stopped (the old one, or the
    /// new one that failed) is gone.
    Handover,
}

/// After a stop: start the (new) running build's program, or exit with this code.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    Start,
    Exit(ExitCode),
    /// A handover is over: the program serving keeps running.
    Keep,
}

/// The state of the watch: the running program's build, a change read once,
/// the next read, a stop under way.
pub(crate) struct Decision<B> {
    /// The settings the rules read (`settle`, `poll`, `on_change`).
    settings: WatchOptions,
    running: B,
    /// A read that differs from the running program's, to be read the same once more.
    pending: Option<B>,
    /// When to read next.
    due: Option<Instant>,
    next_poll: Instant,
    /// The program is being stopped; then the build to start (None: exit).
    stopping: Option<Option<B>>,
    /// The last invalid change's message, said once.
    problem: Option<String>,
    /// A handover under way: the build whose program is starting (None once
    /// it is ready or has failed, until the program stopped is gone).
    handover: Option<Option<B>>,
    /// A change whose new program failed in a handover: not tried again
    /// until the sources change to something else.
    rejected: Option<B>,
    /// envshim was told to stop (SIGTERM): no change is applied any more.
    ending: bool,
}

impl<B: Content> Decision<B> {
    /// The program of `running` has just started; a read right away sees a
    /// change made between the first read and the watches.
    pub(crate) fn new(running: B, settings: WatchOptions, now: Instant) -> Self {
        Decision {
            settings,
            running,
            pending: None,
            due: Some(now),
            next_poll: now + settings.poll(),
            stopping: None,
            problem: None,
            handover: None,
            rejected: None,
            ending: false,
        }
    }

    /// The build of the program running (or being stopped).
    pub(crate) fn running(&self) -> &B {
        &self.running
    }

    /// The build of the program to start: a handover's new one, else the running one.
    pub(crate) fn to_start(&self) -> &B {
        match &self.handover {
            Some(Some(b)) => b,
            _ => &self.running,
        }
    }

    /// A program is being stopped, or a handover is under way: no read, no change.
    pub(crate) fn busy(&self) -> bool {
        self.stopping.is_some() || self.handover.is_some()
    }

    /// When to be woken even without an event. None while a program is being
    /// stopped (no read then: the caller stays blocked) and once ending.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if self.ending || self.busy() {
            return None;
        }
        Some(self.due.map_or(self.next_poll, |d| d.min(self.next_poll)))
    }

    /// An event concerning a source: a read once it has been quiet for `--watch-settle`.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn changed(&mut self, now: Instant) {
        if !self.ending {
            self.due = Some(now + self.settings.settle());
        }
    }

    /// Woken: a read when one is due (the poll's or an event's), never while
    /// a program is being stopped nor once ending.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn tick(&mut self, now: Instant) -> Option<Action> {
        if self.ending || self.busy() {
            return None;
        }
        if now >= self.next_poll {
            self.next_poll = now + self.settings.poll();
            self.due.get_or_insert(now);
        }
        if self.due.is_some_and(|d| now >= d) {
            self.due = None;
            return Some(Action::Read);
        }
        None
    }

    /// A read's result (Err: the first problem, as it is said); `splay`: this
    /// change's random delay before it is read again and applied.
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn read(&mut self, read: Result<B, String>, now: Instant, splay: Duration) -> Vec<Action> {
        let build = match read {
            Ok(b) => b,
            Err(message) => {
                self.pending = None;
                let message = format!("watch: a change is not applied, the program keeps running: {message}");
                if self.problem.as_ref() == Some(&message) {
                    return Vec::new();
                }
                self.problem = Some(message.clone());
                return vec![Action::Say(message)];
            }
        };
        let mut actions = Vec::new();
        if build.same(&self.running) {
            if self.problem.take().is_some() {
                actions.push(Action::Say("watch: the sources are valid again, and as the program has them".into()));
            }
            self.pending = None;
            // The same program; its sources may have moved (a manifest naming other files).
            self.running = build;
            return actions;
        }
        self.problem = None;
        if self.rejected.as_ref().is_some_and(|r| r.same(&build)) {
            self.pending = None;
            return actions;
        }
        self.rejected = None;
        match self.pending.take() {
            Some(p) if p.same(&build) => actions.extend(self.act(build)),
            _ => {
                self.pending = Some(build);
                self.due = Some(now + self.settings.settle() + splay);
            }
        }
        actions
    }

    /// Applies `build`, read twice the same.
    #[cfg_attr(envshim_size, optimize(size))]
    fn act(&mut self, build: B) -> Vec<Action> {
        let what = self.running.describe(&build);
        match self.settings.on_change() {
            OnChange::Signal(sig) => {
                self.running = build;
                vec![Action::Say(format!("watch: {what}: signal {sig} sent to the program, which keeps its environment")), Action::Signal(sig)]
            }
            OnChange::Exit => {
                self.stopping = Some(None);
                vec![Action::Say(format!("watch: {what}: stopping the program, then exiting ({})", ExitCode::TempFail.number())), Action::Stop]
            }
            OnChange::Restart => {
                self.stopping = Some(Some(build));
                vec![Action::Say(format!("watch: {what}: restarting the program")), Action::Stop]
            }
            OnChange::Handover => {
                self.handover = Some(Some(build));
                vec![Action::Say(format!("watch: {what}: starting the new program beside the old one")), Action::Handover]
            }
        }
    }

    /// A handover's new program is ready (Ok: it is the running one now, the
    /// old one is being stopped) or failed before (Err: why; it is being
    /// stopped and the old one keeps serving, this change not tried again).
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn handed(&mut self, outcome: Result<(), String>) -> Vec<Action> {
        let build = match self.handover.take() {
            Some(Some(b)) => b,
            other => {
                self.handover = other;
                return Vec::new();
            }
        };
        self.handover = Some(None);
        match outcome {
            Ok(()) => {
                self.running = build;
                Vec::new()
            }
            Err(why) => {
                self.rejected = Some(build);
                vec![Action::Say(format!("watch: a change is not applied, the old program keeps serving: the new one {why}"))]
            }
        }
    }

    /// envshim was told to stop: no read and no change any more.
    pub(crate) fn terminated(&mut self) {
        self.ending = true;
        self.due = None;
        self.pending = None;
    }

    /// The stopped program and its process group are gone (never called once ending).
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn stopped(&mut self) -> Next {
        if self.handover.take().is_some() {
            return Next::Keep;
        }
        match self.stopping.take() {
            Some(Some(next)) => {
                self.running = next;
                Next::Start
            }
            Some(None) | None => Next::Exit(ExitCode::TempFail),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build as the rules see it: its content, and the sources it came from.
    #[derive(Debug, Clone, PartialEq)]
    struct B(&'static str, &'static str);

    impl Content for B {
        fn same(&self, other: &B) -> bool {
            self.0 == other.0
        }
        fn describe(&self, new: &B) -> String {
            format!("{} -> {}", self.0, new.0)
        }
    }

    const SETTLE: Duration = Duration::from_secs(1);
    const POLL: Duration = Duration::from_secs(60);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A watch of `v1` started at `t0`, its first read made (the same).
    fn started(on_change: OnChange) -> (Decision<B>, Instant) {
        let t0 = Instant::now();
        let mut d = Decision::new(
            B("v1", "a"),
            WatchOptions {
                settle: Some(SETTLE),
                poll: Some(POLL),
                on_change: Some(on_change),
                restart_signal: None,
                restart_timeout: None,
                splay: None,
                replicas: None,
                index: None,
                ready_timeout: None,
                ready_delay: None,
            },
            t0,
        );
        assert_eq!(d.tick(t0), Some(Action::Read), "a read at once");
        assert_eq!(d.read(Ok(B("v1", "a")), t0, Duration::ZERO), []);
        (d, t0)
    }

    fn say(text: &str) -> Action {
        Action::Say(text.into())
    }

    #[test]
    fn an_event_is_read_after_the_quiet_period_and_each_new_event_restarts_it() {
        let (mut d, t0) = started(OnChange::Restart);
        assert_eq!(d.deadline(), Some(t0 + POLL), "idle: only the poll");
        d.changed(t0);
        assert_eq!(d.tick(t0 + ms(999)), None);
        d.changed(t0 + ms(500));
        assert_eq!(d.deadline(), Some(t0 + ms(1500)));
        assert_eq!(d.tick(t0 + ms(1499)), None);
        assert_eq!(d.tick(t0 + ms(1500)), Some(Action::Read));
        assert_eq!(d.tick(t0 + ms(1501)), None, "one read per quiet period");
    }

    #[test]
    fn the_poll_reads_without_an_event() {
        let (mut d, t0) = started(OnChange::Restart);
        assert_eq!(d.tick(t0 + POLL), Some(Action::Read));
        assert_eq!(d.deadline(), Some(t0 + POLL + POLL));
    }

    #[test]
    fn the_same_content_changes_nothing() {
        let (mut d, t0) = started(OnChange::Restart);
        d.changed(t0);
        assert_eq!(d.tick(t0 + SETTLE), Some(Action::Read));
        // Other sources (a manifest naming other files), the same content.
        assert_eq!(d.read(Ok(B("v1", "b")), t0 + SETTLE, Duration::ZERO), []);
        assert_eq!(d.running(), &B("v1", "b"));
        assert_eq!(d.deadline(), Some(t0 + POLL));
    }

    #[test]
    fn a_change_is_applied_when_read_twice_the_same_a_quiet_period_apart() {
        let (mut d, t0) = started(OnChange::Restart);
        assert_eq!(d.read(Ok(B("v2", "a")), t0, Duration::ZERO), [], "read once: not yet");
        assert_eq!(d.tick(t0 + ms(999)), None);
        assert_eq!(d.tick(t0 + SETTLE), Some(Action::Read));
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + SETTLE, Duration::ZERO), [say("watch: v1 -> v2: restarting the program"), Action::Stop]);
    }

    #[test]
    fn a_torn_read_is_never_applied() {
        let (mut d, t0) = started(OnChange::Restart);
        // Half the file, then the whole: the second read differs from the first.
        assert_eq!(d.read(Ok(B("half", "a")), t0, Duration::ZERO), []);
        assert_eq!(d.tick(t0 + SETTLE), Some(Action::Read));
        assert_eq!(d.read(Ok(B("whole", "a")), t0 + SETTLE, Duration::ZERO), [], "read again first");
        assert_eq!(d.tick(t0 + SETTLE * 2), Some(Action::Read));
        assert_eq!(d.read(Ok(B("whole", "a")), t0 + SETTLE * 2, Duration::ZERO), [say("watch: v1 -> whole: restarting the program"), Action::Stop]);
    }

    #[test]
    fn the_splay_delays_the_second_read() {
        let (mut d, t0) = started(OnChange::Restart);
        assert_eq!(d.read(Ok(B("v2", "a")), t0, ms(300)), []);
        assert_eq!(d.deadline(), Some(t0 + SETTLE + ms(300)));
        assert_eq!(d.tick(t0 + SETTLE), None);
        assert_eq!(d.tick(t0 + SETTLE + ms(300)), Some(Action::Read));
    }

    #[test]
    fn an_invalid_change_keeps_the_program_is_said_once_and_a_valid_one_applies() {
        let (mut d, t0) = started(OnChange::Restart);
        let bad = "env file a.env, line 2: ...";
        let said = say(&format!("watch: a change is not applied, the program keeps running: {bad}"));
        assert_eq!(d.read(Err(bad.into()), t0, Duration::ZERO), [said]);
        assert_eq!(d.read(Err(bad.into()), t0 + POLL, Duration::ZERO), [], "said once");
        assert!(!d.busy());
        // Valid again, as the program has it: said.
        assert_eq!(d.read(Ok(B("v1", "a")), t0 + POLL, Duration::ZERO), [say("watch: the sources are valid again, and as the program has them")]);
        // An invalid read between two valid ones starts the count again.
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + POLL, Duration::ZERO), []);
        assert_eq!(d.read(Err(bad.into()), t0 + POLL, Duration::ZERO).len(), 1);
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + POLL, Duration::ZERO), [], "read once since the problem");
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + POLL, Duration::ZERO).last(), Some(&Action::Stop));
    }

    #[test]
    fn one_program_at_a_time_no_read_while_stopping_and_events_meanwhile_read_after() {
        let (mut d, t0) = started(OnChange::Restart);
        d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + SETTLE, Duration::ZERO).last(), Some(&Action::Stop));
        assert!(d.busy());
        // Blocked while the old program drains: no deadline, no read, even past the poll.
        d.changed(t0 + SETTLE);
        assert_eq!(d.deadline(), None);
        assert_eq!(d.tick(t0 + POLL * 2), None);
        assert_eq!(d.stopped(), Next::Start);
        assert_eq!(d.running(), &B("v2", "a"));
        // The event and the poll missed while stopping: a read now.
        assert!(d.deadline().is_some_and(|at| at <= t0 + POLL * 2));
        assert_eq!(d.tick(t0 + POLL * 2), Some(Action::Read));
    }

    #[test]
    fn sigterm_cancels_reads_and_a_pending_change() {
        let (mut d, t0) = started(OnChange::Restart);
        d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        d.terminated();
        d.changed(t0);
        assert_eq!(d.deadline(), None);
        assert_eq!(d.tick(t0 + POLL * 2), None);
    }

    #[test]
    fn on_change_exit_stops_then_exits_75() {
        let (mut d, t0) = started(OnChange::Exit);
        d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        assert_eq!(d.read(Ok(B("v2", "a")), t0, Duration::ZERO), [say("watch: v1 -> v2: stopping the program, then exiting (75)"), Action::Stop]);
        assert_eq!(d.stopped(), Next::Exit(ExitCode::TempFail));
    }

    #[test]
    fn on_change_signal_keeps_the_program_and_takes_the_new_content_as_its_own() {
        let (mut d, t0) = started(OnChange::Signal(libc::SIGHUP));
        d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        let actions = d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        assert_eq!(actions, [say("watch: v1 -> v2: signal 1 sent to the program, which keeps its environment"), Action::Signal(libc::SIGHUP)]);
        assert!(!d.busy());
        // Once per change: the same content again is no change.
        assert_eq!(d.read(Ok(B("v2", "a")), t0, Duration::ZERO), []);
    }

    /// A handover decided as a restart is (two identical reads): the new program first.
    fn handing_over() -> (Decision<B>, Instant) {
        let (mut d, t0) = started(OnChange::Handover);
        d.read(Ok(B("v2", "a")), t0, Duration::ZERO);
        assert_eq!(
            d.read(Ok(B("v2", "a")), t0 + SETTLE, Duration::ZERO),
            [say("watch: v1 -> v2: starting the new program beside the old one"), Action::Handover]
        );
        (d, t0)
    }

    #[test]
    fn a_handover_starts_the_new_build_and_it_runs_once_ready() {
        let (mut d, t0) = handing_over();
        assert!(d.busy());
        assert_eq!((d.running(), d.to_start()), (&B("v1", "a"), &B("v2", "a")), "the old one serves, the new one starts");
        assert_eq!(d.handed(Ok(())), []);
        assert_eq!(d.running(), &B("v2", "a"));
        assert!(d.busy(), "until the old one is gone");
        assert_eq!(d.stopped(), Next::Keep);
        assert!(!d.busy());
        assert_eq!(d.tick(t0 + POLL * 2), Some(Action::Read));
    }

    #[test]
    fn a_failed_handover_keeps_the_old_build_and_is_not_tried_again_until_the_content_changes() {
        let (mut d, t0) = handing_over();
        let said = d.handed(Err("ended before it was ready (exit 3)".into()));
        assert_eq!(said, [say("watch: a change is not applied, the old program keeps serving: the new one ended before it was ready (exit 3)")]);
        assert_eq!(d.handed(Ok(())), [], "once only");
        assert_eq!(d.stopped(), Next::Keep);
        assert_eq!((d.running(), d.to_start()), (&B("v1", "a"), &B("v1", "a")));
        // The same content, read again and again: nothing.
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + POLL, Duration::ZERO), []);
        assert_eq!(d.read(Ok(B("v2", "a")), t0 + POLL, Duration::ZERO), []);
        assert!(!d.busy());
        // Another content: applied as usual.
        assert_eq!(d.read(Ok(B("v3", "a")), t0 + POLL, Duration::ZERO), []);
        assert_eq!(d.read(Ok(B("v3", "a")), t0 + POLL, Duration::ZERO).last(), Some(&Action::Handover));
    }

    #[test]
    fn changes_during_a_handover_wait_for_its_end_and_sigterm_ends_it() {
        let (mut d, t0) = handing_over();
        d.changed(t0 + SETTLE);
        assert_eq!(d.deadline(), None, "no read while two programs run");
        assert_eq!(d.tick(t0 + POLL * 2), None);
        d.handed(Ok(()));
        assert_eq!(d.tick(t0 + POLL * 2), None, "nor while the old one stops");
        d.terminated();
        assert_eq!(d.deadline(), None);
    }
}
