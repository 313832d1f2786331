//! Finding the program and replacing envshim with it: PATH lookup in the final
//! environment, the `execve` size limits checked beforehand, and `execve`.

use std::ffi::CString;
use std::io;

use crate::environment::Environment;
use crate::error::{escape, Error, ExitCode};
use crate::limits::{MAX_EXEC_STRING_BYTES, MAX_EXEC_TOTAL_BYTES, MIN_EXEC_TOTAL_BYTES};
use crate::program::Word;
use crate::sys;

/// PATH when the final environment has none (the one execvp uses).
pub const DEFAULT_PATH: &[u8] = b"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A program ready to be executed.
pub struct Exec<'e> {
    pub path: CString,
    /// The strings `argv_ptrs` points to, kept alive with it.
    argv: Vec<CString>,
    /// A pointer to each of `argv`'s strings, then a null one (built before
    /// `--init` spawns, so the child allocates nothing).
    argv_ptrs: Vec<*const libc::c_char>,
    pub envp: Envp<'e>,
    /// The program word as written, for messages after a failed exec.
    pub shown: String,
}

/// How sure the lookup must be before `execve`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// A program with a `/` is taken as is; `execve` will tell (fewer syscalls).
    Lazy,
    /// The program must be found and executable now (check, and `--init`).
    Verify,
}

pub use crate::sys::Envp;

/// The `NAME=VALUE` strings for `execve`: a pointer to each in the
/// environment's own buffer, where each was written once with its NUL
/// (docs/performance.md). Built before `--init` forks, so the child
/// allocates nothing before it execs.
pub fn envp(env: &Environment) -> Envp<'_> {
    Envp::new(env.pointers(), env)
}

impl Exec<'_> {
    /// The program line's words, as they would be exec'd.
    pub fn into_argv(self) -> Vec<Vec<u8>> {
        self.argv.into_iter().map(CString::into_bytes).collect()
    }
}

/// Resolves the program and checks every `execve` limit; every problem is reported.
pub fn prepare<'e>(line: &[Word], expanded: Vec<Vec<u8>>, env: &'e Environment, lookup: Lookup) -> Result<Exec<'e>, Vec<Error>> {
    let shown = format!("\"{}\"", escape(&line[0].text));
    let mut errors = Vec::new();
    let argv: Vec<CString> = expanded.into_iter().map(|a| CString::new(a).unwrap_or_default()).collect();
    let envp = envp(env);
    let path = match find(argv[0].as_bytes(), env.get(b"PATH"), lookup, &shown) {
        Ok(p) => Some(p),
        Err(e) => {
            errors.push(e);
            None
        }
    };
    errors.extend(check_sizes(line, &argv, env, path.as_ref().map_or(0, |p| p.as_bytes().len())));
    match path {
        Some(path) if errors.is_empty() => {
            let argv_ptrs = argv.iter().map(|a| a.as_ptr()).chain([std::ptr::null()]).collect();
            Ok(Exec { path, argv, argv_ptrs, envp, shown })
        }
        _ => Err(errors),
    }
}

/// Checks `execve`'s limits: each string at most MAX_ARG_STRLEN, and the
/// whole of argv + envp within what the stack rlimit allows.
#[cfg_attr(envshim_size, optimize(size))]
pub fn check_sizes(line: &[Word], argv: &[CString], env: &Environment, path_len: usize) -> Vec<Error> {
    let mut errors = Vec::new();
    for (i, a) in argv.iter().enumerate() {
        let n = a.as_bytes().len();
        if n > MAX_EXEC_STRING_BYTES {
            errors.push(Error::new(
                ExitCode::NoExec,
                format!("{} of the program line is {n} bytes after expansion, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes", line[i].origin),
            ));
        }
    }
    // A walk over every variable only when one may be over the limit.
    let vars = if env.longest_text() > MAX_EXEC_STRING_BYTES { env.len() } else { 0 };
    for var in env.vars().take(vars) {
        let n = var.text.len();
        if n > MAX_EXEC_STRING_BYTES {
            errors.push(Error::new(
                ExitCode::NoExec,
                format!("{} is {n} bytes as NAME=VALUE, over the execve limit of {MAX_EXEC_STRING_BYTES} bytes", var.describe()),
            ));
        }
    }
    let total = exec_size(argv, env, path_len);
    // The limit is never below MIN_EXEC_TOTAL_BYTES: a total within it fits
    // without asking for the stack rlimit (one system call fewer at start-up).
    let limit = if total > MIN_EXEC_TOTAL_BYTES { exec_total_limit() } else { MIN_EXEC_TOTAL_BYTES };
    if total > limit {
        let largest = env.vars().max_by_key(|v| v.text.len());
        let which = largest.map_or(String::new(), |v| format!("; the largest is {} ({} bytes)", v.describe(), v.text.len()));
        errors.push(Error::new(ExitCode::NoExec, format!("the environment and arguments total {total} bytes, over the system limit of {limit} bytes{which}")));
    }
    errors
}

/// What `execve` counts against its limit, as the kernel does (`fs/exec.c`,
/// `bprm_stack_limits` and `copy_strings`): the path, every argument and
/// environment string with its NUL, and one pointer per string, with argv
/// counted as at least one (the kernel makes room for an empty `argv[0]`).
/// The NULL pointers that end the arrays are not counted.
fn exec_size(argv: &[CString], env: &Environment, path_len: usize) -> usize {
    let strings: usize = argv.iter().map(|s| s.as_bytes().len() + 1).sum::<usize>() + env.string_bytes() + path_len + 1;
    strings + (argv.len().max(1) + env.len()) * std::mem::size_of::<usize>()
}

/// The kernel's limit on argv + envp: a quarter of the stack rlimit, within
/// [ARG_MAX, 3/4 of _STK_LIM].
fn exec_total_limit() -> usize {
    match sys::stack_limit() {
        Some(stack) => ((stack / 4) as usize).clamp(MIN_EXEC_TOTAL_BYTES, MAX_EXEC_TOTAL_BYTES),
        None => MAX_EXEC_TOTAL_BYTES,
    }
}

/// Finds the program: as given when it has a `/`, else in `PATH` (the final
/// environment's, or the default one).
fn find(program: &[u8], path_var: Option<&[u8]>, lookup: Lookup, shown: &str) -> Result<CString, Error> {
    find_in_path(program, path_var, lookup, shown).map_err(|mut e| {
        e.what.push_str(&env_file_hint(program));
        e
    })
}

/// An env file given as the program (`check team/db.env` for `check
/// --env-file team/db.env`): when its name ends in `.env`, or it is a text
/// file (no NUL, UTF-8, no `#!`) it could not execute, the option to use.
#[cold]
#[cfg_attr(envshim_size, optimize(size))]
fn env_file_hint(program: &[u8]) -> String {
    use std::io::Read;
    use std::os::unix::{ffi::OsStrExt, fs::OpenOptionsExt};
    let text_file = || {
        // Not blocking on a FIFO; at most 512 bytes read.
        let open = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(std::ffi::OsStr::from_bytes(program));
        let Ok(file) = open.and_then(|f| f.metadata().map(|m| (f, m.is_file()))) else { return false };
        let mut head = Vec::new();
        let read = file.1 && file.0.take(512).read_to_end(&mut head).is_ok();
        // A character cut by the 512 bytes is still text.
        let utf8 = std::str::from_utf8(&head).map_or_else(|e| e.error_len().is_none(), |_| true);
        read && !head.is_empty() && !head.contains(&0) && !head.starts_with(b"#!") && utf8
    };
    if program.ends_with(b".env") || text_file() {
        format!(" (an env file? load it with --env-file {}, before the program line)", escape(program))
    } else {
        String::new()
    }
}

/// [`find`], without the hint.
fn find_in_path(program: &[u8], path_var: Option<&[u8]>, lookup: Lookup, shown: &str) -> Result<CString, Error> {
    let not_found = |where_: &str| Error::new(ExitCode::NotFound, format!("program {shown} not found{where_}"));
    if program.is_empty() {
        return Err(not_found(""));
    }
    if program.contains(&b'/') {
        let path = CString::new(program).map_err(|_| not_found(""))?;
        if lookup == Lookup::Lazy {
            return Ok(path);
        }
        return match executable_file(&path) {
            Ok(()) => Ok(path),
            Err(e) if is_missing(&e) => Err(not_found("")),
            Err(e) => Err(Error::new(ExitCode::NoExec, format!("program {shown} cannot be executed ({})", crate::error::os_reason(&e)))),
        };
    }
    let mut denied = None;
    for dir in path_var.unwrap_or(DEFAULT_PATH).split(|&b| b == b':') {
        // An empty PATH entry is the working directory, as for execvp.
        let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
        let mut candidate = dir.to_vec();
        candidate.push(b'/');
        candidate.extend_from_slice(program);
        let Ok(candidate) = CString::new(candidate) else { continue };
        match executable_file(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if is_missing(&e) => {}
            Err(e) => {
                denied.get_or_insert(e);
            }
        }
    }
    match denied {
        Some(e) => Err(Error::new(ExitCode::NoExec, format!("program {shown} found in PATH but cannot be executed ({})", crate::error::os_reason(&e)))),
        None => Err(not_found(" in PATH")),
    }
}

fn is_missing(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::ENAMETOOLONG | libc::ELOOP))
}

/// Ok when `path` is a regular file this process may execute.
fn executable_file(path: &CString) -> io::Result<()> {
    sys::executable(path)?;
    let st = sys::stat(path)?;
    if st.st_mode & libc::S_IFMT == libc::S_IFREG {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::EACCES))
    }
}

/// Replaces envshim with the program; returns only with the reason it failed.
pub fn exec(e: &Exec) -> Error {
    exec_error(e, exec_only(e, None))
}

/// `execve` of `e` (with `envp` instead of its own, when given: `--listen`'s)
/// without building a message (allocates nothing): the `--init` child's exec.
pub fn exec_only(e: &Exec, envp: Option<&Envp>) -> io::Error {
    sys::execve(&e.path, &e.argv_ptrs, envp.unwrap_or(&e.envp))
}

/// The error for a failed `execve` of `e`.
#[cfg_attr(envshim_size, optimize(size))]
pub fn exec_error(e: &Exec, err: io::Error) -> Error {
    let shown = &e.shown;
    match err.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) if sys::stat(&e.path).is_err() => {
            Error::new(ExitCode::NotFound, format!("program {shown} not found{}", env_file_hint(e.path.as_bytes())))
        }
        Some(libc::ENOENT) => Error::new(
            ExitCode::NoExec,
            format!("program {shown} cannot be executed: its interpreter or dynamic loader is missing ({})", crate::error::os_reason(&err)),
        ),
        Some(libc::E2BIG) => Error::new(ExitCode::NoExec, format!("program {shown}: argument list too long for execve ({})", crate::error::os_reason(&err))),
        _ => {
            Error::new(ExitCode::NoExec, format!("program {shown} cannot be executed ({}){}", crate::error::os_reason(&err), env_file_hint(e.path.as_bytes())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::Source;

    /// Each variable is checked against execve's per-string limit, also when
    /// a long one was set before shorter ones (the walk is skipped only below
    /// the longest ever set).
    #[test]
    fn a_variable_over_the_string_limit_is_reported() {
        let mut env = Environment::default();
        env.set(b"A", b"1", Source::Inherited);
        assert!(check_sizes(&[], &[], &env, 0).is_empty());
        env.set(b"LONG", vec![b's'; MAX_EXEC_STRING_BYTES - 4], Source::CliEnv);
        env.set(b"B", b"2", Source::Inherited);
        let errors = check_sizes(&[], &[], &env, 0);
        assert_eq!(errors.len(), 1);
        let want = format!("variable LONG is {} bytes as NAME=VALUE, over the execve limit", MAX_EXEC_STRING_BYTES + 1);
        assert!(errors[0].to_string().starts_with(&want), "{}", errors[0].to_string());
        env.set(b"LONG", b"short", Source::CliEnv);
        assert!(check_sizes(&[], &[], &env, 0).is_empty());
    }
}
