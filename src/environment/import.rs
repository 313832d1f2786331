//! Importing a file's keys (`envFrom`, `--env-file`, `--env-dir`): each
//! key prefixed and checked, the names that are not valid skipped with the
//! kubelet's warning, and the work of all imports bounded by the input.

use std::rc::Rc;

use super::build::{stop_when_full, Built};
use super::*;
use crate::envfile::EnvFile;
use crate::error::{escape, Error, ExitCode};
use crate::limits::{MAX_IMPORTED_BYTES, MAX_IMPORTED_ENTRIES, MAX_SHOWN_NAME_BYTES, MAX_SKIPPED_KEYS_SHOWN};
use crate::names::NameRule;

/// What the imports (`envFrom`, `--env-file`) have cost so far. Every
/// reference imports its file's keys again, so the work is bounded here, by
/// the input, and not only by the environment's size: a file named 20,000
/// times with the same prefix never grows the environment.
#[derive(Default)]
pub(super) struct Imported {
    entries: usize,
    bytes: usize,
}

impl Imported {
    /// Charges one import of `file`: its distinct keys, the bytes of their
    /// keys and values, and `prefix_cost` more per key (see [`names_cost`]).
    /// Past either bound, reports it once (65) naming `what`, stops the
    /// building, and returns false.
    pub(super) fn charge(&mut self, b: &mut Built, file: &EnvFile, prefix_cost: usize, what: impl FnOnce() -> String, full: &mut bool) -> bool {
        let bytes = file.unique_bytes().saturating_add(file.unique_len().saturating_mul(prefix_cost));
        self.charge_counts(b, file.unique_len(), bytes, what, full)
    }

    /// Charges `keys` entries of `bytes` bytes in all.
    pub(super) fn charge_counts(&mut self, b: &mut Built, keys: usize, bytes: usize, what: impl FnOnce() -> String, full: &mut bool) -> bool {
        self.entries += keys;
        self.bytes = self.bytes.saturating_add(bytes);
        if self.entries <= MAX_IMPORTED_ENTRIES && self.bytes <= MAX_IMPORTED_BYTES {
            return true;
        }
        *full = true;
        b.errors.push(Error::new(
            ExitCode::DataErr,
            format!(
                "{}: the imports pass {MAX_IMPORTED_ENTRIES} keys or {MAX_IMPORTED_BYTES} bytes in all (each reference to a file imports all its keys again)",
                what()
            ),
        ));
        false
    }
}

/// True when no key can make `prefix` + key a valid name: the prefix holds a
/// byte no name may hold, or starts as none may (`..`, a digit). (Only `.`
/// is invalid alone and valid as a prefix, and it is one byte long.)
pub(super) fn prefix_spoils_every_name(prefix: &[u8], rule: NameRule) -> bool {
    prefix.len() > 1 && !rule.accepts(prefix)
}

/// What building one prefixed name costs beyond its key: the prefix, unless
/// no name is built because the prefix spoils them all.
pub(super) fn names_cost(prefix: &[u8], rule: NameRule) -> usize {
    if prefix_spoils_every_name(prefix, rule) {
        0
    } else {
        prefix.len()
    }
}

/// Every key of `file` (its final key set), prefixed; names that are not
/// valid are skipped with one warning for the file, as the kubelet does
/// (listing them prefixed, as it does; here the first few in order, then a count).
pub(super) fn import(b: &mut Built, file: &Rc<EnvFile>, display: &Rc<str>, prefix: &[u8], rule: NameRule, full: &mut bool) {
    if prefix_spoils_every_name(prefix, rule) {
        let mut skipped: Vec<&[u8]> = file.unique().map(|(key, _, _)| key).collect();
        if !skipped.is_empty() {
            b.warnings.push(skipped_warning(display, prefix, &mut skipped));
        }
        return;
    }
    let mut skipped: Vec<&[u8]> = Vec::new();
    let mut prefixed = prefix.to_vec();
    // At most the file's bytes for the keys and values, with the prefix, `=` and NUL each.
    b.env.reserve(file.unique_len(), file.bytes() + file.unique_len() * (prefix.len() + 2));
    // The file's keys passed the relaxed rule when it was parsed (envshim's
    // grammar checks every name, the kubelet's none), and a
    // relaxed name prefixed by a relaxed name is one: no byte to check again.
    let valid = rule == NameRule::Relaxed && file.names_relaxed() && (prefix.is_empty() || rule.accepts(prefix));
    // Without a prefix a key's name is the variable's: its `NAME=VALUE\0`
    // is used where the file holds it.
    let held = if prefix.is_empty() { b.env.hold(file) } else { None };
    // The file's name is listed once for all its keys.
    let origin = b.env.origin(Source::EnvFrom { file: display.clone(), line: 0 });
    for k in file.unique_keys() {
        let (key, line) = (k.name, k.line);
        let name = if prefix.is_empty() {
            key
        } else {
            prefixed.truncate(prefix.len());
            prefixed.extend_from_slice(key);
            &prefixed
        };
        if valid || rule.accepts(name) {
            let origin = Origin { line, ..origin };
            match held {
                // Hashed already, for the file's own table.
                Some(held) => b.env.set_in_place(held, &k, origin),
                None if prefix.is_empty() => b.env.set_at(name, k.hash, k.value, origin),
                None => b.env.set_at(name, crate::index::hash(name), k.value, origin),
            }
            if stop_when_full(b, full, || format!("{display} line {line}")) {
                return;
            }
        } else {
            skipped.push(key);
        }
    }
    if !skipped.is_empty() {
        b.warnings.push(skipped_warning(display, prefix, &mut skipped));
    }
}

/// The files of an `--env-dir`, in order; names that are not valid are
/// skipped with the `envFrom` warning, as for an env file's keys.
pub(super) fn import_dir(b: &mut Built, files: Vec<crate::envdir::DirFile>, display: &Rc<str>, rule: NameRule, full: &mut bool) {
    let mut skipped: Vec<&[u8]> = Vec::new();
    b.env.reserve(files.len(), files.iter().map(|f| f.name.len() + f.value.len() + 2).sum());
    for f in &files {
        if !rule.accepts(&f.name) {
            skipped.push(&f.name);
            continue;
        }
        let source: Rc<str> = format!("{display}/{}", escape(&f.name)).into();
        b.env.set(&f.name, &f.value, Source::EnvDir(source));
        if stop_when_full(b, full, || format!("--env-dir {display}")) {
            return;
        }
    }
    if !skipped.is_empty() {
        b.warnings.push(skipped_warning(display, b"", &mut skipped));
    }
}

/// The kubelet's warning for skipped keys (sorted, prefixed), listing at most
/// [`MAX_SKIPPED_KEYS_SHOWN`] names of at most [`MAX_SHOWN_NAME_BYTES`] each.
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn skipped_warning(display: &str, prefix: &[u8], keys: &mut [&[u8]]) -> String {
    // The keys are distinct and share the prefix: sorting them sorts the names.
    let shown = keys.len().min(MAX_SKIPPED_KEYS_SHOWN);
    crate::sort::sort(keys);
    let names: Vec<String> = keys[..shown].iter().map(|key| shown_name(prefix, key)).collect();
    let more = match keys.len() - shown {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!("Keys [{}]{more} from the EnvFrom file {display} were skipped since they are considered invalid environment variable names.", names.join(", "))
}

/// `prefix` + `key` as the warning shows it: escaped, and when longer than
/// [`MAX_SHOWN_NAME_BYTES`] the prefix is cut in the middle (`PRE...KEY`) so
/// the key stays readable. (Escaped text is ASCII: any cut is at a character.)
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn shown_name(prefix: &[u8], key: &[u8]) -> String {
    let key = escape(key);
    let mut name = escape(&prefix[..prefix.len().min(MAX_SHOWN_NAME_BYTES)]);
    if name.len() + key.len() > MAX_SHOWN_NAME_BYTES {
        name.truncate(MAX_SHOWN_NAME_BYTES.saturating_sub(key.len() + 3));
        name.push_str("...");
    }
    name.push_str(&key);
    name
}
