//! Path escapes.

use super::*;

struct EscapeLayout {
    _outside: tempfile::TempDir,
    dir: tempfile::TempDir,
    vol: PathBuf,
}

/// A volume with legitimate links (ConfigMap layout, links that stay inside)
/// and every way out we know of, next to an outside directory holding a secret.
fn escape_layout() -> EscapeLayout {
    let outside = tempdir();
    let o = outside.path();
    fs::write(o.join("secret.env"), format!("KEY={SENTINEL_NOT_A_NAME}\n")).unwrap();
    fs::create_dir(o.join("d")).unwrap();
    fs::write(o.join("d/secret.env"), format!("KEY={SENTINEL_NOT_A_NAME}\n")).unwrap();
    let dir = tempdir();
    let vol = dir.path().join("vol");
    let v = vol.as_path();
    fs::create_dir(v).unwrap();
    // Beside the volume, reachable with one `..`.
    fs::write(dir.path().join("beside.env"), format!("KEY={SENTINEL_NOT_A_NAME}\n")).unwrap();
    fs::write(v.join("a.env"), "KEY=inside-a\n").unwrap();
    fs::create_dir_all(v.join("sub/deeper")).unwrap();
    fs::write(v.join("sub/b.env"), "KEY=inside-b\n").unwrap();
    // ConfigMap / Secret volume layout: KEY -> ..data/KEY, ..data -> ..TIMESTAMP
    fs::create_dir(v.join("..2024_06_01_12_00_00.123")).unwrap();
    fs::write(v.join("..2024_06_01_12_00_00.123/app.env"), "KEY=configmap\n").unwrap();
    symlink("..2024_06_01_12_00_00.123", v.join("..data")).unwrap();
    symlink("..data/app.env", v.join("app.env")).unwrap();
    // Links that stay inside.
    symlink("/a.env", v.join("abs-inside")).unwrap();
    symlink("sub/../a.env", v.join("dotdot-inside")).unwrap();
    symlink("../b.env", v.join("sub/deeper/up-one")).unwrap();
    symlink("/sub", v.join("abs-dir")).unwrap();
    // Links that try to leave.
    symlink(o.join("secret.env"), v.join("abs-out")).unwrap();
    symlink(o, v.join("abs-dir-out")).unwrap();
    let climb = format!("{}{}", "../".repeat(12), o.join("secret.env").to_str().unwrap().trim_start_matches('/'));
    symlink(&climb, v.join("climb-out")).unwrap();
    symlink("../beside.env", v.join("beside-out")).unwrap();
    symlink("../../../../../../../../../../", v.join("to-root")).unwrap();
    // A chain: hop1 -> sub/hop2 -> ../hop3 -> (climbs out)
    symlink("sub/hop2", v.join("hop1")).unwrap();
    symlink("../hop3", v.join("sub/hop2")).unwrap();
    symlink(&climb, v.join("hop3")).unwrap();
    symlink("/proc/self/root/etc/hostname", v.join("magic-out")).unwrap();
    // A trailing slash in a link target asks for a directory (the kernel's rule).
    symlink("a.env/", v.join("slash-to-file")).unwrap();
    symlink("sub/", v.join("slash-to-dir")).unwrap();
    symlink("loop-b", v.join("loop-a")).unwrap();
    symlink("loop-a", v.join("loop-b")).unwrap();
    EscapeLayout { _outside: outside, dir, vol }
}

/// (path inside the volume, expected: Ok(value) or Err(exit code))
fn escape_cases(outside: &str) -> Vec<(String, Result<&'static str, i32>)> {
    let o = outside.trim_start_matches('/');
    let v: Vec<(String, Result<&'static str, i32>)> = vec![
        ("a.env".into(), Ok("inside-a")),
        ("/a.env".into(), Ok("inside-a")),
        ("./sub//b.env".into(), Ok("inside-b")),
        ("app.env".into(), Ok("configmap")),
        ("..data/app.env".into(), Ok("configmap")),
        ("abs-inside".into(), Ok("inside-a")),
        ("dotdot-inside".into(), Ok("inside-a")),
        ("sub/deeper/up-one".into(), Ok("inside-b")),
        ("abs-dir/b.env".into(), Ok("inside-b")),
        ("to-root/a.env".into(), Ok("inside-a")),
        // `..` components are refused before anything is opened.
        ("../beside.env".into(), Err(78)),
        ("sub/../a.env".into(), Err(78)),
        ("..".into(), Err(78)),
        (format!("../../../../../../{o}/secret.env"), Err(78)),
        // Links out resolve inside the volume, where the target does not exist.
        ("abs-out".into(), Err(66)),
        ("abs-dir-out/secret.env".into(), Err(66)),
        ("climb-out".into(), Err(66)),
        ("beside-out".into(), Err(66)),
        ("hop1".into(), Err(66)),
        ("magic-out".into(), Err(66)),
        (format!("to-root/{o}/secret.env"), Err(66)),
        // An absolute path names the volume root.
        (format!("/{o}/secret.env"), Err(66)),
        ("loop-a".into(), Err(78)),
        ("slash-to-file".into(), Err(66)),
        ("slash-to-dir/b.env".into(), Ok("inside-b")),
        ("sub".into(), Err(78)),
        ("/".into(), Err(78)),
        (".".into(), Err(78)),
        ("abs-dir-out/d/secret.env".into(), Err(66)),
    ];
    v
}

fn escape_table(deny: Option<i32>) {
    let l = escape_layout();
    let outside = l._outside.path().to_str().unwrap().to_owned();
    for (path, want) in escape_cases(&outside) {
        let manifest = json!({
            "volumeMounts": [{"name": "cfg", "mountPath": l.vol}],
            "env": [{"name": "GOT", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": path, "key": "KEY"}}}],
        });
        let m = l.dir.path().join("m.json");
        fs::write(&m, manifest.to_string()).unwrap();
        let out = shim(&[os("render"), os("--show-values"), os("--manifest"), os(&m)]).deny_openat2(deny).run();
        let what = format!("path {path:?} (openat2 denied with {deny:?})");
        sane(&out, &what);
        assert_no_sentinel(&out.stdout, &what);
        assert_no_sentinel(&out.stderr, &what);
        match want {
            Ok(value) => {
                assert_eq!(out.code, 0, "{what}: {}", out.stderr_str());
                assert!(out.stdout_str().contains(&format!("GOT={value}\n")), "{what}: {}", out.stdout_str());
            }
            Err(code) => {
                assert_eq!(out.code, code, "{what}: {}", out.stderr_str());
                assert!(!out.stdout_str().contains("GOT="), "{what}: {}", out.stdout_str());
            }
        }
        // An envFrom of the same path gives the same outcome.
        let manifest = json!({
            "volumeMounts": [{"name": "cfg", "mountPath": l.vol}],
            "envFrom": [{"fileRef": {"volumeName": "cfg", "path": path}, "prefix": "GOT_"}],
        });
        fs::write(&m, manifest.to_string()).unwrap();
        let out = shim(&[os("render"), os("--show-values"), os("--manifest"), os(&m)]).deny_openat2(deny).run();
        sane(&out, &what);
        assert_no_sentinel(&out.stdout, &what);
        match want {
            Ok(value) => assert!(out.stdout_str().contains(&format!("GOT_KEY={value}\n")), "envFrom {what}: {}", out.stdout_str()),
            Err(code) => assert_eq!(out.code, code, "envFrom {what}: {}", out.stderr_str()),
        }
    }
}

#[test]
fn paths_never_leave_the_volume() {
    escape_table(None);
}

/// `openat2` with `RESOLVE_IN_ROOT` fails with EAGAIN on a `..` step
/// whenever a rename happens anywhere on the system during the lookup. A
/// legitimate link with 300 `..` steps that stays inside the volume, read 50
/// times while another thread renames a file elsewhere in a tight loop: every
/// read succeeds (after the retries, the fallback resolver opens the file).
/// Before: 65, "cannot be read (Resource temporarily unavailable)".
#[test]
fn a_link_with_many_dotdots_reads_while_the_host_renames_files() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = tempdir();
    let vol = dir.path().join("vol");
    fs::create_dir_all(vol.join("a/b/c")).unwrap();
    fs::write(vol.join("a.env"), "KEY=inside\n").unwrap();
    symlink(format!("a/b/c/{}../../../a.env", "../../../a/b/c/".repeat(100)), vol.join("deep")).unwrap();
    let m = dir.path().join("m.json");
    let manifest = json!({
        "volumeMounts": [{"name": "cfg", "mountPath": vol}],
        "env": [{"name": "GOT", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "deep", "key": "KEY"}}}],
    });
    fs::write(&m, manifest.to_string()).unwrap();
    let busy = tempdir();
    let (a, b) = (busy.path().join("a"), busy.path().join("b"));
    fs::write(&a, "").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let renamer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut renames = 0u64;
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                fs::rename(&a, &b).unwrap();
                fs::rename(&b, &a).unwrap();
                renames += 2;
            }
            renames
        })
    };
    let mut failures = Vec::new();
    for _ in 0..50 {
        let out = shim(&[os("render"), os("--show-values"), os("--manifest"), os(&m)]).run();
        sane(&out, "deep link");
        if out.code != 0 || !out.stdout_str().contains("GOT=inside\n") {
            failures.push(out.stderr_str());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let renames = renamer.join().unwrap();
    assert!(failures.is_empty(), "{} of 50 reads failed ({renames} renames meanwhile); the first: {}", failures.len(), failures[0]);
}

#[test]
fn paths_never_leave_the_volume_without_openat2_enosys() {
    escape_table(Some(libc::ENOSYS));
}

#[test]
fn paths_never_leave_the_volume_without_openat2_eperm() {
    escape_table(Some(libc::EPERM));
}

/// Not a test of envshim: run in a child by `the_seccomp_filter_really_refuses_openat2`
/// to show that the filter used above does what it says.
#[test]
// Test set-up, not in nix: a raw openat2.
#[allow(unsafe_code)]
fn openat2_probe_child() {
    if std::env::var_os("ENVSHIM_HOSTILE_PROBE").is_none() {
        return;
    }
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow { flags: libc::O_RDONLY as u64, mode: 0, resolve: 0 };
    // SAFETY: a plain syscall with valid pointers.
    let r = unsafe { libc::syscall(libc::SYS_openat2, libc::AT_FDCWD, c"/".as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>()) };
    println!("openat2-probe: ret={r} errno={}", io::Error::last_os_error().raw_os_error().unwrap_or(0));
}

#[test]
// Test set-up: pre_exec.
#[allow(unsafe_code)]
fn the_seccomp_filter_really_refuses_openat2() {
    let me = std::env::current_exe().unwrap();
    for errno in [libc::ENOSYS, libc::EPERM] {
        let mut cmd = Command::new(&me);
        cmd.args(["--exact", &test_name(module_path!(), "openat2_probe_child"), "--nocapture", "--test-threads=1"]).env("ENVSHIM_HOSTILE_PROBE", "1");
        // SAFETY: only prctl in the child.
        unsafe { cmd.pre_exec(move || deny_openat2(errno)) };
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("openat2-probe: ret=-1 errno={errno}")), "filter not effective: {text}");
    }
}

#[test]
fn env_file_option_follows_symlinks_as_given() {
    // --env-file is opened as given (relative to the working directory, symlinks followed).
    let l = escape_layout();
    let out = shim(&[os("render"), os("--show-values"), os("--env-file"), os("vol/abs-dir/b.env")]).cwd(l.dir.path()).run();
    // vol/abs-dir -> /sub on the host, which does not exist: missing, 66.
    assert_eq!(out.code, 66, "{}", out.stderr_str());
    let out = shim(&[os("render"), os("--show-values"), os("--env-file"), os("vol/app.env")]).cwd(l.dir.path()).run();
    assert_eq!(out.code, 0, "{}", out.stderr_str());
    assert!(out.stdout_str().contains("KEY=configmap\n"), "{}", out.stdout_str());
}
