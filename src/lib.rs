//! envshim: build a container's environment the way the kubelet would
//! (env files, `fileKeyRef`, relaxed names, `$(VAR)` expansion), then exec.
//!
//! Data flows one way: options and manifest → sources (volumes, files) →
//! environment → program line → exec. `main.rs` parses the command line into
//! [`Options`] and calls [`run`], [`check`], [`render`] or [`install`].

pub mod envdir;
pub mod envfile;
pub mod environment;
pub mod error;
pub mod exec;
pub mod expand;
pub mod files;
pub mod filenv;
pub mod hints;
pub mod index;
pub mod init;
pub mod install;
pub mod limits;
pub mod manifest;
pub mod names;
pub mod program;
pub mod render;
pub mod report;
pub mod sources;
pub mod suggest;
pub mod sys;
pub mod wait;

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use environment::{Built, Environment, Inputs};
use error::{code, escape, Error};
use exec::Lookup;
use files::ReadError;
use manifest::Manifest;
use names::NameRule;
use program::Word;
use report::Warnings;
use sources::Sources;

pub use render::Format;

pub const DEFAULT_MANIFEST: &str = "/etc/envshim/manifest.json";

/// Everything `run`, `check` and `render` take, as plain values.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--manifest` / `ENVSHIM_MANIFEST`; None: the default path if it exists.
    pub manifest: Option<OsString>,
    /// `--manifest-json` / `ENVSHIM_MANIFEST_JSON`: the manifest's text, and
    /// the name messages show for it (the option's or the variable's).
    pub manifest_json: Option<(&'static str, OsString)>,
    pub env_files: Vec<OsString>,
    /// `--env-dir` / `ENVSHIM_ENV_DIR`: directories whose files become variables, commas already split.
    pub env_dirs: Vec<Vec<u8>>,
    /// `--env NAME=VALUE`, as given.
    pub envs: Vec<OsString>,
    /// `--volume NAME=DIR`, as given.
    pub volumes: Vec<OsString>,
    pub strict_names: bool,
    pub no_expand_args: bool,
    pub no_service_url: bool,
    pub termination_log: Option<OsString>,
    pub init: bool,
    pub init_group: bool,
    /// `--term-delay`: with `--init`, how long the first SIGTERM is held before it is forwarded.
    pub term_delay: Option<std::time::Duration>,
    /// `--success-exit`: with `--init`, the program's exit codes that count as success.
    pub success_exits: Vec<u8>,
    /// `--rewrite-signal FROM:TO`: with `--init`, a received FROM is forwarded as TO (0: dropped).
    pub rewrite_signals: Vec<(i32, i32)>,
    /// `--file-env` / `ENVSHIM_FILE_ENV`: the NAMEs, in order, commas already split.
    pub file_env: Vec<Vec<u8>>,
    /// `--wait` / `ENVSHIM_WAIT`: how long to wait for missing files.
    pub wait: Option<std::time::Duration>,
    /// The trailing PROGRAM [ARGS...].
    pub program: Vec<OsString>,
    /// `check --strict`: every warning is a failure.
    pub strict: bool,
    /// `--container` / `ENVSHIM_CONTAINER`: the container of a Pod, a workload or a `List` manifest.
    pub container: Option<OsString>,
    /// `--verbose` / `ENVSHIM_VERBOSE`: each variable's source and size on stderr before the program starts.
    pub verbose: bool,
    /// `check --format json`: the problems and warnings as one JSON document on stdout.
    pub check_json: bool,
    /// The configuration variables envshim knows (the command line's): every
    /// `ENVSHIM_*` variable is removed from the program's environment; one
    /// not among these also gets a warning naming the closest of them.
    pub config_vars: &'static [&'static str],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Run,
    Check,
    Render,
}

/// What was prepared: the environment, the program line (when there is one),
/// and the problems found.
struct Plan {
    env: Environment,
    /// A converted container: what the program line's `$(NAME)` sees (the kubelet's view).
    view: Option<Environment>,
    line: Vec<Word>,
    errors: Vec<Error>,
    /// `check`'s warnings, not printed yet (`run` and `render` print them as
    /// the environment is built): printed, failed on (`--strict`) or put in
    /// the JSON document (`--format json`).
    warnings: Warnings,
    /// Kept to the end, not dropped when the environment is built: `run`
    /// execs and `check` forgets them, so neither frees them piece by piece.
    _read: (Manifest<'static>, Sources),
}

/// What the binary does first, before it reads its command line. Until it
/// execs the program (or, with `--init`, blocks signals to supervise it):
/// SIGTERM, SIGINT, SIGHUP and SIGQUIT end envshim at once with 128 + the
/// signal number, also as PID 1, where the kernel drops a signal left at its
/// default action; and a closed stdout or stderr makes a write fail (EPIPE)
/// instead of killing envshim with SIGPIPE. Only signals inherited at their
/// default are caught, and `execve` resets caught signals to the default, so
/// the program inherits the dispositions envshim inherited (docs/security.md).
pub fn start() {
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // Fails only for an invalid signal number.
        let _ = sys::catch_if_default(sig, sys::Handler::Exit);
    }
    let _ = sys::catch_if_default(libc::SIGPIPE, sys::Handler::Nothing);
}

/// `envshim run`: builds and validates everything, then execs the program
/// (or supervises it with `--init`). Returns only on failure.
pub fn run(opts: &Options) -> i32 {
    let plan = match prepare(opts, Mode::Run) {
        Ok(p) => p,
        Err(errors) => return fail(opts, &errors),
    };
    let lookup = if opts.init { Lookup::Verify } else { Lookup::Lazy };
    let prepared =
        program::expand_line(&plan.line, plan.view.as_ref().unwrap_or(&plan.env)).and_then(|words| exec::prepare(&plan.line, words, &plan.env, lookup));
    let mut errors = plan.errors;
    let target = match prepared {
        Ok(target) if errors.is_empty() => target,
        Ok(_) => return fail(opts, &errors),
        Err(more) => {
            errors.extend(more);
            return fail(opts, &errors);
        }
    };
    if opts.verbose {
        verbose(&plan.env);
    }
    if opts.init {
        return init::supervise(&target, init::Settings {
            group: opts.init_group,
            term_delay: opts.term_delay,
            success_exits: &opts.success_exits,
            rewrites: &opts.rewrite_signals,
        }, |e| fail(opts, &[e]));
    }
    let e = exec::exec(&target);
    fail(opts, &[e])
}

/// `envshim check`: everything `run` validates, every problem reported; execs nothing.
pub fn check(opts: &Options) -> i32 {
    let mut plan = match prepare(opts, Mode::Check) {
        Ok(p) => p,
        Err(errors) if opts.check_json => return report::json(&errors, &report::Warnings::default(), None, opts.termination_log.as_deref()),
        Err(errors) => return fail(opts, &errors),
    };
    let mut program = None;
    if plan.line.is_empty() {
        plan.errors.extend(exec::check_sizes(&[], &[], &plan.env, 0));
    } else {
        let prepared = program::expand_line(&plan.line, plan.view.as_ref().unwrap_or(&plan.env))
            .and_then(|words| exec::prepare(&plan.line, words, &plan.env, Lookup::Verify));
        match prepared {
            Ok(target) => program = Some(escape(target.path.as_bytes())),
            Err(errors) => plan.errors.extend(errors),
        }
    }
    // --strict: every warning is a failure too, after those with a code of their own.
    let mut warnings = std::mem::take(&mut plan.warnings);
    if opts.strict {
        plan.errors.extend(std::mem::take(&mut warnings).into_errors());
    }
    if opts.verbose && plan.errors.is_empty() {
        verbose(&plan.env);
    }
    let code = if opts.check_json {
        // Only for a success, as the text's `ok:` line: a failed build's count means nothing.
        let summary = plan.errors.is_empty().then(|| report::Summary { variables: plan.env.len(), from_files: plan.env.from_files(), program });
        report::json(&plan.errors, &warnings, summary.as_ref(), opts.termination_log.as_deref())
    } else {
        warnings.print();
        if plan.errors.is_empty() {
            let from_files = plan.env.from_files();
            let program = program.map_or("no program line".to_string(), |p| format!("program {p}"));
            let ok = format!("envshim: ok: {} variables ({from_files} from files), {program}\n", plan.env.len());
            let _ = std::io::stderr().lock().write_all(ok.as_bytes());
            code::OK
        } else {
            fail(opts, &plan.errors)
        }
    };
    // The process ends here: freeing the environment variable by variable
    // is work `run` never does (it execs).
    std::mem::forget(plan);
    code
}

/// `--verbose`: each variable's name, source (as `render` names it) and
/// size on stderr, one line each, never a value; in one write where it fits.
#[cold]
#[inline(never)]
fn verbose(env: &Environment) {
    let mut text = String::new();
    for v in env.vars() {
        let name = &v.name[..v.name.len().min(limits::MAX_SHOWN_NAME_BYTES)];
        let more = if v.name.len() > name.len() { "..." } else { "" };
        text.push_str(&format!("envshim: {}{more} from {} ({} bytes)\n", escape(name), v.source, v.value.len()));
    }
    // A closed stderr is not worth failing for.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `envshim render`: prints the final environment, values masked unless `show_values`.
// Not inlined into `main` (nor `install`): their frames (`std::io::copy`'s
// 8 KiB buffer among them) would be probed page by page at every start.
#[inline(never)]
pub fn render(opts: &Options, format: Format, show_values: bool) -> i32 {
    let plan = match prepare(opts, Mode::Render) {
        Ok(p) if p.errors.is_empty() => p,
        Ok(p) => return fail(opts, &p.errors),
        Err(errors) => return fail(opts, &errors),
    };
    let mut out = std::io::stdout().lock();
    match render::render(&mut out, &plan.env.vars().collect::<Vec<_>>(), format, show_values).and_then(|()| out.flush()) {
        Ok(()) => code::OK,
        // A reader that stopped early (`| head`) got what it wanted: not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => code::OK,
        Err(e) => fail(opts, &[Error::new(code::IOERR, format!("render: cannot write to stdout ({})", error::os_reason(&e)))]),
    }
}

/// `envshim install [--force] DEST`: on success one line on stderr,
/// `envshim: installed VERSION at DEST` (stdout stays empty, as for `check`).
#[inline(never)]
pub fn install(dest: &Path, force: bool) -> i32 {
    match install::install(Path::new(install::SELF_EXE), dest, force) {
        Ok(dest) => {
            let line = format!("envshim: installed {} at {}\n", env!("CARGO_PKG_VERSION"), escape(dest.as_os_str().as_bytes()));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            code::OK
        }
        Err(e) => report::fail(&[e], None),
    }
}

fn fail(opts: &Options, errors: &[Error]) -> i32 {
    report::fail(errors, opts.termination_log.as_deref())
}

/// Reads the manifest and every source, and builds the environment.
/// Err: problems that stop everything (usage, manifest); Ok: the plan, with
/// the problems found while building it.
fn prepare(opts: &Options, mode: Mode) -> Result<Plan, Vec<Error>> {
    // Independent problems, all reported (check reports every problem).
    let mut errors = Vec::new();
    let cli_env = split_pairs(&opts.envs, "--env", "NAME=VALUE", &mut errors);
    let cli_volumes = split_pairs(&opts.volumes, "--volume", "NAME=DIR", &mut errors);
    let loaded = match &opts.manifest_json {
        None => load_manifest(opts.manifest.as_deref(), opts.container.as_deref()),
        Some((shown, text)) => manifest_text(shown, text, opts.manifest.is_some(), opts.container.as_deref()),
    };
    let manifest = loaded.unwrap_or_else(|e| {
        errors.extend(e);
        Manifest::default()
    });
    if !errors.is_empty() {
        return Err(errors);
    }

    let line = match mode {
        Mode::Run => {
            let line = program::program_line(&manifest, &opts.program, !opts.no_expand_args);
            if line.is_empty() {
                return Err(vec![Error::usage(
                    "run needs a program: give it after -- (envshim run [OPTIONS] -- PROGRAM [ARGS...]) or set command in the manifest",
                )]);
            }
            line
        }
        // check validates the program line run would have; none is no error.
        Mode::Check => program::program_line(&manifest, &opts.program, !opts.no_expand_args),
        Mode::Render => Vec::new(),
    };

    let mut mounts: Vec<(String, OsString)> =
        manifest.volume_mounts.iter().map(|v| (v.name.to_string(), OsString::from(&*v.mount_path))).collect();
    for (name, dir) in cli_volumes {
        let name = String::from_utf8(name).map_err(|_| vec![Error::usage("--volume: the NAME must be UTF-8")])?;
        mounts.push((name, OsString::from(std::ffi::OsStr::from_bytes(&dir))));
    }
    let mut sources = Sources::new(mounts);
    let rule = if opts.strict_names { NameRule::Strict } else { NameRule::Relaxed };
    let inputs = Inputs {
        manifest: &manifest,
        env_files: &opts.env_files,
        env_dirs: &opts.env_dirs,
        cli_env: &cli_env,
        rule,
        service_url: !opts.no_service_url,
        warn_unresolved: mode == Mode::Check,
        config_vars: opts.config_vars,
    };
    // With --wait: build, wait for the missing files the build needed, build
    // again (files that appeared may name more: a NAME_FILE set by an env
    // file), until nothing is missing or the time is up; then one last build
    // gives the usual failures, marked `after waiting DURATION`.
    // Some(None): a wait too long for the clock, without end.
    let deadline = opts.wait.map(|d| std::time::Instant::now().checked_add(d));
    let mut waited = None;
    let mut waits = 0;
    loop {
        let Built { mut env, view, mut errors, mut warnings } = environment::build(std::env::vars_os().collect(), &inputs, &mut sources);
        let secrets = filenv::apply(&mut env, &opts.file_env, rule, waited.as_deref(), &mut errors);
        let mut awaited = Vec::new();
        if waited.is_none() && deadline.is_some() {
            awaited = sources.awaited();
            awaited.extend(secrets);
        }
        if awaited.is_empty() {
            if mode == Mode::Check {
                for word in line.iter().filter(|w| w.expand && environment::has_reference(&w.text)) {
                    let what = || format!("{} of the program line", word.origin);
                    environment::unresolved_warning(&mut warnings, view.as_ref().unwrap_or(&env), &word.text, &what);
                }
                if !errors.is_empty() {
                    warnings.drop_unresolved();
                }
                hints::warn(&mut warnings, &env, &line);
            }
            // check prints them (or fails on them) after the program line's problems.
            if mode != Mode::Check {
                warnings.print();
                warnings = Warnings::default();
            }
            return Ok(Plan { env, view, line, errors, warnings, _read: (manifest, sources) });
        }
        // The first wait is for the whole DURATION; files that appeared may name more, waited for in the time left.
        let d = wait::show(opts.wait.unwrap_or_default());
        let how_long = if waits == 0 { format!("up to {d}") } else { format!("the rest of {d}") };
        waits += 1;
        let present = wait::until_present(&awaited, deadline.flatten(), &how_long).map_err(|e| vec![e])? == wait::Waited::Present;
        // Past the deadline the next build is the last, even when the files
        // were there when looked for: one that comes and goes (seen by the
        // look, gone for the build) would otherwise be waited for again and
        // again, past the deadline.
        if !present || deadline.flatten().is_some_and(|d| std::time::Instant::now() >= d) {
            waited = opts.wait.map(|d| wait::show(d).into());
        }
        drop(awaited);
        sources.reset(waited.clone());
    }
}

/// Splits `NAME=VALUE` options at the first `=`; every malformed one is an error.
fn split_pairs(items: &[OsString], option: &str, form: &str, errors: &mut Vec<Error>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut pairs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bytes = item.as_bytes();
        match bytes.iter().position(|&b| b == b'=') {
            Some(eq) if eq > 0 || option == "--env" => pairs.push((bytes[..eq].to_vec(), bytes[eq + 1..].to_vec())),
            // Docker's `-v NAME:DIR` habit.
            _ if option == "--volume" && bytes.contains(&b':') => {
                errors.push(Error::usage(format!("{option} #{}: expected {form} (envshim's --volume takes NAME=DIR, not Docker's NAME:DIR)", i + 1)))
            }
            _ => errors.push(Error::usage(format!("{option} #{}: expected {form}", i + 1))),
        }
    }
    pairs
}

/// `--manifest-json` / `ENVSHIM_MANIFEST_JSON`: the manifest's text itself,
/// with a file's limit and errors; exclusive with a manifest file (78).
#[cold]
fn manifest_text(shown: &str, text: &OsStr, file_too: bool, container: Option<&OsStr>) -> Result<Manifest<'static>, Vec<Error>> {
    if file_too {
        return Err(vec![Error::config(format!("{shown} and a manifest file (--manifest or ENVSHIM_MANIFEST) are exclusive: give one"))]);
    }
    if text.len() > limits::MAX_MANIFEST_BYTES {
        return Err(vec![Error::config(format!("{shown} is larger than {} bytes", limits::MAX_MANIFEST_BYTES))]);
    }
    // The parser's messages say `manifest SHOWN` (at the start, or inside
    // those of --container): they name the option or variable alone.
    let named = format!("manifest {shown}");
    manifest::parse_named(text.as_bytes().to_vec().leak(), shown, container.map(OsStrExt::as_bytes)).map_err(|errors| {
        errors
            .into_iter()
            .map(|mut e| {
                e.message = e.message.replace(&named, shown);
                e
            })
            .collect()
    })
}

/// The manifest: the named one (which must exist), else the default one if it exists.
/// Its bytes are never freed (the process execs or ends once the plan is
/// used): the manifest's strings stay slices of them, not copies.
fn load_manifest(named: Option<&OsStr>, container: Option<&OsStr>) -> Result<Manifest<'static>, Vec<Error>> {
    let path = named.unwrap_or(OsStr::new(DEFAULT_MANIFEST));
    let shown = escape(path.as_bytes());
    match files::read_path(path, limits::MAX_MANIFEST_BYTES) {
        Ok(bytes) => manifest::parse_named(bytes.leak(), &shown, container.map(OsStrExt::as_bytes)),
        Err(ReadError::NotFound) if named.is_none() && container.is_some() => {
            Err(vec![Error::config(format!("--container {}: there is no manifest ({DEFAULT_MANIFEST} does not exist)", escape(container.map_or(&[], OsStrExt::as_bytes))))])
        }
        Err(ReadError::NotFound) if named.is_none() => Ok(Manifest::default()),
        Err(ReadError::NotFound) => Err(vec![Error::config(format!("manifest {shown} not found"))]),
        // Every manifest error is a configuration error, whatever the file's problem.
        Err(ReadError::PermissionDenied) => Err(vec![sources::read_error(ReadError::PermissionDenied, &format!("manifest {shown}"))]),
        Err(e) => {
            let e = sources::read_error(e, &format!("manifest {shown}"));
            Err(vec![Error::config(e.message)])
        }
    }
}
