//! Permission denied.

use super::*;

#[test]
#[ignore = "needs root"]
fn permission_denied_names_the_file_and_the_uid() {
    assert!(am_root(), "needs root, to run envshim as uid 65534");
    let dir = tempdir();
    let p = dir.path();
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
    let vol = p.join("vol");
    fs::create_dir_all(vol.join("private")).unwrap();
    fs::set_permissions(&vol, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(vol.join("locked.env"), format!("KEY={SENTINEL_NOT_A_NAME}\n")).unwrap();
    fs::set_permissions(vol.join("locked.env"), fs::Permissions::from_mode(0o000)).unwrap();
    fs::write(vol.join("private/in.env"), format!("KEY={SENTINEL_NOT_A_NAME}\n")).unwrap();
    fs::set_permissions(vol.join("private"), fs::Permissions::from_mode(0o700)).unwrap();
    let locked_manifest = p.join("locked.json");
    fs::write(&locked_manifest, "{}").unwrap();
    fs::set_permissions(&locked_manifest, fs::Permissions::from_mode(0o000)).unwrap();
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
            // As uid 65534, from a copy of the binary that user can reach.
            let (run, uid) = shim(&args).deny_openat2(deny).unprivileged();
            assert_eq!(uid, 65534);
            let out = run.run();
            let what = format!("{args:?} (openat2 denied {deny:?})");
            sane(&out, &what);
            assert_eq!(out.code, 77, "{what}: {}", out.stderr_str());
            let err = out.stderr_str();
            assert!(err.contains(&shown) && err.contains("65534") && err.contains("permission denied"), "{what}: {err}");
            assert_no_sentinel(&out.stderr, &what);
        }
    }
}
