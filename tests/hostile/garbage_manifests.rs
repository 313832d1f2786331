//! Garbage manifests.

use super::*;

fn json_string(rng: &mut Rng) -> Value {
    match rng.below(6) {
        0 => json!(SENTINEL_NOT_A_NAME),
        1 => json!(format!("$({SENTINEL_NOT_A_NAME})")),
        2 => json!(format!("{SENTINEL_NOT_A_NAME}\u{0}")),
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
            0 => json!({"name": name, "value": SENTINEL_NOT_A_NAME}),
            1 => json!({"name": name, "value": format!("{SENTINEL_NOT_A_NAME}$(A)$(B)")}),
            2 => json!({"name": name, "valueFrom": {"fileKeyRef": garbage_file_ref(rng, true)}}),
            7 if clean => json!({"name": name, "valueFrom": {"fileKeyRef": clean_file_ref(rng, true)}}),
            3 => json!({"name": name, "value": SENTINEL_NOT_A_NAME, "valueFrom": {"secretKeyRef": {"name": SENTINEL_NOT_A_NAME}}}),
            4 => json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": SENTINEL_NOT_A_NAME}, "fileKeyRef": {}}}),
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
            1 => json!({"secretRef": {"name": SENTINEL_NOT_A_NAME}, "prefix": "S_"}),
            2 => json!({"fileRef": garbage_file_ref(rng, false), "configMapRef": {}}),
            _ => json_any(rng, 1),
        });
    }
    let mut m = json!({
        "name": "app",
        "image": SENTINEL_NOT_A_NAME,
        "volumeMounts": [{"name": "v", "mountPath": "VOL"}],
        "envFrom": env_from,
        "env": env,
    });
    if clean {
        m["command"] = json!(["/bin/true", SENTINEL_NOT_A_NAME, "$(A)$(B)"]);
        return m;
    }
    if rng.chance(30) {
        m["command"] = json!(["/bin/true", SENTINEL_NOT_A_NAME, 7]);
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
            Value::Object(m) => m.iter().any(|(k, v)| k.contains(SENTINEL_FRAGMENT) || walk(v)),
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
    fs::write(vol.join("g.env"), format!("A={SENTINEL_NOT_A_NAME}\nK=1\nB='{SENTINEL_NOT_A_NAME}'\n")).unwrap();
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
        let out = shim(&args).run();
        let what = format!("manifest case {case} ({sub}) with {:?}", String::from_utf8_lossy(&bytes));
        sane(&out, &what);
        *codes.entry(out.code).or_insert(0) += 1;
        if sentinel_in_a_key(&bytes) {
            skipped += 1;
            continue;
        }
        assert_no_sentinel(&out.stderr, &what);
        assert_no_sentinel(&out.stdout, &what);
        if let Ok(log) = fs::read(&tlog) {
            assert!(log.len() <= 4096);
            assert_no_sentinel(&log, &what);
        }
    }
    eprintln!("garbage manifests: {cases} cases ({skipped} with the sentinel moved into a key), exit codes {codes:?}");
    assert!(codes.len() >= 3, "the generator should reach several outcomes: {codes:?}");
}
