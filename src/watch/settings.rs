//! `--watch`'s settings: what a change does, and the watcher's timing.

use std::time::Duration;

use clap::Args;
use libc::c_int;

use crate::init;
use crate::words::{Text, Words};

// `--watch`'s settings, each needing `--watch`: their definition on the
// command line (flattened by `cli::Watching`; their names, help and
// defaults) and the watcher's value at once, filled by clap. Its `ArgGroup`
// (the one the derive makes) is how the command line tells them apart.
// (`//`: a doc comment would be the help of `run`, which flattens it.)
#[derive(Args, Debug, Clone, Copy, PartialEq, Eq)]
#[group(multiple = true)]
pub struct WatchOptions {
    /// With --watch, what a change does: restart (the program), handover (start the new one, then stop the old one once the new one is ready), exit, or signal:SIG (only send it SIG)
    #[arg(long, value_name = "ACTION", value_parser = on_change_words(), default_value = "restart", hide_possible_values = true, env = "ENVSHIM_ON_CHANGE", hide_env_values = true)]
    pub on_change: OnChange,
    /// With --watch, the signal that stops the program for a restart
    #[arg(long, value_name = "SIG", value_parser = Text(parse_signal), default_value = "TERM", env = "ENVSHIM_RESTART_SIGNAL", hide_env_values = true)]
    pub restart_signal: i32,
    /// With --watch, how long a stopping program gets before SIGKILL to it and its process group
    #[arg(long, value_name = "DURATION", value_parser = Text(crate::wait::duration), default_value = "10s", env = "ENVSHIM_RESTART_TIMEOUT", hide_env_values = true)]
    pub restart_timeout: Duration,
    /// With --watch, the quiet time after a change before the files are read again
    #[arg(long = "watch-settle", value_name = "DURATION", value_parser = Text(crate::wait::duration), default_value = "1s", env = "ENVSHIM_WATCH_SETTLE", hide_env_values = true)]
    pub settle: Duration,
    /// With --watch, how often the files are read again without an event
    #[arg(long = "watch-poll", value_name = "DURATION", value_parser = Text(parse_poll), default_value = "60s", env = "ENVSHIM_WATCH_POLL", hide_env_values = true)]
    pub poll: Duration,
    /// With --watch, a random delay of up to DURATION before a change is acted on (with --pod-index and --watch-replicas: the replica's own slot of it)
    #[arg(long = "watch-splay", value_name = "DURATION", value_parser = Text(crate::wait::duration), default_value = "0", env = "ENVSHIM_WATCH_SPLAY", hide_env_values = true)]
    pub splay: Duration,
    /// With --watch-splay, the workload's replicas R: replica I acts at (I mod R)/R of the splay (the converter writes it)
    #[arg(long = "watch-replicas", value_name = "N", value_parser = Text(parse_replicas), env = "ENVSHIM_WATCH_REPLICAS", hide_env_values = true)]
    pub replicas: Option<u32>,
    /// With --watch-splay, this replica's index I (a StatefulSet's or Indexed Job's pod index, from the downward API; empty: none)
    #[arg(long = "pod-index", value_name = "I", value_parser = Text(parse_index), default_value = "", hide_default_value = true, env = "ENVSHIM_POD_INDEX", hide_env_values = true)]
    pub index: PodIndex,
    /// With --on-change handover, how long the new program has to become ready before it is stopped (the old one keeps serving)
    #[arg(long = "ready-timeout", value_name = "DURATION", value_parser = Text(parse_poll), default_value = "60s", env = "ENVSHIM_READY_TIMEOUT", hide_env_values = true)]
    pub ready_timeout: Duration,
    /// With --on-change handover, for a program that does not send READY=1: it counts as ready once it has run DURATION (0: READY=1 is needed)
    #[arg(long = "ready-delay", value_name = "DURATION", value_parser = Text(crate::wait::duration), default_value = "0", env = "ENVSHIM_READY_DELAY", hide_env_values = true)]
    pub ready_delay: Duration,
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
