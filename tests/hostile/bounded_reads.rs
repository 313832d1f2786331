//! Bounded reads: special files and huge files fail fast.

use super::*;

/// The special files of one directory, by kind. Device nodes need root (mknod);
/// without it those kinds are left out.
struct Specials {
    _listener: std::os::unix::net::UnixListener,
    kinds: Vec<(&'static str, PathBuf)>,
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o644)).expect("mkfifo");
}

/// A character device node, when this process may make one and the
/// filesystem lets it be opened (not `nodev`).
fn mknod_char(path: &Path, major: u32, minor: u32) -> bool {
    use nix::sys::stat::{makedev, mknod, Mode, SFlag};
    if mknod(path, SFlag::S_IFCHR, Mode::from_bits_truncate(0o666), makedev(major.into(), minor.into())).is_err() {
        return false;
    }
    if fs::File::open(path).is_err() {
        let _ = fs::remove_file(path);
        return false;
    }
    true
}

/// A 50 MB file of valid-looking lines (written, not sparse).
fn big_file(path: &Path) {
    let line = format!("KEY={}\n", "v".repeat(95));
    let chunk = line.repeat(10_000);
    let mut f = fs::File::create(path).unwrap();
    for _ in 0..50 {
        io::Write::write_all(&mut f, chunk.as_bytes()).unwrap();
    }
}

fn specials(dir: &Path) -> Specials {
    let listener = std::os::unix::net::UnixListener::bind(dir.join("socket")).unwrap();
    mkfifo(&dir.join("fifo"));
    fs::create_dir(dir.join("directory")).unwrap();
    big_file(&dir.join("big-50mb"));
    let mut kinds =
        vec![("socket", dir.join("socket")), ("fifo", dir.join("fifo")), ("directory", dir.join("directory")), ("50 MB file", dir.join("big-50mb"))];
    if mknod_char(&dir.join("zero"), 1, 5) && mknod_char(&dir.join("null"), 1, 3) {
        kinds.push(("/dev/zero node", dir.join("zero")));
        kinds.push(("/dev/null node", dir.join("null")));
    } else {
        eprintln!("no device nodes inside the volume (not root, or a nodev filesystem); the host's /dev/zero and /dev/null are still used for --env-file and --manifest");
    }
    Specials { _listener: listener, kinds }
}

/// A regular file that reports size 0 but holds megabytes (/proc/kallsyms),
/// when this system has one: the read itself must stop at the limit + 1.
fn size_liar() -> Option<(&'static str, PathBuf)> {
    let p = Path::new("/proc/kallsyms");
    let meta = fs::metadata(p).ok()?;
    let len = fs::read(p).ok()?.len();
    (meta.len() == 0 && len > 2 << 20).then(|| ("size-0 /proc file of several MB", p.to_path_buf()))
}

/// What the error must say for each kind.
fn expected(kind: &str, limit: &str) -> (&'static [i32], String) {
    if kind.starts_with("50 MB") || kind.starts_with("size-0") {
        (&[65, 78], format!("larger than {limit} bytes"))
    } else {
        (&[78], "is not a regular file".to_owned())
    }
}

fn assert_fast_clear(out: &Out, codes: &[i32], text: &str, path_shown: &str, what: &str) {
    sane(out, what);
    assert!(codes.contains(&out.code), "{what}: exit {:?}: {}", out.code, out.stderr_str());
    let err = out.stderr_str();
    assert!(err.contains(text) && err.contains(path_shown), "{what}: unclear error (want {text:?} and {path_shown:?}): {err}");
    assert!(out.elapsed < Duration::from_millis(1000), "{what}: took {:?}", out.elapsed);
}

#[test]
fn env_files_that_are_not_small_regular_files_fail_fast() {
    let dir = tempdir();
    let vol = dir.path().join("vol");
    fs::create_dir(&vol).unwrap();
    let sp = specials(&vol);
    let mut slowest = Duration::ZERO;
    let mut host: Vec<(&str, PathBuf)> = vec![("/dev/zero", "/dev/zero".into()), ("/dev/null", "/dev/null".into())];
    if Path::new("/dev/urandom").exists() {
        host.push(("/dev/urandom", "/dev/urandom".into()));
    }
    host.extend(size_liar());
    // --env-file: the path as given, symlinks followed.
    for (kind, path) in host.iter().chain(sp.kinds.iter()) {
        let (codes, text) = expected(kind, "65536");
        let out = shim(&[os("check"), os("--env-file"), os(path)]).run();
        assert_fast_clear(&out, codes, &text, path.to_str().unwrap(), &format!("--env-file {kind}"));
        slowest = slowest.max(out.elapsed);
        // The same through a symlink to it.
        let link = dir.path().join(format!("link-{}", kind.replace(['/', ' '], "_")));
        symlink(path, &link).unwrap();
        let out = shim(&[os("check"), os("--env-file"), os(&link)]).run();
        assert_fast_clear(&out, codes, &text, link.to_str().unwrap(), &format!("--env-file symlink to {kind}"));
    }
    // Through a volume: fileKeyRef and envFrom, optional or not (optional covers only a missing file).
    for (kind, path) in &sp.kinds {
        let (codes, text) = expected(kind, "65536");
        let name = path.file_name().unwrap().to_str().unwrap();
        for optional in [false, true] {
            for manifest in [
                json!({"volumeMounts": [{"name": "v", "mountPath": vol}],
                       "env": [{"name": "X", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": name, "key": "KEY", "optional": optional}}}]}),
                json!({"volumeMounts": [{"name": "v", "mountPath": vol}],
                       "envFrom": [{"fileRef": {"volumeName": "v", "path": format!("/{name}"), "optional": optional}}]}),
            ] {
                fs::write(dir.path().join("m.json"), manifest.to_string()).unwrap();
                for deny in [None, Some(libc::ENOSYS)] {
                    let out = shim(&[os("check"), os("--manifest"), os(&dir.path().join("m.json"))]).deny_openat2(deny).run();
                    let what = format!("volume file {kind} (optional {optional}, openat2 denied {deny:?}) in {manifest}");
                    assert_fast_clear(&out, codes, &text, &format!("volume v, path {name}"), &what);
                    slowest = slowest.max(out.elapsed);
                }
            }
        }
    }
    eprintln!("special env files: slowest failure {slowest:?}");
}

#[test]
fn manifests_that_are_not_small_regular_files_fail_fast() {
    let dir = tempdir();
    let sp = specials(dir.path());
    let mut host: Vec<(&str, PathBuf)> = vec![("/dev/zero", "/dev/zero".into()), ("/dev/null", "/dev/null".into())];
    host.extend(size_liar());
    let mut slowest = Duration::ZERO;
    for (kind, path) in host.iter().chain(sp.kinds.iter()) {
        let (_, text) = expected(kind, "1048576");
        for sub in ["check", "render", "run"] {
            let mut args = vec![os(sub), os("--manifest"), os(path)];
            if sub == "run" {
                args.extend([os("--"), os("/bin/true")]);
            }
            let out = shim(&args).run();
            // Every manifest problem is a configuration error.
            assert_fast_clear(&out, &[78], &text, path.to_str().unwrap(), &format!("{sub} --manifest {kind}"));
            slowest = slowest.max(out.elapsed);
        }
        // ENVSHIM_MANIFEST takes the same path.
        let out = envshim(["check"]).env("ENVSHIM_MANIFEST", path).run();
        assert_eq!(out.code, 78, "ENVSHIM_MANIFEST={kind}: {}", out.stderr_str());
        assert!(out.elapsed < Duration::from_secs(1));
    }
    eprintln!("special manifests: slowest failure {slowest:?}");
}

#[test]
fn size_limits_are_inclusive() {
    let dir = tempdir();
    let p = dir.path();
    // Env file: 65,536 bytes is accepted, 65,537 is not (65). One value of 32,768 bytes is accepted.
    let value = "v".repeat(32_768);
    let mut at_limit = format!("BIG={value}\n").into_bytes();
    at_limit.extend(std::iter::repeat_n(b'#', 65_535 - at_limit.len()));
    at_limit.push(b'\n');
    assert_eq!(at_limit.len(), 65_536);
    fs::write(p.join("at.env"), &at_limit).unwrap();
    let out = shim(&[os("check"), os("--env-file"), os(&p.join("at.env"))]).run();
    assert_eq!(out.code, 0, "{}", out.stderr_str());
    at_limit.insert(0, b'\n');
    fs::write(p.join("over.env"), &at_limit).unwrap();
    let out = shim(&[os("check"), os("--env-file"), os(&p.join("over.env"))]).run();
    assert_eq!(out.code, 65, "{}", out.stderr_str());
    assert!(out.stderr_str().contains("larger than 65536 bytes") && out.stderr_str().contains("over.env"), "{}", out.stderr_str());
    // A value of 32,769 bytes: 65, naming file and line, never the name or value.
    fs::write(p.join("long.env"), format!("A=1\nSECRETNAME={value}x\n")).unwrap();
    let out = shim(&[os("check"), os("--env-file"), os(&p.join("long.env"))]).run();
    assert_eq!(out.code, 65, "{}", out.stderr_str());
    assert!(out.stderr_str().contains("long.env") && out.stderr_str().contains("line 2"), "{}", out.stderr_str());
    assert!(!out.stderr_str().contains("SECRETNAME") && !out.stderr_str().contains("vvvv"), "{}", out.stderr_str());

    // Manifest: 1 MiB is accepted, 1 MiB + 1 is not (78).
    let mut manifest = br#"{"env": [{"name": "A", "value": "x"}]}"#.to_vec();
    manifest.resize(1024 * 1024, b' ');
    fs::write(p.join("at.json"), &manifest).unwrap();
    let out = shim(&[os("check"), os("--manifest"), os(&p.join("at.json"))]).run();
    assert_eq!(out.code, 0, "{}", out.stderr_str());
    manifest.push(b' ');
    fs::write(p.join("over.json"), &manifest).unwrap();
    let out = shim(&[os("check"), os("--manifest"), os(&p.join("over.json"))]).run();
    assert_eq!(out.code, 78, "{}", out.stderr_str());
    assert!(out.stderr_str().contains("larger than 1048576 bytes"), "{}", out.stderr_str());
}

/// Run by `peak_rss` in a fresh, small process: a child forked from this
/// (large, multi-threaded) test process would count its pages in its own peak.
#[test]
fn rss_probe_child() {
    let Some(args) = std::env::var_os("ENVSHIM_HOSTILE_RSS") else { return };
    let args: Vec<&OsStr> = args.as_bytes().split(|&b| b == 0x1f).map(OsStr::from_bytes).collect();
    let out = shim(&args).run();
    println!("rss-probe: {} {} {}", out.max_rss_kb, out.code, out.elapsed.as_micros());
}

/// envshim's peak RSS (KiB), exit code and run time, measured with wait4 from a fresh process.
pub(super) fn peak_rss(args: &[OsString]) -> (i64, Option<i32>, Duration) {
    let joined = args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>().join(&0x1f);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &test_name(module_path!(), "rss_probe_child"), "--nocapture", "--test-threads=1"])
        .env("ENVSHIM_HOSTILE_RSS", OsStr::from_bytes(&joined))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // libtest prints `test NAME ... ` before the probe's line, on the same line.
    let line = text
        .lines()
        .find_map(|l| l.split_once("rss-probe: ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no probe output ({}): {text} {}", out.status, String::from_utf8_lossy(&out.stderr)));
    let v: Vec<i64> = line.split(' ').map(|n| n.parse().unwrap()).collect();
    (v[0], (v[1] >= 0).then_some(v[1] as i32), Duration::from_micros(v[2] as u64))
}

#[test]
fn a_50_mb_file_does_not_raise_peak_memory() {
    let dir = tempdir();
    let p = dir.path();
    big_file(&p.join("big.env"));
    fs::write(p.join("small.env"), "A=1\n").unwrap();
    let mut f = fs::File::create(p.join("big.json")).unwrap();
    io::Write::write_all(&mut f, br#"{"env": []}"#).unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..48 {
        io::Write::write_all(&mut f, &spaces).unwrap();
    }
    drop(f);
    let rss = |args: &[OsString]| {
        // The best of three: peak RSS barely varies, but a loaded machine can add page-ins.
        (0..3).map(|_| peak_rss(args)).min().unwrap()
    };
    let baseline = rss(&[os("check"), os("--env-file"), os(&p.join("small.env"))]);
    let env_file = rss(&[os("check"), os("--env-file"), os(&p.join("big.env"))]);
    let manifest = rss(&[os("check"), os("--manifest"), os(&p.join("big.json"))]);
    eprintln!(
        "peak RSS: baseline (4-byte env file) {} KiB; 50 MB env file {} KiB (exit {:?}, {:?}); 50 MB manifest {} KiB (exit {:?}, {:?})",
        baseline.0, env_file.0, env_file.1, env_file.2, manifest.0, manifest.1, manifest.2
    );
    assert_eq!(env_file.1, Some(65));
    assert_eq!(manifest.1, Some(78));
    // Nothing near the file's size is ever held: at most the limit + 1 byte (64 KiB, 1 MiB), plus noise.
    assert!(env_file.0 < baseline.0 + 2 * 1024, "50 MB env file: {} KiB vs baseline {} KiB", env_file.0, baseline.0);
    assert!(manifest.0 < baseline.0 + 4 * 1024, "50 MB manifest: {} KiB vs baseline {} KiB", manifest.0, baseline.0);
}
