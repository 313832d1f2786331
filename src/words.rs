//! The value parsers of the options that take text: [`Text`], a parser of
//! the text (`fn(&str) -> Result<T, String>`) as clap's value parser, and
//! [`Words`], which also names the words its option takes: the completions
//! offer them (`--env-grammar`, `--on-change`); the help's own text says
//! what they mean.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;

/// A parser of text (`fn(&str) -> Result<T, String>`) as clap's value
/// parser, with clap's own errors: a value that is not UTF-8, or one the
/// parser refuses (its message the error's source). clap takes such a
/// function itself, but then builds its wrapping (the UTF-8 check, the
/// error) once for each function, where this builds it once for all of them
/// ([`refused`]), and the binary is smaller.
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
        Some(Box::new(self.words.iter().map(|w| PossibleValue::new(*w))))
    }
}
