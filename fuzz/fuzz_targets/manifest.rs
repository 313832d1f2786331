//! Fuzzes the manifest parser (docs/reference.md §3) with arbitrary bytes.
//!
//! Invariants:
//! - no panic;
//! - an error list is never empty, and every error exits 78 and is one line
//!   starting `manifest`;
//! - no error quotes a value: when the input is JSON, every string value (not
//!   the keys, which are configuration and may be shown) is replaced by a
//!   sentinel and the result parsed again; no message may contain the sentinel;
//! - envshim's JSON reader accepts exactly what serde_json accepts: the input
//!   is "not valid JSON" if and only if serde_json refuses it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const SENTINEL: &str = "SeNtInEl";

fn check(bytes: &[u8]) {
    let result = envshim::internals::parse_manifest(bytes);
    let syntax_error = matches!(&result, Err(e) if e[0].to_string().starts_with("manifest is not valid JSON"));
    assert_eq!(syntax_error, serde_json::from_slice::<Value>(bytes).is_err(), "the JSON readers disagree");
    if let Err(errors) = result {
        assert!(!errors.is_empty());
        for e in &errors {
            assert_eq!(e.code, envshim::internals::ExitCode::Config);
            let message = e.to_string();
            assert!(message.starts_with("manifest"), "{message:?}");
            assert!(!message.contains('\n') && !message.contains('\r'), "{message:?}");
            assert!(!message.contains(SENTINEL), "an error quotes a value: {message:?}");
        }
    }
}

/// Replaces every string value, at any depth, by a sentinel; keeps keys and
/// types. A value holding NUL keeps one, so the NUL check still fires.
fn blind(v: &mut Value, n: &mut usize) {
    match v {
        Value::String(s) => {
            *n += 1;
            let nul = if s.contains('\0') { "\0" } else { "" };
            *s = format!("{SENTINEL}{n}{nul}");
        }
        Value::Array(a) => a.iter_mut().for_each(|x| blind(x, n)),
        Value::Object(m) => m.values_mut().for_each(|x| blind(x, n)),
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    check(data);
    if let Ok(mut v) = serde_json::from_slice::<Value>(data) {
        let mut n = 0;
        blind(&mut v, &mut n);
        check(&serde_json::to_vec(&v).unwrap());
    }
});
