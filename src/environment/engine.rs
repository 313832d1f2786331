//! A converted container that no kubelet expanded (`podman kube play`,
//! `docker run` given the converted env: `crate::engine`): envshim does the
//! kubelet's part itself, from what the engine set. The engine set each of
//! the container's own entries as written (literal values unexpanded, the
//! references it resolved as values), the last entry of a name winning; the
//! manifest's `converted.before` says which entries they were, in order, and
//! holds the values the engine's variables cannot (an entry a later one of
//! the same name replaced). envshim runs them as the kubelet's
//! `makeEnvironmentVariables` would: each literal expanded against the
//! entries before it; there are no service variables (no kubelet made any).
//! Where what the engine set cannot tell the kubelet's values, the start is
//! refused (78), naming the entry: never the program with `$(VAR)` text.

use std::cell::RefCell;

use super::build::Built;
use super::{Environment, Source};
use crate::error::{escape, Error, ExitCode};
use crate::expand::expand_capped;
use crate::index::NameIndex;
use crate::limits::MAX_EXEC_STRING_BYTES;
use crate::manifest::{Converted, EnvSource, Manifest};

const CANNOT: &str = "the engine did not expand $(VAR) in env (no kubelet), and envshim cannot do the kubelet's part exactly";
const CHANGED: &str = "the container's env was changed after kubectl envshim convert wrote it; convert the original again";

/// The entries before the first `fileKeyRef` run as the kubelet would: their
/// final values set in `b.env` (over the engine's unexpanded ones), and the
/// kubelet's view where the manifest's list starts of each name `c.seen`
/// lists, returned. A refusal goes to `b.errors`.
pub(super) fn kubelet_part(b: &mut Built, c: &Converted, m: &Manifest) -> Environment {
    let mut view = Environment::default();
    match run(&b.env, c, m) {
        Ok((tmp, seen)) => {
            for (name, value) in tmp {
                b.env.set(name, value, Source::Inherited);
            }
            for (name, value) in seen {
                view.set(name, value, Source::Inherited);
            }
        }
        Err(e) => b.errors.push(e),
    }
    view
}

type Values<'e> = Vec<(&'e [u8], Vec<u8>)>;

/// The kubelet's variables after the entries run so far: each name of
/// `before` once, found through an index (names are not copied), with the
/// place of its first and last entry, whether an entry after the first
/// `fileKeyRef` sets it too (`later`), its value (None: not set), and the
/// entry whose value the engine resolved and a later one replaced (`lost`).
#[derive(Default)]
struct Kubelet<'e> {
    index: NameIndex,
    names: Vec<&'e [u8]>,
    first: Vec<usize>,
    last: Vec<usize>,
    later: Vec<bool>,
    value: Vec<Option<Vec<u8>>>,
    lost: Vec<Option<usize>>,
}

impl<'e> Kubelet<'e> {
    fn id(&self, name: &[u8]) -> Option<usize> {
        self.index.get(name, |j| self.names[j as usize]).map(|j| j as usize)
    }

    /// Entry `i` names `name`.
    fn add(&mut self, i: usize, name: &'e [u8]) {
        if let Some(id) = self.id(name) {
            self.last[id] = i;
            return;
        }
        self.names.push(name);
        self.first.push(i);
        self.last.push(i);
        self.later.push(false);
        self.value.push(None);
        self.lost.push(None);
        let names = &self.names;
        self.index.put(name, (names.len() - 1) as u32, |j| names[j as usize]);
    }
}

/// The kubelet's variables after the entries of `c.before` (each name once,
/// its last value), and what it sees of each of `c.seen` there; `engine`:
/// what the engine set.
fn run<'e>(engine: &Environment, c: &'e Converted, m: &'e Manifest) -> Result<(Values<'e>, Values<'e>), Error> {
    let Some(before) = &c.before else {
        return Err(Error::config(format!(
            "{CANNOT}: kubectl envshim convert wrote this container before it recorded the container's own entries; convert the original again"
        )));
    };
    let entries: Vec<(u8, &[u8])> = before.iter().map(|w| w.as_bytes()).map(|w| (w.first().copied().unwrap_or(0), w.get(1..).unwrap_or_default())).collect();
    let mut k = Kubelet::default();
    for (i, &(_, name)) in entries.iter().enumerate() {
        k.add(i, name);
    }
    // An entry after the first fileKeyRef that the engine sets too (the converter removed the fileKeyRef ones).
    for e in m.env.iter().filter(|e| !matches!(e.source, EnvSource::FileKey { .. })) {
        if let Some(id) = k.id(e.name.as_bytes()) {
            k.later[id] = true;
        }
    }
    let mut values = c.values.iter();
    for (i, &(kind, name)) in entries.iter().enumerate() {
        let id = k.id(name).unwrap_or_default();
        let replaced = k.later[id] || k.last[id] > i;
        let at = || format!("env[{i}] ({})", escape(name));
        let value = match kind {
            b'l' => {
                let raw = if replaced { values.next().map(|v| v.as_bytes()) } else { engine.get(name) };
                let raw = raw.ok_or_else(|| Error::config(format!("{}: not set: {CHANGED}", at())))?;
                Some(expand(raw, &k, engine, c.env_from, &at)?)
            }
            b'p' | b'o' if replaced => {
                k.value[id] = None;
                k.lost[id] = Some(i);
                continue;
            }
            b'o' if k.first[id] < i => {
                return Err(Error::config(format!(
                    "{CANNOT}: {}: an optional reference to a name an entry before it sets: the engine does not say whether it found a value",
                    at()
                )))
            }
            b'p' | b'o' => match engine.get(name) {
                Some(v) => Some(v.to_vec()),
                None if kind == b'o' => None,
                None => return Err(Error::config(format!("{CANNOT}: {}: the engine did not resolve its reference (valueFrom)", at()))),
            },
            _ => return Err(Error::config(format!("manifest: converted.before[{i}]: not an entry kubectl envshim convert writes: {CHANGED}"))),
        };
        if value.is_some() {
            k.lost[id] = None;
            k.value[id] = value;
        }
    }
    let seen = view(c, m, &k, engine)?;
    let finals = k.names.iter().zip(&mut k.value).filter_map(|(n, v)| v.take().map(|v| (*n, v))).collect();
    Ok((finals, seen))
}

/// What the kubelet sees of each name of `c.seen` where the manifest's list
/// starts, after the entries before it (`k`). A refusal names the first
/// entry or word that refers to the name.
fn view<'e>(c: &'e Converted, m: &Manifest, k: &Kubelet, engine: &Environment) -> Result<Values<'e>, Error> {
    let first = c.first().unwrap_or_default();
    let mut seen = Vec::new();
    for name in &c.seen {
        // Only what is looked at: a name the list sets before any reference to it needs no view.
        let Some(place) = referrer(name.as_bytes(), m, first) else { continue };
        let reference = [b"$(", name.as_bytes(), b")"].concat();
        let one = expand(&reference, k, engine, c.env_from, &|| place.clone())?;
        if one != reference || k.id(name.as_bytes()).is_some_and(|id| k.value[id].is_some()) {
            seen.push((name.as_bytes(), one));
        }
    }
    Ok(seen)
}

/// The expansion for this module's lookups: one copy of its code for all of them (a closure type each would be one more).
fn expand_dyn<'a>(input: &[u8], lookup: &dyn Fn(&[u8]) -> Option<&'a [u8]>, out: &mut Vec<u8>, limit: usize) -> usize {
    expand_capped(input, lookup, out, limit)
}

/// Where the manifest's list or its program line refers to `name` before
/// an entry of the list certainly sets it (a literal, a required
/// `fileKeyRef`): only then is the kubelet's view of it used. The first
/// place, as the pod has it: its own entry (`env[5] (URL)`, the manifest's
/// list starting at its entry `first`) or a word of its program line (`args[2]`).
fn referrer(name: &[u8], m: &Manifest, first: usize) -> Option<String> {
    let refers = |text: &str| {
        let found = std::cell::Cell::new(false);
        let lookup = |n: &[u8]| {
            found.set(found.get() || n == name);
            None
        };
        expand_dyn(text.as_bytes(), &lookup, &mut Vec::new(), 0);
        found.get()
    };
    for (j, e) in m.env.iter().enumerate() {
        match &e.source {
            EnvSource::Value(v) if refers(v) => return Some(format!("env[{}] ({})", first + j, escape(e.name.as_bytes()))),
            EnvSource::Value(_) => {}
            EnvSource::FileKey { file, .. } if !file.optional => {}
            _ => continue,
        }
        if e.name.as_bytes() == name {
            return None;
        }
    }
    let words = [("command", &m.command), ("args", &m.args)];
    words.into_iter().find_map(|(key, list)| list.iter().position(|w| refers(w)).map(|i| format!("{key}[{i}]")))
}

/// `raw` expanded as the kubelet expands an entry's value: against the
/// entries before it, never the image's or the engine's variables. With
/// `envFrom`, a name no entry set may be one of its variables (the kubelet's
/// expansion sees them) or the image's (it does not): the engine does not
/// say which, so a reference to one the environment has is refused.
fn expand(raw: &[u8], k: &Kubelet, engine: &Environment, env_from: bool, what: &dyn Fn() -> String) -> Result<Vec<u8>, Error> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let refused: RefCell<Option<Error>> = RefCell::new(None);
    let mut out = Vec::new();
    let lookup = |n: &[u8]| -> Option<&[u8]> {
        let id = k.id(n);
        if let Some(j) = id.and_then(|id| k.lost[id]) {
            refused.borrow_mut().get_or_insert_with(|| {
                Error::config(format!(
                    "{CANNOT}: {} refers to $({}), which env[{j}] took from a reference (valueFrom) and a later entry of the same name replaced: the engine kept only the later value",
                    what(),
                    escape(n)
                ))
            });
            return None;
        }
        if let Some(v) = id.and_then(|id| k.value[id].as_deref()) {
            return Some(v);
        }
        if env_from && engine.get(n).is_some() {
            refused.borrow_mut().get_or_insert_with(|| {
                Error::config(format!(
                    "{CANNOT}: {} refers to $({}), which no entry before it sets: the engine does not say whether it came from envFrom (which the kubelet's expansion sees) or from the image (which it does not)",
                    what(),
                    escape(n)
                ))
            });
        }
        None
    };
    let len = expand_dyn(raw, &lookup, &mut out, MAX_EXEC_STRING_BYTES);
    if let Some(e) = refused.into_inner() {
        return Err(e);
    }
    if len > MAX_EXEC_STRING_BYTES {
        return Err(Error::new(ExitCode::NoExec, format!("{}: over the execve limit of {MAX_EXEC_STRING_BYTES} bytes once expanded", what())));
    }
    Ok(out)
}
