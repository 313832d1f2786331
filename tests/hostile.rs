//! Hostile input, black box: runs the built binary the way a compromised
//! neighbour container, a broken manifest or an odd volume would meet it.
//!
//! - Generated garbage (seeded, deterministic): hundreds of env files and
//!   manifests; never a panic (101) or a signal, never a hang, every stderr
//!   line starts `envshim: `, and a sentinel planted in values never reaches
//!   stderr, the termination log or masked `render` output.
//! - Bounded reads: `/dev/zero`, FIFOs, directories, sockets, character
//!   devices and a 50 MB file, as `--env-file`, through a volume, and as the
//!   manifest, fail well under a second with a clear error, and the 50 MB file
//!   does not raise peak memory (measured with `wait4`).
//! - Path escapes: `..`, absolute symlinks and symlink chains climbing out of
//!   the volume never read outside it; the ConfigMap `..data` layout works.
//!   The same table runs with `openat2` refused by a seccomp filter (ENOSYS,
//!   as on kernels before 5.6, and EPERM, as under old container profiles),
//!   so the fallback resolver is tested for real.
//! - Permission denied (as uid 65534, when run as root): exit 77 naming the
//!   file and the uid.
//! - `execve` limits: a `NAME=VALUE` over 131,071 bytes is refused (126)
//!   naming the variable, exactly at the boundary, and expansion that
//!   multiplies a value is refused without exhausting memory.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_envshim");

/// Planted in values: must never be printed. Its ends are not ASCII, so it
/// can never be part of a valid variable name (names from files are printed
/// in the skipped-keys warning, and that is allowed).
const SENTINEL: &str = "秘SENTINEL-s3cr3t-VALUE秘";
/// What a leak would show even if the ends were cut or escaped.
const SENTINEL_CORE: &str = "SENTINEL-s3cr3t";

/// Exit codes docs/reference.md §7 allows.
const EXIT_CODES: &[i32] = &[0, 2, 65, 66, 77, 78, 126, 127];

// ---------------------------------------------------------------------------
// Running the binary

#[derive(Default, Clone)]
struct Opts {
    cwd: Option<PathBuf>,
    /// Refuse `openat2` with this errno (seccomp), to force the fallback resolver.
    deny_openat2: Option<i32>,
    /// Run as this uid/gid (needs root).
    as_user: Option<u32>,
    /// RLIMIT_AS for the child, in bytes.
    mem_limit: Option<u64>,
    bin: Option<PathBuf>,
    timeout: Option<Duration>,
}

struct Out {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
    /// Peak resident set size of the child, KiB (from wait4).
    max_rss_kb: i64,
}

impl Out {
    fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// A seccomp filter that fails `openat2` with `errno` and allows everything else.
// Test set-up only: prctl, which has no safe wrapper.
#[allow(unsafe_code)]
fn deny_openat2(errno: i32) -> io::Result<()> {
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
            return Err(io::Error::last_os_error());
        }
        if libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

// The child is reaped with wait4 (for its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
// Test set-up only: pre_exec, and wait4 for the rusage.
#[allow(unsafe_code)]
fn run_with(args: &[&OsStr], opts: &Opts) -> Out {
    let mut cmd = Command::new(opts.bin.as_deref().unwrap_or(Path::new(BIN)));
    cmd.args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &opts.cwd {
        cmd.current_dir(cwd);
    }
    let (deny, user, mem) = (opts.deny_openat2, opts.as_user, opts.mem_limit);
    // SAFETY: only async-signal-safe calls (prctl, setrlimit, setgroups, setgid, setuid) run in the child.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(bytes) = mem {
                let rl = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                if libc::setrlimit(libc::RLIMIT_AS, &rl) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(id) = user {
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(id) != 0 || libc::setuid(id) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(errno) = deny {
                deny_openat2(errno)?;
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn envshim");
    let pipe = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out_t = pipe(Box::new(child.stdout.take().unwrap()));
    let err_t = pipe(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as libc::pid_t;
    let timeout = opts.timeout.unwrap_or(Duration::from_secs(10));
    let (status, rusage) = loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is valid; wait4 fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: waits for our own child, without blocking.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, ru);
        }
        assert!(r == 0, "wait4: {}", io::Error::last_os_error());
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("envshim {args:?} hung for {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let elapsed = start.elapsed();
    let (code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else {
        (None, Some(libc::WTERMSIG(status)))
    };
    Out { code, signal, stdout: out_t.join().unwrap(), stderr: err_t.join().unwrap(), elapsed, max_rss_kb: rusage.ru_maxrss }
}

fn os<S: AsRef<OsStr> + ?Sized>(s: &S) -> OsString {
    s.as_ref().to_os_string()
}

fn run(args: &[OsString], opts: &Opts) -> Out {
    let refs: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
    run_with(&refs, opts)
}

/// The checks every run gets: no panic, no signal, a known exit code, every
/// stderr line `envshim: `-prefixed.
fn sane(out: &Out, what: &str) {
    assert_eq!(out.signal, None, "{what}: killed by signal; stderr: {}", out.err());
    let code = out.code.unwrap();
    assert_ne!(code, 101, "{what}: panic: {}", out.err());
    assert!(EXIT_CODES.contains(&code), "{what}: exit {code}: {}", out.err());
    for line in out.err().lines() {
        assert!(line.starts_with("envshim: "), "{what}: stderr line without prefix: {line:?}");
    }
}

fn no_sentinel(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains(SENTINEL_CORE) && !text.contains(SENTINEL),
        "{what}: a value leaked: {text}"
    );
}

fn am_root() -> bool {
    nix::unistd::geteuid().is_root()
}

// ---------------------------------------------------------------------------
// A deterministic RNG (xorshift64*), so every run generates the same cases.

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------------------
// Garbage env files

const ENV_TOKENS: &[&[u8]] = &[
    b"=", b"=", b"'", b"\"", b"#", b" #", b" ", b"\t", b"\n", b"\n", b"\r\n", b"\r", b"export ", b"\\", b"\\n",
    b"\\\"", b"\\$", b"\0", b"\xef\xbb\xbf", b"\xff", b"\xe2\x82", b"$(", b")", b"$$", b"A", b"KEY", b"1x",
    b"caf\xc3\xa9", b"..", b"a.b-c",
];

/// One env file: well-formed lines and garbage, with the sentinel in values
/// (and sometimes where a name would be, which must make the file invalid).
fn garbage_env_file(rng: &mut Rng) -> Vec<u8> {
    let mut data = Vec::new();
    if rng.chance(3) {
        data.extend_from_slice(b"\xef\xbb\xbf");
    }
    // Half the files use only well-formed lines, so the success paths (render, run) see values too.
    let clean = rng.chance(50);
    for i in 0..rng.below(12) {
        let name = format!("K{i}");
        let form = if clean { *rng.pick(&[&0, &1, &2, &7]) } else { rng.below(12) };
        match form {
            0 => data.extend(format!("{name}={SENTINEL}\n").bytes()),
            1 => data.extend(format!("{name}='{SENTINEL}\n{SENTINEL}'\n").bytes()),
            2 => data.extend(format!("{name}=\"{SENTINEL}\\n\\\"{SENTINEL}\"\n").bytes()),
            3 => data.extend(format!("{name}='{SENTINEL}").bytes()),
            4 => data.extend(format!("{name}=\"{SENTINEL}\"{SENTINEL}\n").bytes()),
            5 => data.extend(format!("{SENTINEL}\n").bytes()),
            6 => data.extend(format!("{SENTINEL}={SENTINEL}\n").bytes()),
            7 => data.extend(format!("export {name} = {SENTINEL} # c\n").bytes()),
            8 => data.extend(format!("{name}={SENTINEL}\0{SENTINEL}\n").bytes()),
            9 => data.extend(format!("{name}={}\n", SENTINEL.repeat(33_000 / SENTINEL.len() + 1)).bytes()),
            _ => {
                for _ in 0..rng.below(16) {
                    if rng.chance(20) {
                        data.extend_from_slice(SENTINEL.as_bytes());
                    } else {
                        data.extend_from_slice(rng.pick(ENV_TOKENS));
                    }
                }
                data.push(b'\n');
            }
        }
    }
    data
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn garbage_env_files_never_panic_hang_or_leak() {
    let mut rng = Rng(0x6861_7368_6f73_7431);
    let dir = tempdir();
    let vol = dir.path().join("vol");
    fs::create_dir(&vol).unwrap();
    let tlog = dir.path().join("termination-log");
    let mut codes = std::collections::BTreeMap::new();
    let cases = 300;
    for case in 0..cases {
        let file = garbage_env_file(&mut rng);
        fs::write(vol.join("g.env"), &file).unwrap();
        let manifest = json!({
            "volumeMounts": [{"name": "v", "mountPath": vol}],
            "envFrom": [{"fileRef": {"volumeName": "v", "path": "g.env", "optional": rng.chance(50)},
                         "prefix": rng.pick(&["", "P_", "1", "."])}],
            "env": [
                {"name": "FK", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "/g.env",
                    "key": rng.pick(&["K0", "K1", "K2", "MISSING"]), "optional": rng.chance(50)}}},
                {"name": "EXP", "value": "$(K0)-$(FK)-$(P_K1)"},
            ],
        });
        fs::write(dir.path().join("m.json"), serde_json::to_vec(&manifest).unwrap()).unwrap();
        let sub = rng.below(4);
        let mut args: Vec<OsString> = vec![os(["check", "render", "run", "render"][sub])];
        args.extend([os("--manifest"), os(&dir.path().join("m.json")), os("--termination-log"), os(&tlog)]);
        if rng.chance(50) {
            args.extend([os("--env-file"), os(&vol.join("g.env"))]);
        }
        if rng.chance(30) {
            args.push(os("--strict-names"));
        }
        if sub == 3 {
            args.extend([os("--format"), os("json")]);
        }
        if sub == 2 {
            args.extend([os("--"), os("/bin/true"), os("$(EXP)")]);
        }
        let _ = fs::remove_file(&tlog);
        let out = run(&args, &Opts::default());
        let what = format!("env-file case {case} ({args:?}) with {:?}", String::from_utf8_lossy(&file));
        sane(&out, &what);
        no_sentinel(&out.stderr, &what);
        // render without --show-values masks every value.
        no_sentinel(&out.stdout, &what);
        if let Ok(log) = fs::read(&tlog) {
            assert!(log.len() <= 4096, "{what}: termination log of {} bytes", log.len());
            no_sentinel(&log, &what);
        }
        *codes.entry(out.code.unwrap()).or_insert(0) += 1;
    }
    eprintln!("garbage env files: {cases} cases, exit codes {codes:?}");
    assert!(codes.len() >= 3, "the generator should reach several outcomes: {codes:?}");
}

// ---------------------------------------------------------------------------
// Garbage manifests

fn json_string(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => json!(SENTINEL),
        1 => json!(format!("$({SENTINEL})")),
        2 => json!(format!("{SENTINEL}\u{0}")),
        _ => json!(rng.pick(&["A", "v", "g.env", "/g.env", "../g.env", "KEY", "", "a b", "$(A)"])),
    }
}

fn json_any(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth > 2 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(50)),
        2 => json!(rng.below(1000)),
        3 | 4 => json_string(rng),
        5 => Value::Array((0..rng.below(3)).map(|_| json_any(rng, depth + 1)).collect()),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.below(3) {
                let key = rng.pick(&["name", "value", "valueFrom", "fileKeyRef", "path", "key", "x"]);
                m.insert(key.into(), json_any(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

fn clean_file_ref(rng: &mut Rng, with_key: bool) -> Value {
    let mut m = json!({"volumeName": "v", "path": rng.pick(&["g.env", "/g.env", "missing.env"]), "optional": rng.chance(50)});
    if with_key {
        m["key"] = json!(rng.pick(&["A", "B", "K", "MISSING"]));
    }
    m
}

fn garbage_file_ref(rng: &mut Rng, with_key: bool) -> Value {
    let mut m = serde_json::Map::new();
    for (field, p) in [("volumeName", 90), ("path", 90), ("key", if with_key { 90 } else { 10 }), ("optional", 40), ("bogus", 5)] {
        if rng.chance(p) {
            let v = match (field, rng.below(5)) {
                ("volumeName", 0..=3) => json!(rng.pick(&["v", "v", "nope"])),
                ("path", 0..=3) => json!(rng.pick(&["g.env", "/g.env", "../g.env", "a/../g.env", "missing.env", "", "dir"])),
                ("key", 0..=3) => json!(rng.pick(&["A", "B", "K", "bad key", "1X", ""])),
                ("optional", 0..=3) => json!(rng.chance(50)),
                _ => json_any(rng, 2),
            };
            m.insert(field.into(), v);
        }
    }
    Value::Object(m)
}

fn garbage_manifest(rng: &mut Rng) -> Value {
    // A third of the manifests use only valid entries, so files get read and values flow.
    let clean = rng.chance(33);
    let mut env = Vec::new();
    for _ in 0..rng.below(6) {
        let name = if clean {
            json!(rng.pick(&["A", "B", "C", "1X", "with space"]))
        } else {
            json!(rng.pick(&["A", "B", "C", "1X", "with space", "a=b", "", "PATH"]))
        };
        let form = if clean { *rng.pick(&[&0, &1, &7]) } else { rng.below(8) };
        env.push(match form {
            0 => json!({"name": name, "value": SENTINEL}),
            1 => json!({"name": name, "value": format!("{SENTINEL}$(A)$(B)")}),
            2 => json!({"name": name, "valueFrom": {"fileKeyRef": garbage_file_ref(rng, true)}}),
            7 if clean => json!({"name": name, "valueFrom": {"fileKeyRef": clean_file_ref(rng, true)}}),
            3 => json!({"name": name, "value": SENTINEL, "valueFrom": {"secretKeyRef": {"name": SENTINEL}}}),
            4 => json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": SENTINEL}, "fileKeyRef": {}}}),
            5 => json!({"name": name, "value": json_any(rng, 1)}),
            6 => json_any(rng, 1),
            _ => json!({"name": name}),
        });
    }
    let mut env_from = Vec::new();
    for _ in 0..rng.below(3) {
        let form = if clean { *rng.pick(&[&0, &1]) } else { rng.below(4) };
        env_from.push(match form {
            0 if clean => json!({"fileRef": clean_file_ref(rng, false), "prefix": rng.pick(&["", "P_", "1"])}),
            0 => json!({"fileRef": garbage_file_ref(rng, false), "prefix": rng.pick(&["", "P_", "1"])}),
            1 => json!({"secretRef": {"name": SENTINEL}, "prefix": "S_"}),
            2 => json!({"fileRef": garbage_file_ref(rng, false), "configMapRef": {}}),
            _ => json_any(rng, 1),
        });
    }
    let mut m = json!({
        "name": "app",
        "image": SENTINEL,
        "volumeMounts": [{"name": "v", "mountPath": "VOL"}],
        "envFrom": env_from,
        "env": env,
    });
    if clean {
        m["command"] = json!(["/bin/true", SENTINEL, "$(A)$(B)"]);
        return m;
    }
    if rng.chance(30) {
        m["command"] = json!(["/bin/true", SENTINEL, 7]);
    }
    if rng.chance(30) {
        m["args"] = json_any(rng, 1);
    }
    if rng.chance(15) {
        m["volumeMounts"] = json_any(rng, 1);
    }
    m
}

/// Byte-level damage: truncation, flipped bytes, inserted JSON tokens, cut ranges.
fn damage(rng: &mut Rng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.below(3) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes.truncate(at),
            1 => bytes[at] = *rng.pick(&[&b'"', &b'{', &b'}', &b'[', &b']', &b',', &b':', &b'\\', &0u8, &0xffu8]),
            2 => {
                let tok: &[u8] = rng.pick(&[&b"\"x\""[..], b"null", b"{}", b"[", b"\\u0000", b"\\ud800", b"1e999"]);
                bytes.splice(at..at, tok.iter().copied());
            }
            _ => {
                let end = (at + rng.below(16)).min(bytes.len());
                bytes.drain(at..end);
            }
        }
    }
    bytes
}

/// True when some object key of the JSON (if it parses) holds the sentinel:
/// keys are configuration and may be shown (`unknown field`), so damage that
/// turned a value into a key is not a leak.
fn sentinel_in_a_key(bytes: &[u8]) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Object(m) => m.iter().any(|(k, v)| k.contains(SENTINEL_CORE) || walk(v)),
            Value::Array(a) => a.iter().any(walk),
            _ => false,
        }
    }
    serde_json::from_slice::<Value>(bytes).map(|v| walk(&v)).unwrap_or(false)
}

#[test]
fn garbage_manifests_never_panic_hang_or_leak() {
    let mut rng = Rng(0x6d61_6e69_6665_7374);
    let dir = tempdir();
    let vol = dir.path().join("vol");
    fs::create_dir_all(vol.join("dir")).unwrap();
    fs::write(vol.join("g.env"), format!("A={SENTINEL}\nK=1\nB='{SENTINEL}'\n")).unwrap();
    let tlog = dir.path().join("termination-log");
    let mut codes = std::collections::BTreeMap::new();
    let cases = 300;
    let mut skipped = 0;
    for case in 0..cases {
        let text = serde_json::to_string(&garbage_manifest(&mut rng)).unwrap().replace("VOL", vol.to_str().unwrap());
        let bytes = if rng.chance(50) { damage(&mut rng, text.into_bytes()) } else { text.into_bytes() };
        fs::write(dir.path().join("m.json"), &bytes).unwrap();
        let sub = rng.pick(&["check", "check", "render", "run"]);
        let mut args = vec![os(sub), os("--manifest"), os(&dir.path().join("m.json")), os("--termination-log"), os(&tlog)];
        if sub == "run" {
            args.extend([os("--"), os("/bin/true")]);
        }
        let _ = fs::remove_file(&tlog);
        let out = run(&args, &Opts::default());
        let what = format!("manifest case {case} ({sub}) with {:?}", String::from_utf8_lossy(&bytes));
        sane(&out, &what);
        *codes.entry(out.code.unwrap()).or_insert(0) += 1;
        if sentinel_in_a_key(&bytes) {
            skipped += 1;
            continue;
        }
        no_sentinel(&out.stderr, &what);
        no_sentinel(&out.stdout, &what);
        if let Ok(log) = fs::read(&tlog) {
            assert!(log.len() <= 4096);
            no_sentinel(&log, &what);
        }
    }
    eprintln!("garbage manifests: {cases} cases ({skipped} with the sentinel moved into a key), exit codes {codes:?}");
    assert!(codes.len() >= 3, "the generator should reach several outcomes: {codes:?}");
}

// ---------------------------------------------------------------------------
// Bounded reads: special files and huge files fail fast

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
    let (kind, mode) = (nix::sys::stat::SFlag::S_IFCHR, nix::sys::stat::Mode::from_bits_truncate(0o666));
    if nix::sys::stat::mknod(path, kind, mode, nix::sys::stat::makedev(major.into(), minor.into())).is_err() {
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
    let mut kinds = vec![
        ("socket", dir.join("socket")),
        ("fifo", dir.join("fifo")),
        ("directory", dir.join("directory")),
        ("50 MB file", dir.join("big-50mb")),
    ];
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
    assert!(codes.contains(&out.code.unwrap()), "{what}: exit {:?}: {}", out.code, out.err());
    let err = out.err();
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
        let out = run(&[os("check"), os("--env-file"), os(path)], &Opts::default());
        assert_fast_clear(&out, codes, &text, path.to_str().unwrap(), &format!("--env-file {kind}"));
        slowest = slowest.max(out.elapsed);
        // The same through a symlink to it.
        let link = dir.path().join(format!("link-{}", kind.replace(['/', ' '], "_")));
        symlink(path, &link).unwrap();
        let out = run(&[os("check"), os("--env-file"), os(&link)], &Opts::default());
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
                    let opts = Opts { deny_openat2: deny, ..Opts::default() };
                    let out = run(&[os("check"), os("--manifest"), os(&dir.path().join("m.json"))], &opts);
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
            let out = run(&args, &Opts::default());
            // Every manifest problem is a configuration error.
            assert_fast_clear(&out, &[78], &text, path.to_str().unwrap(), &format!("{sub} --manifest {kind}"));
            slowest = slowest.max(out.elapsed);
        }
        // ENVSHIM_MANIFEST takes the same path.
        let mut cmd = Command::new(BIN);
        cmd.arg("check").env_clear().env("ENVSHIM_MANIFEST", path).stdout(Stdio::null()).stderr(Stdio::piped());
        let start = Instant::now();
        let o = cmd.output().unwrap();
        assert_eq!(o.status.code(), Some(78), "ENVSHIM_MANIFEST={kind}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(start.elapsed() < Duration::from_secs(1));
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
    let out = run(&[os("check"), os("--env-file"), os(&p.join("at.env"))], &Opts::default());
    assert_eq!(out.code, Some(0), "{}", out.err());
    at_limit.insert(0, b'\n');
    fs::write(p.join("over.env"), &at_limit).unwrap();
    let out = run(&[os("check"), os("--env-file"), os(&p.join("over.env"))], &Opts::default());
    assert_eq!(out.code, Some(65), "{}", out.err());
    assert!(out.err().contains("larger than 65536 bytes") && out.err().contains("over.env"), "{}", out.err());
    // A value of 32,769 bytes: 65, naming file and line, never the name or value.
    fs::write(p.join("long.env"), format!("A=1\nSECRETNAME={value}x\n")).unwrap();
    let out = run(&[os("check"), os("--env-file"), os(&p.join("long.env"))], &Opts::default());
    assert_eq!(out.code, Some(65), "{}", out.err());
    assert!(out.err().contains("long.env") && out.err().contains("line 2"), "{}", out.err());
    assert!(!out.err().contains("SECRETNAME") && !out.err().contains("vvvv"), "{}", out.err());

    // Manifest: 1 MiB is accepted, 1 MiB + 1 is not (78).
    let mut manifest = br#"{"env": [{"name": "A", "value": "x"}]}"#.to_vec();
    manifest.resize(1024 * 1024, b' ');
    fs::write(p.join("at.json"), &manifest).unwrap();
    let out = run(&[os("check"), os("--manifest"), os(&p.join("at.json"))], &Opts::default());
    assert_eq!(out.code, Some(0), "{}", out.err());
    manifest.push(b' ');
    fs::write(p.join("over.json"), &manifest).unwrap();
    let out = run(&[os("check"), os("--manifest"), os(&p.join("over.json"))], &Opts::default());
    assert_eq!(out.code, Some(78), "{}", out.err());
    assert!(out.err().contains("larger than 1048576 bytes"), "{}", out.err());
}

/// Run by `peak_rss` in a fresh, small process: a child forked from this
/// (large, multi-threaded) test process would count its pages in its own peak.
#[test]
fn rss_probe_child() {
    let Some(args) = std::env::var_os("ENVSHIM_HOSTILE_RSS") else { return };
    let args: Vec<&OsStr> = args.as_bytes().split(|&b| b == 0x1f).map(OsStr::from_bytes).collect();
    let out = run_with(&args, &Opts::default());
    println!("rss-probe: {} {} {}", out.max_rss_kb, out.code.unwrap_or(-1), out.elapsed.as_micros());
}

/// envshim's peak RSS (KiB), exit code and run time, measured with wait4 from a fresh process.
fn peak_rss(args: &[OsString]) -> (i64, Option<i32>, Duration) {
    let joined = args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>().join(&0x1f);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "rss_probe_child", "--nocapture", "--test-threads=1"])
        .env("ENVSHIM_HOSTILE_RSS", OsStr::from_bytes(&joined))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // libtest prints `test NAME ... ` before the probe's line, on the same line.
    let line = text.lines().find_map(|l| l.split_once("rss-probe: ").map(|(_, r)| r)).unwrap_or_else(|| {
        panic!("no probe output ({}): {text} {}", out.status, String::from_utf8_lossy(&out.stderr))
    });
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

// ---------------------------------------------------------------------------
// Path escapes

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
    fs::write(o.join("secret.env"), format!("KEY={SENTINEL}\n")).unwrap();
    fs::create_dir(o.join("d")).unwrap();
    fs::write(o.join("d/secret.env"), format!("KEY={SENTINEL}\n")).unwrap();
    let dir = tempdir();
    let vol = dir.path().join("vol");
    let v = vol.as_path();
    fs::create_dir(v).unwrap();
    // Beside the volume, reachable with one `..`.
    fs::write(dir.path().join("beside.env"), format!("KEY={SENTINEL}\n")).unwrap();
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
        let opts = Opts { deny_openat2: deny, ..Opts::default() };
        let out = run(&[os("render"), os("--show-values"), os("--manifest"), os(&m)], &opts);
        let what = format!("path {path:?} (openat2 denied with {deny:?})");
        sane(&out, &what);
        no_sentinel(&out.stdout, &what);
        no_sentinel(&out.stderr, &what);
        match want {
            Ok(value) => {
                assert_eq!(out.code, Some(0), "{what}: {}", out.err());
                assert!(out.out().contains(&format!("GOT={value}\n")), "{what}: {}", out.out());
            }
            Err(code) => {
                assert_eq!(out.code, Some(code), "{what}: {}", out.err());
                assert!(!out.out().contains("GOT="), "{what}: {}", out.out());
            }
        }
        // An envFrom of the same path gives the same outcome.
        let manifest = json!({
            "volumeMounts": [{"name": "cfg", "mountPath": l.vol}],
            "envFrom": [{"fileRef": {"volumeName": "cfg", "path": path}, "prefix": "GOT_"}],
        });
        fs::write(&m, manifest.to_string()).unwrap();
        let out = run(&[os("render"), os("--show-values"), os("--manifest"), os(&m)], &opts);
        sane(&out, &what);
        no_sentinel(&out.stdout, &what);
        match want {
            Ok(value) => assert!(out.out().contains(&format!("GOT_KEY={value}\n")), "envFrom {what}: {}", out.out()),
            Err(code) => assert_eq!(out.code, Some(code), "envFrom {what}: {}", out.err()),
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
        let out = run(&[os("render"), os("--show-values"), os("--manifest"), os(&m)], &Opts::default());
        sane(&out, "deep link");
        if out.code != Some(0) || !out.out().contains("GOT=inside\n") {
            failures.push(out.err());
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
// Test set-up only: a raw openat2 system call.
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
    let r = unsafe {
        libc::syscall(libc::SYS_openat2, libc::AT_FDCWD, c"/".as_ptr(), &how as *const OpenHow, std::mem::size_of::<OpenHow>())
    };
    println!("openat2-probe: ret={r} errno={}", io::Error::last_os_error().raw_os_error().unwrap_or(0));
}

#[test]
// Test set-up only: pre_exec.
#[allow(unsafe_code)]
fn the_seccomp_filter_really_refuses_openat2() {
    let me = std::env::current_exe().unwrap();
    for errno in [libc::ENOSYS, libc::EPERM] {
        let mut cmd = Command::new(&me);
        cmd.args(["--exact", "openat2_probe_child", "--nocapture", "--test-threads=1"]).env("ENVSHIM_HOSTILE_PROBE", "1");
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
    let out = run(
        &[os("render"), os("--show-values"), os("--env-file"), os("vol/abs-dir/b.env")],
        &Opts { cwd: Some(l.dir.path().to_path_buf()), ..Opts::default() },
    );
    // vol/abs-dir -> /sub on the host, which does not exist: missing, 66.
    assert_eq!(out.code, Some(66), "{}", out.err());
    let out = run(
        &[os("render"), os("--show-values"), os("--env-file"), os("vol/app.env")],
        &Opts { cwd: Some(l.dir.path().to_path_buf()), ..Opts::default() },
    );
    assert_eq!(out.code, Some(0), "{}", out.err());
    assert!(out.out().contains("KEY=configmap\n"), "{}", out.out());
}

// ---------------------------------------------------------------------------
// Permission denied

#[test]
fn permission_denied_names_the_file_and_the_uid() {
    if !am_root() {
        eprintln!("SKIPPED permission_denied_names_the_file_and_the_uid: needs root to run envshim as uid 65534");
        return;
    }
    let dir = tempdir();
    let p = dir.path();
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
    // The binary may sit where uid 65534 cannot reach it: use a copy.
    let bin = p.join("envshim");
    fs::copy(BIN, &bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let vol = p.join("vol");
    fs::create_dir_all(vol.join("private")).unwrap();
    fs::set_permissions(&vol, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(vol.join("locked.env"), format!("KEY={SENTINEL}\n")).unwrap();
    fs::set_permissions(vol.join("locked.env"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::write(vol.join("private/in.env"), format!("KEY={SENTINEL}\n")).unwrap();
    fs::set_permissions(vol.join("private"), fs::Permissions::from_mode(0o700)).unwrap();
    let locked_manifest = p.join("locked.json");
    fs::write(&locked_manifest, "{}").unwrap();
    fs::set_permissions(&locked_manifest, fs::Permissions::from_mode(0o000)).unwrap();
    let opts = Opts { as_user: Some(65534), bin: Some(bin.clone()), ..Opts::default() };
    let tlog = p.join("tlog");

    let mut cases: Vec<(Vec<OsString>, String)> = vec![
        (vec![os("check"), os("--env-file"), os(&vol.join("locked.env"))], vol.join("locked.env").to_str().unwrap().into()),
        (vec![os("check"), os("--manifest"), os(&locked_manifest)], locked_manifest.to_str().unwrap().into()),
    ];
    for (path, optional) in [("locked.env", false), ("locked.env", true), ("private/in.env", false), ("/private/in.env", true)] {
        for manifest in [
            json!({"volumeMounts": [{"name": "v", "mountPath": vol}],
                   "env": [{"name": "X", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": path, "key": "KEY", "optional": optional}}}]}),
            json!({"volumeMounts": [{"name": "v", "mountPath": vol}], "envFrom": [{"fileRef": {"volumeName": "v", "path": path, "optional": optional}}]}),
        ] {
            let file = p.join(format!("m{}.json", cases.len()));
            fs::write(&file, manifest.to_string()).unwrap();
            cases.push((vec![os("check"), os("--manifest"), os(&file)], format!("volume v, path {}", path.trim_start_matches('/'))));
        }
    }
    for (mut args, shown) in cases {
        args.extend([os("--termination-log"), os(&tlog)]);
        for deny in [None, Some(libc::ENOSYS)] {
            let out = run(&args, &Opts { deny_openat2: deny, ..opts.clone() });
            let what = format!("{args:?} (openat2 denied {deny:?})");
            sane(&out, &what);
            assert_eq!(out.code, Some(77), "{what}: {}", out.err());
            let err = out.err();
            assert!(err.contains(&shown) && err.contains("65534") && err.contains("permission denied"), "{what}: {err}");
            no_sentinel(&out.stderr, &what);
        }
    }
}

// ---------------------------------------------------------------------------
// execve limits and bounded expansion

fn write_manifest(dir: &Path, m: &Value) -> PathBuf {
    let path = dir.join("m.json");
    fs::write(&path, serde_json::to_vec(m).unwrap()).unwrap();
    path
}

#[test]
fn a_name_value_over_131071_bytes_is_refused_naming_the_variable() {
    let dir = tempdir();
    let p = dir.path();
    // BIG=VALUE of exactly 131,071 bytes is fine; one byte more is refused (126).
    for (len, code) in [(131_071 - 4, 0), (131_071 - 4 + 1, 126)] {
        let m = write_manifest(p, &json!({"env": [{"name": "BIG", "value": "s".repeat(len)}]}));
        for sub in [&["check"][..], &["run", "--", "/bin/true"][..]] {
            let mut args = vec![os(sub[0]), os("--manifest"), os(&m)];
            args.extend(sub[1..].iter().map(os));
            let out = run(&args, &Opts::default());
            sane(&out, "boundary");
            assert_eq!(out.code, Some(code), "len {len} {sub:?}: {}", out.err());
            if code != 0 {
                assert!(out.err().contains("BIG") && out.err().contains("131071"), "{}", out.err());
                assert!(!out.err().contains("sss"), "{}", out.err());
            }
        }
    }
    // Reached by expansion of values read from a file (4 x 32 KiB + `BIG=`).
    let value = SENTINEL.repeat(32_768 / SENTINEL.len());
    fs::write(p.join("a.env"), format!("A={value}\n")).unwrap();
    let marker = p.join("ran");
    let m = write_manifest(p, &json!({"env": [{"name": "BIG", "value": "$(A)$(A)$(A)$(A)$(A)"}]}));
    let out = run(
        &[os("run"), os("--manifest"), os(&m), os("--env-file"), os(&p.join("a.env")), os("--"), os("/usr/bin/touch"), os(&marker)],
        &Opts::default(),
    );
    sane(&out, "expanded BIG");
    assert_eq!(out.code, Some(126), "{}", out.err());
    assert!(out.err().contains("BIG"), "{}", out.err());
    no_sentinel(&out.stderr, "expanded BIG");
    assert!(!marker.exists(), "the program ran with a partial environment");
    // In the program line, too: the argument is named, not shown.
    let out = run(
        &[os("run"), os("--env-file"), os(&p.join("a.env")), os("--"), os("/bin/true"), os("$(A)$(A)$(A)$(A)$(A)")],
        &Opts::default(),
    );
    assert_eq!(out.code, Some(126), "{}", out.err());
    assert!(out.err().contains("argument 1"), "{}", out.err());
    no_sentinel(&out.stderr, "expanded argument");
}

/// Regression (finding 1 of docs/security.md): a manifest that multiplies a
/// value (`$(A)` x 200, then that x 200) used to build a 1.28 GB string
/// (2.5 GB peak, 8 s); chained once more it exhausted memory. Now each value
/// stops at the execve limit and the total of expanded values at 6 MiB.
#[test]
fn multiplied_expansion_is_refused_without_exhausting_memory() {
    let dir = tempdir();
    let p = dir.path();
    fs::write(p.join("a.env"), format!("A={}\n", "x".repeat(32_000))).unwrap();
    let cases = [
        json!({"env": [
            {"name": "B", "value": "$(A)".repeat(200)},
            {"name": "C", "value": "$(B)".repeat(200)},
            {"name": "D", "value": "$(C)".repeat(200)},
        ]}),
        json!({"env": [{"name": "B", "value": "$(A)".repeat(4)}], "command": ["/bin/true"], "args": vec!["$(B)"; 20_000]}),
        json!({"env": (0..20_000).map(|i| json!({"name": format!("C{i}"), "value": "$(A)$(A)$(A)"})).collect::<Vec<_>>()}),
    ];
    for (i, m) in cases.iter().enumerate() {
        let path = write_manifest(p, m);
        // Under a 512 MiB address-space limit: the old behaviour died of an allocation failure.
        let opts = Opts { mem_limit: Some(512 << 20), ..Opts::default() };
        let args = [os("check"), os("--manifest"), os(&path), os("--env-file"), os(&p.join("a.env"))];
        let out = run(&args, &opts);
        let what = format!("amplification case {i}");
        sane(&out, &what);
        assert_eq!(out.code, Some(126), "{what}: {}", out.err());
        assert!(out.elapsed < Duration::from_secs(2), "{what}: took {:?}", out.elapsed);
        let (rss, _, _) = peak_rss(&args);
        eprintln!("{what}: peak RSS {rss} KiB");
        assert!(rss < 64 * 1024, "{what}: peak RSS {rss} KiB");
        assert!(out.err().lines().count() < 10, "{what}: one error per problem, not per entry: {}", out.err().lines().count());
        assert!(!out.err().contains("xxxx"), "{what}: {}", out.err());
    }
}

/// A positive control: the sentinel check does see a value when one is printed
/// on purpose (`render --show-values`), so the checks above are not vacuous.
#[test]
fn the_leak_check_sees_a_printed_value() {
    let dir = tempdir();
    fs::write(dir.path().join("a.env"), format!("A={SENTINEL}\n")).unwrap();
    let out = run(&[os("render"), os("--show-values"), os("--env-file"), os(&dir.path().join("a.env"))], &Opts::default());
    assert_eq!(out.code, Some(0), "{}", out.err());
    // What no_sentinel looks for is there.
    assert!(out.out().contains(SENTINEL_CORE) && out.out().contains(SENTINEL), "{}", out.out());
}

/// Regression (finding 2 of docs/security.md): a manifest that repeats sources
/// over a file an untrusted container wrote — `envFrom` x 2,000 with distinct
/// prefixes over a file of 2,704 keys, or `fileKeyRef` x 10,000 of a 32 KB
/// value — used to build every variable before the final size check (1.3 GB
/// and 4 s for the first; a 1 MiB manifest over a 64 KiB file would need
/// tens of GB). Building now stops once the environment passes what execve
/// ever takes (6 MiB), with one error.
#[test]
fn repeated_sources_stop_at_the_execve_total() {
    let dir = tempdir();
    let p = dir.path();
    let vol = p.join("vol");
    fs::create_dir(&vol).unwrap();
    let letters: Vec<char> = ('a'..='z').chain('A'..='Z').collect();
    let keys: String = letters.iter().flat_map(|a| letters.iter().map(move |b| format!("{a}{b}=x\n"))).collect();
    fs::write(vol.join("keys.env"), &keys).unwrap();
    fs::write(vol.join("big.env"), format!("A={}\n", SENTINEL.repeat(32_000 / SENTINEL.len()))).unwrap();
    let mount = json!([{"name": "v", "mountPath": vol}]);
    let cases = [
        json!({"volumeMounts": mount, "envFrom": (0..2_000).map(|i| json!({"fileRef": {"volumeName": "v", "path": "keys.env"}, "prefix": format!("P{i}_")})).collect::<Vec<_>>()}),
        json!({"volumeMounts": mount, "env": (0..10_000).map(|i| json!({"name": format!("V{i}"), "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "big.env", "key": "A"}}})).collect::<Vec<_>>()}),
    ];
    for (i, m) in cases.iter().enumerate() {
        let path = write_manifest(p, m);
        let what = format!("repeated sources case {i}");
        for sub in ["check", "render", "run"] {
            let mut args = vec![os(sub), os("--manifest"), os(&path)];
            if sub == "run" {
                args.extend([os("--"), os("/bin/true")]);
            }
            let out = run(&args, &Opts { mem_limit: Some(1 << 30), ..Opts::default() });
            sane(&out, &what);
            assert_eq!(out.code, Some(126), "{what} {sub}: {}", out.err());
            // Generous for a debug build on a loaded machine (release: 0.3 s); the
            // memory limit above is what the old behaviour failed.
            assert!(out.elapsed < Duration::from_secs(5), "{what} {sub}: took {:?}", out.elapsed);
            assert!(out.err().contains("6291456"), "{what} {sub}: {}", out.err());
            assert!(out.err().lines().count() <= 3, "{what} {sub}: {}", out.err());
            no_sentinel(&out.stderr, &what);
            no_sentinel(&out.stdout, &what);
        }
        let (rss, _, _) = peak_rss(&[os("check"), os("--manifest"), os(&path)]);
        eprintln!("{what}: peak RSS {rss} KiB");
        assert!(rss < 256 * 1024, "{what}: peak RSS {rss} KiB");
    }
}
