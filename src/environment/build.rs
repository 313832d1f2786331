//! The environment built in order (docs/reference.md §2): inherited, then `envFrom`
//! (files and directories imported, within the import bounds), then `env`
//! (literal values expanded, platform-resolved entries taken again), and
//! the warnings on the way.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use super::*;
use crate::envfile::ParseError;
use crate::error::{escape, Error, ExitCode, JsonPath};
use crate::expand::expand_capped;
use crate::index::NameIndex;
use crate::limits::{MAX_EXEC_STRING_BYTES, MAX_EXEC_TOTAL_BYTES, MAX_NAME_BYTES, MAX_SKIPPED_KEYS_SHOWN};
use crate::manifest::{Converted, EnvFrom, EnvSource, FileRef, Manifest, SEEN_PREFIX, VALUE_PREFIX};
use crate::names::NameRule;
use crate::report::Warnings;
use crate::sources::{Loaded, LoadedDir, Sources};

use super::import::{import, import_dir, names_cost, shown_name, Imported};
use super::platform::{service_link, service_url};

/// Everything the environment is built from, besides the files.
pub struct Inputs<'a> {
    pub manifest: &'a Manifest<'a>,
    pub env_files: &'a [OsString],
    /// `--env-dir` / `ENVSHIM_ENV_DIR`, after the env files (step 2).
    pub env_dirs: &'a [Vec<u8>],
    /// `--env NAME=VALUE`, split.
    pub cli_env: &'a [(Vec<u8>, Vec<u8>)],
    pub rule: NameRule,
    pub service_url: bool,
    /// `check`: warn about each `$(NAME)` an env value leaves unresolved (`run` is silent, as the kubelet is).
    pub warn_unresolved: bool,
    /// The `ENVSHIM_*` variables envshim knows: any other is warned about.
    pub config_vars: &'a [String],
}

/// The result of building: the environment as far as it could be built, every
/// error found, and the warnings (already formatted, without the prefix).
pub struct Built {
    pub env: Environment,
    /// A converted container: what `$(NAME)` sees (the kubelet's view, then
    /// what the list sets: [`Converted`]). None: `env` itself.
    pub view: Option<Environment>,
    pub errors: Vec<Error>,
    pub warnings: Warnings,
}

impl Built {
    /// The environment `$(NAME)` is expanded against.
    pub fn expansion_env(&self) -> &Environment {
        self.view.as_ref().unwrap_or(&self.env)
    }

    /// Sets a variable of the program's environment (and of the view, when there is one).
    fn define(&mut self, name: &[u8], value: &[u8], source: Source) {
        if let Some(view) = &mut self.view {
            view.set(name, value, source.clone());
        }
        self.env.set(name, value, source);
    }
}

pub fn rule_text(rule: NameRule) -> &'static str {
    match rule {
        NameRule::Relaxed => "printable ASCII except '='",
        NameRule::Strict => "--strict-names: [-._a-zA-Z][-._a-zA-Z0-9]*, not '.', '..' or '..'-prefixed",
    }
}

/// An `ENVSHIM_*` variable, removed: a warning if envshim does not know it,
/// naming the closest known one. Always false (the variable is not kept).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
pub(super) fn unknown_config(name: &[u8], known: &[String], warnings: &mut Warnings) -> bool {
    if !known.iter().any(|k| k.as_bytes() == name) {
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let shown = crate::error::escape(&name[..name.len().min(crate::limits::MAX_SHOWN_NAME_BYTES)]);
        let more = if name.len() > crate::limits::MAX_SHOWN_NAME_BYTES { "..." } else { "" };
        let hint = match crate::suggest::closest(name, &known) {
            Some(k) => format!("did you mean {k}?"),
            None => "see envshim --help".to_string(),
        };
        warnings.push(format!("{shown}{more} is not a variable envshim knows: removed from the environment ({hint})"));
    }
    false
}

/// The environment, in the order of docs/reference.md §2; building stops once it is past
/// what `execve` ever takes, or the imports past their bound (`full`,
/// reported once).
pub fn build(inherited: Vec<(OsString, OsString)>, inputs: &Inputs, sources: &mut Sources) -> Built {
    let mut b = Built { env: Environment::default(), view: None, errors: Vec::new(), warnings: Warnings::default() };
    b.env.later = inputs.manifest.env.len() + inputs.cli_env.len();
    let mut full = false;
    let converted = inputs.manifest.converted.as_ref();
    let (inherited, private) = inherit(&mut b, inherited, inputs.service_url && converted.is_none(), converted.is_some(), inputs.config_vars);
    if let Some(c) = converted {
        b.view = Some(match c.unexpanded {
            false => kubelet_view(&mut b, c, &private),
            true => super::engine::kubelet_part(&mut b, c, inputs.manifest),
        });
    }
    env_from(&mut b, inputs, sources, &mut full);
    let platform = match converted {
        Some(_) => Platform::Copies(&private),
        None => Platform::Inherited(&inherited),
    };
    // A converted container's messages name the pod's own entry: the manifest's list starts at its `first`.
    let at = match converted.and_then(Converted::first) {
        Some(first) => EntryAt { prefix: "", first },
        None => EntryAt { prefix: "manifest: ", first: 0 },
    };
    let mut step3 = Builder { b: &mut b, inputs, sources, scratch: Vec::new(), full: &mut full, inherited_names: None, at };
    step3.manifest_env(platform);
    step3.cli_env();
    for w in sources.warnings.drain(..) {
        b.warnings.push(w);
    }
    b
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Step 1: the inherited environment, minus envshim's own configuration
/// (an `ENVSHIM_*` variable not `known` warned about; a service link of a
/// Service named `envshim*` is kept, see [`service_link`]), and `KUBERNETES_SERVICE_URL`; returns it as bytes (the platform-resolved
/// `env` entries of step 3 take their values from it again), and, for a
/// converted container, its private variables ([`Converted`]), in a store
/// of their own (its index finds them by name).
fn inherit(b: &mut Built, inherited: Vec<(OsString, OsString)>, with_service_url: bool, converted: bool, known: &[String]) -> (Pairs, Environment) {
    let mut private = Environment::default();
    let inherited: Pairs = inherited
        .into_iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .filter_map(|(k, v)| {
            if !k.starts_with(b"ENVSHIM_") || service_link(&k) {
                return Some((k, v));
            }
            if k == crate::engine::MARKER.as_bytes() {
                return None;
            }
            if converted && (k.starts_with(SEEN_PREFIX.as_bytes()) || k.starts_with(VALUE_PREFIX.as_bytes())) {
                private.set(&k, &v, Source::Inherited);
            } else {
                unknown_config(&k, known, &mut b.warnings);
            }
            None
        })
        .collect();
    for (k, v) in &inherited {
        b.env.set(k, v, Source::Inherited);
    }
    if with_service_url && b.env.get(SERVICE_URL).is_none() {
        if let Some(url) = service_url(&b.env) {
            // A platform variable like the service variables: its source reads "inherited".
            b.env.set(SERVICE_URL, url, Source::Inherited);
        }
    }
    (inherited, private)
}

/// A private variable of a converted container, by name.
fn private_var<'p>(private: &'p Environment, name: &str) -> Option<&'p [u8]> {
    private.get(name.as_bytes())
}

/// What the kubelet saw of each name `c.seen` lists, where the manifest's
/// `env` starts. A name it did not know holds `$(NAME)`, which expands as an
/// unknown name does. A missing variable means the container's `env` was
/// changed after the conversion: an error (78), as the view would be wrong.
fn kubelet_view(b: &mut Built, c: &Converted, private: &Environment) -> Environment {
    let mut view = Environment::default();
    for (j, name) in c.seen.iter().enumerate() {
        let var = format!("{SEEN_PREFIX}{j}");
        match private_var(private, &var) {
            Some(value) => view.set(name.as_bytes(), value, Source::Inherited),
            None => b.errors.push(Error::config(format!(
                "manifest: converted.seen[{j}]: {var} is not set: the container's env was changed after kubectl envshim convert wrote it; convert the original again"
            ))),
        }
    }
    view
}

/// Where step 3 takes the value of a platform-resolved entry (`secretKeyRef`, ...).
#[derive(Clone, Copy)]
enum Platform<'p> {
    /// The inherited variable of the same name: the kubelet's last value of it.
    Inherited(&'p Pairs),
    /// A converted container: the entry's own copies ([`Converted`]).
    Copies(&'p Environment),
}

/// A file read with the kubelet's grammar, on whose line `e` the kubelet
/// fails before it finds what `what` needs (65, naming the file and the line).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn unread(what: &str, shown: &str, display: &str, e: ParseError) -> Error {
    Error::new(ExitCode::DataErr, format!("{what}: {shown}, {e}")).at(display, e.line)
}

/// How messages name a file in a volume, as when it does not parse.
#[cfg_attr(envshim_size, optimize(size))]
fn in_volume(file: &FileRef) -> String {
    format!("volume {}, path {}", escape(file.volume_name.as_bytes()), escape(file.path.as_bytes()))
}

/// Step 2, `envFrom`: the manifest's files, then `--env-file`s, then `--env-dir`s.
#[cfg_attr(envshim_size, optimize(size))]
fn env_from(b: &mut Built, inputs: &Inputs, sources: &mut Sources, full: &mut bool) {
    let mut imported = Imported::default();
    for (i, entry) in inputs.manifest.env_from.iter().enumerate() {
        if *full {
            return;
        }
        let EnvFrom::File { file, prefix } = entry else { continue };
        match sources.load_in_volume(&file.volume_name, &file.path, &|| JsonPath::item("envFrom", i).key("fileRef"), &mut b.errors) {
            Loaded::File(f, display) => {
                let what = || format!("manifest: envFrom[{i}] ({display})");
                if let Some(e) = f.stop() {
                    if f.report_stop() {
                        b.errors.push(unread(&format!("manifest: envFrom[{i}]"), &in_volume(file), &display, e));
                    }
                } else if imported.charge(b, &f, names_cost(prefix.as_bytes(), inputs.rule), what, full) {
                    import(b, &f, &display, prefix.as_bytes(), inputs.rule, full)
                }
            }
            Loaded::Missing(display) if !file.optional => {
                let e = sources.required(&display, format!("manifest: envFrom[{i}]: file {display} not found{}", relative(&file.path)));
                b.errors.push(e.located(Some(JsonPath::item("envFrom", i).key("fileRef").key("path")), Some(&display)))
            }
            _ => {}
        }
    }
    for path in inputs.env_files {
        if *full {
            return;
        }
        match sources.load_path(path, &mut b.errors) {
            Loaded::File(f, display) => {
                if let Some(e) = f.stop() {
                    if f.report_stop() {
                        b.errors.push(unread("--env-file", &format!("env file {display}"), &display, e));
                    }
                } else if imported.charge(b, &f, 0, || format!("--env-file {display}"), full) {
                    import(b, &f, &display, b"", inputs.rule, full)
                }
            }
            Loaded::Missing(display) => {
                b.errors.push(sources.required(&display, format!("--env-file {display}: file not found")).located(None, Some(&display)))
            }
            Loaded::Failed => {}
        }
    }
    env_dirs(b, inputs, sources, &mut imported, full)
}

/// Step 2's end: the `--env-dir`s, charged with the imports before them.
fn env_dirs(b: &mut Built, inputs: &Inputs, sources: &mut Sources, imported: &mut Imported, full: &mut bool) {
    for path in inputs.env_dirs {
        if *full {
            return;
        }
        match sources.load_dir(std::ffi::OsStr::from_bytes(path), &mut b.errors) {
            LoadedDir::Files(files, display) => {
                let bytes = files.iter().map(|f| f.name.len() + f.value.len()).sum();
                if imported.charge_counts(b, files.len(), bytes, || format!("--env-dir {display}"), full) {
                    import_dir(b, files, &display, inputs.rule, full)
                }
            }
            LoadedDir::Missing(display) => {
                b.errors.push(sources.required(&display, format!("--env-dir {display}: directory not found")).located(None, Some(&display)))
            }
            LoadedDir::Failed => {}
        }
    }
}

/// Step 3: the manifest's `env`, then the `--env`s. The state its entries
/// share: the environment being built, its inputs and sources, one buffer
/// for every expansion, and whether the environment is full.
struct Builder<'a, 'i> {
    b: &'a mut Built,
    inputs: &'a Inputs<'i>,
    sources: &'a mut Sources,
    scratch: Vec<u8>,
    full: &'a mut bool,
    /// The inherited names, indexed for the first platform-resolved entry.
    inherited_names: Option<NameIndex>,
    at: EntryAt,
}

/// How messages name the manifest's `env[i]`: `manifest: env[i]`, or in a
/// converted container the pod's own entry, `env[first + i]`.
#[derive(Clone, Copy)]
struct EntryAt {
    prefix: &'static str,
    first: usize,
}

impl Builder<'_, '_> {
    /// The manifest's `env`: literal values expanded, platform-resolved entries
    /// taken again from `inherited`, `fileKeyRef`s read.
    fn manifest_env(&mut self, platform: Platform) {
        let (inputs, at) = (self.inputs, self.at);
        for (m, var) in inputs.manifest.env.iter().enumerate() {
            if *self.full {
                return;
            }
            let (name, i) = (var.name.as_bytes(), at.first + m);
            if !inputs.rule.accepts(name) {
                self.b.errors.push(Error::config(format!(
                    "{}env[{i}].name: \"{}\" is not a valid variable name ({})",
                    at.prefix,
                    escape(name),
                    rule_text(inputs.rule)
                )));
                continue;
            }
            // Formatted only for a message, not once per entry.
            let what = || format!("{}env[{i}] ({})", at.prefix, escape(name));
            match &var.source {
                EnvSource::Value(v) => {
                    let value = expand_value(self.b, &mut self.scratch, name, v.as_bytes(), &what, self.full);
                    if inputs.warn_unresolved && has_reference(value) {
                        unresolved_warning(&mut self.b.warnings, self.b.view.as_ref().unwrap_or(&self.b.env), v.as_bytes(), &what);
                    }
                    self.b.define(name, value, Source::ManifestEnv(i));
                }
                EnvSource::Platform(named) => {
                    if !self.platform_entry(m, name, named, platform) {
                        continue;
                    }
                }
                EnvSource::FileKey { file, key } => {
                    if !self.file_key(i, name, file, key.as_bytes()) {
                        continue;
                    }
                }
            }
            if stop_when_full(self.b, self.full, what) {
                return;
            }
        }
    }

    /// Entry `i`, `name`, resolved by the platform (`named`: `secretKeyRef`,
    /// ...): its value as the kubelet resolved it. False for a converted
    /// container's entry (taken from its copies, or skipped).
    fn platform_entry(&mut self, i: usize, name: &[u8], named: &str, platform: Platform) -> bool {
        let source = || Source::Platform(named.into());
        let inherited = match platform {
            Platform::Inherited(inherited) => inherited,
            Platform::Copies(private) => {
                let copy = |side: &str| private_var(private, &format!("{VALUE_PREFIX}{i}_{side}"));
                match (copy("A"), copy("B")) {
                    // Resolved; else an optional reference that found nothing: skipped, as the kubelet does.
                    (Some(a), Some(b)) if a == b => self.b.define(name, a, source()),
                    _ => {}
                }
                return false;
            }
        };
        // The last of a name given twice, as step 1 kept it. Found
        // through an index of the inherited names, made for the first
        // such entry (a scan per entry is quadratic).
        let by_name = self.inherited_names.get_or_insert_with(|| {
            let mut index = NameIndex::with_capacity(inherited.len());
            for (id, (k, _)) in inherited.iter().enumerate() {
                index.put(k, id as u32, |i| &inherited[i as usize].0);
            }
            index
        });
        if let Some(id) = by_name.get(name, |i| &inherited[i as usize].0) {
            self.b.env.set(name, &inherited[id as usize].1, source());
        }
        true
    }

    /// Entry `i` of the manifest's `env`, `name` from `key` of a `fileKeyRef`'s
    /// file; false when the key is not a valid name (nothing was read).
    fn file_key(&mut self, i: usize, name: &[u8], file: &FileRef, key: &[u8]) -> bool {
        let (b, rule, prefix) = (&mut *self.b, self.inputs.rule, self.at.prefix);
        let what = || format!("{prefix}env[{i}] ({})", escape(name));
        if key.len() > MAX_NAME_BYTES || !rule.accepts(key) {
            b.errors.push(Error::config(format!(
                "{prefix}env[{i}].valueFrom.fileKeyRef.key: \"{}\" is not a valid key ({}, at most {MAX_NAME_BYTES} bytes)",
                escape(key),
                rule_text(rule)
            )));
            return false;
        }
        let at = || JsonPath::item("env", i).key("valueFrom").key("fileKeyRef");
        match self.sources.load_in_volume(&file.volume_name, &file.path, &at, &mut b.errors) {
            Loaded::File(f, display) => match f.get(key) {
                Ok(Some((value, line))) => b.define(name, value, Source::FileKey { file: display, line }),
                Ok(None) if file.optional => {}
                Err(e) if f.report_stop() => b.errors.push(unread(&what(), &in_volume(file), &display, e)),
                // Reported already (the entry fails all the same).
                Err(_) => {}
                Ok(None) => {
                    b.errors.push(Error::new(ExitCode::NoInput, missing_key(&what(), key, &f, &display)).located(Some(at().key("key")), Some(&display)))
                }
            },
            Loaded::Missing(display) if !file.optional => {
                let e = self.sources.required(&display, format!("{}: file {display} not found{}", what(), relative(&file.path)));
                b.errors.push(e.located(Some(at().key("path")), Some(&display)))
            }
            _ => {}
        }
        true
    }

    /// Then the `--env`s, expanded as the manifest's literal values are.
    fn cli_env(&mut self) {
        let (b, inputs, scratch, full) = (&mut *self.b, self.inputs, &mut self.scratch, &mut *self.full);
        for (i, (name, value)) in inputs.cli_env.iter().enumerate() {
            if *full {
                return;
            }
            if !inputs.rule.accepts(name) {
                b.errors.push(Error::config(format!("--env #{}: \"{}\" is not a valid variable name ({})", i + 1, escape(name), rule_text(inputs.rule))));
                continue;
            }
            let what = || format!("--env #{} ({})", i + 1, escape(name));
            let input = value;
            let value = expand_value(b, scratch, name, value, &what, full);
            if inputs.warn_unresolved && has_reference(value) {
                unresolved_warning(&mut b.warnings, b.view.as_ref().unwrap_or(&b.env), input, &what);
            }
            b.define(name, value, Source::CliEnv);
            if stop_when_full(b, full, what) {
                return;
            }
        }
    }
}

/// True when `text` holds `$(`: an expansion that left a reference unresolved
/// does (the reference is kept as written), so only such values are scanned again.
pub fn has_reference(text: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'$', &text[at..]) {
        if text.get(at + i + 1) == Some(&b'(') {
            return true;
        }
        at += i + 1;
    }
    false
}

/// `check`: one warning naming the references `input` leaves unresolved
/// against `env` (the first few, then a count), at `what`. Names only, escaped
/// and cut like the skipped keys' (a reference is written in the manifest:
/// configuration, not a value read from a file).
#[cfg_attr(envshim_size, optimize(size))]
pub fn unresolved_warning(warnings: &mut Warnings, env: &Environment, input: &[u8], what: &dyn Fn() -> String) {
    let (names, more) = crate::expand::unresolved(input, |n| env.get(n), MAX_SKIPPED_KEYS_SHOWN);
    if names.is_empty() {
        return;
    }
    let mut shown = what();
    shown.push_str(": ");
    for (i, n) in names.iter().enumerate() {
        shown.push_str(if i == 0 { "$(" } else { ", $(" });
        shown.push_str(&shown_name(b"", n));
        shown.push(')');
    }
    if more > 0 {
        shown.push_str(&format!(" and {more} more"));
    }
    shown.push_str(if names.len() > 1 || more > 0 { " are not defined there: left as written" } else { " is not defined there: left as written" });
    warnings.push(shown);
}

/// Expands an env value against the environment so far. A value `execve`
/// could never take (over its limit as `NAME=VALUE`, or taking the
/// environment past the largest total it ever takes) is refused with an error
/// naming the variable (126) and set empty; the expansion stops at the limit,
/// so a manifest that multiplies a value (`$(A)$(A)…`, chained) cannot exhaust memory.
/// Expands `input` into `value` (emptied first: one buffer serves every
/// value, so a value of 100 KB is not a block that musl's allocator maps and
/// unmaps each time, past the arena: docs/security.md).
pub(super) fn expand_value<'v>(b: &mut Built, value: &'v mut Vec<u8>, name: &[u8], input: &[u8], what: &dyn Fn() -> String, full: &mut bool) -> &'v [u8] {
    let per_string = MAX_EXEC_STRING_BYTES.saturating_sub(name.len() + 1);
    let budget = MAX_EXEC_TOTAL_BYTES.saturating_sub(b.env.exec_bytes());
    value.clear();
    // Room for the usual result at once: grown from empty, the buffer would
    // be reallocated several times a value.
    value.reserve((input.len() + 128).min(per_string.min(budget)));
    let len = expand_capped(input, |n| b.expansion_env().get(n), value, per_string.min(budget));
    if len > per_string {
        b.errors.push(Error::new(
            ExitCode::NoExec,
            format!("{}: is {} bytes as NAME=VALUE after expansion, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes", what(), name.len() + 1 + len),
        ));
        return &[];
    }
    if len > budget {
        if !*full {
            *full = true;
            b.errors.push(Error::new(
                ExitCode::NoExec,
                format!("{}: expanding it takes the environment past {MAX_EXEC_TOTAL_BYTES} bytes, more than execve ever takes", what()),
            ));
        }
        return &[];
    }
    value
}

/// Reports, once, that the environment is past the most `execve` ever takes
/// (6 MiB), at `place`; building stops there. Without this bound a manifest
/// that repeats sources over a file an untrusted container wrote (`envFrom`
/// x N with distinct prefixes, `fileKeyRef` x N) made envshim hold gigabytes
/// before the final size check.
pub(super) fn stop_when_full(b: &mut Built, full: &mut bool, place: impl FnOnce() -> String) -> bool {
    if *full {
        return true;
    }
    if b.env.exec_bytes() <= MAX_EXEC_TOTAL_BYTES {
        return false;
    }
    *full = true;
    let largest = b
        .env
        .vars()
        .max_by_key(|v| v.text.len())
        .map_or(String::new(), |v| format!("; the largest is {} ({} bytes)", v.describe(), v.name.len() + 1 + v.value.len()));
    b.errors.push(Error::new(
        ExitCode::NoExec,
        format!("the environment passes {MAX_EXEC_TOTAL_BYTES} bytes at {}, more than execve ever takes{largest}", place()),
    ));
    true
}

/// A `fileKeyRef` key its file does not have, with the file's closest key
/// when it is a likely misspelling of it (names only, never a value).
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
fn missing_key(what: &str, key: &[u8], f: &crate::envfile::EnvFile, display: &str) -> String {
    let names: Vec<&str> = f.unique().filter_map(|(name, _, _)| std::str::from_utf8(name).ok()).collect();
    let hint = crate::suggest::closest(key, &names).map_or(String::new(), |n| format!(" (did you mean {}?)", escape(n.as_bytes())));
    format!("{what}: key \"{}\" not found in {display}{hint}", escape(key))
}

/// For a missing file whose manifest path is absolute: it was looked for in
/// the volume, not at that path of the container.
#[cold]
fn relative(path: &str) -> &'static str {
    if path.starts_with('/') {
        " (a path is relative to its volume: a leading / is the volume's root, not the container's)"
    } else {
        ""
    }
}
