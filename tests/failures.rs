//! Failures (docs/reference.md §7): every row of the failure table with its exit code
//! (those of the exec itself in `exec`), the skipped-keys warning, the termination
//! log, and `check` reporting every problem.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};

mod exec;

fn run_manifest(m: &str) -> Out {
    envshim(["run", "--manifest", m, "--"]).args(print_env()).run()
}

// ---------------------------------------------------------------- volume not in volumeMounts: 78

#[test]
fn volume_not_in_volume_mounts_is_78() {
    let (_v, _d, m) = setup(&[("a.env", "A=1\n")], json!({"env": [file_key_ref("A", "nope", "a.env", "A", false)]}));
    run_manifest(&m).fails_with(78, &["env[0].valueFrom.fileKeyRef.volumeName", "\"nope\""]);
    // Optional does not cover it.
    let (_v, _d, m) = setup(&[], json!({"env": [file_key_ref("A", "nope", "a.env", "A", true)]}));
    run_manifest(&m).fails_with(78, &["nope"]);
    let (_v, _d, m) = setup(&[], json!({"envFrom": [file_ref("other", "a.env", true, None)]}));
    run_manifest(&m).fails_with(78, &["envFrom[0].fileRef.volumeName", "other"]);
}

// ---------------------------------------------------------------- missing, not optional: 66

#[test]
fn missing_file_not_optional_is_66() {
    let (_v, _d, m) = setup(&[], json!({"env": [file_key_ref("A", "v", "dir/missing.env", "A", false)]}));
    run_manifest(&m).fails_with(66, &["env[0]", "v/dir/missing.env"]);
    let (_v, _d, m) = setup(&[], json!({"envFrom": [file_ref("v", "missing.env", false, None)]}));
    run_manifest(&m).fails_with(66, &["envFrom[0]", "v/missing.env"]);
    // --env-file is never optional.
    let d = Volume::new();
    let p = d.join("missing.env");
    envshim(["run", "--env-file", p.to_str().unwrap(), "--", "/bin/true"]).run().fails_with(66, &[p.to_str().unwrap()]);
}

#[test]
fn missing_key_not_optional_is_66() {
    let (_v, _d, m) = setup(&[("a.env", "A=1\n")], json!({"env": [file_key_ref("X", "v", "a.env", "NOPE", false)]}));
    run_manifest(&m).fails_with(66, &["env[0]", "\"NOPE\"", "v/a.env"]);
}

// ---------------------------------------------------------------- missing, optional: not set, earlier survives

#[test]
fn missing_optional_leaves_the_variable_alone_and_runs() {
    let (_v, _d, m) = setup(
        &[("a.env", "OTHER=1\n")],
        json!({
            "envFrom": [file_ref("v", "gone.env", true, None)],
            "env": [
                {"name": "A", "value": "earlier"},
                file_key_ref("A", "v", "gone.env", "A", true),
                file_key_ref("A", "v", "a.env", "A", true),
                file_key_ref("B", "v", "gone.env", "B", true),
                file_key_ref("C", "v", "a.env", "C", true),
            ],
        }),
    );
    let out = run_manifest(&m);
    out.ok();
    let env = out.env_map();
    assert_eq!(env.get("A").map(String::as_str), Some("earlier"));
    assert!(!env.contains_key("B") && !env.contains_key("C") && !env.contains_key("OTHER"), "{env:?}");
}

// ---------------------------------------------------------------- does not parse / invalid name: 65

#[test]
fn unparsable_file_is_65_optional_or_not() {
    for optional in [false, true] {
        let (_v, _d, m) = setup(&[("a.env", "A=1\n\nB='open\n")], json!({"env": [file_key_ref("A", "v", "a.env", "A", optional)]}));
        run_manifest(&m).fails_with(65, &["volume v, path a.env", "line 3"]);
        let (_v, _d, m) = setup(&[("a.env", "A=1\nB\n")], json!({"envFrom": [file_ref("v", "a.env", optional, None)]}));
        run_manifest(&m).fails_with(65, &["volume v, path a.env", "line 2"]);
    }
}

#[test]
fn invalid_name_in_a_file_is_65() {
    // Even when the entry used is fine: the whole file is validated.
    let (_v, _d, m) = setup(&[("a.env", "A=1\nB\u{1}=2\n")], json!({"env": [file_key_ref("A", "v", "a.env", "A", false)]}));
    run_manifest(&m).fails_with(65, &["volume v, path a.env", "line 2"]);
}

// ---------------------------------------------------------------- invalid configured names: 78

#[test]
fn invalid_manifest_env_name_is_78() {
    let rows: &[(&str, &str)] =
        &[("A=B", "A=B"), ("", "env[0].name"), ("caf\u{e9}", "caf\\xc3\\xa9"), ("new\nline", "new\\x0aline"), ("tab\there", "tab\\x09here")];
    for (name, shown) in rows {
        let (_v, _d, m) = setup(&[], json!({"env": [{"name": name, "value": "x"}]}));
        let msg = run_manifest(&m).fails_with(78, &["env[0].name", shown]);
        assert!(!msg.contains('\t'), "{msg:?}");
    }
    // Strict only with --strict-names.
    let (_v, _d, m) = setup(&[], json!({"env": [{"name": "1A", "value": "x"}]}));
    run_manifest(&m).ok();
    envshim(["run", "--strict-names", "--manifest", &m, "--", "/bin/true"]).run().fails_with(78, &["env[0].name", "1A"]);
}

#[test]
fn invalid_env_option_name_is_78() {
    envshim(["run", "--env", "=x", "--", "/bin/true"]).run().fails_with(78, &["--env"]);
    envshim(["run", "--env", "A\u{1}B=x", "--", "/bin/true"]).run().fails_with(78, &["--env", "A\\x01B"]);
    envshim(["run", "--env", "OK=1", "--env", "caf\u{e9}=x", "--", "/bin/true"]).run().fails_with(78, &["--env #2"]);
}

/// Without an `=`, an `--env` or `--volume` is a usage error that names the
/// option and its shape; a volume's name may not be empty, and only a volume
/// gets the hint about Docker's `:`.
#[test]
fn a_pair_without_its_equals_is_2() {
    for (args, line) in [
        (&["--env", "A"][..], "envshim: --env #1: expected NAME=VALUE"),
        (&["--env", "A:B"], "envshim: --env #1: expected NAME=VALUE"),
        (&["--volume", "v=/tmp", "--volume", "=/tmp"], "envshim: --volume #2: expected NAME=DIR"),
        (&["--volume", "=a:b"], "envshim: --volume #1: expected NAME=DIR (envshim's --volume takes NAME=DIR, not Docker's NAME:DIR)"),
    ] {
        assert_eq!(envshim(["check"].iter().chain(args)).run().fails_with(2, &[]), line, "{args:?}");
    }
    // Each malformed pair is reported, the `--env`s first.
    let lines = envshim(["check", "--volume", "=a", "--env", "x"]).run().fails(2);
    assert_eq!(lines, ["envshim: --env #1: expected NAME=VALUE", "envshim: --volume #1: expected NAME=DIR"]);
}

#[test]
fn invalid_file_key_ref_key_is_78() {
    let (_v, _d, m) = setup(&[("a.env", "1A=x\n")], json!({"env": [file_key_ref("X", "v", "a.env", "bad\u{7f}key", false)]}));
    run_manifest(&m).fails_with(78, &["env[0].valueFrom.fileKeyRef.key", "bad\\x7fkey"]);
    let (_v, _d, m) = setup(&[("a.env", "1A=x\n")], json!({"env": [file_key_ref("X", "v", "a.env", "1A", false)]}));
    run_manifest(&m).ok();
    envshim(["run", "--strict-names", "--manifest", &m, "--", "/bin/true"]).run().fails_with(78, &["fileKeyRef.key", "1A"]);
    let (_v, _d, m) = setup(&[("a.env", "A=x\n")], json!({"env": [file_key_ref("X", "v", "a.env", "", true)]}));
    run_manifest(&m).fails_with(78, &["fileKeyRef.key"]);
}

// ---------------------------------------------------------------- envFrom invalid keys: skipped, one warning

#[test]
fn envfrom_invalid_keys_are_skipped_with_one_exact_warning_per_source() {
    let (_v, _d, m) = setup(
        &[("all.env", "zeta key=1\n1BAD=2\nGOOD=3\nLogging:Level=4\n1BAD=5\n"), ("two.env", "9x=1\n")],
        json!({"envFrom": [file_ref("v", "all.env", false, None), file_ref("v", "/two.env", false, None)]}),
    );
    let out = envshim(["run", "--strict-names", "--manifest", &m, "--"]).args(print_env()).run();
    out.code(0);
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: Keys [1BAD, Logging:Level, zeta key] from the EnvFrom file v/all.env were skipped since they are considered invalid environment variable names.",
            "envshim: warning: Keys [9x] from the EnvFrom file v/two.env were skipped since they are considered invalid environment variable names.",
            "envshim: warning: volume v, path all.env: the name on line 2 is given again on line 5: the last one wins (the kubelet takes the first)",
        ]
    );
    assert_eq!(out.env_map().into_iter().collect::<Vec<_>>(), [("GOOD".to_string(), "3".to_string())]);

    // --env-file: the file is shown as given.
    let d = Volume::new();
    d.file("x.env", "a.b=1\n-ok=2\n.=3\n..x=4\n");
    let out = envshim(["check", "--strict-names", "--env-file", "x.env"]).cwd(d.path()).run();
    out.code(0);
    assert_eq!(
        out.stderr_lines(),
        [
            "envshim: warning: Keys [., ..x] from the EnvFrom file x.env were skipped since they are considered invalid environment variable names.",
            "envshim: ok: 2 variables (2 from files; env files read with envshim's grammar), no program line",
        ]
    );
}

#[test]
fn envfrom_prefix_makes_names_valid_or_invalid() {
    // The prefix + key is what is checked.
    let (_v, _d, m) = setup(&[("a.env", "1A=x\nB=y\n")], json!({"envFrom": [file_ref("v", "a.env", false, Some("P_"))]}));
    let out = envshim(["run", "--strict-names", "--manifest", &m, "--"]).args(print_env()).run();
    out.ok();
    assert_eq!(out.env_map().into_keys().collect::<Vec<_>>(), ["P_1A", "P_B"]);
    // A prefix the relaxed rule refuses skips every key; the names are shown with it, as the kubelet does.
    let (_v, _d, m) = setup(&[("a.env", "B=y\nA=x\n")], json!({"envFrom": [file_ref("v", "a.env", false, Some("P="))]}));
    let out = run_manifest(&m);
    out.code(0);
    assert_eq!(
        out.stderr_lines(),
        ["envshim: warning: Keys [P=A, P=B] from the EnvFrom file v/a.env were skipped since they are considered invalid environment variable names."]
    );
    assert!(out.env_map().is_empty());
}

#[test]
fn no_warning_when_no_key_is_skipped() {
    let (_v, _d, m) = setup(&[("a.env", "A=1\n")], json!({"envFrom": [file_ref("v", "a.env", false, None)]}));
    run_manifest(&m).ok();
}

// ---------------------------------------------------------------- permission denied: 77

#[test]
fn permission_denied_is_77_naming_file_and_uid() {
    let (vol, _d, m) = setup(&[("secret.env", "A=1\n")], json!({"env": [file_key_ref("A", "v", "secret.env", "A", true)]}));
    std::fs::set_permissions(vol.join("secret.env"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let (shim, uid) = envshim(["run", "--manifest", &m, "--", "/bin/true"]).unprivileged();
    shim.run().fails_with(77, &["volume v, path secret.env", &format!("uid {uid}")]);
    // --env-file.
    let p = vol.join("secret.env");
    let (shim, uid) = envshim(["check", "--env-file", p.to_str().unwrap()]).unprivileged();
    shim.run().fails_with(77, &[p.to_str().unwrap(), &format!("uid {uid}")]);
    // A volume directory the user cannot search.
    let (vol, _d, m) = setup(&[("in/a.env", "A=1\n")], json!({"envFrom": [file_ref("v", "in/a.env", false, None)]}));
    std::fs::set_permissions(vol.join("in"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let (shim, uid) = envshim(["check", "--manifest", &m]).unprivileged();
    shim.run().fails_with(77, &["volume v, path in/a.env", &format!("uid {uid}")]);
}

#[test]
fn unreadable_manifest_is_77() {
    // docs/reference.md §3 says every manifest error exits 78, §7 that permission denied
    // reading a file is 77; envshim reports the permission problem as 77.
    let d = Volume::new();
    let m = d.manifest(&json!({}));
    std::fs::set_permissions(&m, std::fs::Permissions::from_mode(0o000)).unwrap();
    let (shim, uid) = envshim(["check", "--manifest", &m]).unprivileged();
    shim.run().fails_with(77, &[&m, &format!("uid {uid}")]);
}

// ---------------------------------------------------------------- paths: 78 (and symlinks kept inside)

#[test]
fn dotdot_component_is_78_before_anything_is_opened() {
    for path in ["../a.env", "sub/../a.env", "/..", "sub/..", "a.env/.."] {
        let (_v, _d, m) = setup(&[("a.env", "A=1\n"), ("sub/x", "")], json!({"env": [file_key_ref("A", "v", path, "A", true)]}));
        run_manifest(&m).fails_with(78, &["env[0].valueFrom.fileKeyRef.path", ".."]);
    }
    // Even when the volume is not there at all: nothing was opened.
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [{"name": "v", "mountPath": d.join("no-such-dir").to_str().unwrap()}],
        "envFrom": [file_ref("v", "x/../a.env", true, None)],
    }));
    run_manifest(&m).fails_with(78, &["envFrom[0].fileRef.path"]);
    // `..` inside a name is not a component.
    let (_v, _d, m) = setup(&[("a..b/..c", "A=dots\n")], json!({"env": [file_key_ref("A", "v", "a..b/..c", "A", false)]}));
    assert_eq!(run_manifest(&m).env_map()["A"], "dots");
}

#[test]
fn leading_slash_is_the_volume_root() {
    let (_v, _d, m) = setup(&[("etc/a.env", "A=root\n")], json!({"env": [file_key_ref("A", "v", "/etc/a.env", "A", false)]}));
    let out = run_manifest(&m);
    out.ok();
    assert_eq!(out.env_map()["A"], "root");
}

#[test]
fn symlinks_resolve_inside_the_volume() {
    let outside = Volume::new();
    let outside_file = outside.file_str("out.env", "A=outside\n");
    let (vol, _d, m) = setup(
        &[("real/inner.env", "A=inside\n")],
        json!({"env": [
            file_key_ref("REL", "v", "rel.env", "A", false),
            file_key_ref("ABS", "v", "abs.env", "A", false),
            file_key_ref("DIRLINK", "v", "dirlink/inner.env", "A", false),
        ]}),
    );
    vol.symlink("rel.env", "real/inner.env");
    vol.symlink("abs.env", "/real/inner.env"); // absolute: from the volume root
    vol.symlink("dirlink", "../../../real");
    let out = run_manifest(&m);
    out.ok();
    let env = out.env_map();
    assert_eq!((env["REL"].as_str(), env["ABS"].as_str(), env["DIRLINK"].as_str()), ("inside", "inside", "inside"));

    // A link whose target is outside: resolved inside the volume, where it does not exist.
    vol.symlink("escape-abs.env", &outside_file);
    let rel_out = format!("../../../../../../../..{outside_file}");
    vol.symlink("escape-rel.env", &rel_out);
    vol.symlink("zero", "/dev/zero");
    for link in ["escape-abs.env", "escape-rel.env", "zero"] {
        let d = Volume::new();
        let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("A", "v", link, "A", false)]}));
        let out = run_manifest(&m);
        out.fails_with(66, &[&format!("v/{link}")]);
        assert!(!out.stderr_str().contains("outside"));
        // Optional: missing, so not set.
        let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "env": [file_key_ref("A", "v", link, "A", true)]}));
        assert!(!run_manifest(&m).env_map().contains_key("A"));
    }
}

#[test]
fn symlink_loop_is_an_error() {
    let (vol, _d, m) = setup(&[], json!({"env": [file_key_ref("A", "v", "loop1", "A", true)]}));
    vol.symlink("loop1", "loop2");
    vol.symlink("loop2", "loop1");
    // Not a regular file (and not missing, so optional does not cover it).
    run_manifest(&m).fails_with(78, &["volume v, path loop1"]);
}

#[test]
fn not_a_regular_file_is_78_and_fast() {
    let (vol, _d, m) = setup(&[], json!({"env": [file_key_ref("A", "v", "fifo", "A", true)]}));
    let fifo = vol.join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let out = run_manifest(&m);
    out.fails_with(78, &["volume v, path fifo", "not a regular file"]);
    assert!(out.elapsed < Duration::from_secs(5));
    // --env-file on a FIFO and on devices.
    for p in [fifo.to_str().unwrap(), "/dev/zero", "/dev/null"] {
        let out = envshim(["check", "--env-file", p]).run();
        out.fails_with(78, &[p, "not a regular file"]);
        assert!(out.elapsed < Duration::from_secs(5));
    }
    // A directory.
    vol.subdir("adir");
    let d = Volume::new();
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "envFrom": [file_ref("v", "adir", true, None)]}));
    run_manifest(&m).fails_with(78, &["volume v, path adir"]);
    let m = d.manifest(&json!({"volumeMounts": [mount("v", &vol)], "envFrom": [file_ref("v", "/", true, None)]}));
    run_manifest(&m).fails(78);
    envshim(["check", "--env-file", vol.dir().as_str()]).run().fails(78);
}

#[test]
fn huge_file_fails_fast_as_too_large() {
    let (vol, _d, m) = setup(&[], json!({"envFrom": [file_ref("v", "huge.env", true, None)]}));
    let f = std::fs::File::create(vol.join("huge.env")).unwrap();
    f.set_len(10 << 30).unwrap(); // sparse: 10 GiB
    let out = run_manifest(&m);
    out.fails_with(65, &["volume v, path huge.env"]);
    assert!(out.elapsed < Duration::from_secs(5));
}

#[test]
fn mount_path_not_a_directory_is_78() {
    let d = Volume::new();
    let file = d.file_str("plain", "A=1\n");
    for mount_path in [file.clone(), d.join("missing").to_str().unwrap().to_string()] {
        let m = d.manifest(&json!({
            "volumeMounts": [{"name": "v", "mountPath": mount_path}],
            "env": [file_key_ref("A", "v", "a.env", "A", true)],
        }));
        run_manifest(&m).fails_with(78, &["volume v", &mount_path]);
    }
}

// ---------------------------------------------------------------- manifest: 78 with JSON path

#[test]
fn manifest_errors_are_78_with_the_json_path() {
    let rows: &[(Value, &str)] = &[
        (json!([]), "JSON object"),
        (json!({"env": {}}), "env:"),
        (json!({"env": [{"name": "A", "valu": "x"}]}), "env[0].valu"),
        (json!({"env": [{"name": "A"}, {"name": "B", "value": "x", "valueFrom": {"fieldRef": {}}}]}), "env[1]"),
        (json!({"env": [{"name": "A", "valueFrom": {}}]}), "env[0].valueFrom"),
        (json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {}, "configMapKeyRef": {}}}]}), "env[0].valueFrom"),
        (json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p"}}}]}), "env[0].valueFrom.fileKeyRef.key"),
        (
            json!({"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optinal": true}}}]}),
            "env[0].valueFrom.fileKeyRef.optinal",
        ),
        (json!({"envFrom": [{"fileRef": {"volumeName": "v", "path": "p", "extra": 1}}]}), "envFrom[0].fileRef.extra"),
        (json!({"envFrom": [{"prefix": "P"}]}), "envFrom[0]"),
        (json!({"envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "bogus": 1}]}), "envFrom[0].bogus"),
        (json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "x"}]}), "volumeMounts[0].subPath"),
        (json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "subPathExpr": "x"}]}), "volumeMounts[0].subPathExpr"),
        (json!({"volumeMounts": [{"name": "v"}]}), "volumeMounts[0].mountPath"),
        (json!({"command": "x"}), "command"),
        (json!({"args": ["a", 1]}), "args[1]"),
    ];
    let d = Volume::new();
    for (m, path) in rows {
        let m = d.manifest(m);
        for sub in [&["run", "--manifest", &m, "--", "/bin/true"][..], &["check", "--manifest", &m], &["render", "--manifest", &m]] {
            let lines = envshim(sub).run().fails(78);
            assert!(lines.iter().any(|l| l.contains(path)), "{path}: {lines:?}");
        }
    }
    // Not JSON.
    for text in ["", "{", "{\"env\": [}", "not json", "{} {}"] {
        let m = d.file_str("bad.json", text);
        let lines = envshim(["check", "--manifest", &m]).run().fails(78);
        assert_eq!(lines.len(), 1, "{lines:?}");
    }
    // A directory, a FIFO-like device.
    envshim(["check", "--manifest", &d.dir()]).run().fails(78);
    envshim(["check", "--manifest", "/dev/null"]).run().fails(78);
}

#[test]
fn manifest_accepts_what_a_pasted_container_spec_has() {
    let (_v, _d, m) = setup(
        &[("a.env", "A=1\n")],
        json!({
            "name": "app", "image": "x:1", "resources": {"limits": {"cpu": "1"}}, "ports": [{"containerPort": 80}],
            "envFrom": [{"configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s"}, "prefix": "S_"}, file_ref("v", "a.env", false, None)],
            "env": [{"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "R", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
        }),
    );
    // Mounts may say readOnly etc.
    let d = Volume::new();
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    doc["volumeMounts"][0]["readOnly"] = json!(true);
    doc["volumeMounts"][0]["mountPropagation"] = json!("None");
    doc["volumeMounts"][0]["recursiveReadOnly"] = json!("Disabled");
    let m = d.manifest(&doc);
    let out = run_manifest(&m);
    out.ok();
    assert_eq!(out.env_map().into_iter().collect::<Vec<_>>(), [("A".to_string(), "1".to_string())]);
}

#[test]
fn manifest_size_limit() {
    let d = Volume::new();
    let limit = 1024 * 1024;
    let mut text = b"{\"env\": [{\"name\": \"A\", \"value\": \"1\"}]}".to_vec();
    text.resize(limit, b' ');
    let m = d.file_str("big.json", &text);
    envshim(["check", "--manifest", &m]).run().ok();
    text.push(b' ');
    let m = d.file_str("big.json", &text);
    envshim(["check", "--manifest", &m]).run().fails_with(78, &[&m]);
}

// ---------------------------------------------------------------- the termination log

#[test]
fn termination_log_gets_the_failure_lines_and_is_created() {
    let d = Volume::new();
    let log = d.join("sub-missing-not/termination-log");
    let log_ok = d.join("termination-log");
    assert!(!log_ok.exists());
    let out = envshim(["run", "--termination-log", log_ok.to_str().unwrap(), "--", "/nonexistent"]).run();
    out.fails(127);
    assert_eq!(std::fs::read(&log_ok).unwrap(), out.stderr);
    // Truncated and rewritten: a shorter message replaces a longer one.
    std::fs::write(&log_ok, "x".repeat(10_000)).unwrap();
    let out = envshim(["run", "--termination-log", log_ok.to_str().unwrap(), "--", "/x"]).run();
    out.fails(127);
    assert_eq!(std::fs::read(&log_ok).unwrap(), out.stderr);
    // A log that cannot be created does not change the failure.
    let out = envshim(["run", "--termination-log", log.to_str().unwrap(), "--", "/x"]).run();
    out.fails(127);
    // Usage errors found after the options are parsed go there too.
    let out = envshim(["run", "--termination-log", log_ok.to_str().unwrap()]).run();
    out.fails(2);
    assert_eq!(std::fs::read(&log_ok).unwrap(), out.stderr);
}

#[test]
fn termination_log_holds_at_most_4096_bytes() {
    let d = Volume::new();
    let log = d.join("log");
    let mut args = vec!["check".to_string(), "--termination-log".into(), log.to_str().unwrap().into()];
    for i in 0..100 {
        args.push("--env-file".into());
        args.push(d.join(&format!("missing-file-with-a-long-enough-name-{}-{i:03}.env", "x".repeat(100))).to_str().unwrap().into());
    }
    let out = envshim(&args).run();
    let lines = out.fails(66);
    // 32 problems on stderr, then a line counting the rest (output is bounded).
    assert_eq!(lines.len(), 33);
    assert_eq!(lines[32], "envshim: 68 more errors not shown (the exit code is the first one's)");
    assert!(out.stderr.len() > 4096);
    let written = std::fs::read(&log).unwrap();
    assert!(!written.is_empty() && written.len() <= 4096, "{} bytes", written.len());
    assert!(out.stderr.starts_with(&written), "the log is the start of the message");
    assert!(written.ends_with(b"\n"), "cut at a line end");
}

#[test]
fn warnings_do_not_go_to_the_termination_log() {
    let d = Volume::new();
    let log = d.join("log");
    let env = d.file_str("a.env", "1A=1\n");
    let out = envshim(["run", "--strict-names", "--termination-log", log.to_str().unwrap(), "--env-file", &env, "--", "/x"]).run();
    let lines = out.fails(127);
    assert!(lines[0].starts_with("envshim: warning: "), "{lines:?}");
    let written = String::from_utf8(std::fs::read(&log).unwrap()).unwrap();
    assert!(!written.contains("warning"), "{written}");
    assert!(written.contains("/x"), "{written}");
}

// ---------------------------------------------------------------- check reports every problem

#[test]
fn check_reports_every_problem_and_exits_with_the_first() {
    let (_v, d, m) = setup(
        &[("bad.env", "A=1\nB\n")],
        json!({
            "envFrom": [file_ref("v", "gone.env", false, None)],
            "env": [
                file_key_ref("A", "v", "bad.env", "A", false),
                file_key_ref("C", "nope", "c.env", "C", false),
                {"name": "D=", "value": "x"},
                file_key_ref("E", "v", "bad.env", "E", true),
            ],
            "command": ["no-such-program-envshim"],
        }),
    );
    let missing = d.join("missing.env");
    let out = envshim(["check", "--manifest", &m, "--env-file", missing.to_str().unwrap(), "--env", "1=ok", "--env", "=x"]).run();
    let lines = out.fails(66);
    let expect: &[&str] = &[
        "envFrom[0]",                             // 66 missing, first: exit 66
        "missing.env",                            // 66 --env-file
        "volume v, path bad.env, line 2",         // 65, reported once for the two entries
        "env[1].valueFrom.fileKeyRef.volumeName", // 78
        "env[2].name",                            // 78
        "--env #2",                               // 78
        "no-such-program-envshim",                // 127
    ];
    assert_eq!(lines.len(), expect.len(), "{lines:#?}");
    for (line, part) in lines.iter().zip(expect) {
        assert!(line.contains(part), "{line:?} should name {part:?}; all: {lines:#?}");
    }
    // run stops with the same first problem.
    envshim(["run", "--manifest", &m, "--env-file", missing.to_str().unwrap(), "--env", "=x"]).run().fails(66);
    // With the first problem gone, the exit code is the next one's.
    let out = envshim(["check", "--env", "=x", "--env-file", missing.to_str().unwrap()]).run();
    assert_eq!(out.fails(66).len(), 2);
    let out = envshim(["check", "--env", "=x"]).run();
    out.fails_with(78, &["--env #1"]);
}

#[test]
fn check_reports_every_bad_option_and_the_manifest_errors_together() {
    let d = Volume::new();
    let missing = d.join("missing.json");
    let out =
        envshim(["check", "--manifest", missing.to_str().unwrap(), "--env", "NOEQ1", "--env", "A=1", "--env", "NOEQ3"]).args(["--volume", "novalue"]).run();
    let lines = out.fails(2);
    let expect = ["--env #1", "--env #3", "--volume #1", "missing.json"];
    assert_eq!(lines.len(), expect.len(), "{lines:#?}");
    for (line, part) in lines.iter().zip(expect) {
        assert!(line.contains(part), "{line:?} should name {part:?}; all: {lines:#?}");
    }
}

#[test]
fn manifest_schema_errors_are_all_reported() {
    let d = Volume::new();
    let m = d.manifest(&json!({"env": [{"name": "A", "x": 1}, {"value": "v"}], "volumeMounts": [{"name": "v"}]}));
    let lines = envshim(["check", "--manifest", &m]).run().fails(78);
    assert_eq!(lines.len(), 3, "{lines:?}");
}
