//! Helpers for the black-box tests: temp volumes, running the built binary
//! hermetically (cleared environment, explicit variables, a timeout), and
//! checks on what it printed.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The binary cargo built.
pub const CARGO_BIN: &str = env!("CARGO_BIN_EXE_envshim");

/// The variable naming another binary to test. It is in envshim's own
/// namespace, so every command that runs envshim without clearing its
/// environment removes it ([`command`]): envshim would warn about it.
pub const TEST_BIN_VAR: &str = "ENVSHIM_TEST_BIN";

/// The binary the black-box tests run: `ENVSHIM_TEST_BIN` when set (any
/// build, such as the shipped dist/envshim-linux-amd64: tests/all.sh), else
/// [`CARGO_BIN`].
pub fn bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| match std::env::var_os(TEST_BIN_VAR) {
        // Absolute: runs change their working directory.
        Some(p) if !p.is_empty() => {
            let p = std::path::absolute(&p).expect("ENVSHIM_TEST_BIN");
            assert!(p.is_file(), "ENVSHIM_TEST_BIN={}: no such file", p.display());
            // Run under the name `envshim` (dist/envshim-linux-amd64 is not):
            // tests read it back as the process name and in usage lines.
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-bin");
            std::fs::create_dir_all(&dir).unwrap();
            let link = dir.join("envshim");
            let tmp = dir.join(format!("envshim.{}", std::process::id()));
            let _ = std::fs::remove_file(&tmp);
            std::os::unix::fs::symlink(&p, &tmp).unwrap();
            std::fs::rename(&tmp, &link).unwrap();
            link.into_os_string().into_string().expect("ENVSHIM_TEST_BIN: a UTF-8 path")
        }
        _ => CARGO_BIN.to_string(),
    })
}

/// The one sentinel's text, written once for both forms below.
macro_rules! sentinel {
    () => {
        "SENTINEL-s3cr3t-VALUE"
    };
}

/// A secret-looking value that must never be printed (the same text as the
/// `sentinel` field of tests/data/envfile-grammar.json).
pub const SENTINEL: &str = sentinel!();
/// The sentinel between two non-ASCII characters, so it can never be part of
/// a valid variable name (names from files are printed in the skipped-keys
/// warning, and that is allowed): for generated input that may put a value
/// where a name goes (tests/hostile).
pub const SENTINEL_NOT_A_NAME: &str = concat!("秘", sentinel!(), "秘");
/// A fragment of it: a truncated or partly escaped leak still shows this.
pub const SENTINEL_FRAGMENT: &str = "s3cr3t";

/// Every run is killed and fails the test after this long.
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// Prints `"$0" "$@"`, each followed by a NUL (`/bin/sh -c PRINT_ARGS argv0 args...`).
pub const PRINT_ARGS: &str = r#"printf '%s\0' "$0" "$@""#;

/// A temporary directory standing for a volume (or holding a manifest).
pub struct Volume {
    dir: tempfile::TempDir,
}

impl Default for Volume {
    fn default() -> Self {
        Self::new()
    }
}

impl Volume {
    pub fn new() -> Volume {
        let dir = tempfile::Builder::new().prefix("envshim-test-").tempdir().expect("tempdir");
        // Readable by the unprivileged user some tests run as.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        Volume { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The directory as a string, for `mountPath` and `--volume`.
    pub fn dir(&self) -> String {
        self.dir.path().to_str().expect("utf-8 temp path").to_string()
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel.trim_start_matches('/'))
    }

    /// Writes `rel` (creating its directories) and returns its full path.
    pub fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// Full path of `rel` as a string.
    pub fn file_str(&self, rel: &str, contents: impl AsRef<[u8]>) -> String {
        self.file(rel, contents).to_str().unwrap().to_string()
    }

    pub fn subdir(&self, rel: &str) -> PathBuf {
        let p = self.join(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    pub fn symlink(&self, rel: &str, target: &str) -> PathBuf {
        let p = self.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, &p).unwrap();
        p
    }

    /// Writes a manifest (`manifest.json`) and returns its path as a string.
    pub fn manifest(&self, json: &serde_json::Value) -> String {
        self.file_str("manifest.json", serde_json::to_vec_pretty(json).unwrap())
    }

    /// `NAME=DIR` for `--volume`.
    pub fn volume_arg(&self, name: &str) -> String {
        format!("{name}={}", self.dir())
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.join(rel)).unwrap()
    }
}

/// Spawns `cmd`, retrying while its program is "text file busy": a copy just
/// written (see [`Shim::unprivileged`]) stays busy while a child that another
/// test thread forked meanwhile still holds the copy's fd, until that child execs.
fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(10));
            }
            r => return r,
        }
    }
}

/// One run of the binary being prepared: the one runner of the black-box
/// tests, its options set by the builder methods below.
pub struct Shim {
    bin: PathBuf,
    /// Holds the arguments, the variables and the directory; `run` builds the
    /// command around the binary (or a copy of it) from them.
    cmd: Command,
    shown: Vec<String>,
    timeout: Duration,
    /// Run as uid/gid 65534 (set by [`Shim::unprivileged`] when root).
    as_nobody: bool,
    stack_limit: Option<u64>,
    mem_limit: Option<u64>,
    deny_openat2: Option<i32>,
}

/// `envshim ARGS...` with an empty environment.
pub fn envshim<I, S>(args: I) -> Shim
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new("envshim");
    cmd.env_clear().stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let s = Shim {
        bin: PathBuf::from(bin()),
        cmd,
        shown: Vec::new(),
        timeout: TIMEOUT,
        as_nobody: false,
        stack_limit: None,
        mem_limit: None,
        deny_openat2: None,
    };
    s.args(args)
}

impl Shim {
    pub fn arg(mut self, a: impl AsRef<OsStr>) -> Self {
        let a = a.as_ref();
        let mut shown = a.to_string_lossy().into_owned();
        if shown.len() > 80 {
            shown = format!("{}…({} bytes)", &shown[..shown.floor_char_boundary_compat(60)], a.len());
        }
        self.shown.push(shown);
        self.cmd.arg(a);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self = self.arg(a);
        }
        self
    }

    /// Sets one inherited variable.
    pub fn env(mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> Self {
        self.cmd.env(k, v);
        self
    }

    pub fn envs<'a>(mut self, vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        for (k, v) in vars {
            self.cmd.env(k, v);
        }
        self
    }

    pub fn cwd(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Kills the run and fails the test after `limit` instead of [`TIMEOUT`].
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// Runs as an unprivileged user when the tests run as root, so that
    /// permission bits are enforced. Returns the uid the binary will have.
    /// That user may not reach the binary (a checkout under `/root` or a
    /// mode-0700 home), so the run uses a copy in a temporary directory it can reach.
    pub fn unprivileged(mut self) -> (Self, u32) {
        let euid = nix::unistd::geteuid().as_raw();
        if euid != 0 {
            return (self, euid);
        }
        self.as_nobody = true;
        (self, 65534)
    }

    /// Sets the soft stack rlimit of the binary (which sets the kernel's
    /// limit on the size of argv + envp for the exec envshim does).
    pub fn stack_limit(mut self, bytes: u64) -> Self {
        self.stack_limit = Some(bytes);
        self
    }

    /// Sets RLIMIT_AS (soft and hard) of the binary: bounded memory.
    pub fn mem_limit(mut self, bytes: u64) -> Self {
        self.mem_limit = Some(bytes);
        self
    }

    /// With `Some(errno)`, a seccomp filter fails every `openat2` with `errno`
    /// (ENOSYS as on kernels before 5.6, EPERM as under old container
    /// profiles), so envshim's fallback resolver runs; `None` leaves it alone.
    pub fn deny_openat2(mut self, errno: Option<i32>) -> Self {
        self.deny_openat2 = errno;
        self
    }

    /// Runs to completion (killed after the timeout, [`TIMEOUT`] unless set).
    #[track_caller]
    pub fn run(self) -> Out {
        let shown = format!("envshim {}", self.shown.join(" "));
        // The copy an unprivileged run uses, removed after the run.
        let (mut cmd, _reachable) = self.command();
        // Only when needed: a pre_exec hook makes std fork the whole (large,
        // multi-threaded) test process instead of using posix_spawn, which
        // made the suite 1.7 times slower.
        if self.stack_limit.is_some() || self.mem_limit.is_some() || self.deny_openat2.is_some() {
            limit(&mut cmd, self.stack_limit, self.mem_limit, self.deny_openat2);
        }
        let start = Instant::now();
        let mut child = spawn(&mut cmd).unwrap_or_else(|e| panic!("cannot start {shown}: {e}"));
        let pid = child.id();
        let mut out_pipe = child.stdout.take().unwrap();
        let mut err_pipe = child.stderr.take().unwrap();
        let out_reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out_pipe.read_to_end(&mut v);
            v
        });
        let err_reader = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = err_pipe.read_to_end(&mut v);
            v
        });
        let (status, rusage) = reap(&mut child, start, self.timeout, &shown);
        let elapsed = start.elapsed();
        let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -libc::WTERMSIG(status) };
        Out { code, stdout: out_reader.join().unwrap(), stderr: err_reader.join().unwrap(), pid, shown, elapsed, max_rss_kb: rusage.ru_maxrss }
    }

    /// The command to start, and the directory of the copy an unprivileged run uses.
    fn command(&self) -> (Command, Option<tempfile::TempDir>) {
        let mut reachable = None;
        let mut program = self.bin.clone();
        if self.as_nobody {
            let dir = tempfile::Builder::new().prefix("envshim-bin-").tempdir().expect("tempdir");
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            program = dir.path().join("envshim");
            std::fs::copy(&self.bin, &program).expect("copy the binary");
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
            reachable = Some(dir);
        }
        let mut cmd = Command::new(&program);
        cmd.args(self.cmd.get_args()).env_clear().stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in self.cmd.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(d) = self.cmd.get_current_dir() {
            cmd.current_dir(d);
        }
        if self.as_nobody {
            cmd.uid(65534).gid(65534);
        }
        (cmd, reachable)
    }
}

/// Limits set in the child before it execs: its stack, its address space,
/// and `openat2` failing with an errno.
// Test set-up, not in nix: pre_exec.
#[allow(unsafe_code)]
fn limit(cmd: &mut Command, stack: Option<u64>, mem: Option<u64>, deny: Option<i32>) {
    // SAFETY: only async-signal-safe calls (getrlimit, setrlimit, prctl) run in the child.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(bytes) = stack {
                let mut rl: libc::rlimit = std::mem::zeroed();
                if libc::getrlimit(libc::RLIMIT_STACK, &mut rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                rl.rlim_cur = bytes as libc::rlim_t;
                if libc::setrlimit(libc::RLIMIT_STACK, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(bytes) = mem {
                let rl = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                if libc::setrlimit(libc::RLIMIT_AS, &rl) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(errno) = deny {
                deny_openat2(errno)?;
            }
            Ok(())
        });
    }
}

/// Waits for `child`, killing it past `timeout`: its wait status and rusage.
#[track_caller]
// The child is reaped with wait4 (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
// Test set-up, not in nix: wait4 (nix has no rusage).
#[allow(unsafe_code)]
fn reap(child: &mut std::process::Child, start: Instant, timeout: Duration, shown: &str) -> (i32, libc::rusage) {
    let pid = child.id() as libc::pid_t;
    loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is valid; wait4 fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, without blocking.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            return (status, ru);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{shown}: still running after {timeout:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A seccomp filter that fails `openat2` with `errno` and allows everything
/// else, installed in the calling process (a child, before exec).
// Test set-up, not in nix: prctl with a seccomp filter, a raw openat2.
#[allow(unsafe_code)]
pub fn deny_openat2(errno: i32) -> std::io::Result<()> {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter { code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, jt, jf, k };
    let mut filter = [
        // offsetof(struct seccomp_data, nr) == 0
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jeq(libc::SYS_openat2 as u32, 0, 1),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_mut_ptr() };
    // SAFETY: plain prctl calls; `prog` outlives them and the kernel copies the filter.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}

impl FloorBoundary for String {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        i = i.min(self.len());
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// What a run gave.
#[derive(Debug)]
pub struct Out {
    /// The exit code, or minus the signal that killed it.
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub pid: u32,
    pub shown: String,
    pub elapsed: Duration,
    /// Peak resident set size of the binary, KiB (from wait4).
    pub max_rss_kb: i64,
}

impl Out {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn context(&self) -> String {
        format!("{}\n--- exit {}\n--- stdout:\n{}\n--- stderr:\n{}", self.shown, self.code, self.stdout_str(), self.stderr_str())
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn code(&self, expected: i32) -> &Self {
        assert_eq!(self.code, expected, "unexpected exit code from {}", self.context());
        self
    }

    /// Asserts exit 0 and an empty stderr (for `check`: only its summary line, `envshim: ok: ...`).
    #[track_caller]
    pub fn ok(&self) -> &Self {
        self.code(0);
        let lines = self.stderr_lines();
        let summary = self.shown.starts_with("envshim check") && lines.len() == 1 && lines[0].starts_with("envshim: ok: ");
        assert!(self.stderr.is_empty() || summary, "unexpected stderr from {}", self.context());
        self
    }

    /// Asserts a failure: the exit code, and a stderr made only of
    /// `envshim: ` lines (at least one); returns the lines.
    #[track_caller]
    pub fn fails(&self, expected: i32) -> Vec<String> {
        self.code(expected);
        let lines = self.stderr_lines();
        assert!(!lines.is_empty(), "no message on stderr from {}", self.context());
        for l in &lines {
            assert!(l.starts_with("envshim: "), "stderr line {l:?} does not start with 'envshim: ' in {}", self.context());
        }
        lines
    }

    /// Asserts a failure with exactly one message line, which contains every `parts`.
    #[track_caller]
    pub fn fails_with(&self, expected: i32, parts: &[&str]) -> String {
        let lines = self.fails(expected);
        let errors: Vec<&String> = lines.iter().filter(|l| !l.starts_with("envshim: warning: ")).collect();
        assert_eq!(errors.len(), 1, "expected one error line from {}", self.context());
        for p in parts {
            assert!(errors[0].contains(p), "message {:?} lacks {p:?} in {}", errors[0], self.context());
        }
        errors[0].clone()
    }

    /// Asserts stderr contains `part`.
    #[track_caller]
    pub fn stderr_has(&self, part: &str) -> &Self {
        assert!(self.stderr_str().contains(part), "stderr lacks {part:?} in {}", self.context());
        self
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr_str().lines().map(str::to_string).collect()
    }

    /// Asserts neither stdout nor stderr holds the sentinel (or part of it).
    #[track_caller]
    pub fn no_sentinel(&self) -> &Self {
        assert_no_sentinel(&self.stderr, &format!("stderr of {}", self.shown));
        assert_no_sentinel(&self.stdout, &format!("stdout of {}", self.shown));
        self
    }

    /// Asserts stderr does not hold the sentinel (or part of it).
    #[track_caller]
    pub fn stderr_no_sentinel(&self) -> &Self {
        assert_no_sentinel(&self.stderr, &format!("stderr of {}", self.shown));
        self
    }

    /// The output of `/usr/bin/env -0`, in order.
    #[track_caller]
    pub fn env0(&self) -> Vec<(String, String)> {
        split0(&self.stdout)
            .into_iter()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("not NAME=VALUE: {kv:?} in {}", self.context()));
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    /// The output of `/usr/bin/env -0`, as a map (asserting no duplicates).
    #[track_caller]
    pub fn env_map(&self) -> BTreeMap<String, String> {
        let list = self.env0();
        let map: BTreeMap<String, String> = list.iter().cloned().collect();
        assert_eq!(map.len(), list.len(), "duplicate variables in {}", self.context());
        map
    }

    /// The output of [`PRINT_ARGS`]: argv[0] (as `$0`) and the arguments.
    pub fn args0(&self) -> Vec<String> {
        split0(&self.stdout)
    }

    /// stdout as JSON.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}) in {}", self.context()))
    }
}

fn split0(bytes: &[u8]) -> Vec<String> {
    let s = String::from_utf8(bytes.to_vec()).expect("utf-8 output");
    let s = s.strip_suffix('\0').unwrap_or(&s);
    if s.is_empty() && bytes.is_empty() {
        return Vec::new();
    }
    s.split('\0').map(str::to_string).collect()
}

/// A command running the binary (in the test's environment, less
/// [`TEST_BIN_VAR`]), as PID 1 of a new pid namespace when
/// `in_pid_namespace` (`unshare --pid --fork --mount-proc`; see
/// [`pid_namespaces`]), for the runs a test starts in the background and
/// signals from outside. `--kill-child`: if the test gives up on unshare,
/// envshim (and with it the whole namespace) is killed too.
pub fn command(in_pid_namespace: bool) -> Command {
    let mut c = if in_pid_namespace {
        let mut c = Command::new("unshare");
        c.args(["--pid", "--fork", "--mount-proc", "--kill-child", bin()]);
        c
    } else {
        Command::new(bin())
    };
    c.env_remove(TEST_BIN_VAR);
    c
}

/// True when pid namespaces can be made here (root and unshare); says why
/// not, once, otherwise.
pub fn pid_namespaces() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        if !am_root() {
            eprintln!("not root: skipping the tests that need a pid namespace");
            return false;
        }
        let ok = Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "true"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("unshare --pid --fork --mount-proc is unavailable: skipping the tests that need it");
        }
        ok
    })
}

/// True when the tests run as root (and so can drop privileges).
pub fn am_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Asserts `bytes` holds neither the sentinel nor a fragment of it.
#[track_caller]
pub fn assert_no_sentinel(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains(SENTINEL) && !text.contains(SENTINEL_FRAGMENT),
        "the sentinel leaked into {what}:\n{text}"
    );
}

/// `/usr/bin/env -0`: the program that prints its environment.
pub fn print_env() -> Vec<&'static str> {
    vec!["/usr/bin/env", "-0"]
}

/// `/bin/sh -c PRINT_ARGS` followed by `argv0` and `args`.
pub fn print_args<'a>(argv0: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["/bin/sh", "-c", PRINT_ARGS, argv0];
    v.extend_from_slice(args);
    v
}

/// The `render --format json --show-values` output as name → (source, value).
#[track_caller]
pub fn rendered(out: &Out) -> BTreeMap<String, (String, String)> {
    let json = out.json();
    let obj = json.as_object().unwrap_or_else(|| panic!("not an object: {json}"));
    obj.iter()
        .map(|(k, v)| {
            let source = v["source"].as_str().unwrap_or_else(|| panic!("no source for {k}: {v}")).to_string();
            let value = v["value"].as_str().unwrap_or_else(|| panic!("no value for {k}: {v}")).to_string();
            assert_eq!(v["bytes"].as_u64(), Some(value.len() as u64), "bytes of {k}");
            (k.clone(), (source, value))
        })
        .collect()
}

/// `render --format json --show-values` of `args` with an empty environment
/// (and no service URL), as name → (source, value).
#[track_caller]
pub fn render_values<I, S>(args: I) -> BTreeMap<String, (String, String)>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let out = envshim(["render", "--format", "json", "--show-values"]).args(args).run();
    out.ok();
    rendered(&out)
}

/// name → value of a render map.
pub fn values(map: &BTreeMap<String, (String, String)>) -> BTreeMap<String, String> {
    map.iter().map(|(k, (_, v))| (k.clone(), v.clone())).collect()
}

pub fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> OsString {
    s.as_ref().to_os_string()
}

/// A JSON manifest `env[]` entry reading `key` of `path` in volume `vol`.
pub fn file_key_ref(name: &str, vol: &str, path: &str, key: &str, optional: bool) -> serde_json::Value {
    serde_json::json!({"name": name, "valueFrom": {"fileKeyRef": {"volumeName": vol, "path": path, "key": key, "optional": optional}}})
}

/// A JSON manifest `envFrom[]` entry importing `path` of volume `vol`.
pub fn file_ref(vol: &str, path: &str, optional: bool, prefix: Option<&str>) -> serde_json::Value {
    let mut v = serde_json::json!({"fileRef": {"volumeName": vol, "path": path, "optional": optional}});
    if let Some(p) = prefix {
        v["prefix"] = serde_json::Value::from(p);
    }
    v
}

/// `volumeMounts[]` entry.
pub fn mount(name: &str, vol: &Volume) -> serde_json::Value {
    serde_json::json!({"name": name, "mountPath": vol.dir()})
}

/// A volume named `v` holding `files`, and a manifest (in a second directory)
/// mounting it with the fields of `rest` merged in: (volume, manifest dir, manifest path).
pub fn setup(files: &[(&str, &str)], rest: serde_json::Value) -> (Volume, Volume, String) {
    let vol = Volume::new();
    for (p, c) in files {
        vol.file(p, c);
    }
    let d = Volume::new();
    let mut m = serde_json::json!({"volumeMounts": [mount("v", &vol)]});
    for (k, val) in rest.as_object().expect("rest is an object") {
        m[k] = val.clone();
    }
    let path = d.manifest(&m);
    (vol, d, path)
}
