//! [`Words`]: the one value parser of envshim's own (the others are plain
//! `fn`s, which clap takes as they are). A module of its own, below the
//! command line: the watcher's settings (src/watch/settings.rs) use it too.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};

/// A parser of text (a plain `fn`, which clap takes as its value parser)
/// that also names the words its option takes, for the completions
/// (`--env-grammar`, `--on-change`; the help's own text says what they
/// mean). The one parser of envshim's own, kept because clap cannot do
/// both: its possible values come only from a value parser's, and its
/// parsers of possible values (`PossibleValuesParser`, `ValueEnum`) refuse
/// every other word (`signal:TERM`) in their own words (`expected one of
/// ...`) where these say envshim's (`expected envshim or kubelet`, also the
/// converter's, of a functionConfig's key).
#[derive(Clone)]
pub struct Words<T> {
    pub parse: fn(&str) -> Result<T, String>,
    pub words: &'static [&'static str],
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Words<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        self.parse.parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.words.iter().map(|w| PossibleValue::new(*w))))
    }
}
