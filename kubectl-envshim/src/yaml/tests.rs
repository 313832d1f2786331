//! `write` then `read_stream` gives back the tree, for random JSON-like trees
//! of nasty strings; and PyYAML (YAML 1.1, as kubectl's reader) reads what
//! `write` wrote as the same tree.

use std::io::Write as _;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{Map, Number, Value};

use super::{read_stream, write};

/// Strings that mean something else to some YAML reader, or need quoting.
const NASTY: &[&str] = &[
    "yes",
    "No",
    "ON",
    "off",
    "y",
    "N",
    "~",
    "null",
    "Null",
    "true",
    "0x1F",
    "030",
    "08080",
    "1_000",
    "0o17",
    "0b11",
    "1:20",
    "1e3",
    ".inf",
    "-.Inf",
    ".nan",
    "<<",
    "=",
    "-",
    "--- a",
    "...",
    "? x",
    ": x",
    "a: b",
    "a #b",
    "#c",
    "!tag",
    "&a",
    "*a",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    "'q'",
    "\"dq\"",
    "\\",
    " lead",
    "trail ",
    "",
    " ",
    "\t",
    "a\tb",
    "x\ny",
    "x\ny\n",
    "x\n\n",
    "\nx",
    "  x\n  y",
    "x\n \ny",
    "é",
    "日本",
    "\u{85}",
    "\u{2028}",
    "\u{feff}x",
    "\u{0}",
    "\u{7f}",
    "{a: 1}",
    "[1]",
    "a,b",
    "2001-12-14",
    "4Mi",
    "250m",
    "busybox:1.36",
    "http://a/b",
    "-c",
    ".env",
    "$(VAR)",
    "a\r\nb",
    "\u{1F600}",
];

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(NASTY).prop_map(String::from),
        1 => "[a-z0-9 :#'\"\\-\\n.]{0,8}",
        1 => (proptest::sample::select(NASTY), proptest::sample::select(NASTY)).prop_map(|(a, b)| format!("{a}{b}")),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => string().prop_map(Value::String),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<f64>().prop_filter_map("finite", |f| Number::from_f64(f).map(Value::Number)),
        1 => prop_oneof![Just(0.5), Just(-0.0), Just(1e300), Just(2.0), Just(1e-7)].prop_map(|f| Value::Number(Number::from_f64(f).unwrap())),
    ]
}

fn tree() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((string(), inner), 0..5).prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// PyYAML's reading of each text (YAML 1.1), as JSON; one python3 for all.
fn pyyaml(texts: &[String]) -> Vec<Value> {
    let script = "import sys, json, yaml\n\
                  texts = json.load(sys.stdin)\n\
                  print(json.dumps([yaml.safe_load(t) for t in texts], default=repr))";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 with PyYAML (tests/e2e/deps.sh installs it)");
    let input = serde_json::to_vec(texts).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "PyYAML failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Numbers equal as numbers: PyYAML's 2 and our 2.0 print apart, and
/// serde_json's reading of Python's JSON may be one unit in the last place off.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(f64::NAN), y.as_f64().unwrap_or(f64::NAN));
            x == y || (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        (Value::Object(x), Value::Object(y)) => x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w))),
        _ => a == b,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn what_is_written_reads_back_the_same(v in tree()) {
        let text = write(&v);
        let docs = read_stream(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(docs.len(), 1, "{}", text);
        prop_assert_eq!(&docs[0].value, &v, "{}", text);
    }
}

#[test]
fn pyyaml_reads_what_is_written_the_same() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let trees: Vec<Value> = (0..400).map(|_| tree().new_tree(&mut runner).unwrap().current()).collect();
    let texts: Vec<String> = trees.iter().map(write).collect();
    for ((v, text), py) in trees.iter().zip(&texts).zip(pyyaml(&texts)) {
        assert!(same(v, &py), "PyYAML reads\n{text}\nas {py}, not {v}");
    }
    // Every nasty string alone, as a key and as a value.
    let singles: Vec<Value> = NASTY.iter().map(|s| serde_json::json!({*s: s, "k": [s]})).collect();
    let texts: Vec<String> = singles.iter().map(write).collect();
    for ((v, text), py) in singles.iter().zip(&texts).zip(pyyaml(&texts)) {
        assert!(same(v, &py), "PyYAML reads\n{text}\nas {py}, not {v}");
        assert_eq!(&read_stream(text).unwrap()[0].value, v, "{text}");
    }
}
