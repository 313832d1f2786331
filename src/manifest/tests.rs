use super::reader::{parse_json, plain_run, Reader};
use super::*;
use crate::error::ExitCode;

fn errors(json: &str) -> Vec<String> {
    parse(json.as_bytes())
        .unwrap_err()
        .into_iter()
        .map(|e| {
            assert_eq!(e.code, ExitCode::Config);
            e.to_string()
        })
        .collect()
}

#[test]
fn full_example_from_the_spec() {
    let m = parse(
        br#"{
      "name": "app", "image": "x", "resources": {},
      "volumeMounts": [ { "name": "config", "mountPath": "/data", "readOnly": true } ],
      "envFrom": [
        { "fileRef": { "volumeName": "config", "path": "all.env", "optional": true }, "prefix": "APP_" },
        { "configMapRef": { "name": "cm" } }
      ],
      "env": [
        { "name": "CONFIG_VAR", "valueFrom": { "fileKeyRef": {
            "volumeName": "config", "path": "config.env", "key": "CONFIG_VAR", "optional": false } } },
        { "name": "PUBLIC_URL", "value": "http://$(H):$(P)" },
        { "name": "FROM_PLATFORM", "valueFrom": { "secretKeyRef": { "name": "s", "key": "k" } } },
        { "name": "EMPTY" }
      ],
      "command": ["/app/server"],
      "args": ["--url=$(PUBLIC_URL)"]
    }"#,
    )
    .unwrap();
    assert_eq!(m.volume_mounts, vec![VolumeMount { name: "config".into(), mount_path: "/data".into() }]);
    let file = |p: &'static str, optional| FileRef { volume_name: "config".into(), path: p.into(), optional };
    assert_eq!(m.env_from, vec![EnvFrom::File { file: file("all.env", true), prefix: "APP_".into() }, EnvFrom::Platform]);
    assert_eq!(m.env[0].source, EnvSource::FileKey { file: file("config.env", false), key: "CONFIG_VAR".into() });
    assert_eq!(m.env[1].source, EnvSource::Value("http://$(H):$(P)".into()));
    assert_eq!(m.env[2].source, EnvSource::Platform("secretKeyRef s/k".into()));
    assert_eq!(m.env[3].source, EnvSource::Value("".into()));
    assert_eq!(m.command, vec!["/app/server"]);
    assert_eq!(m.args, vec!["--url=$(PUBLIC_URL)"]);
}

#[test]
fn every_error_names_its_json_path() {
    let table: &[(&str, &str)] = &[
        (r#"[]"#, "manifest: expected a JSON object (a Kubernetes container spec), found an array"),
        (r#"{"env": {}}"#, "manifest: env: expected an array, found an object"),
        (r#"{"env": [{"name": "A", "valu": "x"}]}"#, "manifest: env[0].valu: unknown field (did you mean value?)"),
        (r#"{"env": [{"value": "x"}]}"#, "manifest: env[0].name: required field is missing"),
        (r#"{"env": [{"name": 5}]}"#, "manifest: env[0].name: expected a string, found a number"),
        (r#"{"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {}}}]}"#, "manifest: env[0]: has both value and valueFrom"),
        (
            r#"{"env": [{"name": "A", "valueFrom": {}}]}"#,
            "manifest: env[0].valueFrom: needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)",
        ),
        (
            r#"{"env": [{"name": "A", "valueFrom": {"fieldRef": {}, "secretKeyRef": {}}}]}"#,
            "manifest: env[0].valueFrom: needs exactly one source (fileKeyRef, configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef)",
        ),
        (
            r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optinal": true}}}]}"#,
            "manifest: env[0].valueFrom.fileKeyRef.optinal: unknown field (did you mean optional?)",
        ),
        (
            r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p"}}}]}"#,
            "manifest: env[0].valueFrom.fileKeyRef.key: required field is missing",
        ),
        (
            r#"{"env": [{"name": "A", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "p", "key": "k", "optional": "yes"}}}]}"#,
            "manifest: env[0].valueFrom.fileKeyRef.optional: expected a boolean, found a string",
        ),
        (r#"{"env": [{"name": "A", "valueFrom": {"bogusRef": {}}}]}"#, "manifest: env[0].valueFrom.bogusRef: unknown field"),
        (r#"{"envFrom": [{"fileRef": {"volumeName": "v", "path": "p", "key": "k"}}]}"#, "manifest: envFrom[0].fileRef.key: unknown field"),
        (r#"{"envFrom": [{"prefix": "X"}]}"#, "manifest: envFrom[0]: needs exactly one of fileRef, configMapRef, secretRef"),
        (
            r#"{"envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "secretRef": {}}]}"#,
            "manifest: envFrom[0]: needs exactly one of fileRef, configMapRef, secretRef",
        ),
        (r#"{"envFrom": [{"fileRef": {"path": "p"}}]}"#, "manifest: envFrom[0].fileRef.volumeName: required field is missing"),
        (
            r#"{"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "x"}]}"#,
            "manifest: volumeMounts[0].subPath: is not supported (the volume root would be ambiguous)",
        ),
        (
            r#"{"volumeMounts": [{"name": "v", "mountPath": "/d", "subPathExpr": "x"}]}"#,
            "manifest: volumeMounts[0].subPathExpr: is not supported (the volume root would be ambiguous)",
        ),
        (r#"{"volumeMounts": [{"name": "v", "mountPth": "/d"}]}"#, "manifest: volumeMounts[0].mountPth: unknown field (did you mean mountPath?)"),
        (r#"{"command": ["a", 1]}"#, "manifest: command[1]: expected a string, found a number"),
        (r#"{"args": "x"}"#, "manifest: args: expected an array, found a string"),
        (r#"{"args": ["a\u0000b"]}"#, "manifest: args[0]: contains a NUL byte"),
    ];
    for (json, want) in table {
        let got = errors(json);
        assert!(got.iter().any(|m| m == want), "{json}: {got:?}");
    }
}

/// An error's path is data (the converter renumbers a manifest's `env[i]`
/// as its container's entry): below a container chosen in a document, it
/// starts with that container's path.
#[test]
fn an_error_carries_its_path_as_data() {
    let paths = |json: &str, container: Option<&[u8]>| {
        let errors = parse_named(json.as_bytes(), "manifest", None, container).unwrap_err();
        errors.iter().map(|e| e.path().map(ToString::to_string)).collect::<Vec<_>>()
    };
    let json = r#"{"env": [{"name": "A"}, {"name": "B", "valu": 1}], "command": [1], "args": "x"}"#;
    let errors = parse_named(json.as_bytes(), "manifest", None, None).unwrap_err();
    let items: Vec<_> = errors.iter().map(|e| e.path().and_then(|p| p.item_of())).collect();
    assert_eq!(items, [Some(("env", 1)), Some(("command", 0)), None]);
    assert_eq!(paths(json, None), [Some("env[1].valu".to_string()), Some("command[0]".into()), Some("args".into())]);
    let pod = r#"{"kind": "Pod", "spec": {"containers": [{"name": "a", "env": [{"name": "B", "valu": 1}]}]}}"#;
    assert_eq!(paths(pod, Some(b"a")), [Some("spec.containers[0].env[0].valu".to_string())]);
}

#[test]
fn reports_every_problem_not_just_the_first() {
    let got = errors(r#"{"env": [{"name": "A", "x": 1}, {"value": "v"}], "volumeMounts": [{"name": "v"}]}"#);
    assert_eq!(got.len(), 3, "{got:?}");
}

#[test]
fn null_is_absent_and_empty_arrays_are_unset() {
    let m = parse(br#"{"env": null, "command": [], "args": null, "envFrom": [], "volumeMounts": null}"#).unwrap();
    assert_eq!(m, Manifest::default());
}

#[test]
fn errors_never_quote_values() {
    let s = "SENTINEL-s3cr3t";
    for json in [
        format!(r#"{{"env": [{{"name": "A", "value": "{s}", "valueFrom": {{}}}}]}}"#),
        format!(r#"{{"env": [{{"name": "A", "value": ["{s}"]}}]}}"#),
        format!(r#"{{"env": [{{"name": "A", "value": "{s}"#),
        format!(r#"{{"env": [{{"name": "A", "value": "{s}\q"}}]}}"#),
        format!(r#"{{"command": "{s}"}}"#),
    ] {
        let msgs = errors(&json);
        assert!(msgs.iter().all(|m| !m.contains(s)), "{msgs:?}");
    }
}

#[test]
fn syntax_errors_are_one_line() {
    let msgs = errors("{\n\"env\": [\n");
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with("manifest is not valid JSON: "), "{}", msgs[0]);
    assert!(!msgs[0].contains('\n'));
}

/// Inputs where a JSON reader may go wrong: the reader and serde_json must agree on each.
const AGREEMENT_INPUTS: &[&str] = &[
    "{}",
    " {} ",
    "{} x",
    "",
    " ",
    "\u{feff}{}",
    "{,}",
    "{\"a\":1,}",
    "[1,]",
    "[1 2]",
    "{\"a\" 1}",
    "{1:2}",
    "[tru]",
    "[true]",
    "[nul]",
    "[null, false]",
    "[-]",
    "[-0]",
    "[01]",
    "[1.]",
    "[.5]",
    "[1e]",
    "[1e+]",
    "[1E-2]",
    "[-1.5e3]",
    "[1e400]",
    "[-1e400]",
    "[1.7976931348623157e308]",
    "[1.7976931348623159e308]",
    "[123456789012345678901234567890]",
    "[1e-400]",
    "[\"\\u00e9\\ud83d\\ude00\"]",
    "[\"\\ud800\"]",
    "[\"\\ud800\\u0041\"]",
    "[\"\\udc00\"]",
    "[\"\\ud800x\"]",
    "[\"\\u12\"]",
    "[\"\\u12g4\"]",
    "[\"\\q\"]",
    "[\"a\tb\"]",
    "[\"a\u{7f}b\"]",
    "[\"\\/\\b\\f\\n\\r\\t\\\"\\\\\"]",
    "[\"unterminated",
    "[\"\\",
    "{\"a\":",
    "[\"\\u0000\"]",
    "\t\r\n[]\n",
];

/// The reader accepts exactly what serde_json accepts, and a syntax error's
/// message is serde_json's.
#[test]
fn the_reader_agrees_with_serde_json() {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let deep_obj = |n: usize| format!("{}1{}", r#"{"a":"#.repeat(n), "}".repeat(n));
    let mut inputs: Vec<String> = AGREEMENT_INPUTS.iter().map(|s| s.to_string()).collect();
    for n in [1, 126, 127, 128, 129, 300] {
        inputs.push(deep(n));
        inputs.push(deep_obj(n));
    }
    let mut bytes: Vec<Vec<u8>> = inputs.into_iter().map(String::into_bytes).collect();
    bytes.extend([b"[\"\xff\"]".to_vec(), b"[\"\xc3\xa9\"]".to_vec(), b"[\"\xed\xa0\x80\"]".to_vec(), b"{\"\xff\":1}".to_vec()]);
    for b in &bytes {
        let want = serde_json::from_slice::<serde_json::Value>(b).is_ok();
        let got = parse_json(b).is_ok();
        assert_eq!(got, want, "{:?}", String::from_utf8_lossy(b));
    }
}

/// Numbers at the edge of `f64`'s range, read as serde_json reads them:
/// refused exactly when it refuses them (its rounding decides the edge).
#[test]
fn numbers_are_refused_exactly_as_serde_json_refuses_them() {
    let mut numbers: Vec<String> = Vec::new();
    let mantissas = [
        "0",
        "1",
        "17976931348623157",
        "17976931348623158",
        "17976931348623159",
        "179769313486231570814527423731704356798",
        "18446744073709551615",
        "18446744073709551616",
        "18446744073709551619",
        "1844674407370955161",
        "99999999999999999999999",
        "000",
        "1797693134862315708145274237317043567980705675258449965989174768031572607949",
    ];
    for m in mantissas {
        for point in [None, Some(1), Some(5), Some(19), Some(20), Some(25)] {
            let digits = match point {
                Some(p) if p < m.len() => format!("{}.{}", &m[..p], &m[p..]),
                Some(_) => continue,
                None => m.to_string(),
            };
            if digits.len() > 1 && digits.starts_with('0') && !digits.starts_with("0.") {
                continue;
            }
            numbers.push(digits.clone());
            for e in [250, 270, 280, 287, 288, 289, 290, 300, 305, 306, 307, 308, 309, 310, 330, 400, 2147483647, -5, -300, -400] {
                numbers.push(format!("{digits}e{e}"));
                numbers.push(format!("-{digits}E+{e}"));
            }
            numbers.push(format!("{digits}e2147483648"));
            numbers.push(format!("{digits}e-99999999999"));
            numbers.push(format!("{digits}e000000000000000000000308"));
        }
    }
    numbers.push(format!("1{}", "0".repeat(308)));
    numbers.push(format!("1{}", "0".repeat(309)));
    numbers.push(format!("1{}.5", "0".repeat(308)));
    numbers.push(format!("0.{}1e400", "0".repeat(100)));
    numbers.push(format!("18446744073709551615.{}e280", "9".repeat(40)));
    numbers.push(format!("1844674407370955161.5{}e289", "9".repeat(40)));
    let mut refused = 0;
    for n in &numbers {
        let doc = format!("[{n}]");
        let want = serde_json::from_str::<serde_json::Value>(&doc).is_ok();
        assert_eq!(parse_json(doc.as_bytes()).is_ok(), want, "{n}");
        refused += usize::from(!want);
    }
    assert!(refused > 100 && numbers.len() - refused > 100, "{refused} of {}", numbers.len());
}

#[test]
fn strings_borrow_unless_escaped_and_decode_escapes() {
    let Ok(Json::Array(items)) = parse_json(br#"["plain", "a\"b\u00e9\ud83d\ude00\n", "\u0041"]"#) else { panic!() };
    let strs: Vec<_> = items
        .iter()
        .map(|v| match v {
            Json::Str(s) => s.clone(),
            _ => panic!(),
        })
        .collect();
    assert!(matches!(strs[0], Cow::Borrowed("plain")));
    assert_eq!(strs[1], "a\"b\u{e9}\u{1f600}\n");
    assert_eq!(strs[2], "A");
}

#[test]
fn a_repeated_field_takes_its_last_value_and_unknown_fields_are_sorted() {
    let m = parse(br#"{"env": [{"name": "A", "value": "1", "value": "2"}]}"#).unwrap();
    assert_eq!(m.env[0].source, EnvSource::Value("2".into()));
    let got = errors(r#"{"env": [{"name": "A", "zz": 1, "aa": 2, "zz": 3}]}"#);
    assert_eq!(got, ["manifest: env[0].aa: unknown field", "manifest: env[0].zz: unknown field"]);
}

/// The typed reader (not only the tree the tests build) accepts exactly
/// what serde_json accepts, wherever the value is: a syntax error anywhere
/// wins over the schema's errors, with serde_json's message.
#[test]
fn the_typed_reader_agrees_with_serde_json_in_every_place() {
    let values = [
        "1",
        "-0",
        "01",
        "1.",
        "1e400",
        "[1,]",
        "[1 2]",
        "{\"a\":1,}",
        "{1:2}",
        "tru",
        "true",
        "nul",
        "null",
        "\"\\q\"",
        "\"\\ud800\"",
        "\"a\tb\"",
        "\"\\u0000\"",
        "\"\u{e9}\"",
        "{\"zz\": [{}]}",
        "[[[]]]",
        "\"unterminated",
    ];
    let places = [
        "{\"env\": X}",
        "{\"env\": [X]}",
        "{\"env\": [{\"name\": X}]}",
        "{\"env\": [{\"name\": \"A\", \"zz\": X}]}",
        "{\"env\": [{\"name\": \"A\", \"valueFrom\": X}]}",
        "{\"env\": [{\"name\": \"A\", \"valueFrom\": {\"fileKeyRef\": X}}]}",
        "{\"env\": [{\"name\": \"A\", \"valueFrom\": {\"fieldRef\": X}}]}",
        "{\"env\": [{\"name\": \"A\", \"valueFrom\": {\"fileKeyRef\": {\"optional\": X}}}]}",
        "{\"envFrom\": [{\"fileRef\": {\"path\": X}, \"prefix\": X}]}",
        "{\"volumeMounts\": [{\"readOnly\": X, \"subPath\": X}]}",
        "{\"command\": [X], \"args\": X}",
        "{\"image\": X}",
        "X",
    ];
    for place in places {
        for value in values {
            let json = place.replace('X', value);
            let want = serde_json::from_slice::<serde_json::Value>(json.as_bytes()).map_err(|e| e.to_string());
            let got = parse(json.as_bytes());
            let syntax = "manifest is not valid JSON";
            match (&want, &got) {
                (Err(e), Err(got)) => {
                    assert_eq!(got.len(), 1, "{json}");
                    // Where envshim's reader stopped; serde_json's message is finer.
                    assert!(got[0].to_string().starts_with(&format!("{syntax}: ")) && got[0].to_string().contains(" at line "), "{json}: {got:?} ({e})");
                }
                (Ok(_), Err(got)) => assert!(!got[0].to_string().starts_with(syntax), "{json}: {got:?}"),
                (Ok(_), Ok(_)) => {}
                (Err(e), Ok(_)) => panic!("{json}: accepted, serde_json says {e}"),
            }
        }
    }
    // Nesting counts at every level, the schema's objects included: 128 is refused.
    for n in [120, 121, 122, 123, 124, 130] {
        let json = format!("{{\"env\": [{{\"name\": \"A\", \"valueFrom\": {{\"fileKeyRef\": {{\"zz\": {}{}}}}}}}]}}", "[".repeat(n), "]".repeat(n));
        let syntax = matches!(parse(json.as_bytes()), Err(e) if e[0].to_string().starts_with("manifest is not valid JSON"));
        assert_eq!(syntax, serde_json::from_slice::<serde_json::Value>(json.as_bytes()).is_err(), "depth {n}");
    }
}

/// A field given twice is checked by its last value only: what the first
/// held, and the errors of the objects below it, do not count.
#[test]
fn only_the_last_of_a_repeated_field_is_checked() {
    let ok = |json: &'static str| parse(json.as_bytes()).unwrap_or_else(|e| panic!("{json}: {e:?}"));
    let m = ok(r#"{"env": 5, "env": [{"name": 5, "name": "A", "valueFrom": {"zz": 1},
                                      "valueFrom": {"fieldRef": {}}}]}"#);
    assert_eq!(m.env, vec![EnvVar { name: "A".into(), source: EnvSource::Platform("fieldRef".into()) }]);
    let m = ok(r#"{"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {}}, "valueFrom": null}]}"#);
    assert_eq!(m.env[0].source, EnvSource::Value("x".into()));
    let m = ok(r#"{"envFrom": [{"fileRef": {"zz": 1}, "fileRef": {"volumeName": "v", "path": "p"},
                                 "prefix": 1, "prefix": null}]}"#);
    let file = FileRef { volume_name: "v".into(), path: "p".into(), optional: false };
    assert_eq!(m.env_from, vec![EnvFrom::File { file, prefix: "".into() }]);
    // A last null given for a source still counts as given.
    let got = errors(r#"{"envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "fileRef": null}]}"#);
    assert_eq!(got, ["manifest: envFrom[0].fileRef: expected an object, found null"]);
    let got = errors(r#"{"env": [{"name": "A", "valueFrom": {"fieldRef": {}, "secretKeyRef": null}}]}"#);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("manifest: env[0].valueFrom: needs exactly one source"), "{got:?}");
}

/// Errors come in the schema's order whatever the input's: the top-level
/// fields in order, and in each object its unknown fields (sorted), then its
/// own fields, then the object below it.
#[test]
fn errors_come_in_the_schema_order() {
    let got = errors(
        r#"{"args": 1, "env": [{"valueFrom": {"fileKeyRef": {"zz": 1, "optional": 0}}, "zz": 1, "name": 5},
            {"name": "B", "valueFrom": {"fieldRef": {}}, "value": "x", "aa": 1}],
            "command": [null, "a\u0000"], "volumeMounts": 1, "envFrom": [{"prefix": 1, "fileRef": 2}, 3]}"#,
    );
    let want = [
        "manifest: volumeMounts: expected an array, found a number",
        "manifest: envFrom[0].prefix: expected a string, found a number",
        "manifest: envFrom[0].fileRef: expected an object, found a number",
        "manifest: envFrom[1]: expected an object, found a number",
        "manifest: env[0].zz: unknown field",
        "manifest: env[0].name: expected a string, found a number",
        "manifest: env[0].valueFrom.fileKeyRef.zz: unknown field",
        "manifest: env[0].valueFrom.fileKeyRef.volumeName: required field is missing",
        "manifest: env[0].valueFrom.fileKeyRef.path: required field is missing",
        "manifest: env[0].valueFrom.fileKeyRef.key: required field is missing",
        "manifest: env[0].valueFrom.fileKeyRef.optional: expected a boolean, found a number",
        "manifest: env[1].aa: unknown field",
        "manifest: env[1]: has both value and valueFrom",
        "manifest: command[0]: expected a string, found null",
        "manifest: command[1]: contains a NUL byte",
        "manifest: args: expected an array, found a number",
    ];
    assert_eq!(got, want);
}

/// The eight-bytes-at-a-time scan finds what a byte loop finds, for every
/// byte at every position.
#[test]
fn a_strings_plain_run_ends_where_a_byte_loop_says() {
    for b in 0..=255u8 {
        for at in 0..20 {
            for len in [at + 1, at + 3, 24] {
                let mut s = vec![b'a'; len.max(at + 1)];
                s[at] = b;
                let want = s.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20);
                assert_eq!(plain_run(&s), want, "byte {b:#x} at {at} of {}", s.len());
            }
        }
    }
}

/// A key is found by its name on the input when written plainly, and by its
/// decoded text when it holds an escape: both are the same field.
#[test]
fn an_escaped_key_is_the_field_it_spells() {
    let m = parse(
        br#"{"\u0065nv": [{"n\u0061me": "A", "valueFrom": {"fileKeyRe\u0066": {"volumeName": "v", "p\u0061th": "p",
            "key": "k", "optiona\u006c": true}}}, {"name": "B", "valu\u0065": "x"}],
            "volumeMounts": [{"name": "v", "mountPat\u0068": "/d", "readOnl\u0079": true}],
            "envFrom": [{"fileRef": {"volumeName": "v", "path": "p"}, "prefi\u0078": "P_"}]}"#,
    )
    .unwrap();
    let file = |p: &'static str, optional| FileRef { volume_name: "v".into(), path: p.into(), optional };
    assert_eq!(m.env[0], EnvVar { name: "A".into(), source: EnvSource::FileKey { file: file("p", true), key: "k".into() } });
    assert_eq!(m.env[1], EnvVar { name: "B".into(), source: EnvSource::Value("x".into()) });
    assert_eq!(m.volume_mounts, vec![VolumeMount { name: "v".into(), mount_path: "/d".into() }]);
    assert_eq!(m.env_from, vec![EnvFrom::File { file: file("p", false), prefix: "P_".into() }]);
    // A name that is only a prefix of the key, or the key a prefix of a name, is another field.
    let got = errors(r#"{"env": [{"name": "A", "names": 1, "nam": 2, "valueFro": 3, "n\u0061mes": 4}]}"#);
    assert_eq!(
        got,
        [
            "manifest: env[0].nam: unknown field (did you mean name?)",
            "manifest: env[0].names: unknown field (did you mean name?)",
            "manifest: env[0].valueFro: unknown field (did you mean valueFrom?)"
        ]
    );
    let got = errors(r#"{"volumeMounts": [{"name": "v", "mountPath": "/d", "subPat\u0068": "x", "subPathEx": 1}]}"#);
    assert_eq!(
        got,
        [
            "manifest: volumeMounts[0].subPathEx: unknown field (did you mean subPathExpr?)",
            "manifest: volumeMounts[0].subPath: is not supported (the volume root would be ambiguous)"
        ]
    );
}

/// The word-at-a-time comparison the reader's keys use agrees with `==`
/// for every length and every differing position.
#[test]
fn key_comparison_is_slice_equality() {
    use crate::index::same;
    let base: Vec<u8> = (0..30).map(|i| b'a' + i).collect();
    for n in 0..=24 {
        let b = &base[..n];
        assert!(same(b, b));
        assert!(!same(&base[..n + 1], b));
        for at in 0..n {
            let mut a = b.to_vec();
            a[at] ^= 0x20;
            assert!(!same(&a, b), "length {n}, byte {at}");
        }
    }
}

/// Whitespace skipped word by word ends where a byte loop ends, for runs
/// of every shape (line ends, indentation, tabs, carriage returns) and
/// length, followed by a token, a control character, or the end.
#[test]
fn blanks_end_where_a_byte_loop_says() {
    let mut runs: Vec<Vec<u8>> = vec![vec![]];
    for _ in 0..4 {
        let longer: Vec<Vec<u8>> = runs
            .iter()
            .filter(|r| r.len() + 1 == runs.last().map_or(0, |l| l.len()) + 1)
            .flat_map(|r| b" \n\t\r".iter().map(move |&c| [r.as_slice(), &[c]].concat()))
            .collect();
        runs.extend(longer);
    }
    for n in 0..20 {
        runs.push([b"\n".as_slice(), &vec![b' '; n]].concat());
        runs.push([b"\r\n".as_slice(), &vec![b' '; n], b"\t"].concat());
        runs.push([vec![b' '; n].as_slice(), b"\n\n"].concat());
    }
    for run in &runs {
        for tail in [&b"\"x\": 1}"[..], b"}", b"\x01", b"\x0b ", b""] {
            let doc = [run.as_slice(), tail].concat();
            let s = std::str::from_utf8(&doc).unwrap();
            let mut r = Reader { s, i: 0, depth: 0, items: Vec::new(), fields: Vec::new() };
            r.skip_ws();
            let want = doc.iter().position(|c| !b" \n\t\r".contains(c)).unwrap_or(doc.len());
            assert_eq!(r.i, want, "{doc:?}");
        }
    }
}

/// `"value": ""` beside a valueFrom is what the API server accepts: the valueFrom counts.
#[test]
fn an_empty_value_beside_value_from_means_the_value_from() {
    let m = parse(br#"{"env": [{"name": "A", "value": "", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}"#).unwrap();
    assert_eq!(m.env[0].source, EnvSource::Platform("fieldRef x".into()));
    let e = errors(r#"{"env": [{"name": "A", "value": "x", "valueFrom": {"fieldRef": {}}}]}"#);
    assert_eq!(e, ["manifest: env[0]: has both value and valueFrom"]);
}

/// A YAML document is told apart from broken JSON.
#[test]
fn yaml_is_recognised() {
    for yaml in ["apiVersion: v1\nkind: Pod\n", "# c\n\nenv:\n- name: A\n", "---\n", "- a\n", "\"name\": x\n"] {
        assert!(looks_like_yaml(yaml.as_bytes()), "{yaml:?}");
    }
    for json in ["{\"env\": [", "[1,", "", "not json", "http://x", "a:b"] {
        assert!(!looks_like_yaml(json.as_bytes()), "{json:?}");
    }
}

/// A syntax error says where: the line and column where the reader stopped.
#[test]
fn syntax_errors_say_where() {
    assert_eq!(errors("{\n  \"env\": [\n    x\n"), ["manifest is not valid JSON: syntax error at line 3 column 5"]);
    assert_eq!(errors("{\"env\": ["), ["manifest is not valid JSON: the document ends early at line 1 column 10"]);
    assert_eq!(errors("{} {}"), ["manifest is not valid JSON: text after the document at line 1 column 4"]);
    let e = parse(b"{\"a\": \"\xff\"}").unwrap_err();
    assert_eq!(e[0].to_string(), "manifest is not valid JSON: invalid UTF-8 at line 1 column 8");
    assert_eq!(errors(&"[".repeat(200)), ["manifest is not valid JSON: nested too deep at line 1 column 128"]);
}

/// A container chosen with `--container` reads as the same container given
/// alone: escapes, numbers, repeated fields and errors alike (the errors
/// under its path in the document).
#[test]
fn a_chosen_container_reads_as_the_container_alone() {
    let containers = [
        r#"{"name": "app", "env": [{"name": "A", "value": "x\u0041\"y"}, {"name": "A", "value": "z"}], "command": ["a\/b", "c"], "ports": [{"containerPort": 1e3}]}"#,
        r#"{"name": "app", "\u0065nv": [{"name": "B", "value": "1"}], "args": ["-v"], "args": ["-q"], "volumeMounts": [{"name": "v", "mountPath": "/v"}]}"#,
        r#"{"name": "app", "env": [{"name": "C", "valu": "1"}, {"name": 5}], "command": ["a\u0000b"]}"#,
        r#"{"name": "app", "envFrom": [{"fileRef": {"volumeName": "v", "path": "a.env"}, "prefix": "P_"}], "env": [{"name": "D", "valueFrom": {"fileKeyRef": {"volumeName": "v", "path": "a.env", "key": "K"}}}]}"#,
    ];
    let show = |r: Result<Manifest, Vec<Error>>| match r {
        Ok(m) => format!("{m:?}"),
        Err(e) => e.into_iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"),
    };
    for c in containers {
        let pod = format!(r#"{{"kind": "Pod", "spec": {{"containers": [{{"name": "side"}}, {c}]}}}}"#);
        let alone = show(parse_named(c.as_bytes(), "manifest", None, None));
        let chosen = show(parse_named(pod.as_bytes(), "manifest", None, Some(b"app")));
        assert_eq!(chosen, alone.replace("manifest: ", "manifest: spec.containers[1]."), "{c}");
    }
}
