//! Garbage env files.

use super::*;

const ENV_TOKENS: &[&[u8]] = &[
    b"=",
    b"=",
    b"'",
    b"\"",
    b"#",
    b" #",
    b" ",
    b"\t",
    b"\n",
    b"\n",
    b"\r\n",
    b"\r",
    b"export ",
    b"\\",
    b"\\n",
    b"\\\"",
    b"\\$",
    b"\0",
    b"\xef\xbb\xbf",
    b"\xff",
    b"\xe2\x82",
    b"$(",
    b")",
    b"$$",
    b"A",
    b"KEY",
    b"1x",
    b"caf\xc3\xa9",
    b"..",
    b"a.b-c",
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
            0 => data.extend(format!("{name}={SENTINEL_NOT_A_NAME}\n").bytes()),
            1 => data.extend(format!("{name}='{SENTINEL_NOT_A_NAME}\n{SENTINEL_NOT_A_NAME}'\n").bytes()),
            2 => data.extend(format!("{name}=\"{SENTINEL_NOT_A_NAME}\\n\\\"{SENTINEL_NOT_A_NAME}\"\n").bytes()),
            3 => data.extend(format!("{name}='{SENTINEL_NOT_A_NAME}").bytes()),
            4 => data.extend(format!("{name}=\"{SENTINEL_NOT_A_NAME}\"{SENTINEL_NOT_A_NAME}\n").bytes()),
            5 => data.extend(format!("{SENTINEL_NOT_A_NAME}\n").bytes()),
            6 => data.extend(format!("{SENTINEL_NOT_A_NAME}={SENTINEL_NOT_A_NAME}\n").bytes()),
            7 => data.extend(format!("export {name} = {SENTINEL_NOT_A_NAME} # c\n").bytes()),
            8 => data.extend(format!("{name}={SENTINEL_NOT_A_NAME}\0{SENTINEL_NOT_A_NAME}\n").bytes()),
            9 => data.extend(format!("{name}={}\n", SENTINEL_NOT_A_NAME.repeat(33_000 / SENTINEL_NOT_A_NAME.len() + 1)).bytes()),
            _ => {
                for _ in 0..rng.below(16) {
                    if rng.chance(20) {
                        data.extend_from_slice(SENTINEL_NOT_A_NAME.as_bytes());
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
        let out = shim(&args).run();
        let what = format!("env-file case {case} ({args:?}) with {:?}", String::from_utf8_lossy(&file));
        sane(&out, &what);
        assert_no_sentinel(&out.stderr, &what);
        // render without --show-values masks every value.
        assert_no_sentinel(&out.stdout, &what);
        if let Ok(log) = fs::read(&tlog) {
            assert!(log.len() <= 4096, "{what}: termination log of {} bytes", log.len());
            assert_no_sentinel(&log, &what);
        }
        *codes.entry(out.code).or_insert(0) += 1;
    }
    eprintln!("garbage env files: {cases} cases, exit codes {codes:?}");
    assert!(codes.len() >= 3, "the generator should reach several outcomes: {codes:?}");
}
