//! The program's environment (docs/reference.md §2): inherited, then `envFrom`, then
//! `env`, each step overriding the one before. This file is the store (each
//! variable's name, value and source, in order, indexed, with its `envp`
//! string written once); `build.rs` fills it in the order docs/reference.md §2 gives.

use std::fmt;
use std::rc::Rc;

use crate::envfile::{EnvFile, Key};
use crate::error::escape;
use crate::index::NameIndex;

pub const SERVICE_URL: &[u8] = b"KUBERNETES_SERVICE_URL";

/// Where a variable's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Inherited,
    /// A key of an `envFrom` file: its name came from the file.
    EnvFrom {
        file: Rc<str>,
        line: u32,
    },
    /// `env[i]` of the manifest via `fileKeyRef`.
    FileKey {
        file: Rc<str>,
        line: u32,
    },
    /// `--file-env NAME`: the file named by `NAME_FILE`, shown as `NAME_FILE PATH`.
    FileEnv(Rc<str>),
    /// `env[i]` of the manifest, a literal.
    ManifestEnv(usize),
    /// A `--env` option.
    CliEnv,
    /// A file of an `--env-dir`, shown as `DIR/NAME`.
    EnvDir(Rc<str>),
    /// A platform-resolved `env` entry (its inherited value), shown as what
    /// it names: `configMapKeyRef settings/MODE`.
    Platform(Rc<str>),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Inherited => f.write_str("inherited"),
            Source::EnvFrom { file, line } | Source::FileKey { file, line } => write!(f, "{file}:{line}"),
            Source::ManifestEnv(i) => write!(f, "manifest env[{i}]"),
            Source::CliEnv => f.write_str("--env"),
            Source::FileEnv(shown) | Source::EnvDir(shown) | Source::Platform(shown) => f.write_str(shown),
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
/// file, and its [`Source`] in 8 bytes: 24 bytes a variable, half a slot
/// holding the `Source` itself (fewer pages to fault in).
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
    /// The kind (the low [`KIND_BITS`] bits) and the position of the file's name in [`Environment::origins`].
    kind: u32,
    /// The line, or the `env` index.
    line: u32,
}

static_assertions::assert_eq_size!(Slot, [u32; 6]);

/// The bits of [`Origin::kind`] that hold the kind of source.
const KIND_BITS: u32 = 4;
const KIND_MASK: u32 = (1 << KIND_BITS) - 1;

/// The [`Origin::kind`] of a removed variable's slot (the sources are 0 to 7).
/// The slot stays where it was, and in the index, so that a removal moves
/// nothing: `--file-env` removes a `NAME_FILE` per name, and removing from
/// the middle of the list (ids shifting, the index filled again) is quadratic.
const REMOVED: u32 = KIND_MASK;

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
    /// `NAME=VALUE` of `s` (a NUL follows it). (Inlined: called for every
    /// variable as `envp` is built, and by each lookup.)
    #[inline(always)]
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
    /// comparisons (musl's byte-at-a-time memcmp) dominated a start-up; nor a
    /// `HashMap<Vec<u8>, usize>`, which copied every name (docs/performance.md). The keyed hash of [`crate::index::hash`] keeps it flooding-resistant.
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

/// The name of `vars[i]`, for the index (inlined into its probes).
#[inline]
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
    #[inline]
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
            (self.origins.len() as u32 - 1) << KIND_BITS
        };
        let (kind, line) = match source {
            Source::Inherited => (0, 0),
            Source::EnvFrom { file: f, line } => (1 | file(f), line),
            Source::FileKey { file: f, line } => (2 | file(f), line),
            Source::FileEnv(f) => (3 | file(f), 0),
            Source::ManifestEnv(i) => (4, i as u32),
            Source::CliEnv => (5, 0),
            Source::EnvDir(f) => (6 | file(f), 0),
            Source::Platform(f) => (7 | file(f), 0),
        };
        Origin { kind, line }
    }

    /// The [`Source`] of `s`.
    fn source(&self, s: &Slot) -> Source {
        let Origin { kind, line } = s.origin;
        let file = || self.origins[(kind >> KIND_BITS) as usize].clone();
        match kind & KIND_MASK {
            0 => Source::Inherited,
            1 => Source::EnvFrom { file: file(), line },
            2 => Source::FileKey { file: file(), line },
            3 => Source::FileEnv(file()),
            4 => Source::ManifestEnv(line as usize),
            6 => Source::EnvDir(file()),
            7 => Source::Platform(file()),
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
    /// musl's allocator mapped and unmapped (docs/security.md).
    fn compact_when_mostly_dead(&mut self) {
        let strings = &mut self.texts.strings;
        let live = strings.len() - self.dead;
        if self.dead <= live.max(self.exec_bytes).max(64 << 10) {
            return;
        }
        let vars = &mut self.vars;
        let mut order: Vec<u32> = (0..vars.len() as u32).filter(|&i| vars[i as usize].file == 0).collect();
        crate::sort::sort_by(&mut order, |&a, &b| vars[a as usize].start < vars[b as usize].start);
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
    pub fn read_from_files(&self) -> usize {
        self.vars.iter().filter(|s| matches!(s.origin.kind & KIND_MASK, 1 | 2 | 3 | 6)).count()
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
        // Each buffer's start looked up once, not through `Texts::text` for
        // every variable (its file's `Rc` and a slice of it, a cost at every
        // start: docs/performance-history.md, clap as the one parser). A slot's start
        // is within its buffer ([`Texts::text`] slices it).
        let t = &self.texts;
        let bases: Vec<*const u8> = std::iter::once(t.strings.as_ptr()).chain(t.files.iter().map(|f| f.raw().as_ptr())).collect();
        p.extend(self.vars.iter().filter(|s| !s.removed()).map(|s| bases[s.file as usize].wrapping_add(s.start as usize).cast()));
        p.push(std::ptr::null());
        p
    }
}

mod build;
mod engine;
mod import;
mod platform;
pub use build::{build, has_reference, rule_text, unresolved_warning, Built, Inputs};

#[cfg(test)]
mod tests;
