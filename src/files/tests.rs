use super::*;
use std::fs;
use std::os::unix::fs::symlink;

/// A volume laid out like a ConfigMap mount, plus escape attempts.
fn volume() -> (tempfile::TempDir, tempfile::TempDir) {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.env"), "OUTSIDE=1\n").unwrap();
    let v = tempfile::tempdir().unwrap();
    let p = v.path();
    fs::write(p.join("a.env"), "A=1\n").unwrap();
    fs::create_dir(p.join("sub")).unwrap();
    fs::write(p.join("sub/b.env"), "B=2\n").unwrap();
    // ConfigMap layout: key -> ..data/key, ..data -> ..2024_01_01
    fs::create_dir(p.join("..2024_01_01")).unwrap();
    fs::write(p.join("..2024_01_01/cm.env"), "CM=3\n").unwrap();
    symlink("..2024_01_01", p.join("..data")).unwrap();
    symlink("..data/cm.env", p.join("cm.env")).unwrap();
    symlink("/a.env", p.join("abs-link")).unwrap();
    symlink("../../../../../../a.env", p.join("climb-link")).unwrap();
    symlink(outside.path().join("secret.env"), p.join("out-link")).unwrap();
    symlink("sub/../a.env", p.join("dotdot-inside")).unwrap();
    symlink("loop2", p.join("loop1")).unwrap();
    symlink("loop1", p.join("loop2")).unwrap();
    symlink("nowhere.env", p.join("dangling")).unwrap();
    (v, outside)
}

/// (path inside the volume, expected content or error kind)
const CASES: &[(&str, Result<&str, &str>)] = &[
    ("a.env", Ok("A=1\n")),
    ("/a.env", Ok("A=1\n")),
    ("sub/b.env", Ok("B=2\n")),
    ("./sub//b.env", Ok("B=2\n")),
    ("cm.env", Ok("CM=3\n")),
    ("abs-link", Ok("A=1\n")),
    ("climb-link", Ok("A=1\n")),
    ("dotdot-inside", Ok("A=1\n")),
    // The absolute target is resolved inside the volume, where it does not exist.
    ("out-link", Err("NotFound")),
    ("missing.env", Err("NotFound")),
    ("a.env/x", Err("NotFound")),
    ("dangling", Err("NotFound")),
    ("loop1", Err("Loop")),
    ("sub", Err("NotRegular")),
    ("/", Err("NotRegular")),
];

fn kind(e: &ReadError) -> &'static str {
    match e {
        ReadError::NotFound => "NotFound",
        ReadError::PermissionDenied => "PermissionDenied",
        ReadError::NotRegular => "NotRegular",
        ReadError::TooLarge(_) => "TooLarge",
        ReadError::Loop => "Loop",
        ReadError::Other(_) => "Other",
    }
}

fn check(open: fn(BorrowedFd, &[u8]) -> io::Result<OwnedFd>) {
    let (v, _outside) = volume();
    let root = open_dir(v.path().as_os_str()).unwrap();
    for (path, want) in CASES {
        let got = open(root.as_fd(), path.as_bytes()).map_err(ReadError::from).and_then(|fd| read_bounded(fd.as_fd(), 1000));
        match (got, want) {
            (Ok(bytes), Ok(text)) => assert_eq!(bytes, text.as_bytes(), "{path}"),
            (Err(e), Err(k)) => assert_eq!(kind(&e), *k, "{path}"),
            (got, want) => panic!("{path}: got {:?}, want {want:?}", got.map(|b| String::from_utf8(b).unwrap())),
        }
    }
}

#[test]
fn openat2_resolves_inside_the_root() {
    check(open_in_root);
}

#[test]
fn fallback_resolves_inside_the_root() {
    check(open_in_root_fallback);
}

#[test]
fn bounded_read_limits() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    fs::write(&f, vec![b'x'; 100]).unwrap();
    assert_eq!(read_path(f.as_os_str(), 100).unwrap().len(), 100);
    assert!(matches!(read_path(f.as_os_str(), 99), Err(ReadError::TooLarge(99))));
    assert_eq!(read_path(OsStr::new("/dev/null"), 10).map_err(|e| kind(&e)).unwrap_err(), "NotRegular");
    assert_eq!(read_path(OsStr::new("/dev/zero"), 10).map_err(|e| kind(&e)).unwrap_err(), "NotRegular");
    assert_eq!(read_path(d.path().as_os_str(), 10).map_err(|e| kind(&e)).unwrap_err(), "NotRegular");
    assert_eq!(read_path(OsStr::new("/nonexistent/x"), 10).map_err(|e| kind(&e)).unwrap_err(), "NotFound");
}

#[test]
fn proc_files_that_lie_about_their_size_are_still_bounded() {
    // /proc files report size 0 and are regular; the read must stop at limit + 1.
    match read_path(OsStr::new("/proc/self/maps"), 16) {
        Err(ReadError::TooLarge(16)) => {}
        other => panic!("{:?}", other.map(|b| b.len())),
    }
}

#[test]
fn reads_the_bytes_into_unzeroed_capacity() {
    // Several pages, with the exact-size stop; and a size-0 procfs file read
    // to its end through the growth path (the block the kernel set at exec).
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("f");
    let data: Vec<u8> = (0..70_001u32).map(|i| (i % 251) as u8 + 1).collect();
    fs::write(&f, &data).unwrap();
    assert_eq!(read_path(f.as_os_str(), 70_001).unwrap(), data);
    let environ = OsStr::new("/proc/self/environ");
    assert_eq!(read_path(environ, 1 << 20).unwrap(), fs::read(environ).unwrap());
}
