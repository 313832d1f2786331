//! Running the built binary hermetically: [`envshim`] prepares a run (cleared
//! environment, explicit variables, a timeout, optional limits and a drop of
//! privileges), [`Shim::run`] runs it to an [`Out`].

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{bin, Out};

/// Every run is killed and fails the test after this long.
pub const TIMEOUT: Duration = Duration::from_secs(20);

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
    /// The binary's name: `envshim`, or `kubectl-envshim` ([`kubectl_envshim`]).
    name: &'static str,
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
        name: "envshim",
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

/// `kubectl-envshim ARGS...` (the converter's binary, [`super::converter`]),
/// run as [`envshim`] runs the shim.
pub fn kubectl_envshim<I, S>(args: I) -> Shim
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Shim { bin: PathBuf::from(super::converter()), name: "kubectl-envshim", ..envshim(args) }
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
        let shown = format!("{} {}", self.name, self.shown.join(" "));
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
            program = dir.path().join(self.name);
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
    deny_syscall(libc::SYS_openat2, errno)
}

/// A seccomp filter that fails the system call `nr` with `errno` and allows
/// everything else, installed in the calling process (a child, before exec).
// Test set-up, not in nix: prctl with a seccomp filter.
#[allow(unsafe_code)]
pub fn deny_syscall(nr: libc::c_long, errno: i32) -> std::io::Result<()> {
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter { code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, jt, jf, k };
    let mut filter = [
        // offsetof(struct seccomp_data, nr) == 0
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        jeq(nr as u32, 0, 1),
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
