//! Sources: the volumes and the env files read from them. Each file is read
//! and parsed once, however many entries refer to it, and each failure to read
//! or parse it is reported once.

use std::cell::OnceCell;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;

use crate::envfile::{kubelet, portable, EnvFile, Grammar};
use crate::error::{escape, Error, ExitCode, JsonPath};
pub use crate::files::read_error;
use crate::files::{self, Awaited, ReadError};
use crate::index::{same, NameIndex};
use crate::limits::{MAX_ENV_FILE_BYTES, MAX_READ_BYTES};
use crate::sys;

/// What loading a file gave.
pub enum Loaded {
    File(Rc<EnvFile>, Rc<str>),
    /// Missing: the caller decides (optional or not), naming its entry, and
    /// reports a required one with [`Sources::required`].
    Missing(Missing),
    /// Failed, and the error is already reported.
    Failed,
}

/// What loading an `--env-dir` gave.
pub enum LoadedDir {
    /// Its files, in byte order of their names, and how messages name the directory.
    Files(Vec<crate::envdir::DirFile>, Rc<str>),
    /// Missing, like a file ([`Sources::required`] reports it; `--wait` waits for it).
    Missing(Missing),
    Failed,
}

/// A file that was missing. Shows as its name in messages.
pub struct Missing {
    pub display: Rc<str>,
    /// Its entry in `Sources::files`.
    slot: usize,
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display)
    }
}

struct Volume {
    name: String,
    mount_path: OsString,
    root: OnceCell<Option<OwnedFd>>,
}

enum Outcome {
    Parsed(Rc<EnvFile>),
    Missing,
    Failed,
}

struct Cached {
    volume: Option<usize>,
    /// [`file_key`]: the volume's number, then the path.
    key: Vec<u8>,
    display: Rc<str>,
    outcome: Outcome,
    /// Missing, and an entry that is not optional needs it (`--wait` waits for it).
    required: bool,
}

pub struct Sources {
    volumes: Vec<Volume>,
    /// Each volume name's last mount, by name.
    volume_names: NameIndex,
    files: Vec<Cached>,
    /// Each file by its key (a manifest may name thousands of volumes and
    /// files: a search through the list for each entry was quadratic).
    file_keys: NameIndex,
    /// The key being looked up (a found file allocates nothing); a new
    /// file takes it.
    probe: Vec<u8>,
    /// The file the last entry named: most entries name the same file as the
    /// one before (a file's keys one after another), so it is tried before
    /// the lookups, which hash the names.
    last: Option<usize>,
    /// Set after `--wait` ran out: `after waiting DURATION`, added to the messages of missing files.
    waited: Option<Rc<str>>,
    /// Bytes of env files read so far (bounded by MAX_READ_BYTES).
    read: usize,
    /// Warnings about the files read (a name given twice), once per file.
    pub warnings: Vec<String>,
    /// How env files are read, and whether each is linted for the kubelet's grammar first.
    read_as: ReadAs,
}

/// How env files are read (`--env-grammar`), and whether every line the
/// kubelet's grammar rejects or reads otherwise is reported (`check
/// --env-grammar kubelet`: the file then fails with them all).
#[derive(Clone, Copy, Default)]
pub struct ReadAs {
    pub grammar: Grammar,
    pub lint: bool,
}

impl Sources {
    /// `mounts` in order: the manifest's `volumeMounts`, then `--volume`s; for
    /// a name given twice the last one wins.
    pub fn new(mounts: Vec<(String, OsString)>) -> Self {
        let volumes: Vec<Volume> = mounts.into_iter().map(|(name, mount_path)| Volume { name, mount_path, root: OnceCell::new() }).collect();
        let mut volume_names = NameIndex::with_capacity(volumes.len());
        for (i, v) in volumes.iter().enumerate() {
            volume_names.put(v.name.as_bytes(), i as u32, |i| volumes[i as usize].name.as_bytes());
        }
        Sources {
            volumes,
            volume_names,
            files: Vec::new(),
            file_keys: NameIndex::default(),
            probe: Vec::new(),
            last: None,
            waited: None,
            read: 0,
            warnings: Vec::new(),
            read_as: ReadAs::default(),
        }
    }

    /// Reads the env files as `read_as` says (envshim's grammar by default).
    pub fn read_as(mut self, read_as: ReadAs) -> Self {
        self.read_as = read_as;
        self
    }

    /// The error for a missing file that an entry needs (`message` names the
    /// entry and the file); `--wait` waits for it.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn required(&mut self, missing: &Missing, message: String) -> Error {
        self.files[missing.slot].required = true;
        missing_error(message, self.waited.as_deref())
    }

    /// The missing files that entries need, to be looked for again.
    pub fn awaited(&self) -> Vec<Awaited<'_>> {
        let awaited = |f: &Cached| Awaited {
            root: f.volume.map(|vi| self.volumes[vi].mount_path.as_os_str()),
            path: f.key[KEY_PATH..].to_vec(),
            display: f.display.clone(),
        };
        self.files.iter().filter(|f| f.required).map(awaited).collect()
    }

    /// Every file looked at (read, missing or failed): its volume's
    /// mountPath (None: a path as given) and its path.
    pub fn files_read(&self) -> impl Iterator<Item = (Option<&OsStr>, &[u8])> {
        self.files.iter().map(|f| (f.volume.map(|vi| self.volumes[vi].mount_path.as_os_str()), &f.key[KEY_PATH..]))
    }

    /// Forgets every file read and every volume root opened, to read them
    /// all again after a wait (a mountPath may have been re-pointed
    /// meanwhile); `waited` is set when the wait ran out.
    pub fn reset(&mut self, waited: Option<Rc<str>>) {
        for v in &mut self.volumes {
            v.root = OnceCell::new();
        }
        self.files.clear();
        self.file_keys.clear();
        self.last = None;
        self.waited = waited;
        self.read = 0;
        self.warnings.clear();
    }

    /// Loads `path` inside the volume `volume`; `at` makes the manifest
    /// entry's JSON path (`env[3].valueFrom.fileKeyRef`) for configuration
    /// errors (only for one: an entry that loads builds none).
    pub fn load_in_volume(&mut self, volume: &str, path: &str, at: &dyn Fn() -> JsonPath, errors: &mut Vec<Error>) -> Loaded {
        let volumes = &self.volumes;
        let last = self.last.and_then(|i| self.files[i].volume).filter(|&vi| same(volumes[vi].name.as_bytes(), volume.as_bytes()));
        let Some(vi) = last.or_else(|| self.volume_names.get(volume.as_bytes(), |i| volumes[i as usize].name.as_bytes()).map(|i| i as usize)) else {
            let what = format!("volume \"{}\" is not in volumeMounts (or --volume)", escape(volume.as_bytes()));
            errors.push(Error::in_manifest(ExitCode::Config, "manifest", at().key("volumeName"), None, what));
            return Loaded::Failed;
        };
        // The path without empty and `.` components; built only when it has
        // some (an allocation per `fileKeyRef` otherwise).
        let plain = match check_path(path) {
            Ok(plain) => plain,
            Err(why) => {
                errors.push(Error::in_manifest(ExitCode::Config, "manifest", at().key("path"), None, why));
                return Loaded::Failed;
            }
        };
        let joined: String;
        let key: &[u8] = if plain {
            path.as_bytes()
        } else {
            joined = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect::<Vec<_>>().join("/");
            joined.as_bytes()
        };
        if key.is_empty() {
            // `/` or `.`: the volume root, a directory (not "missing", which optional would cover).
            errors.push(Error::in_manifest(ExitCode::Config, "manifest", at().key("path"), None, "names the volume root, not a regular file"));
            return Loaded::Failed;
        }
        let files = &self.files;
        let last = self.last.filter(|&i| files[i].volume == Some(vi) && same(&files[i].key[KEY_PATH..], key));
        if let Some(i) = last.or_else(|| self.find(Some(vi), key)) {
            self.last = Some(i);
            return self.loaded(i);
        }
        let display: Rc<str> = format!("{}/{}", escape(volume.as_bytes()), escape(key)).into();
        let v = &self.volumes[vi];
        let root = v.root.get_or_init(|| open_root(v, errors));
        let outcome = match root {
            None => Outcome::Failed,
            Some(_) if self.read > MAX_READ_BYTES => Outcome::Failed,
            // Messages about the file name it as the manifest does: by volume and path.
            Some(root) => outcome(
                files::read_in_root(root.as_fd(), key, MAX_ENV_FILE_BYTES),
                Named::Volume(volume, key),
                &display,
                self.read_as,
                &mut self.read,
                errors,
                &mut self.warnings,
            ),
        };
        self.add(Some(vi), display, outcome)
    }

    /// Loads a `--env-file` path, as given (relative to the working directory).
    pub fn load_path(&mut self, path: &OsStr, errors: &mut Vec<Error>) -> Loaded {
        let bytes = path.as_bytes();
        if let Some(i) = self.find(None, bytes) {
            self.last = Some(i);
            return self.loaded(i);
        }
        let display: Rc<str> = escape(bytes).into();
        let outcome = if self.read > MAX_READ_BYTES {
            Outcome::Failed
        } else {
            outcome(files::read_path(path, MAX_ENV_FILE_BYTES), Named::Path, &display, self.read_as, &mut self.read, errors, &mut self.warnings)
        };
        self.add(None, display, outcome)
    }

    /// Reads the directory `path` (`--env-dir`), as given (relative to the working directory).
    pub fn load_dir(&mut self, path: &OsStr, errors: &mut Vec<Error>) -> LoadedDir {
        let bytes = path.as_bytes();
        // `DIR/NAME` in messages and render, without a doubled `/`.
        let trimmed = match bytes.iter().rposition(|&b| b != b'/') {
            Some(end) => &bytes[..=end],
            None => &bytes[..bytes.len().min(1)],
        };
        let display: Rc<str> = escape(trimmed).into();
        match crate::envdir::read(path, &display, &mut self.read, errors) {
            crate::envdir::DirRead::Files(files) => LoadedDir::Files(files, display),
            crate::envdir::DirRead::Failed => LoadedDir::Failed,
            crate::envdir::DirRead::Missing => {
                let loaded = match self.find(None, bytes) {
                    Some(i) => self.loaded(i),
                    None => self.add(None, display, Outcome::Missing),
                };
                match loaded {
                    Loaded::Missing(m) => LoadedDir::Missing(m),
                    _ => LoadedDir::Failed,
                }
            }
        }
    }

    /// The file `path` in `volume` (none: a `--env-file` path), if it was
    /// loaded; leaves its key in `probe` for [`Sources::add`].
    fn find(&mut self, volume: Option<usize>, path: &[u8]) -> Option<usize> {
        file_key(&mut self.probe, volume, path);
        let files = &self.files;
        self.file_keys.get(&self.probe, |i| &files[i as usize].key).map(|i| i as usize)
    }

    /// Lists the file [`Sources::find`] did not find (its key in `probe`).
    fn add(&mut self, volume: Option<usize>, display: Rc<str>, outcome: Outcome) -> Loaded {
        let id = self.files.len() as u32;
        self.files.push(Cached { volume, key: std::mem::take(&mut self.probe), display, outcome, required: false });
        let files = &self.files;
        self.file_keys.put(&files[id as usize].key, id, |i| &files[i as usize].key);
        self.last = Some(id as usize);
        self.loaded(id as usize)
    }

    fn loaded(&self, slot: usize) -> Loaded {
        let f = &self.files[slot];
        match &f.outcome {
            Outcome::Parsed(parsed) => Loaded::File(parsed.clone(), f.display.clone()),
            Outcome::Missing => Loaded::Missing(Missing { display: f.display.clone(), slot }),
            Outcome::Failed => Loaded::Failed,
        }
    }
}

impl Sources {
    /// `check`'s warning for each file read with an unquoted value that a
    /// ` #` comment ended (`PW=abc #def` is `abc`): its first such line and
    /// name, and how many more; never a value.
    #[cold]
    pub fn cut_values(&self, warnings: &mut crate::report::Warnings) {
        for f in &self.files {
            let Outcome::Parsed(parsed) = &f.outcome else { continue };
            let Some((name, line, count)) = parsed.cut_at_comment() else { continue };
            let shown = match f.volume {
                Some(vi) => format!("volume {}, path {}", escape(self.volumes[vi].name.as_bytes()), escape(&f.key[KEY_PATH..])),
                None => format!("env file {}", f.display),
            };
            let more = match count - 1 {
                0 => String::new(),
                1 => "; 1 more line ends the same way".to_string(),
                n => format!("; {n} more lines end the same way"),
            };
            warnings.push(format!(
                "{shown}, line {line}: the unquoted value of {} ends before ' #', which starts a comment: quote the value if the # is part of it{more}",
                escape(&name[..name.len().min(crate::limits::MAX_SHOWN_NAME_BYTES)])
            ));
        }
    }
}

/// Where a file's path starts in its key.
const KEY_PATH: usize = 4;

/// A file's key, written into `key`: its volume's number (all ones for a path
/// outside volumes) in [`KEY_PATH`] bytes, then its path.
fn file_key(key: &mut Vec<u8>, volume: Option<usize>, path: &[u8]) {
    let volume = volume.map_or(u32::MAX, |vi| vi as u32);
    key.clear();
    key.extend_from_slice(&volume.to_le_bytes());
    key.extend_from_slice(path);
}

/// A file missing (66), with `after waiting DURATION` once `--wait` ran out.
#[cfg_attr(envshim_size, optimize(size))]
pub fn missing_error(message: String, waited: Option<&str>) -> Error {
    match waited {
        Some(w) => Error::new(ExitCode::NoInput, format!("{message} after waiting {w}")),
        None => Error::new(ExitCode::NoInput, message),
    }
}

/// Turns a read into a parsed file, or reports why not (once per file),
/// naming it as `named` says (`env file ./app.env`, `volume config, path
/// app.env`); an error's `file` is `display` (`./app.env`, `config/app.env`,
/// as `render` names it).
/// Counts what was read in `read`: past [`MAX_READ_BYTES`] for all the env
/// files together, a manifest naming thousands of distinct files is refused
/// (65, reported once; the callers read no more files) instead of reading
/// and keeping them all.
fn outcome(
    read: Result<Vec<u8>, ReadError>,
    named: Named,
    display: &str,
    read_as: ReadAs,
    total: &mut usize,
    errors: &mut Vec<Error>,
    warnings: &mut Vec<String>,
) -> Outcome {
    // Made only for a message: a format for every file read cost instructions at each start.
    let shown = || match named {
        Named::Volume(volume, path) => format!("volume {}, path {}", escape(volume.as_bytes()), escape(path)),
        Named::Path => format!("env file {display}"),
    };
    let data = match read {
        Ok(data) => data,
        Err(ReadError::NotFound) => return Outcome::Missing,
        Err(e) => {
            errors.push(read_error(e, &shown()).at(display, 0));
            return Outcome::Failed;
        }
    };
    *total += data.len();
    if *total > MAX_READ_BYTES {
        errors.push(
            Error::new(ExitCode::DataErr, format!("{}: the env files read pass {MAX_READ_BYTES} bytes in all; no more are read", shown())).at(display, 0),
        );
        return Outcome::Failed;
    }
    if read_as.lint && lint(&data, display, errors) {
        return Outcome::Failed;
    }
    match EnvFile::parse_as(data, read_as.grammar) {
        Ok(f) => {
            if let Some(dups) = f.duplicates() {
                warnings.push(duplicates_warning(&shown(), dups));
            }
            Outcome::Parsed(Rc::new(f))
        }
        Err(e) => {
            let sep = if e.line == 0 { " " } else { ", " };
            errors.push(Error::new(ExitCode::DataErr, format!("{}{sep}{e}", shown())).at(display, e.line));
            Outcome::Failed
        }
    }
}

/// The portability lint: every line of `data` the kubelet rejects or reads
/// otherwise than envshim's grammar, one error each (`FILE:LINE: reason`,
/// 65). A file envshim's grammar reads gets, for each such line, every
/// change `kubectl envshim fmt` makes to it, or why the line has no form in the
/// kubelet's grammar; another gets the kubelet's reasons. True when there was one.
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn lint(data: &[u8], display: &str, errors: &mut Vec<Error>) -> bool {
    let found: Vec<(u32, String)> = match portable::rewrite(data) {
        Ok(p) => p.fixes.iter().map(|f| (f.line, f.to_string())).collect(),
        Err(_) => kubelet::lint(data).into_iter().map(|(line, finding)| (line, finding.to_string())).collect(),
    };
    for (line, finding) in &found {
        let at = if *line == 0 { String::new() } else { format!(":{line}") };
        errors.push(Error::new(ExitCode::DataErr, format!("{display}{at}: {finding}")).at(display, *line as usize));
    }
    !found.is_empty()
}

/// A file that gives a name more than once: its lines, never the name (a
/// name read from a file appears only in the skipped-keys warning).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn duplicates_warning(shown: &str, (first, again, count): (u32, u32, u32)) -> String {
    let more = match count - 1 {
        0 => String::new(),
        1 => "; 1 more line gives a name again".to_string(),
        n => format!("; {n} more lines give a name again"),
    };
    format!("{shown}: the name on line {first} is given again on line {again}: the last one wins (the kubelet takes the first){more}")
}

/// How messages name a file: by its volume and path inside it, or by its path as given.
#[derive(Clone, Copy)]
enum Named<'a> {
    Volume(&'a str, &'a [u8]),
    Path,
}

/// A `path` inside a volume: not empty, no `..` component. Ok(true) when it
/// is plain: relative, and no component empty or `.` (one pass over it; the
/// checks were four for each `fileKeyRef`).
pub fn check_path(path: &str) -> Result<bool, &'static str> {
    if path.is_empty() {
        return Err("is empty");
    }
    let mut plain = true;
    for c in path.as_bytes().split(|&b| b == b'/') {
        match c {
            b".." => return Err("has a '..' component (paths must stay inside the volume)"),
            b"" | b"." => plain = false,
            _ => {}
        }
    }
    Ok(plain)
}

/// The directory of the volume `v`'s mountPath, opened once for every file
/// read in it; `None` (and the reason in `errors`) if it cannot be.
fn open_root(v: &Volume, errors: &mut Vec<Error>) -> Option<OwnedFd> {
    match files::open_dir(&v.mount_path) {
        Ok(fd) => Some(fd),
        Err(e) => {
            let e = match e.raw_os_error() {
                Some(libc::EACCES) => Error::new(
                    ExitCode::NoPerm,
                    format!(
                        "volume {}: permission denied opening mountPath {} (uid {})",
                        escape(v.name.as_bytes()),
                        escape(v.mount_path.as_bytes()),
                        sys::uid()
                    ),
                ),
                _ => Error::config(format!(
                    "volume {}: mountPath {} is not a directory in this container ({}){}",
                    escape(v.name.as_bytes()),
                    escape(v.mount_path.as_bytes()),
                    crate::error::os_reason(&e),
                    relative_hint(v.name.as_bytes(), v.mount_path.as_bytes()),
                )),
            };
            // check --format json: the directory in `file`.
            errors.push(e.located(None, Some(&escape(v.mount_path.as_bytes()))));
            None
        }
    }
}

/// For a relative mountPath: what it is relative to, and how to map it.
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn relative_hint(name: &[u8], mount_path: &[u8]) -> String {
    if mount_path.starts_with(b"/") {
        return String::new();
    }
    let cwd = std::env::current_dir().map_or_else(|_| "?".into(), |d| escape(std::os::unix::ffi::OsStrExt::as_bytes(d.as_os_str())));
    format!("; it is relative to the working directory, {cwd}: --volume {}=DIR maps the volume to a directory", escape(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_checks() {
        assert_eq!(check_path("a.env"), Ok(true));
        assert_eq!(check_path("a/b.env"), Ok(true));
        assert_eq!(check_path("a/./b.env"), Ok(false));
        assert_eq!(check_path("a//b.env"), Ok(false));
        assert_eq!(check_path("a/"), Ok(false));
        assert_eq!(check_path("."), Ok(false));
        assert_eq!(check_path("/a/b.env"), Ok(false));
        assert!(check_path("a..b/..c").is_ok());
        assert!(check_path("").is_err());
        assert!(check_path("..").is_err());
        assert!(check_path("a/../a.env").is_err());
        assert!(check_path("/..").is_err());
    }

    #[test]
    fn one_read_per_file_and_one_error_per_file() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.env"), "A=1\nB\n").unwrap();
        let mut s = Sources::new(vec![("v".into(), d.path().into())]);
        let mut errors = Vec::new();
        for _ in 0..3 {
            assert!(matches!(s.load_in_volume("v", "a.env", &|| JsonPath::item("env", 0), &mut errors), Loaded::Failed));
        }
        assert!(matches!(s.load_in_volume("v", "/./a.env", &|| JsonPath::item("env", 1), &mut errors), Loaded::Failed));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].to_string(), "volume v, path a.env, line 2: has no '=' (expected NAME=VALUE)");
        assert_eq!(errors[0].code, ExitCode::DataErr);
    }

    #[test]
    fn the_same_path_in_two_volumes_and_outside_them_is_three_files() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("x.env"), "X=a\n").unwrap();
        std::fs::write(b.path().join("x.env"), "X=b\n").unwrap();
        let cwd = a.path().join("x.env");
        let mut s = Sources::new(vec![("a".into(), a.path().into()), ("b".into(), b.path().into())]);
        let mut errors = Vec::new();
        let value = |loaded: Loaded| match loaded {
            Loaded::File(f, display) => (f.get(b"X").unwrap().unwrap().0.to_vec(), display.to_string()),
            _ => panic!("not loaded"),
        };
        for _ in 0..2 {
            assert_eq!(value(s.load_in_volume("a", "x.env", &|| JsonPath::item("env", 0), &mut errors)), (b"a".to_vec(), "a/x.env".into()));
            assert_eq!(value(s.load_in_volume("b", "./x.env", &|| JsonPath::item("env", 1), &mut errors)), (b"b".to_vec(), "b/x.env".into()));
            assert_eq!(value(s.load_path(cwd.as_os_str(), &mut errors)).0, b"a");
        }
        assert_eq!(s.files.len(), 3);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn last_volume_of_a_name_wins() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(b.path().join("x.env"), "X=b\n").unwrap();
        let mut s = Sources::new(vec![("v".into(), a.path().into()), ("v".into(), b.path().into())]);
        let mut errors = Vec::new();
        match s.load_in_volume("v", "x.env", &|| JsonPath::item("env", 0), &mut errors) {
            Loaded::File(f, display) => {
                assert_eq!(f.get(b"X").unwrap().unwrap().0, b"b");
                assert_eq!(&*display, "v/x.env");
            }
            _ => panic!("{errors:?}"),
        }
    }
}
