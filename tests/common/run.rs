//! A run of envshim that a test starts in the background, signals from
//! outside (as a container runtime would) and waits on, each wait with a
//! deadline so a broken envshim fails, never hangs: the `--init` and
//! `--watch` tests' runs.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::command;

/// Long enough for a loaded CI machine; reached only when something is broken.
const DEADLINE: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(5);

/// envshim running a `sh -c SCRIPT` program, with `$D` a fresh directory.
pub struct Run {
    pub child: Child,
    pub dir: tempfile::TempDir,
    in_namespace: bool,
}

/// What a finished run left: its status, its output, and `$D`.
pub struct Done {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub dir: tempfile::TempDir,
}

impl Done {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn read(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name)).unwrap_or_default()
    }
}

impl Run {
    /// `envshim run ARGS --no-expand-args -- sh -c SCRIPT`, as PID 1 of a new pid
    /// namespace when `in_namespace`. Output goes to files, so a process that
    /// outlives envshim cannot keep a pipe, and the test, waiting.
    pub fn start(args: &[&str], script: &str, in_namespace: bool) -> Run {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = command(in_namespace);
        cmd.arg("run").args(args).args(["--no-expand-args", "--", "sh", "-c", script]);
        Run::spawn(cmd, dir, in_namespace)
    }

    /// Starts `cmd` (which runs envshim) with `$D` set to `dir`.
    pub fn spawn(mut cmd: Command, dir: tempfile::TempDir, in_namespace: bool) -> Run {
        cmd.env("D", dir.path())
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.path().join("stdout")).unwrap())
            .stderr(fs::File::create(dir.path().join("stderr")).unwrap());
        let child = cmd.spawn().unwrap();
        Run { child, dir, in_namespace }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Waits until `name` exists in `$D` and `done` accepts its content.
    pub fn wait_for(&mut self, name: &str, done: impl Fn(&str) -> bool) -> String {
        let path = self.path(name);
        let start = Instant::now();
        loop {
            if let Ok(text) = fs::read_to_string(&path) {
                if done(&text) {
                    return text;
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("envshim exited ({status}) while waiting for {name}: {}", self.output_so_far());
            }
            if start.elapsed() > DEADLINE {
                self.give_up(&format!("{name} never came (has {:?})", fs::read_to_string(&path).ok()));
            }
            sleep(POLL);
        }
    }

    /// The pid of envshim as seen from here (outside its namespace).
    pub fn envshim_pid(&self) -> i32 {
        let outer = self.child.id() as i32;
        if !self.in_namespace {
            return outer;
        }
        children_of(outer).into_iter().next().expect("unshare has no child")
    }

    // Test set-up, not in nix: kill with any signal number (nix's Signal has no real-time ones).
    #[allow(unsafe_code)]
    pub fn signal(&self, sig: libc::c_int) {
        // SAFETY: plain syscall; the pid is envshim's, alive until we reap unshare.
        assert_eq!(unsafe { libc::kill(self.envshim_pid(), sig) }, 0, "kill {sig}");
    }

    pub fn still_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Waits for envshim (or unshare) to exit.
    pub fn finish(mut self) -> Done {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Done { status, stdout: self.read("stdout"), stderr: self.read("stderr"), dir: self.dir };
            }
            if start.elapsed() > DEADLINE {
                self.give_up("envshim did not exit");
            }
            sleep(POLL);
        }
    }

    pub fn read(&self, name: &str) -> String {
        fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub fn output_so_far(&self) -> String {
        format!("stdout {:?}, stderr {:?}", self.read("stdout"), self.read("stderr"))
    }

    pub fn give_up(&mut self, why: &str) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        panic!("{why} within {DEADLINE:?}; {}", self.output_so_far());
    }
}

/// The pids whose parent is `parent`, from /proc.
pub fn children_of(parent: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold anything, so split after its last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        if rest.split_whitespace().nth(1).and_then(|p| p.parse::<i32>().ok()) == Some(parent) {
            found.push(pid);
        }
    }
    found
}
