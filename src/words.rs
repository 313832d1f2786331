//! The value parsers of the options that take text: [`Text`], a parser of
//! the text (`fn(&str) -> Result<T, String>`) as clap's value parser;
//! [`Words`], which also names the words its option takes: the completions
//! offer them (`--env-grammar`, `--on-change`); the help's own text says
//! what they mean; and [`OneOf`], an option that takes one of a few words
//! (`--format`).

use std::ffi::OsStr;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::error::ErrorKind;

/// A parser of text (`fn(&str) -> Result<T, String>`) as clap's value
/// parser, with clap's own errors: a value that is not UTF-8, or one the
/// parser refuses (its message the error's source). clap takes such a
/// function itself, but then builds its wrapping (the UTF-8 check, the
/// error) once for each function, where this builds it once for all of them
/// (`refused`), and the binary is smaller.
#[derive(Clone, Copy)]
pub struct Text<F>(pub F);

impl<F, T> TypedValueParser for Text<F>
where
    F: Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
    T: Clone + Send + Sync + 'static,
{
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let Some(text) = value.to_str() else { return Err(refused(cmd, arg, value, String::new())) };
        (self.0)(text).map_err(|reason| refused(cmd, arg, value, reason))
    }
}

/// clap's error for `value` of `arg`, made by clap's own wrapping of a
/// parser of text (one copy of it for every [`Text`]): not UTF-8, or
/// refused with `reason`.
#[cold]
#[inline(never)]
fn refused(cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr, reason: String) -> clap::Error {
    let parse = move |_: &str| Err::<(), String>(reason.clone());
    parse.parse_ref(cmd, arg, value).err().unwrap_or_else(|| clap::Error::new(ErrorKind::ValueValidation).with_cmd(cmd))
}

/// A parser of text that also names the words its option takes, for the
/// completions (`--env-grammar`, `--on-change`; the help's own text says
/// what they mean).
#[derive(Clone)]
pub struct Words<T> {
    pub parse: fn(&str) -> Result<T, String>,
    pub words: &'static [&'static str],
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Words<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        Text(self.parse).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        possible(self.words)
    }
}

/// An option that takes one of `words`, each meaning the value at its place
/// in `values`: what clap's `ValueEnum` parser does, with its errors (any
/// other value, not UTF-8 included, is refused naming the words), but its
/// code once for all such options ([`which`]), not once for each type.
#[derive(Clone, Copy)]
pub struct OneOf<T: 'static> {
    pub words: &'static [&'static str],
    pub values: &'static [T],
}

impl<T: Copy + Send + Sync + 'static> TypedValueParser for OneOf<T> {
    type Value = T;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<T, clap::Error> {
        let i = which(cmd, arg, value, self.words)?;
        self.values.get(i).copied().ok_or_else(|| clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        possible(self.words)
    }
}

/// The place of `value` in `words`, or clap's error for it: the one clap's
/// parser of possible values makes (of the value as shown, `\u{FFFD}` for
/// bytes that are not UTF-8, as clap's `ValueEnum` parser shows it).
fn which(cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr, words: &'static [&'static str]) -> Result<usize, clap::Error> {
    if let Some(i) = words.iter().position(|w| value == *w) {
        return Ok(i);
    }
    let shown = value.to_string_lossy();
    let e = PossibleValuesParser::new(words.iter().copied()).parse_ref(cmd, arg, OsStr::new(&*shown)).err();
    Err(e.unwrap_or_else(|| clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd)))
}

/// The words an option takes, for the completions and the help.
fn possible(words: &'static [&'static str]) -> Option<Box<dyn Iterator<Item = PossibleValue>>> {
    Some(Box::new(words.iter().map(|w| PossibleValue::new(*w))))
}
