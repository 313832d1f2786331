//! What each subcommand does, from its plain options to its exit code: the
//! pipeline's plan ([`prepare`]), then `run`'s exec (or `--init`'s and
//! `--watch`'s supervision), `check`'s report, `render`'s output,
//! `install`'s copy. lib.rs names them; only it uses them (tests/layers.rs).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::{escape, Error, ExitCode};
use crate::exec::{self, Lookup};
use crate::listen::Handed;
use crate::pipeline::{fail, prepare, verbose, CheckOptions, InitOptions, Mode, Options, Plan, RunOptions};
use crate::render::{self, Format};
use crate::watch::{self, WatchOptions};
use crate::{init, install as installer, report};

/// `envshim run`: builds and validates everything, then execs the program
/// (or supervises it with `--init`). Returns only on failure, or with the
/// program's code under `--init`.
pub fn run(opts: &Options, run: &RunOptions) -> ExitCode {
    if let Some((init, watch)) = run.init.as_ref().and_then(|i| Some((i, i.watch.as_ref()?))) {
        return watching(opts, run, init, watch);
    }
    let mut text = Vec::new();
    let mut plan = match prepare(opts, Mode::Run, &run.program, !run.no_expand_args, &mut text) {
        Ok(p) => p,
        Err(errors) => return fail(opts, &errors),
    };
    if !run.listen.is_empty() {
        return listening(opts, run, plan);
    }
    let lookup = if run.init.is_some() { Lookup::Verify } else { Lookup::Lazy };
    let mut errors = std::mem::take(&mut plan.errors);
    let Some(target) = plan.target(lookup, &mut errors) else { return fail(opts, &errors) };
    if run.verbose {
        verbose(&plan.env);
    }
    if let Some(init) = &run.init {
        return init::supervise(&target, init.settings(run.verbose, None), &|e| fail(opts, &[e]));
    }
    let e = exec::exec(&target);
    fail(opts, &[e])
}

/// `run --listen` (without `--watch`): as `run`, the sockets bound once the
/// program is found, then handed to it: to the child with `--init`, else to
/// envshim's own process, which becomes the program (its pid is `LISTEN_PID`).
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
fn listening(opts: &Options, run: &RunOptions, mut plan: Plan) -> ExitCode {
    Handed::unset(&mut plan.env);
    let lookup = if run.init.is_some() { Lookup::Verify } else { Lookup::Lazy };
    let mut errors = std::mem::take(&mut plan.errors);
    let Some(target) = plan.target(lookup, &mut errors) else { return fail(opts, &errors) };
    let handed = match Handed::new(&run.listen, false) {
        Ok(h) => h.expect("addresses to listen on"),
        Err(e) => return fail(opts, &[e]),
    };
    if run.verbose {
        verbose(&plan.env);
    }
    if let Some(init) = &run.init {
        return init::supervise(&target, init.settings(run.verbose, Some(&handed)), &|e| fail(opts, &[e]));
    }
    let envp = handed.envp(&target.envp);
    let e = match handed.in_child() {
        Ok(()) => exec::exec_error(&target, exec::exec_only(&target, Some(&envp))),
        Err((call, e)) => Error::new(ExitCode::OsErr, format!("--listen: {call} failed ({})", crate::error::os_reason(&e))),
    };
    fail(opts, &[e])
}

/// `run --watch`: the first build as `run` makes it, then its program
/// supervised, the sources read again when they may have changed.
#[cold]
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
fn watching(opts: &Options, run: &RunOptions, init: &InitOptions, watch: &WatchOptions) -> ExitCode {
    let first = match watch_build(opts, run, Mode::Run) {
        Ok(b) => b,
        Err(errors) => return fail(opts, &errors),
    };
    if run.verbose {
        verbose(&first.env);
    }
    watch::warn_fixed_files(&first.files);
    let handed = match Handed::new(&run.listen, watch.on_change() == watch::OnChange::Handover) {
        Ok(h) => h,
        Err(e) => return fail(opts, &[e]),
    };
    // Read again: never waiting (a missing file is an invalid change), warnings not printed each time.
    let again = Options { wait: None, ..opts.clone() };
    let settings = init.settings(run.verbose, handed.as_ref());
    let hooks = watch::Hooks {
        read: &mut || watch_build(&again, run, Mode::Watch),
        verbose: if run.verbose { Some(&verbose) } else { None },
        fail: &|e| fail(opts, &[e]),
    };
    watch::supervise(first, settings, watch, hooks)
}

/// A complete build for `--watch`: the environment, the program line, and
/// the sources they came from; every problem, as `run` finds them.
#[cfg_attr(envshim_size, optimize(size))]
fn watch_build(opts: &Options, run: &RunOptions, mode: Mode) -> Result<watch::Build, Vec<Error>> {
    let mut text = Vec::new();
    let mut plan = prepare(opts, mode, &run.program, !run.no_expand_args, &mut text)?;
    if !run.listen.is_empty() || run.init.as_ref().and_then(|i| i.watch).is_some_and(|w| w.on_change() == watch::OnChange::Handover) {
        Handed::unset(&mut plan.env);
    }
    if plan.line.is_empty() {
        return Err(vec![Error::usage("the manifest has no command any more, and there is no program line")]);
    }
    let files = plan.sources(opts);
    let mut errors = std::mem::take(&mut plan.errors);
    let Some(target) = plan.target(Lookup::Verify, &mut errors) else { return Err(errors) };
    let argv = target.into_argv();
    Ok(watch::Build { env: plan.env, line: plan.line, argv, files })
}

/// `envshim check`: everything `run` validates, every problem reported; execs nothing.
#[cfg_attr(envshim_size, optimize(size))]
// Not inlined into `main` (which a start runs), so built for size: -0.2 KB.
#[inline(never)]
pub fn check(opts: &Options, check: &CheckOptions) -> ExitCode {
    let mut text = Vec::new();
    let mut plan = match prepare(opts, Mode::Check, &check.program, !check.no_expand_args, &mut text) {
        Ok(p) => p,
        Err(errors) if check.json => return report::json(&errors, &report::Warnings::default(), None, opts.termination_log.as_deref()),
        Err(errors) => return fail(opts, &errors),
    };
    let mut errors = std::mem::take(&mut plan.errors);
    let mut program = None;
    if plan.line.is_empty() {
        errors.extend(exec::check_sizes(&[], &[], &plan.env, 0));
    } else if let Some(target) = plan.target(Lookup::Verify, &mut errors) {
        program = Some(escape(target.path.as_bytes()));
    }
    // --strict: every warning is a failure too, after those with a code of their own.
    let mut warnings = std::mem::take(&mut plan.warnings);
    if check.strict {
        errors.extend(std::mem::take(&mut warnings).into_errors());
    }
    if check.watch {
        watch::warn_fixed_files(&plan.sources(opts));
    }
    if check.verbose && errors.is_empty() {
        verbose(&plan.env);
    }
    let code = if check.json {
        // Only for a success, as the text's `ok:` line: a failed build's count means nothing.
        let summary = errors.is_empty().then(|| report::Summary { variables: plan.env.len(), from_files: plan.env.read_from_files(), program });
        report::json(&errors, &warnings, summary.as_ref(), opts.termination_log.as_deref())
    } else {
        warnings.print();
        if errors.is_empty() {
            let from_files = plan.env.read_from_files();
            let program = program.map_or("no program line".to_string(), |p| format!("program {p}"));
            let vars = plan.env.vars().collect::<Vec<_>>();
            let grammar = if render::from_env_files(&vars) { format!("; {}", render::described(opts.env_grammar)) } else { String::new() };
            let ok = format!("envshim: ok: {} variables ({from_files} from files{grammar}), {program}\n", plan.env.len());
            let _ = std::io::stderr().lock().write_all(ok.as_bytes());
            ExitCode::Ok
        } else {
            fail(opts, &errors)
        }
    };
    // The process ends here: freeing the environment variable by variable
    // is work `run` never does (it execs).
    std::mem::forget(plan);
    code
}

/// `envshim render`: prints the final environment, values masked unless `show_values`.
// Not inlined into `main` (nor `install`): their frames (`std::io::copy`'s
// 8 KiB buffer among them) would be probed page by page at every start.
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub fn render(opts: &Options, format: Format, show_values: bool) -> ExitCode {
    let mut text = Vec::new();
    let plan = match prepare(opts, Mode::Render, &[], false, &mut text) {
        Ok(p) if p.errors.is_empty() => p,
        Ok(p) => return fail(opts, &p.errors),
        Err(errors) => return fail(opts, &errors),
    };
    let mut out = std::io::stdout().lock();
    let vars = plan.env.vars().collect::<Vec<_>>();
    match report::stdout_written(render::render(&mut out, &vars, format, show_values, opts.env_grammar).and_then(|()| out.flush())) {
        Ok(()) => ExitCode::Ok,
        Err(e) => fail(opts, &[Error { subject: "render".into(), ..e }]),
    }
}

/// `envshim install [--force] DEST`: on success one line on stderr,
/// `envshim: installed VERSION at DEST` (stdout stays empty, as for `check`).
#[inline(never)]
#[cfg_attr(envshim_size, optimize(size))]
pub fn install(dest: &Path, force: bool) -> ExitCode {
    match installer::install(Path::new(installer::SELF_EXE), dest, force) {
        Ok(dest) => {
            let line = format!("envshim: installed {} at {}\n", env!("CARGO_PKG_VERSION"), escape(dest.as_os_str().as_bytes()));
            let _ = std::io::stderr().lock().write_all(line.as_bytes());
            ExitCode::Ok
        }
        Err(e) => report::fail(&e, &[], None),
    }
}
