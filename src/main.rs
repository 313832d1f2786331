//! The command line (docs/reference.md §1). Parses flags and configuration variables into
//! plain options and hands them to the library.
//!
//! `no_main`: Rust's runtime start-up sets SIGPIPE to ignored before `main`,
//! and an ignored signal stays ignored across `execve`, so every program
//! started by envshim would inherit it. Starting from C's `main` leaves the
//! dispositions envshim inherited untouched (and skips the runtime's other
//! start-up system calls, which a container start pays for nothing); then
//! `envshim::start` catches the few signals envshim handles itself, which
//! `execve` resets to the default.
// A test build keeps Rust's `main` so the (empty) harness runs, not envshim:
// `cargo test --all-targets` builds and runs it despite `test = false`.
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code, unused_imports))]

/// A bump arena instead of musl's allocator, whose system calls were most of
/// a start-up's (src/sys/alloc.rs).
#[global_allocator]
static ALLOC: envshim::sys::Arena = envshim::sys::Arena;

// The clap definition: a file of its own so that the generator of the shell
// completions and the man page (tools/cli-docs.rs) reads the same one.
include!("cli.rs");

/// `envshim help --help` (and `-h`): clap's help subcommand would look for a
/// subcommand named `--help`; it is the help of `help`.
fn help_of_help(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.len() == 3 && args[1] == "help" && (args[2] == "--help" || args[2] == "-h") {
        args[2] = "help".into();
    }
    args
}

/// Parses the command line building only the subcommand in use: building
/// the whole command (every subcommand's arguments) cost page faults and
/// instructions at every start. Help, `--version` and every
/// error go through the whole command, so their text is clap's as before.
fn parse(mut args: Vec<OsString>) -> Result<Cli, clap::Error> {
    // tini's habit, `ENTRYPOINT ["/envshim", "--", "/app"]`: `run` is meant.
    if args.get(1).is_some_and(|a| a == "--") {
        args.insert(1, "run".into());
    }
    if let Some(cli) = common_line(&args) {
        // Every command line a debug build (the tests') reads here is read by clap too, and must agree.
        #[cfg(debug_assertions)]
        assert_eq!(Cli::try_parse_from(&args).ok().as_ref(), Some(&cli), "common_line disagrees with clap");
        return Ok(cli);
    }
    parse_with_clap(args)
}

/// Not inlined: clap's frames (11 KiB in `main`) would be probed page by page
/// at every start, clap used or not.
#[inline(never)]
#[cold]
fn parse_with_clap(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    use clap::{Command as C, FromArgMatches};
    let mut quick = C::new("envshim")
        .subcommand_required(true)
        .subcommand(C::new("run").defer(RunArgs::augment_args))
        .subcommand(C::new("check").defer(CheckArgs::augment_args))
        .subcommand(C::new("render").defer(RenderArgs::augment_args))
        .subcommand(C::new("install").defer(InstallArgs::augment_args));
    let parsed = quick.try_get_matches_from_mut(&args).and_then(|m| {
        let cli = Cli::from_arg_matches(&m);
        std::mem::forget(m);
        cli
    });
    // Used once: not freed piece by piece (the process execs or ends soon).
    std::mem::forget(quick);
    match parsed {
        Ok(cli) => Ok(cli),
        Err(_) => Cli::try_parse_from(help_of_help(args)),
    }
}

/// The command lines a container start uses, read without clap: `run` or
/// `check`, then long options each in one word (`--manifest=PATH`) or two
/// (`--manifest PATH`), then the program (after `--` or as the first word
/// that is not an option), as clap would read them, without clap's
/// `Command` and its stack frames. None for anything else (help, `--version`,
/// `--wait`, `render`, a repeated single option, an empty value, `--` as a
/// value, a value starting with `-` but of `--env` or `--env-file`, an
/// unknown word, no program), which clap then reads
/// exactly as before, its messages included.
fn common_line(args: &[OsString]) -> Option<Cli> {
    use std::os::unix::ffi::OsStrExt;
    let mut words = args.iter().skip(1);
    let run = match words.next()?.as_bytes() {
        b"run" => true,
        b"check" => false,
        _ => return None,
    };
    let (mut c, mut program, mut seen, mut strict) = (Common::default(), Vec::new(), 0u32, false);
    while let Some(word) = words.next() {
        let w = word.as_bytes();
        if w == b"--strict" && !run && !strict {
            strict = true;
            continue;
        }
        if w == b"--" || !w.starts_with(b"-") {
            program.extend(w.ne(b"--").then(|| word.clone()));
            program.extend(words.cloned());
            break;
        }
        let (name, inline) = match w.iter().position(|&b| b == b'=') {
            Some(eq) => (&w[..eq], Some(OsString::from(std::ffi::OsStr::from_bytes(&w[eq + 1..])))),
            None => (w, None),
        };
        const FLAGS: [&[u8]; 6] = [b"--strict-names", b"--no-service-url", b"--no-expand-args", b"--init", b"--init-group", b"--verbose"];
        if let Some(i) = FLAGS.iter().position(|f| *f == name) {
            // A flag given twice, or with a value, is clap's error.
            if inline.is_some() || seen & 1 << i != 0 {
                return None;
            }
            seen |= 1 << i;
            *[&mut c.strict_names, &mut c.no_service_url, &mut c.no_expand_args, &mut c.init, &mut c.init_group, &mut c.verbose][i] = true;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => words.next()?.clone(),
        };
        // A value of --env or --env-file may start with `-` (allow_hyphen_values); `--` and an empty one are left to clap.
        let hyphen = name == b"--env" || name == b"--env-file";
        if value.is_empty() || value == "--" || (!hyphen && value.as_bytes()[0] == b'-') {
            return None;
        }
        let once = |slot: &mut Option<OsString>| slot.replace(value.clone()).is_none().then_some(());
        match name {
            b"--manifest" => once(&mut c.manifest)?,
            b"--termination-log" => once(&mut c.termination_log)?,
            b"--env-file" => c.env_files.push(value),
            b"--env-dir" => c.env_dirs.push(value),
            b"--env" => c.envs.push(value),
            b"--volume" => c.volumes.push(value),
            b"--file-env" => c.file_env.push(value),
            b"--success-exit" => c.success_exits.push(value),
            b"--rewrite-signal" => c.rewrite_signals.push(value),
            b"--container" => once(&mut c.container)?,
            _ => return None,
        }
    }
    if run && program.is_empty() {
        return None;
    }
    Some(Cli { command: if run { Command::Run(RunArgs { common: c, program }) } else { Command::Check(CheckArgs { common: c, strict, program, format: None }) } })
}

/// `--file-env` or `--env-dir` lists (or the variable `var` when none is given), split at commas.
fn comma_lists(lists: Vec<OsString>, var: Option<OsString>) -> Vec<Vec<u8>> {
    use std::os::unix::ffi::OsStringExt;
    let lists = if lists.is_empty() { var.into_iter().collect() } else { lists };
    lists.into_iter().flat_map(|l| l.into_vec().split(|&b| b == b',').map(<[u8]>::to_vec).collect::<Vec<_>>()).collect()
}

/// `--wait`, or `ENVSHIM_WAIT` when it is not given.
fn wait(option: Option<Duration>, var: Option<OsString>) -> Result<Option<Duration>, String> {
    if option.is_some() {
        return Ok(option);
    }
    match var {
        None => Ok(None),
        Some(v) => v.to_str().ok_or_else(|| "not UTF-8".to_string()).and_then(duration).map(Some).map_err(|e| format!("ENVSHIM_WAIT: {e}")),
    }
}

/// A boolean configuration variable `name` (its value `v`): 1/0,
/// true/false, yes/no, on/off; checked even when the option is given too.
fn env_flag(name: &str, v: Option<OsString>) -> Result<bool, String> {
    let Some(v) = v else { return Ok(false) };
    match v.to_str().map(str::to_ascii_lowercase).as_deref() {
        Some("1" | "true" | "yes" | "on") => Ok(true),
        Some("0" | "false" | "no" | "off") => Ok(false),
        _ => Err(format!("{name} must be one of 1/0, true/false, yes/no, on/off")),
    }
}

/// The options of run, check and render (docs/reference.md §1: one table for the three).
fn options(common: Common) -> Result<envshim::Options, String> {
    // `--env` and `--env-file` take values starting with `-`, but not `--`, which ends the options.
    if common.envs.iter().chain(&common.env_files).any(|v| v == "--") {
        return Err("--env and --env-file need a value (-- ends the options)".into());
    }
    // Every configuration variable in one pass over the environment (a
    // `getenv` each would be a pass each).
    let [manifest_file, manifest_json, init_var, strict_names_var, verbose_var, container_var, env_dir_var, file_env_var, wait_var, env_file_var, no_expand_var] =
        envshim::sys::envshim_vars([
            "ENVSHIM_MANIFEST",
            "ENVSHIM_MANIFEST_JSON",
            "ENVSHIM_INIT",
            "ENVSHIM_STRICT_NAMES",
            "ENVSHIM_VERBOSE",
            "ENVSHIM_CONTAINER",
            "ENVSHIM_ENV_DIR",
            "ENVSHIM_FILE_ENV",
            "ENVSHIM_WAIT",
            "ENVSHIM_ENV_FILE",
            "ENVSHIM_NO_EXPAND_ARGS",
        ]);
    let mut env_files = common.env_files;
    // Appended to the options' files (an image's CMD keeps its own): empty parts are none.
    env_files.extend(comma_lists(Vec::new(), env_file_var).into_iter().filter(|f| !f.is_empty()).map(std::os::unix::ffi::OsStringExt::from_vec));
    let init = env_flag("ENVSHIM_INIT", init_var)? | common.init;
    if !init && (common.init_group || common.term_delay.is_some()) {
        return Err("--init-group and --term-delay need --init (or ENVSHIM_INIT)".into());
    }
    if !init && (!common.success_exits.is_empty() || !common.rewrite_signals.is_empty()) {
        return Err("--success-exit and --rewrite-signal need --init (or ENVSHIM_INIT)".into());
    }
    // Parsed here, not by clap: a typed value parser is code in every start.
    let mut success_exits = Vec::with_capacity(common.success_exits.len());
    for code in &common.success_exits {
        match code.to_str().filter(|c| c.bytes().all(|b| b.is_ascii_digit())).and_then(|c| c.parse().ok()) {
            Some(c) => success_exits.push(c),
            None => return Err(format!("--success-exit: expected an exit code from 0 to 255, got '{}'", code.to_string_lossy())),
        }
    }
    let mut rewrite_signals = Vec::with_capacity(common.rewrite_signals.len());
    for r in &common.rewrite_signals {
        rewrite_signals.push(envshim::init::parse_rewrite(&r.to_string_lossy()).map_err(|e| format!("--rewrite-signal: {e}"))?);
    }
    Ok(envshim::Options {
        manifest: common.manifest.or(manifest_file),
        manifest_json: match common.manifest_json {
            Some(text) => Some(("--manifest-json", text)),
            None => manifest_json.map(|text| ("ENVSHIM_MANIFEST_JSON", text)),
        },
        env_files,
        env_dirs: comma_lists(common.env_dirs, env_dir_var),
        envs: common.envs,
        volumes: common.volumes,
        strict_names: env_flag("ENVSHIM_STRICT_NAMES", strict_names_var)? | common.strict_names,
        strict: false,
        no_service_url: common.no_service_url,
        termination_log: common.termination_log,
        no_expand_args: env_flag("ENVSHIM_NO_EXPAND_ARGS", no_expand_var)? | common.no_expand_args,
        init,
        init_group: common.init_group,
        term_delay: common.term_delay,
        success_exits,
        rewrite_signals,
        file_env: comma_lists(common.file_env, file_env_var),
        wait: wait(common.wait, wait_var)?,
        program: Vec::new(),
        container: common.container.or(container_var),
        verbose: env_flag("ENVSHIM_VERBOSE", verbose_var)? | common.verbose,
        check_json: false,
    })
}

#[cfg(not(test))]
envshim::c_main!(envshim_main);

/// A run, from C's `main`.
#[cfg(not(test))]
fn envshim_main(argv: envshim::sys::Argv) -> libc::c_int {
    envshim::start();
    match parse(argv.to_vec()) {
        Ok(cli) => dispatch(cli.command),
        // Read again only on this path.
        Err(e) => clap_error(e, argv.to_vec()),
    }
}

/// A command line clap refused (or `--help`, `--version`): the usage error
/// reaches a `--termination-log` given on it, found by a scan of its words.
#[cold]
#[inline(never)]
fn clap_error(e: clap::Error, args: Vec<OsString>) -> i32 {
    // --help and --version: printed on stdout, exit 0.
    if !e.use_stderr() {
        e.exit()
    }
    usage(usage_line(&e, &args), termination_log_of(&args).as_deref())
}

/// The value of the last `--termination-log` before `--` in `args`, as clap would take it.
fn termination_log_of(args: &[OsString]) -> Option<OsString> {
    use std::os::unix::ffi::OsStrExt;
    let mut found = None;
    let mut words = args.iter().skip(1);
    while let Some(w) = words.next() {
        let b = w.as_bytes();
        if b == b"--" {
            break;
        }
        if b == b"--termination-log" {
            found = words.next().cloned();
        } else if let Some(v) = b.strip_prefix(b"--termination-log=") {
            found = Some(std::ffi::OsStr::from_bytes(v).to_os_string());
        }
    }
    found.filter(|v| !v.is_empty())
}

/// A usage error: one `envshim: ` line on stderr and in the termination log, exit 2.
fn usage(message: String, termination_log: Option<&std::ffi::OsStr>) -> i32 {
    envshim::report::fail(&envshim::error::Error::usage(message), &[], termination_log)
}

/// The first line of clap's message (its usage block and tips dropped),
/// with the closest known name for a misspelt option or subcommand.
fn usage_line(e: &clap::Error, args: &[OsString]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        return "a subcommand is required: run, check, render or install (see envshim --help)".into();
    }
    let text = e.render().to_string();
    // The first paragraph, on one line.
    let first: Vec<&str> = text.lines().map(str::trim).skip_while(|l| l.is_empty()).take_while(|l| !l.is_empty()).collect();
    let first = first.join(" ");
    let first = first.strip_prefix("error: ").unwrap_or(&first);
    // A suggestion only for a word envshim does not know (not for a known
    // option given twice, or with a value it takes none of).
    let wrong = match (e.kind(), e.get(ContextKind::InvalidArg).or_else(|| e.get(ContextKind::InvalidSubcommand))) {
        (ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand, Some(ContextValue::String(s))) => s.split(['=', ' ']).next().unwrap_or(s).to_string(),
        _ => String::new(),
    };
    let known = known_names(e.kind(), args);
    let sub = args.get(1).map_or(&b""[..], |a| std::os::unix::ffi::OsStrExt::as_bytes(a.as_os_str()));
    match envshim::suggest::closest(wrong.as_bytes(), &known).filter(|name| **name != wrong) {
        Some(name) => format!("{first} (did you mean {name}? see envshim --help)"),
        // `envshim --verbose run`: an option of the subcommands before one.
        None if sub.starts_with(b"-") && wrong.starts_with("--") && known_names(e.kind(), &[OsString::new(), "run".into()]).contains(&&*wrong) => {
            format!("{first} (options go after the subcommand: envshim run {wrong} ..., not envshim {wrong} run ...)")
        }
        // `ENTRYPOINT ["/envshim","run"]` with a pod's `args: ["--port=8080"]`.
        None if sub == b"run" && wrong.starts_with('-') => format!(
            "{first} (the program's arguments go after --: envshim run [OPTIONS] -- PROGRAM {wrong}; in an image, ENTRYPOINT [\"/envshim\",\"run\",\"--\",\"/app\"] lets a pod's args append)"
        ),
        None => format!("{first} (see envshim --help)"),
    }
}

/// The names a misspelt word may have meant: the subcommands, or the long
/// options of the subcommand in `args` (`args[1]`).
fn known_names(kind: clap::error::ErrorKind, args: &[OsString]) -> Vec<&'static str> {
    use clap::CommandFactory;
    if kind == clap::error::ErrorKind::InvalidSubcommand {
        return ["run", "check", "render", "install", "help"].into();
    }
    let cli = Cli::command();
    let sub = args.get(1).and_then(|a| a.to_str()).and_then(|a| cli.find_subcommand(a));
    let mut names: Vec<&'static str> = vec!["--help", "--version"];
    for arg in sub.into_iter().flat_map(|s| s.get_arguments()) {
        if let Some(long) = arg.get_long() {
            // The few option names are kept for the process's short life.
            names.push(Box::leak(format!("--{long}").into_boxed_str()));
        }
    }
    names
}

/// Builds the options (configuration variables included) and runs `f`; a
/// usage error found on the way also goes to the termination log.
fn with_options(common: Common, f: impl FnOnce(envshim::Options) -> Result<i32, String>) -> i32 {
    let log = common.termination_log.clone();
    match options(common).and_then(f) {
        Ok(status) => status,
        Err(message) => usage(message, log.as_deref()),
    }
}

fn dispatch(command: Command) -> i32 {
    match command {
        Command::Run(RunArgs { common, program }) => with_options(common, |o| Ok(envshim::run(&envshim::Options { program, ..o }))),
        Command::Check(CheckArgs { common, strict, program, format }) => with_options(common, |o| {
            let check_json = match format.as_ref().map(|f| f.to_str()) {
                None | Some(Some("text")) => false,
                Some(Some("json")) => true,
                Some(_) => return Err("check --format: expected text or json".into()),
            };
            Ok(envshim::check(&envshim::Options { program, strict, check_json, ..o }))
        }),
        Command::Render(RenderArgs { common, format, show_values }) => {
            let format = match format {
                Format::Env => envshim::Format::Env,
                Format::Json => envshim::Format::Json,
            };
            with_options(common, |o| Ok(envshim::render(&o, format, show_values)))
        }
        Command::Install(InstallArgs { dest, force }) => envshim::install(&dest, force),
    }
}
