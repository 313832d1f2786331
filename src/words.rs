//! A value parser that also names the words its option takes: the
//! completions offer them (`--env-grammar`, `--on-change`); the help's own
//! text says what they mean.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};

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
