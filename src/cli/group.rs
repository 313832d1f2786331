//! The option groups of run, check and render, declared with [`group!`]:
//! one entry an option (its field, type, help and settings), from which a
//! struct, its clap `Args` (the arguments, built by one loop over a table)
//! and `FromArgMatches` (the fields, read back) are made.
//!
//! Why not clap's derive, as the subcommands are: the derive writes each
//! option's construction out in full, which costs the binary's size for
//! every option, and with `--watch`'s seven it passed its size budget
//! (docs/performance.md, `--watch`). The arguments are the same either way: the help,
//! the man page and the completions did not change.

use clap::builder::ValueParser;
use clap::{Arg, ArgAction, ArgMatches};

/// One option: its id (the field's name), long name, help, and settings.
/// Made by [`Spec::flag`] or [`Spec::value`], then the settings that differ.
pub struct Spec {
    id: &'static str,
    help: &'static str,
    long: &'static str,
    short: Option<char>,
    /// The value's name in the help; None: a flag, which takes none.
    value: Option<&'static str>,
    env: Option<&'static str>,
    /// Repeatable (a `Vec` field).
    many: bool,
    delimiter: Option<char>,
    hyphen: bool,
    parser: Option<ValueParser>,
}

impl Spec {
    /// `--long`, a flag (a `bool` field).
    pub fn flag(long: &'static str) -> Spec {
        Spec { id: "", help: "", long, short: None, value: None, env: None, many: false, delimiter: None, hyphen: false, parser: None }
    }

    /// `--long VALUE` (an `Option` field; a string unless [`Spec::parser`] says otherwise).
    pub fn value(long: &'static str, name: &'static str) -> Spec {
        Spec { value: Some(name), parser: Some(ValueParser::os_string()), ..Spec::flag(long) }
    }

    /// The option of the field `id`, its help `help` (its doc comment).
    pub fn named(self, id: &'static str, help: &'static str) -> Spec {
        Spec { id, help, ..self }
    }

    /// Repeatable (a `Vec` field).
    pub fn many(self) -> Spec {
        Spec { many: true, ..self }
    }

    pub fn short(self, c: char) -> Spec {
        Spec { short: Some(c), ..self }
    }

    /// Its configuration variable, whose value the help never shows.
    pub fn env(self, name: &'static str) -> Spec {
        Spec { env: Some(name), ..self }
    }

    /// Each value split at `c` (`--env-dir a,b`).
    pub fn delimiter(self, c: char) -> Spec {
        Spec { delimiter: Some(c), ..self }
    }

    /// Its value may start with `-`.
    pub fn hyphen(self) -> Spec {
        Spec { hyphen: true, ..self }
    }

    pub fn parser(self, parser: impl Into<ValueParser>) -> Spec {
        Spec { parser: Some(parser.into()), ..self }
    }

    /// The argument, as clap's derive made it.
    pub fn arg(self) -> Arg {
        let mut arg = Arg::new(self.id).long(self.long).help(self.help.trim());
        if let Some(c) = self.short {
            arg = arg.short(c);
        }
        if let Some(name) = self.env {
            arg = arg.env(name).hide_env_values(true);
        }
        if let Some(parser) = self.parser {
            arg = arg.value_parser(parser);
        }
        let Some(name) = self.value else { return arg.action(ArgAction::SetTrue) };
        // Its help says what the words mean: the completions alone list them.
        arg = arg.value_name(name).allow_hyphen_values(self.hyphen).hide_possible_values(true);
        if let Some(c) = self.delimiter {
            arg = arg.value_delimiter(c);
        }
        arg.action(if self.many { ArgAction::Append } else { ArgAction::Set })
    }
}

/// A field's value from what clap matched (moved out): by its type.
pub trait Take: Sized {
    fn take(m: &mut ArgMatches, id: &str) -> Self;
}

impl Take for bool {
    fn take(m: &mut ArgMatches, id: &str) -> bool {
        m.remove_one(id).unwrap_or(false)
    }
}

impl<T: Clone + Send + Sync + 'static> Take for Option<T> {
    fn take(m: &mut ArgMatches, id: &str) -> Option<T> {
        m.remove_one(id)
    }
}

impl<T: Clone + Send + Sync + 'static> Take for Vec<T> {
    fn take(m: &mut ArgMatches, id: &str) -> Vec<T> {
        m.remove_many(id).map(Iterator::collect).unwrap_or_default()
    }
}

/// `group! { /// doc  pub struct Name { /// help  field: Type = Spec::...(..), ... } }`:
/// the struct, its `Args` and its `FromArgMatches`. A field's help is its
/// doc comment; its id, its name.
macro_rules! group {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[doc = $help:literal])+ pub $field:ident: $ty:ty = $spec:expr,)* }) => {
        $(#[$meta])*
        pub struct $name {
            $(pub $field: $ty,)*
        }

        impl $name {
            /// Its options, in the order of the fields.
            pub fn specs() -> Vec<$crate::cli::group::Spec> {
                vec![$($spec.named(stringify!($field), concat!($($help),+)),)*]
            }
        }

        impl clap::Args for $name {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                cmd.args(Self::specs().into_iter().map($crate::cli::group::Spec::arg))
            }

            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                Self::augment_args(cmd)
            }
        }

        impl clap::FromArgMatches for $name {
            fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
                Self::from_arg_matches_mut(&mut m.clone())
            }

            fn from_arg_matches_mut(m: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
                Ok($name { $($field: $crate::cli::group::Take::take(m, stringify!($field)),)* })
            }

            fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
                *self = Self::from_arg_matches(m)?;
                Ok(())
            }
        }
    };
}

pub(crate) use group;
