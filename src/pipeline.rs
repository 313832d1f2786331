//! The steps of `run`, `check` and `render`, in the order data flows: the
//! manifest (and the options' `NAME=VALUE` pairs), the program line, the
//! sources (volumes, files), the environment built, with `--file-env` (built
//! again while `--wait` waits for missing files), then `check`'s warnings.
//! [`prepare`] reads as that list; each step is a function of its own.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::engine::JsonFrom;
use crate::envfile::Grammar;
use crate::environment::{self, Built, Environment, Inputs};
use crate::error::{escape, Error, ExitCode};
use crate::exec::{self, Exec, Lookup};
use crate::files::{self, Awaited, ReadError};
use crate::manifest::{self, Manifest};
use crate::names::NameRule;
use crate::program::{self, Word};
use crate::report::{self, Warnings};
use crate::sources::{self, Sources};
use crate::watch::Watched;
use crate::{filenv, hints, limits, wait};

pub const DEFAULT_MANIFEST: &str = "/etc/envshim/manifest.json";
/// The default manifest's directory: a ConfigMap mounted there without the
/// key `manifest.json` is a mistake, not "no manifest".
pub const DEFAULT_DIR: &str = "/etc/envshim";

/// What `run`, `check` and `render` share: where the environment comes from, as plain values.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--manifest` / `ENVSHIM_MANIFEST`; None: the default path if it exists.
    pub manifest: Option<OsString>,
    /// `--manifest-json` / `ENVSHIM_MANIFEST_JSON`: the manifest's text, and
    /// which of the two gave it.
    pub manifest_json: Option<(JsonFrom, OsString)>,
    pub env_files: Vec<OsString>,
    /// `--env-dir` / `ENVSHIM_ENV_DIR`: directories whose files become variables, commas already split.
    pub env_dirs: Vec<Vec<u8>>,
    /// `--env NAME=VALUE`, as given.
    pub envs: Vec<OsString>,
    /// `--volume NAME=DIR`, as given.
    pub volumes: Vec<OsString>,
    pub strict_names: bool,
    pub no_service_url: bool,
    pub termination_log: Option<OsString>,
    /// `--file-env` / `ENVSHIM_FILE_ENV`: the NAMEs, in order, commas already split.
    pub file_env: Vec<Vec<u8>>,
    /// `--wait` / `ENVSHIM_WAIT`: how long to wait for missing files.
    pub wait: Option<Duration>,
    /// `--container` / `ENVSHIM_CONTAINER`: the container of a Pod, a workload or a `List` manifest.
    pub container: Option<OsString>,
    /// The configuration variables envshim knows (the command line's): every
    /// `ENVSHIM_*` variable is removed from the program's environment; one
    /// not among these also gets a warning naming the closest of them.
    pub config_vars: Vec<String>,
    /// `--env-grammar` / `ENVSHIM_ENV_GRAMMAR`: how env files are read.
    pub env_grammar: Grammar,
}

/// What only `run` takes.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The trailing PROGRAM [ARGS...].
    pub program: Vec<OsString>,
    pub no_expand_args: bool,
    /// `--verbose` / `ENVSHIM_VERBOSE`: each variable's source and size on stderr before the program starts.
    pub verbose: bool,
    /// `--init` / `ENVSHIM_INIT`: stay as PID 1 and supervise the program.
    pub init: Option<InitOptions>,
    /// `--listen` / `ENVSHIM_LISTEN`: the sockets envshim binds and hands to the program.
    pub listen: Vec<crate::listen::Address>,
}

/// How `--init` supervises the program.
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// `--init-group`: signal the child's whole process group.
    pub group: bool,
    /// `--term-delay`: how long the first SIGTERM is held before it is forwarded.
    pub term_delay: Option<Duration>,
    /// `--success-exit`: the program's exit codes that count as success.
    pub success_exits: Vec<u8>,
    /// `--rewrite-signal FROM:TO`: a received FROM is forwarded as TO (0: dropped).
    pub rewrite_signals: Vec<(i32, i32)>,
    /// `--watch` / `ENVSHIM_WATCH`: restart (or signal) the program when its sources change.
    pub watch: Option<crate::watch::WatchOptions>,
}

impl InitOptions {
    /// What the supervision loop reads of them (`verbose`: `--verbose`).
    #[cfg_attr(envshim_size, optimize(size))]
    pub(crate) fn settings<'a>(&'a self, verbose: bool, handed: Option<&'a crate::listen::Handed>) -> crate::init::Settings<'a> {
        crate::init::Settings {
            group: self.group,
            term_delay: self.term_delay,
            success_exits: &self.success_exits,
            rewrites: &self.rewrite_signals,
            verbose,
            handed,
        }
    }
}

/// What only `check` takes.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The trailing PROGRAM [ARGS...], checked as `run` would take it.
    pub program: Vec<OsString>,
    pub no_expand_args: bool,
    /// `--verbose`: each variable's source and size on stderr, when nothing failed.
    pub verbose: bool,
    /// `--strict`: every warning is a failure.
    pub strict: bool,
    /// `--format json`: the problems and warnings as one JSON document on stdout.
    pub json: bool,
    /// `--watch`: warn about the files that Kubernetes never updates (a `subPath` mount).
    pub watch: bool,
}

/// The command the plan is prepared for: a step may differ by it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Run,
    Check,
    Render,
    /// `run --watch`'s reads after the first: as `run` reads (the same
    /// grammar, no lint), its warnings not printed again (the start said them).
    Watch,
}

/// What was prepared: the environment, the program line (when there is one),
/// and the problems found.
pub struct Plan<'m> {
    pub env: Environment,
    /// A converted container: what the program line's `$(NAME)` sees (the kubelet's view).
    pub view: Option<Environment>,
    pub line: Vec<Word>,
    pub errors: Vec<Error>,
    /// `check`'s warnings, not printed yet (`run` and `render` print them as
    /// the environment is built): printed, failed on (`--strict`) or put in
    /// the JSON document (`--format json`).
    pub warnings: Warnings,
    /// The files `--file-env` looked at.
    file_env_paths: Vec<Vec<u8>>,
    /// Kept to the end, not dropped when the environment is built: `run`
    /// execs and `check` forgets them, so neither frees them piece by piece.
    _read: (Manifest<'m>, Sources),
}

impl Plan<'_> {
    /// The environment the program line's `$(NAME)` sees.
    pub fn expansion_env(&self) -> &Environment {
        self.view.as_ref().unwrap_or(&self.env)
    }

    /// The program line expanded and made ready to exec, the program looked
    /// up as `lookup` says: the one sequence of `run`, `check` and
    /// `--watch`'s reads. Its problems join `errors` (the plan's, taken by
    /// the caller); the target only when `errors` holds none.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn target(&self, lookup: Lookup, errors: &mut Vec<Error>) -> Option<Exec<'_>> {
        let prepared = program::expand_line(&self.line, self.expansion_env()).and_then(|words| exec::prepare(&self.line, words, &self.env, lookup));
        match prepared {
            Ok(target) if errors.is_empty() => Some(target),
            Ok(_) => None,
            Err(more) => {
                errors.extend(more);
                None
            }
        }
    }

    /// Every source `opts` and the manifest named (`--watch` watches them):
    /// the manifest file, every file looked at, `--env-dir`s, `--file-env` files.
    #[cfg_attr(envshim_size, optimize(size))]
    pub fn sources(&self, opts: &Options) -> Vec<Watched> {
        let mut files = Vec::new();
        match (&opts.manifest_json, &opts.manifest) {
            (Some(_), _) => {}
            (None, Some(m)) => files.push(Watched { root: None, path: m.as_bytes().to_vec(), dir: false }),
            // The default one when its directory is there (a volume mounted
            // there may gain the key); a volume cannot be mounted later, so
            // without it nothing can appear, and `/etc` is not watched for it.
            (None, None) => {
                if std::path::Path::new(DEFAULT_MANIFEST).parent().is_some_and(std::path::Path::is_dir) {
                    files.push(Watched { root: None, path: DEFAULT_MANIFEST.as_bytes().to_vec(), dir: false });
                }
            }
        }
        files.extend(self._read.1.files_read().map(|(root, path)| Watched { root: root.map(OsStr::to_os_string), path: path.to_vec(), dir: false }));
        files.extend(opts.env_dirs.iter().map(|d| Watched { root: None, path: d.clone(), dir: true }));
        files.extend(self.file_env_paths.iter().map(|p| Watched { root: None, path: p.clone(), dir: false }));
        files
    }
}

/// Reads the manifest and every source, and builds the environment: the
/// program line `program` (`expand`: with `$(VAR)` expanded in it) for `run`
/// and `check`. Err: problems that stop everything (usage, manifest); Ok:
/// the plan, with the problems found while building it. The manifest file's
/// bytes are kept in `text` (the manifest's strings are slices of them): the
/// caller's, so that `--watch`'s reads free each one when done with it.
pub fn prepare<'m>(opts: &'m Options, mode: Mode, program: &[OsString], expand: bool, text: &'m mut Vec<u8>) -> Result<Plan<'m>, Vec<Error>> {
    let (manifest, cli_env, cli_volumes) = read(opts, text)?;
    let line = program_line(&manifest, mode, program, expand)?;
    // `check --env-grammar kubelet` is the portability lint too.
    let lint = mode == Mode::Check && opts.env_grammar == Grammar::Kubelet;
    let mut sources = Sources::new(mounts(&manifest, cli_volumes)?).read_as(sources::ReadAs { grammar: opts.env_grammar, lint });
    let inputs = Inputs {
        manifest: &manifest,
        env_files: &opts.env_files,
        env_dirs: &opts.env_dirs,
        cli_env: &cli_env,
        rule: if opts.strict_names { NameRule::Strict } else { NameRule::Relaxed },
        service_url: !opts.no_service_url,
        warn_unresolved: mode == Mode::Check,
        config_vars: &opts.config_vars,
    };
    let (Built { env, view, errors, mut warnings }, file_env_paths) = build(opts, &inputs, &mut sources)?;
    if mode == Mode::Run && errors.is_empty() && manifest.converted.as_ref().is_some_and(|c| c.unexpanded) {
        report::say(UNEXPANDED_NOTE);
    }
    if mode == Mode::Check {
        sources.cut_values(&mut warnings);
        check_warnings(&mut warnings, view.as_ref().unwrap_or(&env), &env, &line, !errors.is_empty());
    } else {
        // check prints them (or fails on them) after the program line's problems.
        if mode != Mode::Watch {
            warnings.print();
        }
        warnings = Warnings::default();
    }
    Ok(Plan { env, view, line, errors, warnings, file_env_paths, _read: (manifest, sources) })
}

/// The line `run` says when it did the kubelet's part itself.
const UNEXPANDED_NOTE: &str =
    "the engine did not expand $(VAR) in env (no kubelet): envshim expanded the container's env, command and args as the kubelet would";

type Read<'m> = (Manifest<'m>, Vec<(Vec<u8>, Vec<u8>)>, Vec<(Vec<u8>, Vec<u8>)>);

/// The manifest and the `--env` and `--volume` pairs: every problem among them reported.
fn read<'m>(opts: &'m Options, text: &'m mut Vec<u8>) -> Result<Read<'m>, Vec<Error>> {
    let mut errors = Vec::new();
    let cli_env = Pair::Env.split(&opts.envs, &mut errors);
    let cli_volumes = Pair::Volume.split(&opts.volumes, &mut errors);
    let loaded = match &opts.manifest_json {
        None => load_manifest(opts.manifest.as_deref(), opts.container.as_deref(), text),
        Some((from, json)) => match crate::engine::unexpanded(*from) {
            Ok(false) => manifest_text(from.name(), json, opts.manifest.is_some(), opts.container.as_deref()),
            Ok(true) => unexpanded_manifest(from.name(), json, opts, text),
            Err(e) => Err(vec![e]),
        },
    };
    let manifest = loaded.unwrap_or_else(|e| {
        errors.extend(e);
        Manifest::default()
    });
    if errors.is_empty() {
        Ok((manifest, cli_env, cli_volumes))
    } else {
        Err(errors)
    }
}

/// The program line: `run` needs one; `check` validates the one `run` would have (none is no error).
fn program_line(manifest: &Manifest, mode: Mode, program: &[OsString], expand: bool) -> Result<Vec<Word>, Vec<Error>> {
    let line = match mode {
        Mode::Run | Mode::Check | Mode::Watch => program::program_line(manifest, program, expand),
        Mode::Render => Vec::new(),
    };
    if mode == Mode::Run && line.is_empty() {
        return Err(vec![Error::usage("run needs a program: give it after -- (envshim run [OPTIONS] -- PROGRAM [ARGS...]) or set command in the manifest")]);
    }
    Ok(line)
}

/// The volumes: the manifest's `volumeMounts`, then `--volume`s.
fn mounts(manifest: &Manifest, cli_volumes: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Vec<(String, OsString)>, Vec<Error>> {
    let mut mounts: Vec<(String, OsString)> = manifest.volume_mounts.iter().map(|v| (v.name.to_string(), OsString::from(&*v.mount_path))).collect();
    for (name, dir) in cli_volumes {
        let name = String::from_utf8(name).map_err(|_| vec![Error::usage("--volume: the NAME must be UTF-8")])?;
        mounts.push((name, OsString::from(OsStr::from_bytes(&dir))));
    }
    Ok(mounts)
}

/// The environment, `--file-env` applied. With `--wait`: build, wait for
/// the missing files the build needed, build again (files that appeared may
/// name more: a NAME_FILE set by an env file), until nothing is missing or
/// the time is up; then one last build gives the usual failures, marked
/// `after waiting DURATION`.
fn build(opts: &Options, inputs: &Inputs, sources: &mut Sources) -> Result<(Built, Vec<Vec<u8>>), Vec<Error>> {
    let mut waiting = Waiting::new(opts.wait);
    loop {
        let mut built = environment::build(std::env::vars_os().collect(), inputs, sources);
        let mut read = Vec::new();
        let secrets = filenv::apply(&mut built.env, &opts.file_env, inputs.rule, waiting.over.as_deref(), &mut built.errors, &mut read);
        let awaited = waiting.awaited(sources, secrets);
        if awaited.is_empty() {
            return Ok((built, read));
        }
        waiting.until_present(&awaited).map_err(|e| vec![e])?;
        drop(awaited);
        sources.reset(waiting.over.clone());
    }
}

/// `--wait`'s state between builds.
struct Waiting {
    wait: Option<Duration>,
    /// Some(None): a wait too long for the clock, without end.
    deadline: Option<Option<Instant>>,
    waits: u32,
    /// Once the waiting is over: the duration failures name (`after waiting DURATION`).
    over: Option<Rc<str>>,
}

impl Waiting {
    fn new(wait: Option<Duration>) -> Self {
        Waiting { wait, deadline: wait.map(|d| Instant::now().checked_add(d)), waits: 0, over: None }
    }

    /// The missing files worth waiting for (the sources' and `--file-env`'s): none without `--wait` or once it is over.
    fn awaited<'s>(&self, sources: &'s Sources, secrets: Vec<Awaited<'static>>) -> Vec<Awaited<'s>> {
        if self.over.is_some() || self.deadline.is_none() {
            return Vec::new();
        }
        let mut awaited = sources.awaited();
        awaited.extend(secrets);
        awaited
    }

    /// Waits for `awaited`: the first time for the whole duration, then
    /// (files that appeared may name more) for the time left.
    fn until_present(&mut self, awaited: &[Awaited]) -> Result<(), Error> {
        let d = wait::show(self.wait.unwrap_or_default());
        let how_long = if self.waits == 0 { format!("up to {d}") } else { format!("the rest of {d}") };
        self.waits += 1;
        let deadline = self.deadline.flatten();
        let present = wait::until_present(awaited, deadline, &how_long)? == wait::Waited::Present;
        // Past the deadline the next build is the last, even when the files
        // were there when looked for: one that comes and goes (seen by the
        // look, gone for the build) would otherwise be waited for again and
        // again, past the deadline.
        if !present || deadline.is_some_and(|d| Instant::now() >= d) {
            self.over = self.wait.map(|d| wait::show(d).into());
        }
        Ok(())
    }
}

/// `check`'s warnings about the program line (unresolved `$(NAME)`, against
/// `view`; none when the build `failed`) and its hints.
#[cfg_attr(envshim_size, optimize(size))]
fn check_warnings(warnings: &mut Warnings, view: &Environment, env: &Environment, line: &[Word], failed: bool) {
    for word in line.iter().filter(|w| w.expand && environment::has_reference(&w.text)) {
        let what = || format!("{} of the program line", word.origin);
        environment::unresolved_warning(warnings, view, &word.text, &what);
    }
    if failed {
        warnings.drop_unresolved();
    }
    hints::warn(warnings, env, line);
}

/// The options given as `NAME=...` pairs, each with its own rule for the part
/// before the `=`.
#[derive(Clone, Copy)]
enum Pair {
    /// `--env NAME=VALUE`.
    Env,
    /// `--volume NAME=DIR`.
    Volume,
}

impl Pair {
    /// The option, as its messages name it.
    fn option(self) -> &'static str {
        match self {
            Pair::Env => "--env",
            Pair::Volume => "--volume",
        }
    }

    /// The shape its messages expect.
    fn form(self) -> &'static str {
        match self {
            Pair::Env => "NAME=VALUE",
            Pair::Volume => "NAME=DIR",
        }
    }

    /// Whether the name may be empty here: an `--env`'s name is judged later by
    /// the name rule, as a manifest's is (a configuration error, not a usage
    /// one); nothing after this judges a volume's.
    fn empty_name(self) -> bool {
        matches!(self, Pair::Env)
    }

    /// What the message adds when the item shows another tool's habit.
    fn habit(self, item: &[u8]) -> &'static str {
        match self {
            // Docker's `-v NAME:DIR`.
            Pair::Volume if item.contains(&b':') => " (envshim's --volume takes NAME=DIR, not Docker's NAME:DIR)",
            _ => "",
        }
    }

    /// Splits the items at the first `=`; every malformed one is an error.
    #[cfg_attr(envshim_size, optimize(size))]
    fn split(self, items: &[OsString], errors: &mut Vec<Error>) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut pairs = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let bytes = item.as_bytes();
            match bytes.iter().position(|&b| b == b'=') {
                Some(eq) if eq > 0 || self.empty_name() => pairs.push((bytes[..eq].to_vec(), bytes[eq + 1..].to_vec())),
                _ => errors.push(Error::usage(format!("{} #{}: expected {}{}", self.option(), i + 1, self.form(), self.habit(bytes)))),
            }
        }
        pairs
    }
}

/// `--manifest-json` / `ENVSHIM_MANIFEST_JSON`: the manifest's text itself,
/// with a file's limit and errors; exclusive with a manifest file (78).
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn manifest_text<'m>(shown: &str, text: &'m OsStr, file_too: bool, container: Option<&OsStr>) -> Result<Manifest<'m>, Vec<Error>> {
    if file_too {
        return Err(vec![Error::config(format!("{shown} and a manifest file (--manifest or ENVSHIM_MANIFEST) are exclusive: give one"))]);
    }
    if text.len() > limits::MAX_MANIFEST_BYTES {
        return Err(vec![Error::config(format!("{shown} is larger than {} bytes", limits::MAX_MANIFEST_BYTES))]);
    }
    // Its messages name the option or variable alone (`--manifest-json: env[0]: ...`).
    manifest::parse_named(text.as_bytes(), shown, Some(shown), container.map(OsStrExt::as_bytes))
}

/// A converted container's manifest that nothing expanded: its text as the
/// converter wrote it (in `text`), marked for envshim to do the kubelet's part.
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn unexpanded_manifest<'m>(shown: &'static str, json: &OsStr, opts: &Options, text: &'m mut Vec<u8>) -> Result<Manifest<'m>, Vec<Error>> {
    crate::engine::undouble(json.as_bytes(), text).map_err(|e| vec![e])?;
    let text: &'m Vec<u8> = text;
    let mut manifest = manifest_text(shown, OsStr::from_bytes(text), opts.manifest.is_some(), opts.container.as_deref())?;
    if let Some(c) = &mut manifest.converted {
        c.unexpanded = true;
    }
    Ok(manifest)
}

/// The manifest: the named one (which must exist), else the default one if it exists.
/// Its bytes go to `text`: the manifest's strings stay slices of them, not copies.
fn load_manifest<'m>(named: Option<&OsStr>, container: Option<&OsStr>, text: &'m mut Vec<u8>) -> Result<Manifest<'m>, Vec<Error>> {
    let path = named.unwrap_or(OsStr::new(DEFAULT_MANIFEST));
    let shown = escape(path.as_bytes());
    match files::read_path(path, limits::MAX_MANIFEST_BYTES) {
        Ok(bytes) => {
            *text = bytes;
            manifest::parse_named(text, &format!("manifest {shown}"), Some(&shown), container.map(OsStrExt::as_bytes))
        }
        Err(ReadError::NotFound) if named.is_none() && container.is_some() => {
            Err(vec![Error::config(format!("--container {}: there is no manifest ({DEFAULT_MANIFEST} does not exist)", escape(container.map_or(&[], OsStrExt::as_bytes))))])
        }
        Err(ReadError::NotFound) if named.is_none() && std::path::Path::new(DEFAULT_DIR).exists() => Err(vec![Error::new(
            ExitCode::NoInput,
            format!("{DEFAULT_DIR} exists but has no manifest.json: check that the ConfigMap (or volume) mounted there has the key manifest.json, or give --manifest PATH"),
        )]),
        Err(ReadError::NotFound) if named.is_none() => Ok(Manifest::default()),
        Err(ReadError::NotFound) => Err(vec![Error::config(format!("manifest {shown} not found"))]),
        // Every manifest error is a configuration error, whatever the file's problem.
        Err(ReadError::PermissionDenied) => Err(vec![sources::read_error(ReadError::PermissionDenied, &format!("manifest {shown}"))]),
        Err(e) => Err(vec![Error { code: ExitCode::Config, ..sources::read_error(e, &format!("manifest {shown}")) }]),
    }
}

/// `--verbose`: each variable's name, source (as `render` names it) and
/// size on stderr, one line each, never a value; in one write where it fits.
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub fn verbose(env: &Environment) {
    let mut text = String::new();
    for v in env.vars() {
        let name = &v.name[..v.name.len().min(limits::MAX_SHOWN_NAME_BYTES)];
        let more = if v.name.len() > name.len() { "..." } else { "" };
        text.push_str(&format!("envshim: {}{more} from {} ({} bytes)\n", escape(name), v.source, v.value.len()));
    }
    // A closed stderr is not worth failing for.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// A failure: every problem on stderr and in the termination log.
#[cfg_attr(envshim_size, optimize(size))]
pub fn fail(opts: &Options, errors: &[Error]) -> ExitCode {
    match errors.split_first() {
        Some((first, more)) => report::fail(first, more, opts.termination_log.as_deref()),
        // Not reached: a step that fails says why. Were one not to, the run still fails, with a code of the table.
        None => ExitCode::Config,
    }
}
