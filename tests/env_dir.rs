//! `--env-dir DIR` (docs/reference.md §12.1), through the binary: a directory laid out as
//! the kubelet's atomic writer lays out a Secret or ConfigMap volume, a
//! Docker/Compose `/run/secrets`, an update in the middle of a read, the
//! reading rules, the limits, the names, precedence and `--wait`.

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::json;

fn kv(pairs: &[(&str, &[u8])]) -> Vec<(String, Vec<u8>)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_vec())).collect()
}

/// `render --format json --show-values` as name -> (source, value), for the names `keep` accepts.
fn rendered(out: &Out, keep: impl Fn(&str) -> bool) -> BTreeMap<String, (String, String)> {
    let json = out.json();
    json.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), (v["source"].as_str().unwrap().to_string(), v["value"].as_str().unwrap().to_string())))
        .collect()
}

#[test]
fn a_kubernetes_secret_volume_gives_each_key_its_bytes_exactly() {
    let v = Volume::new();
    publish(
        v.path(),
        1,
        &kv(&[
            ("password", format!("{SENTINEL}\n").as_bytes()),
            ("USER", b"app"),
            ("ca.crt", b"-----BEGIN\r\nx\n\n"),
            ("EMPTY", b""),
            ("nested/inner", b"not a variable"),
        ]),
    );
    let dir = v.dir();
    let out = envshim(["render", "--env-dir", &dir, "--format", "json", "--show-values"]).run();
    out.code(0);
    assert_eq!(out.stderr_str(), "");
    let got = rendered(&out, |_| true);
    let want: BTreeMap<String, (String, String)> = [("EMPTY", ""), ("USER", "app"), ("ca.crt", "-----BEGIN\r\nx\n\n"), ("password", &format!("{SENTINEL}\n"))]
        .iter()
        .map(|(k, val)| (k.to_string(), (format!("{dir}/{k}"), val.to_string())))
        .collect();
    assert_eq!(got, want);
    // Byte order of the names, after the inherited variables; run passes them on.
    let out = envshim(["run", "--env-dir", &format!("{dir}/"), "--"]).args(print_env()).env("A", "inherited").run();
    out.ok();
    let names: Vec<String> = out.env0().into_iter().map(|(k, _)| k).collect();
    assert_eq!(names, ["A", "EMPTY", "USER", "ca.crt", "password"]);
    assert_eq!(out.env_map()["password"], format!("{SENTINEL}\n"));
    // The render of names and sources without values.
    let out = envshim(["render", "--env-dir", &dir]).run();
    out.code(0).no_sentinel();
    assert!(out.stdout_str().contains(&format!("# password from {dir}/password\npassword=<set, {} bytes>\n", SENTINEL.len() + 1)));
}

#[test]
fn docker_run_secrets_plain_files_links_and_subdirectories() {
    let v = Volume::new();
    v.file("db_password", SENTINEL);
    v.file(".hidden", "x");
    v.subdir("subdir");
    v.file("subdir/INNER", "x");
    v.file("shared/real", "via-link");
    // Links resolve with DIR as `/`: an absolute target stays inside it.
    v.symlink("API_KEY", "/shared/real");
    v.symlink("ESCAPE", "../../../../../../etc/hostname");
    v.file("etc/hostname", "inside");
    v.symlink("DIRLINK", "subdir");
    let out = envshim(["run", "--env-dir", &v.dir(), "--"]).args(print_env()).run();
    out.ok();
    let env = out.env_map();
    assert_eq!(env.keys().collect::<Vec<_>>(), ["API_KEY", "ESCAPE", "db_password"]);
    assert_eq!(env["API_KEY"], "via-link");
    assert_eq!(env["ESCAPE"], "inside");
    assert_eq!(env["db_password"], SENTINEL);
    // A link to a file outside DIR is a link to nothing inside it: 66, naming it.
    v.symlink("OUTSIDE", "/etc/passwd");
    std::fs::remove_file(v.join("etc/hostname")).unwrap();
    let out = envshim(["check", "--env-dir", &v.dir()]).run();
    let lines = out.fails(66);
    out.no_sentinel();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("/ESCAPE: not found") && lines[1].contains("/OUTSIDE: not found"), "{lines:?}");
    assert!(!out.stderr_str().contains("root:"), "{}", out.stderr_str());
}

#[test]
fn an_update_during_the_read_gives_the_old_set_or_the_new_one_never_a_mix() {
    let v = Volume::new();
    let dir = v.path().to_path_buf();
    // Version N has keys K000..K(40 + N % 5 * 20), each valued `vN-Kiii`: a mix
    // of versions shows as two values, a mix of sets as a wrong set of keys.
    let set = |n: u32| -> Vec<(String, Vec<u8>)> { (0..40 + n % 5 * 20).map(|i| (format!("K{i:03}"), format!("v{n}-K{i:03}").into_bytes())).collect() };
    publish(&dir, 0, &set(0));
    let stop = Arc::new(AtomicBool::new(false));
    let published = Arc::new(AtomicU32::new(0));
    let writer = {
        let (dir, stop, published) = (dir.clone(), stop.clone(), published.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                publish(&dir, n, &set(n));
                published.store(n, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let (mut versions, mut replaced, mut runs) = (std::collections::BTreeSet::new(), 0, 0);
    let started = Instant::now();
    // At least 100 runs and 40 updates (a loaded machine publishes slowly), for at most 60 s.
    while (runs < 100 || published.load(Ordering::Relaxed) < 40) && started.elapsed() < Duration::from_secs(60) {
        runs += 1;
        let out = envshim(["run", "--env-dir", dir.to_str().unwrap(), "--"]).args(print_env()).run();
        if out.code == 66 {
            // Replaced during both reads: refused whole, never half.
            assert!(out.stderr_str().contains("its files were replaced while being read"), "{}", out.stderr_str());
            replaced += 1;
            continue;
        }
        out.ok();
        let env: BTreeMap<String, String> = out.env_map().into_iter().filter(|(k, _)| k.starts_with('K')).collect();
        let first = env.values().next().expect("no K variable");
        let n: u32 = first[1..first.find('-').unwrap()].parse().unwrap();
        let want: BTreeMap<String, String> = set(n).into_iter().map(|(k, v)| (k, String::from_utf8(v).unwrap())).collect();
        assert_eq!(env, want, "a mix of versions or of sets (version {n})");
        versions.insert(n);
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!(
        "{runs} runs in {:?}: {} versions published, {} seen, {replaced} refused as replaced twice",
        started.elapsed(),
        published.load(Ordering::Relaxed),
        versions.len()
    );
    assert!(versions.len() >= 10, "the writer did not update during the reads: {versions:?}");
    assert!(replaced < runs / 4, "{replaced} of {runs} runs refused");
}

/// The swap itself as fast as it can go: `..data` flipped between two
/// complete versions (200 keys, and 150 others), by the writer's rename, as
/// often as a thread can, while envshim reads. Each read must give one of
/// the two whole sets. (A read that follows `..data` or the keys' links for
/// each file mixes them within a few runs.)
#[test]
fn data_flipped_between_two_versions_during_the_read_never_mixes_them() {
    let v = Volume::new();
    let dir = v.path().to_path_buf();
    let a: Vec<(String, Vec<u8>)> = (0..200).map(|i| (format!("K{i:03}"), format!("a-{i}").into_bytes())).collect();
    let b: Vec<(String, Vec<u8>)> = (50..200).map(|i| (format!("K{i:03}"), format!("b-{i}").into_bytes())).collect();
    for (ts, files) in [("..2026_a", &a), ("..2026_b", &b)] {
        for (k, val) in files {
            v.file(&format!("{ts}/{k}"), val);
        }
    }
    symlink("..2026_a", dir.join("..data")).unwrap();
    for (k, _) in &a {
        symlink(format!("..data/{k}"), dir.join(k)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU32::new(0));
    let flipper = {
        let (dir, stop, flips) = (dir.clone(), stop.clone(), flips.clone());
        std::thread::spawn(move || {
            let mut n = 0u32;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let ts = if n % 2 == 0 { "..2026_a" } else { "..2026_b" };
                symlink(ts, dir.join("..data_tmp")).unwrap();
                std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
                flips.store(n, Ordering::Relaxed);
            }
        })
    };
    let want =
        |set: &[(String, Vec<u8>)]| -> BTreeMap<String, String> { set.iter().map(|(k, v)| (k.clone(), String::from_utf8(v.clone()).unwrap())).collect() };
    let (want_a, want_b) = (want(&a), want(&b));
    let mut seen = [0; 2];
    for _ in 0..150 {
        let out = envshim(["run", "--env-dir", dir.to_str().unwrap(), "--"]).args(print_env()).run();
        out.ok();
        let env: BTreeMap<String, String> = out.env_map().into_iter().filter(|(k, _)| k.starts_with('K')).collect();
        match () {
            _ if env == want_a => seen[0] += 1,
            _ if env == want_b => seen[1] += 1,
            _ => panic!(
                "a mix of the two versions: {} keys, {} from a, {} from b",
                env.len(),
                env.values().filter(|v| v.starts_with("a-")).count(),
                env.values().filter(|v| v.starts_with("b-")).count()
            ),
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    eprintln!("{} flips; sets read: {} a, {} b", flips.load(Ordering::Relaxed), seen[0], seen[1]);
    assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
}

#[test]
fn values_are_bounded_and_may_not_hold_nul_and_fifos_and_devices_are_refused() {
    let v = Volume::new();
    v.file("MAX", "x".repeat(32_768));
    envshim(["check", "--env-dir", &v.dir()]).run().ok();
    v.file("OVER", format!("{SENTINEL}{}", "x".repeat(32_769 - SENTINEL.len())));
    let out = envshim(["check", "--env-dir", &v.dir()]).run();
    out.fails_with(65, &["/OVER is larger than 32768 bytes"]);
    out.no_sentinel();
    std::fs::remove_file(v.join("OVER")).unwrap();
    v.file("NUL", format!("{SENTINEL}\0x"));
    let out = envshim(["check", "--env-dir", &v.dir()]).run();
    out.fails_with(65, &["/NUL: holds a NUL byte"]);
    out.no_sentinel();
    std::fs::remove_file(v.join("NUL")).unwrap();
    // A FIFO fails at once (never opened for a blocking read), and so does a device.
    nix::unistd::mkfifo(&v.join("FIFO"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let out = envshim(["check", "--env-dir", &v.dir()]).run();
    out.fails_with(78, &["/FIFO is not a regular file"]);
    assert!(out.elapsed < Duration::from_secs(5));
    std::fs::remove_file(v.join("FIFO")).unwrap();
    if nix::unistd::geteuid().is_root() {
        // makedev(1, 5) is /dev/zero.
        let (kind, mode) = (nix::sys::stat::SFlag::S_IFCHR, nix::sys::stat::Mode::from_bits_truncate(0o644));
        nix::sys::stat::mknod(&v.join("ZERO"), kind, mode, nix::sys::stat::makedev(1, 5)).unwrap();
        let out = envshim(["check", "--env-dir", &v.dir()]).run();
        out.fails_with(78, &["/ZERO is not a regular file"]);
        assert!(out.elapsed < Duration::from_secs(5));
    }
}

#[test]
fn a_directory_with_too_many_entries_is_refused_without_being_read() {
    let v = Volume::new();
    for i in 0..4097 {
        std::fs::write(v.join(&format!("K{i}")), SENTINEL).unwrap();
    }
    let out = envshim(["check", "--env-dir", &v.dir()]).run();
    out.fails_with(65, &["has more than 4096 entries"]);
    out.no_sentinel();
    std::fs::remove_file(v.join("K0")).unwrap();
    envshim(["check", "--env-dir", &v.dir()]).run().ok();
}

#[test]
fn names_that_fail_the_rule_are_skipped_with_the_envfrom_warning() {
    let v = Volume::new();
    v.file("a=b", SENTINEL);
    v.file("1ST", SENTINEL);
    v.file("Logging:Level", SENTINEL);
    v.file("GOOD", "1");
    v.file("caf\u{e9}", SENTINEL);
    let out = envshim(["run", "--env-dir", &v.dir(), "--"]).args(print_env()).run();
    out.code(0).stderr_no_sentinel();
    let dir = v.dir();
    assert_eq!(
        out.stderr_lines(),
        [format!("envshim: warning: Keys [a=b, caf\\xc3\\xa9] from the EnvFrom file {dir} were skipped since they are considered invalid environment variable names.")]
    );
    assert_eq!(out.env_map().keys().collect::<Vec<_>>(), ["1ST", "GOOD", "Logging:Level"]);
    let out = envshim(["run", "--strict-names", "--env-dir", &v.dir(), "--"]).args(print_env()).run();
    assert_eq!(out.env_map().keys().collect::<Vec<_>>(), ["GOOD"]);
    assert!(out.stderr_str().contains("Keys [1ST, Logging:Level, a=b, caf\\xc3\\xa9]"), "{}", out.stderr_str());
    // check --strict fails on them.
    envshim(["check", "--strict", "--env-dir", &v.dir()]).run().fails_with(78, &["Keys [a=b", "(check --strict)"]);
}

/// An empty part of the comma-separated list names no directory, for the
/// option as for its variable (as `ENVSHIM_ENV_FILE`'s empty parts).
#[test]
fn an_empty_part_of_the_list_names_no_directory() {
    let v = Volume::new();
    v.file("GOOD", SENTINEL);
    let dir = v.dir();
    for out in [
        envshim(["run", &format!("--env-dir={dir},"), "--"]).args(print_env()).run(),
        envshim(["run", &format!("--env-dir=,{dir}"), "--"]).args(print_env()).run(),
        envshim(["run", "--"]).args(print_env()).env("ENVSHIM_ENV_DIR", format!("{dir},,")).run(),
    ] {
        out.code(0);
        assert_eq!(out.env_map()["GOOD"], SENTINEL);
    }
}

#[test]
fn precedence_after_the_manifest_envfrom_and_env_files_before_env() {
    let vol = Volume::new();
    vol.file("m.env", "A=manifest\nB=manifest\nC=manifest\nD=manifest\n");
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [{"name": "v", "mountPath": vol.dir()}],
        "envFrom": [{"fileRef": {"volumeName": "v", "path": "m.env"}}],
        "env": [{"name": "D", "value": "env-$(C)"}],
    }));
    let file = d.file_str("f.env", "B=file\nC=file\n");
    let (one, two) = (Volume::new(), Volume::new());
    one.file("C", "dir1");
    one.file("E", "dir1");
    two.file("E", "dir2");
    let out = envshim(["run", "--manifest", &m, "--env-file", &file, "--env-dir", &one.dir(), "--env-dir", &two.dir(), "--"]).args(print_env()).run();
    out.ok();
    let env = out.env_map();
    assert_eq!(
        env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>(),
        [("A", "manifest"), ("B", "file"), ("C", "dir1"), ("D", "env-dir1"), ("E", "dir2")]
    );
    // ENVSHIM_ENV_DIR: comma-separated, the same order; not passed on.
    let out = envshim(["run", "--"]).args(print_env()).env("ENVSHIM_ENV_DIR", format!("{},{}", one.dir(), two.dir())).run();
    out.ok();
    assert_eq!(out.env_map().into_iter().collect::<Vec<_>>(), [("C".into(), "dir1".into()), ("E".into(), "dir2".into())]);
    // --env-dir replaces ENVSHIM_ENV_DIR.
    let out = envshim(["run", "--env-dir", &one.dir(), "--"]).args(print_env()).env("ENVSHIM_ENV_DIR", two.dir()).run();
    assert_eq!(out.env_map()["E"], "dir1");
    // check counts them as from files.
    let out = envshim(["check", "--env-dir", &one.dir()]).run();
    assert_eq!(out.stderr_str(), "envshim: ok: 2 variables (2 from files), no program line\n");
}

#[test]
fn a_missing_directory_is_66_and_waited_for_and_a_file_is_78() {
    let v = Volume::new();
    let missing = v.join("secrets");
    let out = envshim(["check", "--env-dir", missing.to_str().unwrap()]).run();
    out.fails_with(66, &["--env-dir", "secrets: directory not found"]);
    v.file("plain", SENTINEL);
    let out = envshim(["check", "--env-dir", v.join("plain").to_str().unwrap()]).run();
    out.fails_with(78, &["plain is not a directory"]);
    out.no_sentinel();
    // --wait: the directory appears later, filled atomically (renamed into place).
    let script = format!("sleep 0.4; mkdir {m}.tmp; printf '{SENTINEL}' > {m}.tmp/TOKEN; mv {m}.tmp {m}", m = missing.display());
    let mut writer = std::process::Command::new("sh").args(["-ec", &script]).spawn().unwrap();
    let out = envshim(["run", "--wait", "15s", "--env-dir", missing.to_str().unwrap(), "--"]).args(print_env()).run();
    writer.wait().unwrap();
    out.code(0);
    assert_eq!(out.stderr_str(), format!("envshim: waiting up to 15s for {}\n", missing.display()));
    assert_eq!(out.env_map()["TOKEN"], SENTINEL);
    assert!(out.elapsed >= Duration::from_millis(400));
    let out = envshim(["check", "--wait", "300ms", "--env-dir", v.join("never").to_str().unwrap()]).run();
    let lines = out.fails(66);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("envshim: waiting up to 300ms for ") && lines[1].ends_with("never: directory not found after waiting 300ms"), "{lines:?}");
}

#[test]
fn a_directory_envshim_cannot_read_is_77() {
    let v = Volume::new();
    let secrets = v.subdir("secrets");
    std::fs::write(secrets.join("TOKEN"), SENTINEL).unwrap();
    std::fs::set_permissions(&secrets, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (shim, uid) = envshim(["check", "--env-dir", secrets.to_str().unwrap()]).unprivileged();
    if uid == 0 {
        return;
    }
    let out = shim.run();
    out.fails_with(77, &["permission denied"]);
    out.no_sentinel();
    std::fs::set_permissions(&secrets, std::os::unix::fs::PermissionsExt::from_mode(0o711)).unwrap();
    std::fs::set_permissions(secrets.join("TOKEN"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (shim, _) = envshim(["check", "--env-dir", secrets.to_str().unwrap()]).unprivileged();
    let out = shim.run();
    out.fails(77);
}

#[test]
fn a_broken_kubernetes_layout_is_named_for_what_is_wrong_not_an_update() {
    // Each broken layout: 66 as for any unreadable set, a message that says
    // what is wrong (not "replaced while being read"), and no value.
    let dangling = Volume::new();
    dangling.file("..2026_01/TOKEN", SENTINEL);
    symlink("..2026_gone", dangling.join("..data")).unwrap();
    symlink("..data/TOKEN", dangling.join("TOKEN")).unwrap();
    let plain = Volume::new();
    plain.file("..data", SENTINEL);
    let out_link = Volume::new();
    out_link.file("..2026_01/USER", "app");
    symlink("/etc/passwd", out_link.join("..2026_01/TOKEN")).unwrap();
    symlink("..2026_01", out_link.join("..data")).unwrap();
    for (v, want) in [
        (&dangling, "/..data: a link to nothing (its target is not in the directory); not read"),
        (&plain, "/..data: not a directory nor a link to one (Kubernetes' ..data links to the current set of files); not read"),
        (&out_link, "/TOKEN: a link to nothing, or out of the directory (links are read with it as /); not read"),
    ] {
        let out = envshim(["check", "--env-dir", &v.dir()]).run();
        let lines = out.fails(66);
        out.no_sentinel();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].ends_with(want) && !lines[0].contains("replaced"), "{lines:?}");
        assert!(!out.stderr_str().contains("root:"), "{}", out.stderr_str());
    }
}
