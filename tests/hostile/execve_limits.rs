//! execve limits and bounded expansion.

use super::bounded_reads::peak_rss;
use super::*;

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
            let out = shim(&args).run();
            sane(&out, "boundary");
            assert_eq!(out.code, code, "len {len} {sub:?}: {}", out.stderr_str());
            if code != 0 {
                assert!(out.stderr_str().contains("BIG") && out.stderr_str().contains("131071"), "{}", out.stderr_str());
                assert!(!out.stderr_str().contains("sss"), "{}", out.stderr_str());
            }
        }
    }
    // Reached by expansion of values read from a file (4 x 32 KiB + `BIG=`).
    let value = SENTINEL_NOT_A_NAME.repeat(32_768 / SENTINEL_NOT_A_NAME.len());
    fs::write(p.join("a.env"), format!("A={value}\n")).unwrap();
    let marker = p.join("ran");
    let m = write_manifest(p, &json!({"env": [{"name": "BIG", "value": "$(A)$(A)$(A)$(A)$(A)"}]}));
    let out = shim(&[os("run"), os("--manifest"), os(&m), os("--env-file"), os(&p.join("a.env")), os("--"), os("/usr/bin/touch"), os(&marker)]).run();
    sane(&out, "expanded BIG");
    assert_eq!(out.code, 126, "{}", out.stderr_str());
    assert!(out.stderr_str().contains("BIG"), "{}", out.stderr_str());
    assert_no_sentinel(&out.stderr, "expanded BIG");
    assert!(!marker.exists(), "the program ran with a partial environment");
    // In the program line, too: the argument is named, not shown.
    let out = shim(&[os("run"), os("--env-file"), os(&p.join("a.env")), os("--"), os("/bin/true"), os("$(A)$(A)$(A)$(A)$(A)")]).run();
    assert_eq!(out.code, 126, "{}", out.stderr_str());
    assert!(out.stderr_str().contains("argument 1"), "{}", out.stderr_str());
    assert_no_sentinel(&out.stderr, "expanded argument");
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
        let args = [os("check"), os("--manifest"), os(&path), os("--env-file"), os(&p.join("a.env"))];
        let out = shim(&args).mem_limit(512 << 20).run();
        let what = format!("amplification case {i}");
        sane(&out, &what);
        assert_eq!(out.code, 126, "{what}: {}", out.stderr_str());
        assert!(out.elapsed < Duration::from_secs(2), "{what}: took {:?}", out.elapsed);
        let (rss, _, _) = peak_rss(&args);
        eprintln!("{what}: peak RSS {rss} KiB");
        assert!(rss < 64 * 1024, "{what}: peak RSS {rss} KiB");
        assert!(out.stderr_str().lines().count() < 10, "{what}: one error per problem, not per entry: {}", out.stderr_str().lines().count());
        assert!(!out.stderr_str().contains("xxxx"), "{what}: {}", out.stderr_str());
    }
}

/// A positive control: the sentinel check does see a value when one is printed
/// on purpose (`render --show-values`), so the checks above are not vacuous.
#[test]
fn the_leak_check_sees_a_printed_value() {
    let dir = tempdir();
    fs::write(dir.path().join("a.env"), format!("A={SENTINEL_NOT_A_NAME}\n")).unwrap();
    let out = shim(&[os("render"), os("--show-values"), os("--env-file"), os(&dir.path().join("a.env"))]).run();
    assert_eq!(out.code, 0, "{}", out.stderr_str());
    // The check every run above gets fails on it.
    let seen = std::panic::catch_unwind(|| assert_no_sentinel(&out.stdout, "stdout"));
    assert!(seen.is_err(), "{}", out.stdout_str());
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
    fs::write(vol.join("big.env"), format!("A={}\n", SENTINEL_NOT_A_NAME.repeat(32_000 / SENTINEL_NOT_A_NAME.len()))).unwrap();
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
            let out = shim(&args).mem_limit(1 << 30).run();
            sane(&out, &what);
            assert_eq!(out.code, 126, "{what} {sub}: {}", out.stderr_str());
            // Generous for a debug build on a loaded machine (release: 0.3 s); the
            // memory limit above is what the old behaviour failed.
            assert!(out.elapsed < Duration::from_secs(5), "{what} {sub}: took {:?}", out.elapsed);
            assert!(out.stderr_str().contains("6291456"), "{what} {sub}: {}", out.stderr_str());
            assert!(out.stderr_str().lines().count() <= 3, "{what} {sub}: {}", out.stderr_str());
            assert_no_sentinel(&out.stderr, &what);
            assert_no_sentinel(&out.stdout, &what);
        }
        let (rss, _, _) = peak_rss(&[os("check"), os("--manifest"), os(&path)]);
        eprintln!("{what}: peak RSS {rss} KiB");
        assert!(rss < 256 * 1024, "{what}: peak RSS {rss} KiB");
    }
}
