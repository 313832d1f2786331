//! The values the options and their configuration variables take: one
//! parser each, used by envshim's definition and by the converter's
//! (`kubectl envshim convert --on-change`, a functionConfig's
//! `data.watch-splay`), so a value means the same in both binaries. A
//! parser's message says what it expects and never repeats the value: a
//! Secret's key imported by `envFrom` can be a configuration variable.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;

use crate::envfile::Grammar;
pub use crate::words::Words;

pub use crate::init::parse_rewrite as rewrite_signal;
pub use crate::wait::duration;
pub use crate::watch::parse_replicas as replicas;
pub use crate::watch::{parse_on_change, parse_poll as poll, parse_signal as signal};

/// `ENVSHIM_LISTEN`'s value (addresses, comma-separated): each checked as
/// envshim checks it; the converter passes the text on.
pub fn listen(text: &str) -> Result<String, String> {
    text.split(',').try_for_each(|a| crate::listen::parse(a).map(drop)).map(|()| text.to_string())
}

pub(super) const SWITCH_WORDS: &str = "must be one of 1/0, true/false, yes/no, on/off";

/// The words a boolean configuration variable takes (a flag on the command
/// line is `true`); `options.rs` names the variable in the message.
pub fn switch(text: &str) -> Result<bool, String> {
    // Compared in place, not lower-cased into a new string: clap parses every
    // flag's default ("false") with it at each start.
    let is = |words: [&str; 4]| words.iter().any(|w| w.eq_ignore_ascii_case(text));
    if is(["1", "true", "yes", "on"]) {
        Ok(true)
    } else if is(["0", "false", "no", "off"]) {
        Ok(false)
    } else {
        Err(SWITCH_WORDS.into())
    }
}

/// `--env-grammar`: one of its two words (offered by the completions).
pub fn env_grammar() -> Words<Grammar> {
    fn parse(text: &str) -> Result<Grammar, String> {
        GRAMMARS.into_iter().find(|g| grammar_word(*g) == text).ok_or_else(|| "expected envshim or kubelet".into())
    }
    Words { parse, words: &["envshim", "kubelet"] }
}

const GRAMMARS: [Grammar; 2] = [Grammar::Envshim, Grammar::Kubelet];

/// `--env-grammar`'s word for `g`, as its parser reads it (the converter
/// writes it back to envshim).
pub fn grammar_word(g: Grammar) -> &'static str {
    match g {
        Grammar::Envshim => "envshim",
        Grammar::Kubelet => "kubelet",
    }
}

pub use crate::watch::on_change_words as on_change;

/// `--success-exit`: digits only, 0 to 255.
pub fn exit_code(text: &str) -> Result<u8, String> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok()).flatten().ok_or_else(|| "expected an exit code from 0 to 255".to_string())
}

/// The value as written, once `P` (one of the parsers here) takes it: the
/// converter checks a value and hands its very text to envshim.
#[derive(Clone)]
pub struct AsWritten<P>(pub P);

impl<P: TypedValueParser> TypedValueParser for AsWritten<P> {
    type Value = String;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &OsStr) -> Result<String, clap::Error> {
        self.0.parse_ref(cmd, arg, value)?;
        value.to_str().map(str::to_string).ok_or_else(|| clap::Error::new(ErrorKind::InvalidUtf8).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

/// Each configuration variable of `envshim run` with its option's long
/// name (`("wait", "ENVSHIM_WAIT")`), read from the definition: the
/// converter sets them by these names.
pub fn variables() -> Vec<(String, String)> {
    use clap::CommandFactory;
    let mut cli = super::Cli::command();
    cli.build();
    let run = cli.find_subcommand("run").expect("run is defined");
    run.get_arguments().filter_map(|a| Some((a.get_long()?.to_string(), a.get_env()?.to_str()?.to_string()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_completions_offer_each_grammar_by_the_word_its_parser_reads() {
        assert_eq!(env_grammar().words, GRAMMARS.map(grammar_word));
        for g in GRAMMARS {
            assert_eq!((env_grammar().parse)(grammar_word(g)), Ok(g));
        }
    }
}
