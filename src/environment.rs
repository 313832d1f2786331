//! Building the program's environment (SPEC §2): inherited, then `envFrom`,
//! then `env`, each step overriding the one before.

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::rc::Rc;

use crate::error::{code, escape, Error};
use crate::expand::expand_capped;
use crate::envfile::{EnvFile, Key};
use crate::index::NameIndex;
use crate::limits::{
    MAX_EXEC_STRING_BYTES, MAX_EXEC_TOTAL_BYTES, MAX_IMPORTED_BYTES, MAX_IMPORTED_ENTRIES, MAX_NAME_BYTES,
    MAX_SHOWN_NAME_BYTES, MAX_SKIPPED_KEYS_SHOWN,
};
use crate::manifest::{EnvFrom, EnvSource, Manifest};
use crate::names::NameRule;
use crate::report::Warnings;
use crate::sources::{Loaded, LoadedDir, Sources};

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
    /// A file of an `--env-dir`, shown as `DIR/NAME`.
    EnvDir(Rc<str>),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Inherited => f.write_str("inherited"),
            Source::EnvFrom { file, line } | Source::FileKey { file, line } => write!(f, "{file}:{line}"),
            Source::ManifestEnv(i) => write!(f, "manifest env[{i}]"),
            Source::CliEnv => f.write_str("--env"),
            Source::FileEnv(shown) | Source::EnvDir(shown) => f.write_str(shown),
        }
    }
}

/// A variable of the environment, as [`Environment::vars`] shows it.
#[derive(Debug, Clone)]
pub struct Var<'e> {
    pub name: &'e [u8],
    pub value: &'e [u8],
    /// `NAME=VALUE`, as `execve` gets it (followed by a NUL in the environment's buffer).
    pub text: &'e [u8],
    pub source: Source,
}

impl Var<'_> {
    /// How messages name this variable: by name, except when the name was read
    /// from a file (then by file and line: names from files are not shown).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::EnvFrom { file, line } => format!("the variable from {file} line {line}"),
            Source::EnvDir(file) => format!("the variable from {file}"),
            _ => format!("variable {}", escape(self.name)),
        }
    }
}

/// Where a variable's `NAME=VALUE` is, in [`Texts::strings`] or in a held
/// file, and its [`Source`] in 8 bytes (24 bytes a variable, not 48 with the
/// `Source` itself: 5 of a start-up's page faults, docs/performance.md).
#[derive(Debug)]
struct Slot {
    /// 0 for `strings`, else 1 + the index of the file in [`Texts::files`].
    file: u32,
    /// Offsets fit in 32 bits: the strings stay within twice the largest
    /// environment `execve` takes (6 MiB) and 64 KiB, a file within 64 KiB.
    start: u32,
    name: u32,
    /// `NAME=VALUE`, without its NUL.
    len: u32,
    origin: Origin,
}

/// A [`Source`] in 8 bytes ([`Environment::origin`]).
#[derive(Debug, Clone, Copy)]
struct Origin {
    /// The kind (the low 3 bits) and the position of the file's name in [`Environment::origins`].
    kind: u32,
    /// The line, or the `env` index.
    line: u32,
}

static_assertions::assert_eq_size!(Slot, [u32; 6]);

/// The [`Origin::kind`] of a removed variable's slot (the sources are 0 to 6).
/// The slot stays where it was, and in the index, so that a removal moves
/// nothing: `--file-env` removes a `NAME_FILE` per name, and removing from
/// the middle of the list (ids shifting, the index filled again) made
/// 20,000 names take 5.6 s.
const REMOVED: u32 = 7;

impl Slot {
    fn removed(&self) -> bool {
        self.origin.kind == REMOVED
    }
}

/// The most env files whose strings an environment uses in place; the keys
/// of any further file are copied (a lookup per import stays short).
const MAX_HELD_FILES: usize = 64;

/// A file whose `NAME=VALUE\0` strings the environment may use in place (see [`Environment::hold`]).
#[derive(Debug, Clone, Copy)]
pub struct Held(u32);

/// The buffers the variables' `NAME=VALUE\0` strings are in.
#[derive(Debug, Default)]
struct Texts {
    /// Written by [`Environment::set`]: `NAME=VALUE\0`, appended; a replaced one
    /// stays behind until the dead bytes outgrow the live ones (then the buffer is compacted).
    strings: Vec<u8>,
    /// Env files whose strings are used where they are ([`EnvFile::raw`]).
    files: Vec<Rc<EnvFile>>,
}

impl Texts {
    /// `NAME=VALUE` of `s` (a NUL follows it).
    fn text(&self, s: &Slot) -> &[u8] {
        let buf = match s.file {
            0 => &self.strings[..],
            f => self.files[f as usize - 1].raw(),
        };
        &buf[s.start as usize..s.start as usize + s.len as usize]
    }
}

/// Variables in the order they were first defined; a later definition
/// replaces the value and source in place.
///
/// Each variable is written once, as the `NAME=VALUE\0` string `execve`
/// takes, into one buffer: `envp` points into it (docs/performance.md),
/// where a name and a value `Vec` per variable and then a third copy for
/// `execve` cost a page fault per 4 KiB of each. An env file's key written
/// as `NAME=VALUE` is not even copied: `envp` points into the file.
#[derive(Debug, Default)]
pub struct Environment {
    texts: Texts,
    /// The bytes of `texts.strings` no variable uses any more.
    dead: usize,
    vars: Vec<Slot>,
    /// Name -> position in `vars` (names stay in `texts`). Not a BTreeMap:
    /// with 1,000+ names sharing a prefix (`APP_CONFIG_KEY_…`), the B-tree's
    /// comparisons (musl's byte-at-a-time memcmp) were 40% of a start-up's
    /// instructions; nor a `HashMap<Vec<u8>, usize>`, which copied every name
    /// (docs/performance.md). The keyed hash of [`crate::index::hash`] keeps it flooding-resistant.
    index: NameIndex,
    /// What the variables take in an `execve` environment: `NAME=VALUE`, NUL, pointer.
    exec_bytes: usize,
    /// The longest `NAME=VALUE` ever set (replaced and removed ones too): a
    /// bound on the live ones, so a check of each against a limit is needed only above it.
    longest: u32,
    /// How many variables are still to come after the files' (the `env`
    /// entries): [`Environment::reserve`] makes room for them too, so that
    /// `vars` is not copied to a twice larger block for the last few.
    later: usize,
    /// The file names of the slots' sources; a name set again right after
    /// itself (a file's keys) is not listed again.
    origins: Vec<Rc<str>>,
    /// How many slots of `vars` are [`REMOVED`] (they stay there).
    removed: usize,
}

/// The name of `vars[i]`, for the index.
fn name_of<'s>(texts: &'s Texts, vars: &[Slot], i: u32) -> &'s [u8] {
    let s = &vars[i as usize];
    &texts.text(s)[..s.name as usize]
}

impl Environment {
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        let (texts, vars) = (&self.texts, &self.vars);
        let s = &vars[self.index.get(name, |i| name_of(texts, vars, i))? as usize];
        (!s.removed()).then(|| &texts.text(s)[s.name as usize + 1..])
    }

    pub fn set(&mut self, name: &[u8], value: impl AsRef<[u8]>, source: Source) {
        self.set_hashed(name, crate::index::hash(name), value.as_ref(), source)
    }

    /// [`Environment::set`] for a name whose [`crate::index::hash`] is known
    /// (an env file's key: hashed once for the file's table and this one).
    pub fn set_hashed(&mut self, name: &[u8], hash: u32, value: &[u8], source: Source) {
        let origin = self.origin(source);
        self.set_at(name, hash, value, origin)
    }

    fn set_at(&mut self, name: &[u8], hash: u32, value: &[u8], origin: Origin) {
        // Names and values never hold NUL: files and the manifest reject it, and
        // the process environment cannot carry it.
        debug_assert!(!name.contains(&0) && !value.contains(&0));
        let strings = &mut self.texts.strings;
        let start = strings.len() as u32;
        strings.extend_from_slice(name);
        strings.push(b'=');
        strings.extend_from_slice(value);
        strings.push(0);
        let len = (name.len() + 1 + value.len()) as u32;
        self.put(name, hash, Slot { file: 0, start, name: name.len() as u32, len, origin });
    }

    /// Lets the strings of `file` be used in place by [`Environment::set_in_place`];
    /// None past [`MAX_HELD_FILES`] files (their keys are then copied).
    pub fn hold(&mut self, file: &Rc<EnvFile>) -> Option<Held> {
        let files = &mut self.texts.files;
        let i = match files.iter().rposition(|f| Rc::ptr_eq(f, file)) {
            Some(i) => i,
            None if files.len() < MAX_HELD_FILES => {
                files.push(file.clone());
                files.len() - 1
            }
            None => return None,
        };
        Some(Held(i as u32 + 1))
    }

    /// [`Environment::set_hashed`] for a key of a held file whose
    /// `NAME=VALUE\0` is in the file ([`Key::in_place`]): `envp` will point
    /// there, nothing is copied.
    fn set_in_place(&mut self, file: Held, key: &Key, origin: Origin) {
        let Some(at) = key.in_place else { return self.set_at(key.name, key.hash, key.value, origin) };
        let len = (key.name.len() + 1 + key.value.len()) as u32;
        let slot = Slot { file: file.0, start: at as u32, name: key.name.len() as u32, len, origin };
        debug_assert!(self.texts.text(&slot) == [key.name, b"=", key.value].concat());
        self.put(key.name, key.hash, slot);
    }

    /// `source` in 8 bytes.
    fn origin(&mut self, source: Source) -> Origin {
        let mut file = |file: Rc<str>| {
            if !self.origins.last().is_some_and(|last| Rc::ptr_eq(last, &file)) {
                self.origins.push(file);
            }
            (self.origins.len() as u32 - 1) << 3
        };
        let (kind, line) = match source {
            Source::Inherited => (0, 0),
            Source::EnvFrom { file: f, line } => (1 | file(f), line),
            Source::FileKey { file: f, line } => (2 | file(f), line),
            Source::FileEnv(f) => (3 | file(f), 0),
            Source::ManifestEnv(i) => (4, i as u32),
            Source::CliEnv => (5, 0),
            Source::EnvDir(f) => (6 | file(f), 0),
        };
        Origin { kind, line }
    }

    /// The [`Source`] of `s`.
    fn source(&self, s: &Slot) -> Source {
        let Origin { kind, line } = s.origin;
        let file = || self.origins[(kind >> 3) as usize].clone();
        match kind & 7 {
            0 => Source::Inherited,
            1 => Source::EnvFrom { file: file(), line },
            2 => Source::FileKey { file: file(), line },
            3 => Source::FileEnv(file()),
            4 => Source::ManifestEnv(line as usize),
            6 => Source::EnvDir(file()),
            // 5; a removed slot's is never asked for (`vars` skips it).
            _ => Source::CliEnv,
        }
    }

    /// Sets the variable `name` (hashed `hash`) to `slot`: a new variable goes
    /// last, a known one keeps its place.
    fn put(&mut self, name: &[u8], hash: u32, slot: Slot) {
        self.longest = self.longest.max(slot.len);
        let (texts, vars) = (&self.texts, &self.vars);
        let found = self.index.get_or_insert_hashed(name, hash, vars.len() as u32, |i| name_of(texts, vars, i));
        match found {
            // Set again after a removal: a new variable, last; the index
            // forgets the removed slot (which stays, with its string, unused).
            Ok(i) if self.vars[i as usize].removed() => {
                let id = self.vars.len() as u32;
                self.exec_bytes += slot.len as usize + 1 + std::mem::size_of::<usize>();
                self.vars.push(slot);
                let (texts, vars) = (&self.texts, &self.vars);
                self.index.put(name, id, |i| name_of(texts, vars, i));
            }
            Ok(i) => {
                let old = &mut self.vars[i as usize];
                self.exec_bytes = self.exec_bytes - old.len as usize + slot.len as usize;
                if old.file == 0 {
                    self.dead += old.len as usize + 1;
                }
                *old = slot;
                self.compact_when_mostly_dead();
            }
            Err(_) => {
                self.exec_bytes += slot.len as usize + 1 + std::mem::size_of::<usize>();
                self.vars.push(slot);
            }
        }
    }

    /// Moves the live strings to the front of the buffer once the replaced
    /// ones take more than the live ones, than the whole environment (its
    /// `execve` bytes: a compaction walks every variable, those held in env
    /// files too, so it waits until it frees at least as many bytes as
    /// there are variables) and than 64 KiB: values replaced again and again
    /// (the same file imported many times) keep the buffer within twice the
    /// environment's size. In place, in the order the strings are in the
    /// buffer: a new buffer each time was, past the arena, a block that
    /// musl's allocator mapped and unmapped (12,000 values of 32 KB: 0.5 s of
    /// `mmap`/`munmap`, docs/security.md).
    fn compact_when_mostly_dead(&mut self) {
        let strings = &mut self.texts.strings;
        let live = strings.len() - self.dead;
        if self.dead <= live.max(self.exec_bytes).max(64 << 10) {
            return;
        }
        let vars = &mut self.vars;
        let mut order: Vec<u32> = (0..vars.len() as u32).filter(|&i| vars[i as usize].file == 0).collect();
        order.sort_unstable_by_key(|&i| vars[i as usize].start);
        let mut to = 0;
        for i in order {
            let s = &mut vars[i as usize];
            let (from, n) = (s.start as usize, s.len as usize + 1);
            strings.copy_within(from..from + n, to);
            s.start = to as u32;
            to += n;
        }
        strings.truncate(to);
        self.dead = 0;
    }

    /// Removes `name`; the variables after it keep their order. In constant
    /// time: the slot is marked [`REMOVED`], its string kept for the index.
    pub fn remove(&mut self, name: &[u8]) {
        let (texts, vars) = (&self.texts, &self.vars);
        let Some(i) = self.index.get(name, |i| name_of(texts, vars, i)) else { return };
        let slot = &mut self.vars[i as usize];
        if slot.removed() {
            return;
        }
        slot.origin.kind = REMOVED;
        self.exec_bytes -= slot.len as usize + 1 + std::mem::size_of::<usize>();
        self.removed += 1;
    }

    /// Room for `n` more variables of `bytes` bytes in all, so a file's keys
    /// grow the index once instead of rehashing it as it doubles, and the
    /// buffer is not copied to a twice larger block (docs/performance.md).
    pub fn reserve(&mut self, n: usize, bytes: usize) {
        self.vars.reserve(n + self.later);
        self.index.reserve(self.vars.len() + n + self.later);
        // And 256 bytes for each variable to come: room that is never written
        // costs no page (docs/performance.md).
        self.texts.strings.reserve(bytes + self.later * 256);
    }

    /// The bytes the variables take in an `execve` environment (strings, NULs, pointers).
    pub fn exec_bytes(&self) -> usize {
        self.exec_bytes
    }

    /// At least the length of the longest `NAME=VALUE` (without its NUL).
    pub fn longest_text(&self) -> usize {
        self.longest as usize
    }

    /// The bytes of the `NAME=VALUE` strings with their NULs.
    pub fn string_bytes(&self) -> usize {
        self.exec_bytes - self.len() * std::mem::size_of::<usize>()
    }

    pub fn len(&self) -> usize {
        self.vars.len() - self.removed
    }

    /// How many variables were read from files (env files, `fileKeyRef`,
    /// `NAME_FILE`, `--env-dir`): their slots' kinds, no [`Source`] built.
    pub fn from_files(&self) -> usize {
        self.vars.iter().filter(|s| matches!(s.origin.kind & 7, 1 | 2 | 3 | 6)).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The variables, in order.
    pub fn vars(&self) -> impl Iterator<Item = Var<'_>> + Clone + '_ {
        self.vars.iter().filter(|s| !s.removed()).map(|s| {
            let text = self.texts.text(s);
            Var { name: &text[..s.name as usize], value: &text[s.name as usize + 1..], text, source: self.source(s) }
        })
    }

    /// A pointer to each `NAME=VALUE` string (NUL-terminated, in `self`), then a null one.
    pub fn pointers(&self) -> Vec<*const libc::c_char> {
        let mut p: Vec<*const libc::c_char> = Vec::with_capacity(self.len() + 1);
        p.extend(self.vars.iter().filter(|s| !s.removed()).map(|s| self.texts.text(s).as_ptr().cast()));
        p.push(std::ptr::null());
        p
    }
}

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

/// An `ENVSHIM_*` variable, removed: a warning if envshim does not know it,
/// naming the closest known one. Always false (the variable is not kept).
#[cold]
fn unknown_config(name: &[u8], warnings: &mut Warnings) -> bool {
    if !crate::CONFIG_VARS.iter().any(|k| k.as_bytes() == name) {
        let shown = crate::error::escape(&name[..name.len().min(crate::limits::MAX_SHOWN_NAME_BYTES)]);
        let more = if name.len() > crate::limits::MAX_SHOWN_NAME_BYTES { "..." } else { "" };
        let hint = match crate::suggest::closest(name, crate::CONFIG_VARS) {
            Some(k) => format!("did you mean {k}?"),
            None => "see envshim --help".to_string(),
        };
        warnings.push(format!("{shown}{more} is not a variable envshim knows: removed from the environment ({hint})"));
    }
    false
}

pub fn build(inherited: Vec<(OsString, OsString)>, inputs: &Inputs, sources: &mut Sources) -> Built {
    let mut b = Built { env: Environment::default(), errors: Vec::new(), warnings: Warnings::default() };

    b.env.later = inputs.manifest.env.len() + inputs.cli_env.len();

    // 1. Inherited, minus envshim's own configuration.
    let inherited: Vec<(Vec<u8>, Vec<u8>)> = inherited
        .into_iter()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .filter(|(k, _)| !k.starts_with(b"ENVSHIM_") || unknown_config(k, &mut b.warnings))
        .collect();
    for (k, v) in &inherited {
        b.env.set(k, v, Source::Inherited);
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
        match sources.load_in_volume(&file.volume_name, &file.path, &format_args!("manifest: envFrom[{i}].fileRef"), &mut b.errors) {
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

    for path in inputs.env_dirs {
        if full {
            break;
        }
        match sources.load_dir(std::ffi::OsStr::from_bytes(path), &mut b.errors) {
            LoadedDir::Files(files, display) => {
                let bytes = files.iter().map(|f| f.name.len() + f.value.len()).sum();
                if imported.charge_counts(&mut b, files.len(), bytes, || format!("--env-dir {display}"), &mut full) {
                    import_dir(&mut b, files, &display, inputs.rule, &mut full)
                }
            }
            LoadedDir::Missing(display) => {
                b.errors.push(sources.required(&display, format!("--env-dir {display}: directory not found")))
            }
            LoadedDir::Failed => {}
        }
    }
    // 3. env: the manifest's, then --env.
    let mut scratch = Vec::new();
    let mut inherited_names: Option<NameIndex> = None;
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
        // Formatted only for a message: once per entry, it was 5% of a start-up.
        let what = || format!("manifest: env[{i}] ({})", escape(name));
        match &var.source {
            EnvSource::Value(v) => {
                let value = expand_value(&mut b, &mut scratch, name, v.as_bytes(), &what, &mut full);
                if inputs.warn_unresolved && has_reference(value) {
                    unresolved_warning(&mut b.warnings, &b.env, v.as_bytes(), &what);
                }
                b.env.set(name, value, Source::ManifestEnv(i));
            }
            EnvSource::Platform => {
                // The last of a name given twice, as step 1 kept it. Found
                // through an index of the inherited names, made for the first
                // such entry (a scan per entry made 15,000 entries and 120,000
                // inherited variables take 2 s).
                let by_name = inherited_names.get_or_insert_with(|| {
                    let mut index = NameIndex::with_capacity(inherited.len());
                    for (id, (k, _)) in inherited.iter().enumerate() {
                        index.put(k, id as u32, |i| &inherited[i as usize].0);
                    }
                    index
                });
                if let Some(id) = by_name.get(name, |i| &inherited[i as usize].0) {
                    b.env.set(name, &inherited[id as usize].1, Source::Inherited);
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
                let at = format_args!("manifest: env[{i}].valueFrom.fileKeyRef");
                match sources.load_in_volume(&file.volume_name, &file.path, &at, &mut b.errors) {
                    Loaded::File(f, display) => match f.get(key) {
                        Some((value, line)) => {
                            b.env.set(name, value, Source::FileKey { file: display, line })
                        }
                        None if file.optional => {}
                        None => b.errors.push(Error::new(
                            code::NOINPUT,
                            format!("{}: key \"{}\" not found in {display}", what(), escape(key)),
                        )),
                    },
                    Loaded::Missing(display) if !file.optional => {
                        b.errors.push(sources.required(&display, format!("{}: file {display} not found", what())))
                    }
                    _ => {}
                }
            }
        }
        if stop_when_full(&mut b, &mut full, what) {
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
        let what = || format!("--env #{} ({})", i + 1, escape(name));
        let input = value;
        let value = expand_value(&mut b, &mut scratch, name, value, &what, &mut full);
        if inputs.warn_unresolved && has_reference(value) {
            unresolved_warning(&mut b.warnings, &b.env, input, &what);
        }
        b.env.set(name, value, Source::CliEnv);
        if stop_when_full(&mut b, &mut full, what) {
            break;
        }
    }
    for w in sources.warnings.drain(..) {
        b.warnings.push(w);
    }
    b
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
fn expand_value<'v>(
    b: &mut Built,
    value: &'v mut Vec<u8>,
    name: &[u8],
    input: &[u8],
    what: &dyn Fn() -> String,
    full: &mut bool,
) -> &'v [u8] {
    let per_string = MAX_EXEC_STRING_BYTES.saturating_sub(name.len() + 1);
    let budget = MAX_EXEC_TOTAL_BYTES.saturating_sub(b.env.exec_bytes());
    value.clear();
    // Room for the usual result at once: grown from empty, the buffer was
    // reallocated four or five times a value (docs/performance.md).
    value.reserve((input.len() + 128).min(per_string.min(budget)));
    let len = expand_capped(input, |n| b.env.get(n), value, per_string.min(budget));
    if len > per_string {
        b.errors.push(Error::new(
            code::NOEXEC,
            format!(
                "{}: is {} bytes as NAME=VALUE after expansion, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes",
                what(),
                name.len() + 1 + len
            ),
        ));
        return &[];
    }
    if len > budget {
        if !*full {
            *full = true;
            b.errors.push(Error::new(
                code::NOEXEC,
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
fn stop_when_full(b: &mut Built, full: &mut bool, place: impl FnOnce() -> String) -> bool {
    if *full {
        return true;
    }
    if b.env.exec_bytes() <= MAX_EXEC_TOTAL_BYTES {
        return false;
    }
    *full = true;
    let largest = b.env.vars().max_by_key(|v| v.text.len()).map_or(String::new(), |v| {
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
        let bytes = file.unique_bytes().saturating_add(file.unique_len().saturating_mul(prefix_cost));
        self.charge_counts(b, file.unique_len(), bytes, what, full)
    }

    /// Charges `keys` entries of `bytes` bytes in all.
    fn charge_counts(&mut self, b: &mut Built, keys: usize, bytes: usize, what: impl FnOnce() -> String, full: &mut bool) -> bool {
        self.entries += keys;
        self.bytes = self.bytes.saturating_add(bytes);
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
fn import(b: &mut Built, file: &Rc<EnvFile>, display: &Rc<str>, prefix: &[u8], rule: NameRule, full: &mut bool) {
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
    // The file's keys passed the relaxed rule when it was parsed, and a
    // relaxed name prefixed by a relaxed name is one: no byte to check again.
    let valid = rule == NameRule::Relaxed && (prefix.is_empty() || rule.accepts(prefix));
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
fn import_dir(b: &mut Built, files: Vec<crate::envdir::DirFile>, display: &Rc<str>, rule: NameRule, full: &mut bool) {
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
        env.set(b"KUBERNETES_SERVICE_HOST", host, Source::Inherited);
        env.set(b"KUBERNETES_SERVICE_PORT", port, Source::Inherited);
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
        env.set(b"A", b"1", Source::Inherited);
        env.set(b"B", b"2", Source::Inherited);
        env.set(b"A", b"3", Source::CliEnv);
        let got: Vec<_> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec(), v.source.clone())).collect();
        assert_eq!(got, vec![(b"A".to_vec(), b"3".to_vec(), Source::CliEnv), (b"B".to_vec(), b"2".to_vec(), Source::Inherited)]);
    }

    #[test]
    fn remove_keeps_the_order_and_the_index_of_the_rest() {
        let mut env = Environment::default();
        for n in ["A", "B", "C", "D"] {
            env.set(n.as_bytes(), n, Source::Inherited);
        }
        let before = env.exec_bytes();
        env.remove(b"B");
        env.remove(b"nope");
        let names: Vec<_> = env.vars().map(|v| v.name.to_vec()).collect();
        assert_eq!(names, [b"A".to_vec(), b"C".to_vec(), b"D".to_vec()]);
        assert_eq!(env.get(b"D"), Some(&b"D"[..]));
        assert_eq!(env.get(b"B"), None);
        assert_eq!(env.exec_bytes(), before - (1 + 1 + 1 + 1 + std::mem::size_of::<usize>()));
        env.set(b"D", b"x", Source::CliEnv);
        assert_eq!(env.vars().nth(2).unwrap().value, b"x");
    }

    #[test]
    fn a_name_set_again_after_its_removal_comes_last() {
        let mut env = Environment::default();
        for n in ["A", "B", "C"] {
            env.set(n.as_bytes(), n, Source::Inherited);
        }
        env.remove(b"A");
        env.remove(b"A");
        assert_eq!((env.len(), env.get(b"A")), (2, None));
        env.set(b"A", b"again", Source::CliEnv);
        let got: Vec<_> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec())).collect();
        assert_eq!(got, [(b"B".to_vec(), b"B".to_vec()), (b"C".to_vec(), b"C".to_vec()), (b"A".to_vec(), b"again".to_vec())]);
        assert_eq!(env.get(b"A"), Some(&b"again"[..]));
        env.remove(b"A");
        assert_eq!(env.get(b"A"), None);
        assert_eq!(env.string_bytes(), env.vars().map(|v| v.text.len() + 1).sum::<usize>());
    }

    /// What `--file-env` does for each of 20,000 names: set NAME, remove
    /// NAME_FILE; replaced values compacted on the way. Every string stays
    /// where `envp` will point, and nothing removed is left in it.
    #[test]
    fn many_removals_between_sets_and_compactions() {
        let mut env = Environment::default();
        let n = 20_000;
        for i in 0..n {
            env.set(format!("S{i}_FILE").as_bytes(), format!("/run/secrets/{i}"), Source::Inherited);
        }
        for i in 0..n {
            env.set(format!("S{i}").as_bytes(), vec![b'v'; 100], Source::FileEnv("f".into()));
            env.set(format!("S{i}").as_bytes(), format!("{i}"), Source::FileEnv("f".into()));
            env.remove(format!("S{i}_FILE").as_bytes());
        }
        assert_eq!(env.len(), n);
        let p = env.pointers();
        assert_eq!(p.len(), n + 1);
        for (i, (v, &ptr)) in env.vars().zip(&p).enumerate() {
            assert_eq!(v.text, format!("S{i}={i}").as_bytes());
            assert_eq!(v.text.as_ptr(), ptr.cast());
        }
        assert_eq!(env.exec_bytes(), env.string_bytes() + n * std::mem::size_of::<usize>());
    }

    #[test]
    fn file_strings_used_in_place_survive_replacement_and_compaction() {
        let file = Rc::new(EnvFile::parse(b"A=1\nB = 2\nC=3\nA=4\n".to_vec()).unwrap());
        let mut env = Environment::default();
        env.set(b"C", b"inherited", Source::Inherited);
        let held = env.hold(&file).unwrap();
        assert!(env.hold(&file).is_some_and(|h| h.0 == held.0));
        for k in file.unique_keys() {
            let origin = env.origin(Source::EnvFrom { file: "f".into(), line: k.line });
            env.set_in_place(held, &k, origin);
        }
        let raw = file.raw().as_ptr_range();
        // A (its last value) and C point into the file; B (blanks around `=`) was copied.
        let texts: Vec<(&[u8], bool)> = env.vars().map(|v| (v.text, raw.contains(&v.text.as_ptr()))).collect();
        assert_eq!(texts, [(&b"C=3"[..], true), (&b"A=4"[..], true), (&b"B=2"[..], false)]);
        // Replacing an in-place string leaves no dead bytes in the buffer; compaction keeps it.
        let before = env.string_bytes();
        for i in 0..20_000u32 {
            env.set(b"N", i.to_string(), Source::CliEnv);
        }
        env.set(b"A", b"x", Source::CliEnv);
        assert_eq!(env.get(b"C"), Some(&b"3"[..]));
        assert_eq!(env.get(b"A"), Some(&b"x"[..]));
        assert_eq!(env.string_bytes(), before - 4 + 4 + 8);
        for (v, &p) in env.vars().zip(&env.pointers()) {
            assert_eq!(p.cast::<u8>(), v.text.as_ptr());
            // SAFETY: each pointer is at a live `NAME=VALUE` followed by a NUL.
            assert_eq!(unsafe { *p.cast::<u8>().add(v.text.len()) }, 0);
        }
        env.remove(b"C");
        assert_eq!(env.get(b"C"), None);
        assert_eq!(env.vars().map(|v| v.name).collect::<Vec<_>>(), [&b"A"[..], b"B", b"N"]);
    }

    #[test]
    fn compaction_in_place_keeps_every_variable_and_its_order() {
        // Variables replaced in a scattered order with values of many sizes:
        // their strings are in the buffer out of the variables' order, and
        // each compaction (dead bytes past the live ones and 64 KiB) moves them.
        let mut env = Environment::default();
        let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut compactions = 0;
        for round in 0..3_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let name = format!("V{}", x % 40).into_bytes();
            let value = vec![b'a' + (round % 26) as u8; (x >> 8) as usize % 3_000];
            let dead = env.dead;
            env.set(&name, &value, Source::CliEnv);
            compactions += usize::from(env.dead < dead);
            match model.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 = value,
                None => model.push((name, value)),
            }
            let got: Vec<(Vec<u8>, Vec<u8>)> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec())).collect();
            assert_eq!(got, model, "round {round}");
        }
        assert!(compactions > 10, "only {compactions} compactions");
        assert_eq!(env.string_bytes(), model.iter().map(|(n, v)| n.len() + v.len() + 2).sum::<usize>());
        assert!(env.texts.strings.len() - env.dead == env.string_bytes());
    }

    #[test]
    fn at_most_max_held_files() {
        let mut env = Environment::default();
        let files: Vec<Rc<EnvFile>> =
            (0..=MAX_HELD_FILES).map(|i| Rc::new(EnvFile::parse(format!("K{i}=v\n").into_bytes()).unwrap())).collect();
        for (i, f) in files.iter().enumerate() {
            let held = env.hold(f);
            assert_eq!(held.is_some(), i < MAX_HELD_FILES);
            let k = f.unique_keys().next().unwrap();
            match held {
                Some(h) => {
                    let origin = env.origin(Source::Inherited);
                    env.set_in_place(h, &k, origin)
                }
                None => env.set_hashed(k.name, k.hash, k.value, Source::Inherited),
            }
        }
        assert_eq!(env.len(), MAX_HELD_FILES + 1);
        assert_eq!(env.get(format!("K{MAX_HELD_FILES}").as_bytes()), Some(&b"v"[..]));
    }

    #[test]
    fn replaced_values_are_compacted_away_and_envp_points_at_the_live_strings() {
        let mut env = Environment::default();
        env.set(b"KEEP", b"k", Source::Inherited);
        let big = vec![b'v'; 10_000];
        for i in 0..1_000u32 {
            env.set(b"BIG", &big, Source::ManifestEnv(i as usize));
            env.set(b"N", i.to_string(), Source::CliEnv);
        }
        // 10 MB were written; the buffer keeps at most the live bytes and 64 KiB more, twice.
        assert!(env.texts.strings.len() <= 2 * (env.string_bytes() + (64 << 10)), "{}", env.texts.strings.len());
        assert_eq!(env.get(b"N"), Some(&b"999"[..]));
        assert_eq!(env.get(b"BIG"), Some(&big[..]));
        assert_eq!(env.get(b"KEEP"), Some(&b"k"[..]));
        let p = env.pointers();
        assert_eq!(p.len(), 4);
        assert!(p[3].is_null());
        for (v, &ptr) in env.vars().zip(&p) {
            // Each pointer is at its variable's text, which a NUL ends.
            assert_eq!(ptr.cast::<u8>(), v.text.as_ptr());
            let at = v.text.as_ptr() as usize - env.texts.strings.as_ptr() as usize;
            assert_eq!(env.texts.strings[at + v.text.len()], 0);
        }
        assert_eq!(env.string_bytes(), env.vars().map(|v| v.text.len() + 1).sum::<usize>());
    }
}
