//! Building the program's environment (SPEC §2): inherited, then `envFrom`,
//! then `env`, each step overriding the one before.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStringExt;
use std::rc::Rc;

use crate::error::{code, escape, Error};
use crate::expand::expand_capped;
use crate::envfile::EnvFile;
use crate::limits::{
    MAX_EXEC_STRING_BYTES, MAX_EXEC_TOTAL_BYTES, MAX_IMPORTED_BYTES, MAX_IMPORTED_ENTRIES, MAX_NAME_BYTES,
    MAX_SHOWN_NAME_BYTES, MAX_SKIPPED_KEYS_SHOWN,
};
use crate::manifest::{EnvFrom, EnvSource, Manifest};
use crate::names::NameRule;
use crate::report::Warnings;
use crate::sources::{Loaded, Sources};

pub const SERVICE_URL: &[u8] = b"KUBERNETES_SERVICE_URL";

/// Where a variable's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Inherited,
    /// A key of an `envFrom` file: its name came from the file.
    EnvFrom { file: Rc<str>, line: u32 },
    /// `env[i]` of the manifest via `fileKeyRef`.
    FileKey { file: Rc<str>, line: u32 },
    /// `--file-env NAME`: the file named by `NAME_FILE`, shown as `NAME_FILE PATH`.
    FileEnv(Rc<str>),
    /// `env[i]` of the manifest, a literal.
    ManifestEnv(usize),
    /// A `--env` option.
    CliEnv,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Inherited => f.write_str("inherited"),
            Source::EnvFrom { file, line } | Source::FileKey { file, line } => write!(f, "{file}:{line}"),
            Source::ManifestEnv(i) => write!(f, "manifest env[{i}]"),
            Source::CliEnv => f.write_str("--env"),
            Source::FileEnv(shown) => f.write_str(shown),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Var {
    pub name: Vec<u8>,
    pub value: Vec<u8>,
    pub source: Source,
}

impl Var {
    /// How messages name this variable: by name, except when the name was read
    /// from a file (then by file and line: names from files are not shown).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::EnvFrom { file, line } => format!("the variable from {file} line {line}"),
            _ => format!("variable {}", escape(&self.name)),
        }
    }
}

/// Variables in the order they were first defined; a later definition
/// replaces the value and source in place.
#[derive(Debug, Default)]
pub struct Environment {
    vars: Vec<Var>,
    /// Name -> position in `vars`. A hash map, not a BTreeMap: with 1,000+
    /// names sharing a prefix (`APP_CONFIG_KEY_…`), the B-tree's comparisons
    /// (musl's byte-at-a-time memcmp) were 40% of a start-up's instructions
    /// (docs/performance.md). std's RandomState keeps it flooding-resistant.
    index: HashMap<Vec<u8>, usize>,
    /// What the variables take in an `execve` environment: `NAME=VALUE`, NUL, pointer.
    exec_bytes: usize,
}

impl Environment {
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.index.get(name).map(|&i| self.vars[i].value.as_slice())
    }

    pub fn set(&mut self, name: &[u8], value: Vec<u8>, source: Source) {
        match self.index.get(name) {
            Some(&i) => {
                self.exec_bytes = self.exec_bytes - self.vars[i].value.len() + value.len();
                self.vars[i].value = value;
                self.vars[i].source = source;
            }
            None => {
                self.exec_bytes += name.len() + 1 + value.len() + 1 + std::mem::size_of::<usize>();
                self.index.insert(name.to_vec(), self.vars.len());
                self.vars.push(Var { name: name.to_vec(), value, source });
            }
        }
    }

    /// Removes `name`; the variables after it keep their order.
    pub fn remove(&mut self, name: &[u8]) {
        let Some(i) = self.index.remove(name) else { return };
        let Var { name, value, .. } = self.vars.remove(i);
        self.exec_bytes -= name.len() + 1 + value.len() + 1 + std::mem::size_of::<usize>();
        for p in self.index.values_mut().filter(|p| **p > i) {
            *p -= 1;
        }
    }

    /// Room for `n` more variables, so a file's keys grow the index once
    /// instead of rehashing it as it doubles (docs/performance.md).
    pub fn reserve(&mut self, n: usize) {
        self.vars.reserve(n);
        self.index.reserve(n);
    }

    /// The bytes the variables take in an `execve` environment (strings, NULs, pointers).
    pub fn exec_bytes(&self) -> usize {
        self.exec_bytes
    }

    pub fn vars(&self) -> &[Var] {
        &self.vars
    }
}

/// Everything the environment is built from, besides the files.
pub struct Inputs<'a> {
    pub manifest: &'a Manifest,
    pub env_files: &'a [OsString],
    /// `--env NAME=VALUE`, split.
    pub cli_env: &'a [(Vec<u8>, Vec<u8>)],
    pub rule: NameRule,
    pub service_url: bool,
}

/// The result of building: the environment as far as it could be built, every
/// error found, and the warnings (already formatted, without the prefix).
pub struct Built {
    pub env: Environment,
    pub errors: Vec<Error>,
    pub warnings: Warnings,
}

pub fn rule_text(rule: NameRule) -> &'static str {
    match rule {
        NameRule::Relaxed => "printable ASCII except '='",
        NameRule::Strict => "--strict-names: [-._a-zA-Z][-._a-zA-Z0-9]*, not '.', '..' or '..'-prefixed",
    }
}

pub fn build(inherited: Vec<(OsString, OsString)>, inputs: &Inputs, sources: &mut Sources) -> Built {
    let mut b = Built { env: Environment::default(), errors: Vec::new(), warnings: Warnings::default() };

    // 1. Inherited, minus envshim's own configuration.
    let inherited: Vec<(Vec<u8>, Vec<u8>)> =
        inherited.into_iter().map(|(k, v)| (k.into_vec(), v.into_vec())).filter(|(k, _)| !k.starts_with(b"ENVSHIM_")).collect();
    for (k, v) in &inherited {
        b.env.set(k, v.clone(), Source::Inherited);
    }
    if inputs.service_url && b.env.get(SERVICE_URL).is_none() {
        if let Some(url) = service_url(&b.env) {
            // A platform variable like the service variables: its source reads "inherited".
            b.env.set(SERVICE_URL, url, Source::Inherited);
        }
    }

    // 2. envFrom: the manifest's, then --env-file. Building stops once the
    // environment is past what execve ever takes, or the imports past their
    // bound (`full`, reported once).
    let mut full = false;
    let mut imported = Imported::default();
    for (i, entry) in inputs.manifest.env_from.iter().enumerate() {
        if full {
            break;
        }
        let EnvFrom::File { file, prefix } = entry else { continue };
        let at = format!("manifest: envFrom[{i}].fileRef");
        match sources.load_in_volume(&file.volume_name, &file.path, &at, &mut b.errors) {
            Loaded::File(f, display) => {
                let what = || format!("manifest: envFrom[{i}] ({display})");
                if imported.charge(&mut b, &f, names_cost(prefix.as_bytes(), inputs.rule), what, &mut full) {
                    import(&mut b, &f, &display, prefix.as_bytes(), inputs.rule, &mut full)
                }
            }
            Loaded::Missing(display) if !file.optional => {
                b.errors.push(sources.required(&display, format!("manifest: envFrom[{i}]: file {display} not found")))
            }
            _ => {}
        }
    }
    for path in inputs.env_files {
        if full {
            break;
        }
        match sources.load_path(path, &mut b.errors) {
            Loaded::File(f, display) => {
                if imported.charge(&mut b, &f, 0, || format!("--env-file {display}"), &mut full) {
                    import(&mut b, &f, &display, b"", inputs.rule, &mut full)
                }
            }
            Loaded::Missing(display) => {
                b.errors.push(sources.required(&display, format!("--env-file {display}: file not found")))
            }
            Loaded::Failed => {}
        }
    }

    // 3. env: the manifest's, then --env.
    for (i, var) in inputs.manifest.env.iter().enumerate() {
        if full {
            break;
        }
        let name = var.name.as_bytes();
        if !inputs.rule.accepts(name) {
            b.errors.push(Error::config(format!(
                "manifest: env[{i}].name: \"{}\" is not a valid variable name ({})",
                escape(name),
                rule_text(inputs.rule)
            )));
            continue;
        }
        let what = format!("manifest: env[{i}] ({})", escape(name));
        match &var.source {
            EnvSource::Value(v) => {
                let value = expand_value(&mut b, name, v.as_bytes(), &what, &mut full);
                b.env.set(name, value, Source::ManifestEnv(i));
            }
            EnvSource::Platform => {
                // The last of a name given twice, as step 1 kept it.
                if let Some((_, v)) = inherited.iter().rev().find(|(k, _)| k == name) {
                    b.env.set(name, v.clone(), Source::Inherited);
                }
            }
            EnvSource::FileKey { file, key } => {
                let key = key.as_bytes();
                if key.len() > MAX_NAME_BYTES || !inputs.rule.accepts(key) {
                    b.errors.push(Error::config(format!(
                        "manifest: env[{i}].valueFrom.fileKeyRef.key: \"{}\" is not a valid key ({}, at most {MAX_NAME_BYTES} bytes)",
                        escape(key),
                        rule_text(inputs.rule)
                    )));
                    continue;
                }
                let at = format!("manifest: env[{i}].valueFrom.fileKeyRef");
                match sources.load_in_volume(&file.volume_name, &file.path, &at, &mut b.errors) {
                    Loaded::File(f, display) => match f.get(key) {
                        Some((value, line)) => {
                            b.env.set(name, value.to_vec(), Source::FileKey { file: display, line })
                        }
                        None if file.optional => {}
                        None => b.errors.push(Error::new(
                            code::NOINPUT,
                            format!("{what}: key \"{}\" not found in {display}", escape(key)),
                        )),
                    },
                    Loaded::Missing(display) if !file.optional => {
                        b.errors.push(sources.required(&display, format!("{what}: file {display} not found")))
                    }
                    _ => {}
                }
            }
        }
        if stop_when_full(&mut b, &mut full, || what) {
            break;
        }
    }
    for (i, (name, value)) in inputs.cli_env.iter().enumerate() {
        if full {
            break;
        }
        if !inputs.rule.accepts(name) {
            b.errors.push(Error::config(format!(
                "--env #{}: \"{}\" is not a valid variable name ({})",
                i + 1,
                escape(name),
                rule_text(inputs.rule)
            )));
            continue;
        }
        let what = format!("--env #{} ({})", i + 1, escape(name));
        let value = expand_value(&mut b, name, value, &what, &mut full);
        b.env.set(name, value, Source::CliEnv);
        if stop_when_full(&mut b, &mut full, || what) {
            break;
        }
    }
    b
}

/// Expands an env value against the environment so far. A value `execve`
/// could never take (over its limit as `NAME=VALUE`, or taking the
/// environment past the largest total it ever takes) is refused with an error
/// naming the variable (126) and set empty; the expansion stops at the limit,
/// so a manifest that multiplies a value (`$(A)$(A)…`, chained) cannot exhaust memory.
fn expand_value(b: &mut Built, name: &[u8], input: &[u8], what: &str, full: &mut bool) -> Vec<u8> {
    let per_string = MAX_EXEC_STRING_BYTES.saturating_sub(name.len() + 1);
    let budget = MAX_EXEC_TOTAL_BYTES.saturating_sub(b.env.exec_bytes());
    let mut value = Vec::new();
    let len = expand_capped(input, |n| b.env.get(n), &mut value, per_string.min(budget));
    if len > per_string {
        b.errors.push(Error::new(
            code::NOEXEC,
            format!(
                "{what}: is {} bytes as NAME=VALUE after expansion, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes",
                name.len() + 1 + len
            ),
        ));
        return Vec::new();
    }
    if len > budget {
        if !*full {
            *full = true;
            b.errors.push(Error::new(
                code::NOEXEC,
                format!("{what}: expanding it takes the environment past {MAX_EXEC_TOTAL_BYTES} bytes, more than execve ever takes"),
            ));
        }
        return Vec::new();
    }
    value
}

/// Reports, once, that the environment is past the most `execve` ever takes
/// (6 MiB), at `place`; building stops there. Without this bound a manifest
/// that repeats sources over a file an untrusted container wrote (`envFrom`
/// x N with distinct prefixes, `fileKeyRef` x N) made envshim hold gigabytes
/// before the final size check.
fn stop_when_full(b: &mut Built, full: &mut bool, place: impl FnOnce() -> String) -> bool {
    if *full {
        return true;
    }
    if b.env.exec_bytes() <= MAX_EXEC_TOTAL_BYTES {
        return false;
    }
    *full = true;
    let largest = b.env.vars().iter().max_by_key(|v| v.name.len() + v.value.len()).map_or(String::new(), |v| {
        format!("; the largest is {} ({} bytes)", v.describe(), v.name.len() + 1 + v.value.len())
    });
    b.errors.push(Error::new(
        code::NOEXEC,
        format!("the environment passes {MAX_EXEC_TOTAL_BYTES} bytes at {}, more than execve ever takes{largest}", place()),
    ));
    true
}

/// What the imports (`envFrom`, `--env-file`) have cost so far. Every
/// reference imports its file's keys again, so the work is bounded here, by
/// the input, and not only by the environment's size: a file named 20,000
/// times with the same prefix never grows the environment.
#[derive(Default)]
struct Imported {
    entries: usize,
    bytes: usize,
}

impl Imported {
    /// Charges one import of `file`: its distinct keys, the bytes of their
    /// keys and values, and `prefix_cost` more per key (see [`names_cost`]).
    /// Past either bound, reports it once (65) naming `what`, stops the
    /// building, and returns false.
    fn charge(&mut self, b: &mut Built, file: &EnvFile, prefix_cost: usize, what: impl FnOnce() -> String, full: &mut bool) -> bool {
        let keys = file.unique_len();
        let bytes: usize = file.unique().map(|(k, v, _)| k.len() + v.len()).sum();
        self.entries += keys;
        self.bytes = self.bytes.saturating_add(bytes).saturating_add(keys.saturating_mul(prefix_cost));
        if self.entries <= MAX_IMPORTED_ENTRIES && self.bytes <= MAX_IMPORTED_BYTES {
            return true;
        }
        *full = true;
        b.errors.push(Error::new(
            code::DATAERR,
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
fn prefix_spoils_every_name(prefix: &[u8], rule: NameRule) -> bool {
    prefix.len() > 1 && !rule.accepts(prefix)
}

/// What building one prefixed name costs beyond its key: the prefix, unless
/// no name is built because the prefix spoils them all.
fn names_cost(prefix: &[u8], rule: NameRule) -> usize {
    if prefix_spoils_every_name(prefix, rule) {
        0
    } else {
        prefix.len()
    }
}

/// Every key of `file` (its final key set), prefixed; names that are not
/// valid are skipped with one warning for the file, as the kubelet does
/// (listing them prefixed, as it does; here the first few in order, then a count).
fn import(b: &mut Built, file: &EnvFile, display: &Rc<str>, prefix: &[u8], rule: NameRule, full: &mut bool) {
    if prefix_spoils_every_name(prefix, rule) {
        let mut skipped: Vec<&[u8]> = file.unique().map(|(key, _, _)| key).collect();
        if !skipped.is_empty() {
            b.warnings.push(skipped_warning(display, prefix, &mut skipped));
        }
        return;
    }
    let mut skipped: Vec<&[u8]> = Vec::new();
    let mut name = prefix.to_vec();
    b.env.reserve(file.unique_len());
    for (key, value, line) in file.unique() {
        name.truncate(prefix.len());
        name.extend_from_slice(key);
        if rule.accepts(&name) {
            b.env.set(&name, value.to_vec(), Source::EnvFrom { file: display.clone(), line });
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

/// The kubelet's warning for skipped keys (sorted, prefixed), listing at most
/// [`MAX_SKIPPED_KEYS_SHOWN`] names of at most [`MAX_SHOWN_NAME_BYTES`] each.
fn skipped_warning(display: &str, prefix: &[u8], keys: &mut [&[u8]]) -> String {
    // The keys are distinct and share the prefix: sorting them sorts the names.
    let shown = keys.len().min(MAX_SKIPPED_KEYS_SHOWN);
    if keys.len() > shown {
        keys.select_nth_unstable(shown);
    }
    keys[..shown].sort_unstable();
    let names: Vec<String> = keys[..shown].iter().map(|key| shown_name(prefix, key)).collect();
    let more = match keys.len() - shown {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    format!(
        "Keys [{}]{more} from the EnvFrom file {display} were skipped since they are considered invalid environment variable names.",
        names.join(", ")
    )
}

/// `prefix` + `key` as the warning shows it: escaped, and when longer than
/// [`MAX_SHOWN_NAME_BYTES`] the prefix is cut in the middle (`PRE...KEY`) so
/// the key stays readable. (Escaped text is ASCII: any cut is at a character.)
fn shown_name(prefix: &[u8], key: &[u8]) -> String {
    let key = escape(key);
    let mut name = escape(&prefix[..prefix.len().min(MAX_SHOWN_NAME_BYTES)]);
    if name.len() + key.len() > MAX_SHOWN_NAME_BYTES {
        name.truncate(MAX_SHOWN_NAME_BYTES.saturating_sub(key.len() + 3));
        name.push_str("...");
    }
    name.push_str(&key);
    name
}

/// `https://HOST:PORT`, with an IPv6 HOST in brackets; None unless both are set and non-empty.
fn service_url(env: &Environment) -> Option<Vec<u8>> {
    let host = env.get(b"KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty())?;
    let port = env.get(b"KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty())?;
    let bracket = host.contains(&b':') && !host.starts_with(b"[");
    let mut url = b"https://".to_vec();
    if bracket {
        url.push(b'[');
    }
    url.extend_from_slice(host);
    if bracket {
        url.push(b']');
    }
    url.push(b':');
    url.extend_from_slice(port);
    Some(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(host: &str, port: &str) -> Option<String> {
        let mut env = Environment::default();
        env.set(b"KUBERNETES_SERVICE_HOST", host.into(), Source::Inherited);
        env.set(b"KUBERNETES_SERVICE_PORT", port.into(), Source::Inherited);
        service_url(&env).map(|u| String::from_utf8(u).unwrap())
    }

    #[test]
    fn service_url_table() {
        assert_eq!(url("10.0.0.1", "443").as_deref(), Some("https://10.0.0.1:443"));
        assert_eq!(url("kubernetes.default", "6443").as_deref(), Some("https://kubernetes.default:6443"));
        assert_eq!(url("fd00::1", "443").as_deref(), Some("https://[fd00::1]:443"));
        assert_eq!(url("1080::8:800:200C:417A", "6443").as_deref(), Some("https://[1080::8:800:200C:417A]:6443"));
        assert_eq!(url("[fd00::1]", "443").as_deref(), Some("https://[fd00::1]:443"));
        assert_eq!(url("", "443"), None);
        assert_eq!(url("h", ""), None);
    }

    #[test]
    fn shown_names_keep_the_key_and_cut_a_long_prefix() {
        assert_eq!(shown_name(b"P_", b"1KEY"), "P_1KEY");
        assert_eq!(shown_name(b"", b"a\\b"), "a\\\\b");
        let long = shown_name(&[b'='; 10_000], b"KEY");
        assert_eq!(long.len(), MAX_SHOWN_NAME_BYTES);
        assert!(long.starts_with("====") && long.ends_with("=...KEY"), "{long}");
    }

    #[test]
    fn set_keeps_first_position_and_takes_last_value() {
        let mut env = Environment::default();
        env.set(b"A", b"1".to_vec(), Source::Inherited);
        env.set(b"B", b"2".to_vec(), Source::Inherited);
        env.set(b"A", b"3".to_vec(), Source::CliEnv);
        let got: Vec<_> = env.vars().iter().map(|v| (v.name.clone(), v.value.clone(), v.source.clone())).collect();
        assert_eq!(got, vec![(b"A".to_vec(), b"3".to_vec(), Source::CliEnv), (b"B".to_vec(), b"2".to_vec(), Source::Inherited)]);
    }

    #[test]
    fn remove_keeps_the_order_and_the_index_of_the_rest() {
        let mut env = Environment::default();
        for n in ["A", "B", "C", "D"] {
            env.set(n.as_bytes(), n.as_bytes().to_vec(), Source::Inherited);
        }
        let before = env.exec_bytes();
        env.remove(b"B");
        env.remove(b"nope");
        let names: Vec<_> = env.vars().iter().map(|v| v.name.clone()).collect();
        assert_eq!(names, [b"A".to_vec(), b"C".to_vec(), b"D".to_vec()]);
        assert_eq!(env.get(b"D"), Some(&b"D"[..]));
        assert_eq!(env.get(b"B"), None);
        assert_eq!(env.exec_bytes(), before - (1 + 1 + 1 + 1 + std::mem::size_of::<usize>()));
        env.set(b"D", b"x".to_vec(), Source::CliEnv);
        assert_eq!(env.vars()[2].value, b"x");
    }
}
