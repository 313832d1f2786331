//! How `kubectl envshim fmt` replaces a file (docs/reference.md, "Env files
//! the kubelet reads alike"), through the converter's binary: only the file
//! it read, whatever a symlink is re-pointed to meanwhile; never over a
//! writer's newer file, nor over its append in place; with its POSIX ACL and extended attributes; never
//! leaving its temporary file, even when killed by SIGTERM; with a file name
//! of the longest length. The races run in
//! loops bounded in time (a few seconds each).

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::common::*;

/// How long each race runs.
const RACE: Duration = Duration::from_secs(3);

/// A file `fmt` rewrites (every line changes), of about `lines` lines.
fn loose(lines: usize, tag: &str) -> String {
    (0..lines).map(|i| format!("export K_{i} = {tag}-{i}   # line {i}\n")).collect()
}

/// The entries of `dir` that look like a temporary file of `fmt`'s.
fn leftovers(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned());
    names.filter(|n| n.contains(".envshim-fmt") || n.ends_with(".tmp")).collect()
}

/// Sets its flag when dropped: the helper thread of a race stops when the
/// loop ends, a failed assertion in it too (the thread scope waits for it).
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A small random number generator (xorshift), seeded from the clock.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        Rng(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64 | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The symlink given to `fmt` is re-pointed, again and again, between the
/// file to rewrite and another (already in the form, so never `fmt`'s to
/// write) while `fmt` runs: the other file keeps its text and its inode
/// every time (`fmt` resolved the link twice and wrote the first file's
/// text over the other one in about one run in six).
#[test]
fn a_symlink_re_pointed_while_fmt_runs_never_gets_another_files_text() {
    let v = Volume::new();
    let other_text = format!("OTHER='{SENTINEL}'\n");
    let other = v.file("other.env", &other_text);
    let inode = std::fs::metadata(&other).unwrap().ino();
    let real = v.file("real.env", loose(50, "real"));
    let link = v.symlink("link.env", "real.env");
    let stop = AtomicBool::new(false);
    let runs = std::thread::scope(|s| {
        s.spawn(|| {
            let tmp = v.join("link.new");
            for target in ["other.env", "real.env"].iter().cycle() {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                std::os::unix::fs::symlink(target, &tmp).unwrap();
                std::fs::rename(&tmp, &link).unwrap();
            }
        });
        let _stop = StopOnDrop(&stop);
        let (start, mut runs) = (Instant::now(), 0);
        while start.elapsed() < RACE {
            std::fs::write(&real, loose(50, "real")).unwrap();
            let out = kubectl_envshim(["fmt", link.to_str().unwrap()]).run();
            out.ok().no_sentinel();
            assert_eq!(String::from_utf8_lossy(&v.read("other.env")), other_text, "run {runs}: the other file was written over");
            assert_eq!(std::fs::metadata(&other).unwrap().ino(), inode, "run {runs}: the other file was replaced");
            runs += 1;
        }
        runs
    });
    assert!(runs > 10, "{runs} runs");
    assert_eq!(leftovers(v.path()), Vec::<String>::new());
}

/// A writer replaces the file (by rename, as the kubelet and editors do)
/// with a new version every half millisecond while `fmt` runs on it in a
/// loop: before each version the writer finds its previous one there
/// (`fmt`'s form of it or as written), never an older one `fmt` read
/// first; `fmt` succeeds, or refuses (73) a file that changed under it.
#[test]
fn a_writers_newer_file_is_never_lost() {
    let v = Volume::new();
    let path = v.file("app.env", format!("export N={SENTINEL}-0\n"));
    let file = path.to_str().unwrap().to_string();
    let (stop, running, finished) = (AtomicBool::new(false), AtomicBool::new(false), AtomicU64::new(0));
    let holds = |k: u64| {
        let text = std::fs::read_to_string(&path).unwrap();
        text == format!("export N={SENTINEL}-{k}\n") || text == format!("N='{SENTINEL}-{k}'\n")
    };
    let (versions, refused) = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let tmp = v.join("app.new");
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                // The next version written first: looked for, then renamed at once.
                std::fs::write(&tmp, format!("export N={SENTINEL}-{}\n", k + 1)).unwrap();
                if !holds(k) {
                    // Maybe a moment of fmt's own (its file in place before a check puts
                    // the writer's back): looked at again once that fmt has ended.
                    let seen = finished.load(Ordering::SeqCst);
                    while running.load(Ordering::SeqCst) && finished.load(Ordering::SeqCst) == seen {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    assert!(holds(k), "version {k} was lost: {:?}", std::fs::read_to_string(&path).unwrap());
                }
                k += 1;
                std::fs::rename(&tmp, &path).unwrap();
                std::thread::sleep(Duration::from_micros(500));
            }
            k
        });
        let stopping = StopOnDrop(&stop);
        let (start, mut refused) = (Instant::now(), 0);
        while start.elapsed() < RACE && !writer.is_finished() {
            running.store(true, Ordering::SeqCst);
            let out = kubectl_envshim(["fmt", &file]).run();
            out.no_sentinel();
            running.store(false, Ordering::SeqCst);
            finished.fetch_add(1, Ordering::SeqCst);
            if out.code != 0 {
                out.fails_with(73, &["app.env: changed while kubectl envshim fmt read it", "left as it was"]);
                refused += 1;
            }
        }
        drop(stopping);
        (writer.join().unwrap(), refused)
    });
    assert!(versions > 100, "{versions} versions, {refused} refused");
    assert!(holds(versions));
    assert_eq!(leftovers(v.path()), Vec::<String>::new());
}

/// `getfacl`'s lines for `path` (its ACL, or the mode as one).
fn acl(path: &Path) -> String {
    let out = Command::new("getfacl").args(["--omit-header", "--absolute-names"]).arg(path).output().unwrap();
    assert!(out.status.success(), "getfacl: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn setfacl(args: &[&str], path: &Path) {
    let out = Command::new("setfacl").args(args).arg(path).output().unwrap();
    assert!(out.status.success(), "setfacl: {}", String::from_utf8_lossy(&out.stderr));
}

/// `setxattr(2)` / `getxattr(2)` of a user attribute (std has neither).
// Test set-up, not in nix: xattrs.
#[allow(unsafe_code)]
fn xattr(path: &Path, name: &str, set: Option<&[u8]>) -> Option<Vec<u8>> {
    let (p, n) = (CString::new(path.to_str().unwrap()).unwrap(), CString::new(name).unwrap());
    if let Some(value) = set {
        // SAFETY: NUL-terminated strings and a slice, valid for the call.
        let r = unsafe { libc::setxattr(p.as_ptr(), n.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
        assert_eq!(r, 0, "setxattr: {}", std::io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 256];
    // SAFETY: NUL-terminated strings and a buffer writable for its length.
    let n = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (n >= 0).then(|| buf[..n as usize].to_vec())
}

/// A file whose POSIX ACL lets one other user read it (its group bits the
/// ACL's mask) keeps that ACL, and its user attribute; a file without an
/// ACL, in a directory whose default ACL would give one to a new file, gets
/// none. (`setfacl`: package `acl`, which tests/e2e/deps.sh installs.)
#[test]
fn keeps_the_posix_acl_and_the_extended_attributes() {
    if Command::new("setfacl").arg("--version").stdout(Stdio::null()).status().is_err() {
        assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "setfacl is missing (package acl: tests/e2e/deps.sh installs it)");
        eprintln!("fmt_replace: setfacl is missing (package acl): the ACL test did not run");
        return;
    }
    let v = Volume::new();
    let dir = v.subdir("cfg");
    let with = v.file("cfg/secret.env", loose(3, SENTINEL));
    std::fs::set_permissions(&with, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    setfacl(&["-m", "u:nobody:r"], &with);
    xattr(&with, "user.team", Some(b"payments"));
    let (with_acl, with_mode) = (acl(&with), std::fs::metadata(&with).unwrap().mode());
    assert!(with_acl.contains("user:nobody:r--") && with_acl.contains("mask::r--"), "{with_acl}");
    setfacl(&["-d", "-m", "u:nobody:rw"], &dir);
    let without = v.file("cfg/plain.env", loose(3, "plain"));
    setfacl(&["-b"], &without);
    std::fs::set_permissions(&without, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let without_acl = acl(&without);
    kubectl_envshim(["fmt", with.to_str().unwrap(), without.to_str().unwrap()]).run().ok().no_sentinel();
    assert!(v.read("cfg/secret.env").starts_with(b"K_0='"), "not rewritten");
    assert_eq!(acl(&with), with_acl);
    assert_eq!(std::fs::metadata(&with).unwrap().mode(), with_mode);
    assert_eq!(xattr(&with, "user.team", None).as_deref(), Some(&b"payments"[..]));
    assert!(v.read("cfg/plain.env").starts_with(b"K_0='"), "not rewritten");
    assert_eq!(acl(&without), without_acl);
    assert_eq!(std::fs::metadata(&without).unwrap().mode() & 0o7777, 0o640);
}

/// SIGTERM at a random moment of `fmt`'s run on a file at the size limit,
/// again and again: never a temporary file left, and the file is the old
/// text or the new, whole.
#[test]
fn sigterm_during_fmt_never_leaves_its_temporary_file() {
    let v = Volume::new();
    let text = loose(2_000, "v");
    let text = &text[..text[..60_000].rfind('\n').unwrap() + 1];
    let copy = v.file_str("copy/big.env", text);
    kubectl_envshim(["fmt", &copy]).run().ok();
    let formatted = v.read("copy/big.env");
    let path = v.file("big.env", text);
    let mut rng = Rng::new();
    let (start, mut killed) = (Instant::now(), 0);
    while start.elapsed() < RACE {
        std::fs::write(&path, text).unwrap();
        let mut child = Command::new(converter()).args(["fmt", path.to_str().unwrap()]).env_clear().stderr(Stdio::null()).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(6_000)));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        // (The converter keeps SIGTERM's default action: killed by it.)
        killed += usize::from(status.signal() == Some(libc::SIGTERM));
        assert_eq!(leftovers(v.path()), Vec::<String>::new(), "{status}");
        let now = v.read("big.env");
        assert!(now == text.as_bytes() || now == formatted, "a partial file");
    }
    assert!(killed > 10, "{killed} runs killed");
}

/// File names of 244 and 255 bytes (the longest): rewritten (the temporary
/// name does not grow with them).
#[test]
fn a_file_name_of_the_longest_length_is_rewritten() {
    let v = Volume::new();
    for len in [244, 255] {
        let name = format!("{}.env", "n".repeat(len - 4));
        let path = v.file_str(&name, "export A=1\n");
        kubectl_envshim(["fmt", &path]).run().ok();
        assert_eq!(v.read(&name), b"A='1'\n");
    }
    assert_eq!(leftovers(v.path()), Vec::<String>::new());
}

/// A writer that appends in place (opening the name each time, as `>>`
/// does) between fmt's last check and its replacement: its line is put
/// back with the file, never lost.
#[test]
fn a_writers_append_in_place_is_never_lost() {
    use std::io::Write;
    let v = Volume::new();
    let path = v.file("app.env", loose(100, SENTINEL));
    let file = path.to_str().unwrap().to_string();
    let stop = AtomicBool::new(false);
    let appended = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
                f.write_all(format!("export A_{k}=x\n").as_bytes()).unwrap();
                k += 1;
                // (3,000 lines at most: the file stays within the limit of an env file)
                std::thread::sleep(Duration::from_millis(1));
            }
            k
        });
        let stopping = StopOnDrop(&stop);
        let start = Instant::now();
        while start.elapsed() < RACE && !writer.is_finished() {
            let out = kubectl_envshim(["fmt", &file]).run();
            out.no_sentinel();
            if out.code != 0 {
                out.fails_with(73, &["app.env: changed while kubectl envshim fmt read it", "left as it was"]);
            }
        }
        drop(stopping);
        writer.join().unwrap()
    });
    let text = std::fs::read_to_string(&path).unwrap();
    let lost: Vec<u64> = (0..appended).filter(|k| !text.contains(&format!("A_{k}="))).collect();
    assert!(appended > 100, "{appended} appends");
    assert_eq!(lost, Vec::<u64>::new(), "appends lost, of {appended}");
    assert_eq!(leftovers(v.path()), Vec::<String>::new());
}
