//! `--watch`'s settings: what a change does, and the watcher's timing.

use std::time::Duration;

use clap::Args;
use libc::c_int;

use crate::init;
use crate::words::Words;

// `--watch`'s settings, each needing `--watch`: their definition on the
// command line (flattened by `cli::Watching`; their names, help and
// defaults) and the watcher's value at once, filled by clap. Its `ArgGroup`
// (the one the derive makes) is how the command line tells them apart.
// A setting not given is None, its default applied where it is read (the
// methods below), not parsed from a `default_value` at every start (each
// such default cost every `run` as much as an option: docs/performance.md).
// The help says the default (`[default: ...]`, as clap would); a test holds
// it to the method's value.
// (`//`: a doc comment would be the help of `run`, which flattens it.)
#[derive(Args, Debug, Clone, Copy, PartialEq, Eq)]
#[group(multiple = true)]
pub struct WatchOptions {
    /// With --watch, what a change does: restart (the program), handover (start the new one, then stop the old one once the new one is ready), exit, or signal:SIG (only send it SIG) [default: restart]
    #[arg(long, value_name = "ACTION", value_parser = on_change_words(), hide_possible_values = true, env = "ENVSHIM_ON_CHANGE", hide_env_values = true)]
    pub on_change: Option<OnChange>,
    /// With --watch, the signal that stops the program for a restart [default: TERM]
    #[arg(long, value_name = "SIG", value_parser = parse_signal, env = "ENVSHIM_RESTART_SIGNAL", hide_env_values = true)]
    pub restart_signal: Option<i32>,
    /// With --watch, how long a stopping program gets before SIGKILL to it and its process group [default: 10s]
    #[arg(long, value_name = "DURATION", value_parser = crate::wait::duration, env = "ENVSHIM_RESTART_TIMEOUT", hide_env_values = true)]
    pub restart_timeout: Option<Duration>,
    /// With --watch, the quiet time after a change before the files are read again [default: 1s]
    #[arg(long = "watch-settle", value_name = "DURATION", value_parser = crate::wait::duration, env = "ENVSHIM_WATCH_SETTLE", hide_env_values = true)]
    pub settle: Option<Duration>,
    /// With --watch, how often the files are read again without an event [default: 60s]
    #[arg(long = "watch-poll", value_name = "DURATION", value_parser = parse_poll, env = "ENVSHIM_WATCH_POLL", hide_env_values = true)]
    pub poll: Option<Duration>,
    /// With --watch, a random delay of up to DURATION before a change is acted on, so replicas do not restart together (a pod with an index, with --watch-replicas: its own slot of it) [default: 0]
    #[arg(long = "watch-splay", value_name = "DURATION", value_parser = crate::wait::duration, env = "ENVSHIM_WATCH_SPLAY", hide_env_values = true)]
    pub splay: Option<Duration>,
    /// With --watch-splay, the workload's replicas R: the pod of index I acts at (I mod R)/R of the splay (the converter writes the count it saw)
    #[arg(long = "watch-replicas", value_name = "N", value_parser = parse_replicas, env = "ENVSHIM_WATCH_REPLICAS", hide_env_values = true)]
    pub replicas: Option<u32>,
    /// With --watch-splay, this replica's index I (a StatefulSet's or Indexed Job's pod index, from the downward API; empty: none)
    #[arg(long = "pod-index", value_name = "I", value_parser = parse_index, env = "ENVSHIM_POD_INDEX", hide_env_values = true)]
    pub index: Option<PodIndex>,
    /// With --on-change handover, how long the new program has to become ready before it is stopped (the old one keeps serving) [default: 60s]
    #[arg(long = "ready-timeout", value_name = "DURATION", value_parser = parse_poll, env = "ENVSHIM_READY_TIMEOUT", hide_env_values = true)]
    pub ready_timeout: Option<Duration>,
    /// With --on-change handover, for a program that does not send READY=1: it counts as ready once it has run DURATION (0: READY=1 is needed) [default: 0]
    #[arg(long = "ready-delay", value_name = "DURATION", value_parser = crate::wait::duration, env = "ENVSHIM_READY_DELAY", hide_env_values = true)]
    pub ready_delay: Option<Duration>,
}

impl WatchOptions {
    /// `--on-change`.
    pub fn on_change(&self) -> OnChange {
        self.on_change.unwrap_or(OnChange::Restart)
    }

    /// `--restart-signal`.
    pub fn restart_signal(&self) -> c_int {
        self.restart_signal.unwrap_or(libc::SIGTERM)
    }

    /// `--restart-timeout`.
    pub fn restart_timeout(&self) -> Duration {
        self.restart_timeout.unwrap_or(Duration::from_secs(10))
    }

    /// `--watch-settle`.
    pub fn settle(&self) -> Duration {
        self.settle.unwrap_or(Duration::from_secs(1))
    }

    /// `--watch-poll`.
    pub fn poll(&self) -> Duration {
        self.poll.unwrap_or(Duration::from_secs(60))
    }

    /// `--watch-splay`.
    pub fn splay(&self) -> Duration {
        self.splay.unwrap_or(Duration::ZERO)
    }

    /// `--pod-index`: the pod's index, if it has one (not given, or empty: none).
    pub fn index(&self) -> Option<u32> {
        self.index.and_then(|i| i.0)
    }

    /// `--ready-timeout`.
    pub fn ready_timeout(&self) -> Duration {
        self.ready_timeout.unwrap_or(Duration::from_secs(60))
    }

    /// `--ready-delay`.
    pub fn ready_delay(&self) -> Duration {
        self.ready_delay.unwrap_or(Duration::ZERO)
    }
}

/// What a change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnChange {
    Restart,
    /// Start the new program beside the old one; stop the old one once the new one is ready.
    Handover,
    Exit,
    /// Only this signal to the program (which reads its files itself).
    Signal(c_int),
}

/// `--on-change`: `restart`, `exit` or `signal:SIG`.
pub fn parse_on_change(text: &str) -> Result<OnChange, String> {
    match text {
        "restart" => Ok(OnChange::Restart),
        "handover" => Ok(OnChange::Handover),
        "exit" => Ok(OnChange::Exit),
        _ => match text.strip_prefix("signal:") {
            Some(sig) => parse_signal(sig).map(OnChange::Signal),
            None => Err("expected restart, handover, exit or signal:SIG".into()),
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

/// `--pod-index`: the pod's index, if it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodIndex(pub Option<u32>);

/// `--watch-replicas`: a count, more than 0.
pub fn parse_replicas(text: &str) -> Result<u32, String> {
    match number(text)? {
        0 => Err("must be more than 0".into()),
        n => Ok(n),
    }
}

/// `--pod-index`: a number from 0, as the downward API gives the label; empty
/// (the label missing: a cluster before Kubernetes 1.28 gives a StatefulSet's
/// pods none): no index.
pub fn parse_index(text: &str) -> Result<PodIndex, String> {
    if text.is_empty() {
        return Ok(PodIndex(None));
    }
    number(text).map(|n| PodIndex(Some(n)))
}

fn number(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err("expected a number from 0".into()),
    }
}

/// A signal to send (`--restart-signal`, `signal:SIG`): a name or number, not 0.
pub fn parse_signal(text: &str) -> Result<c_int, String> {
    match init::signal_number(text)? {
        0 => Err("0 is no signal".into()),
        sig => Ok(sig),
    }
}

/// `--on-change`'s parser: the completions offer the signals programs
/// commonly reload on.
pub fn on_change_words() -> Words<OnChange> {
    Words { parse: parse_on_change, words: &["restart", "handover", "exit", "signal:HUP", "signal:USR1", "signal:USR2"] }
}

#[cfg(test)]
mod tests {
    use clap::{Args, FromArgMatches};

    use super::*;

    /// The settings as the watcher reads them (each default applied).
    fn applied(o: &WatchOptions) -> (OnChange, c_int, [Duration; 6], Option<u32>, Option<u32>) {
        let durations = [o.restart_timeout(), o.settle(), o.poll(), o.splay(), o.ready_timeout(), o.ready_delay()];
        (o.on_change(), o.restart_signal(), durations, o.replicas, o.index())
    }

    /// The default each setting's help shows (`[default: X]`, as clap
    /// writes one) is the value the watcher uses when it is not given: each
    /// given as its help says, through its own parser, changes nothing; and
    /// only the settings whose absence means "none" show no default.
    #[test]
    fn each_help_shows_the_default_the_watcher_uses() {
        let cmd = WatchOptions::augment_args(clap::Command::new("run").no_binary_name(true)).mut_args(|a| a.env(None));
        let read = |args: &[String]| WatchOptions::from_arg_matches(&cmd.clone().try_get_matches_from(args).unwrap()).unwrap();
        let none = read(&[]);
        let mut shown = 0;
        for arg in cmd.get_arguments() {
            let long = arg.get_long().unwrap();
            let help = arg.get_help().unwrap().to_string();
            match help.rsplit_once("[default: ").and_then(|(_, d)| d.strip_suffix(']')) {
                Some(default) => {
                    shown += 1;
                    assert_eq!(applied(&read(&[format!("--{long}={default}")])), applied(&none), "--{long}: its help says [default: {default}]");
                }
                // Not given: no replicas, no index.
                None => assert!(["watch-replicas", "pod-index"].contains(&long), "--{long}: its help shows no default"),
            }
        }
        assert_eq!(shown, cmd.get_arguments().count() - 2);
    }
}
