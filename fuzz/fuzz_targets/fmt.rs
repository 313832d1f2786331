//! Fuzzes `kubectl envshim fmt`'s rewrite (src/envfile/portable.rs) with arbitrary bytes.
//!
//! Invariants checked on every input:
//! - no panic, whatever the bytes;
//! - it fails exactly the files envshim's grammar fails, with the same error;
//! - it refuses a file only for a value the kubelet's grammar cannot hold
//!   (one holding `'` or CR LF, the empty value, on the line it names), a
//!   name `export` hid (starting with `#`, or `export` and a blank), or a
//!   result the kubelet's reader or the file limit refuses;
//! - otherwise its result, read with envshim's grammar and with the
//!   kubelet's, gives exactly the variables envshim's grammar reads from the
//!   input (names, values byte for byte, the same set, in the same order),
//!   and rewriting the result changes nothing.
#![no_main]

use envshim::internals::portable::{rewrite, Inexpressible};
use envshim::internals::EnvFile;
use libfuzzer_sys::fuzz_target;

fn keys(file: &EnvFile) -> Vec<(Vec<u8>, Vec<u8>)> {
    file.unique_keys().map(|k| (k.name.to_vec(), k.value.to_vec())).collect()
}

fuzz_target!(|data: &[u8]| {
    let original = match EnvFile::parse(data.to_vec()) {
        Ok(f) => f,
        Err(e) => {
            assert_eq!(rewrite(data).err(), Some(e), "fmt fails otherwise than envshim's grammar");
            return;
        }
    };
    let want = keys(&original);
    let p = rewrite(data).expect("a file envshim's grammar reads is rewritten");
    if let Some((line, why)) = p.refused() {
        let entry = original.unique().find(|&(_, _, l)| l == line);
        let value = entry.map(|(_, v, _)| v);
        let holds = match why {
            Inexpressible::Quote => value.is_some_and(|v| v.contains(&b'\'')),
            Inexpressible::Empty => value.is_some_and(<[u8]>::is_empty),
            Inexpressible::CrLf => value.is_some_and(|v| v.windows(2).any(|w| w == b"\r\n")),
            Inexpressible::Name => entry.is_some_and(|(n, _, _)| n.starts_with(b"#") || n.starts_with(b"export ") || n.starts_with(b"export\t")),
            Inexpressible::LongLine => p.text.len() >= 65_536 && !p.text.contains(&b'\n'),
            Inexpressible::TooLarge => p.text.len() > envshim::internals::MAX_ENV_FILE_BYTES,
        };
        assert!(holds, "refused for {why:?} on line {line}");
        return;
    }
    for (n, v) in &want {
        assert!(!n.starts_with(b"#") && !n.starts_with(b"export ") && !n.starts_with(b"export\t"), "a name export hid was not refused");
        assert!(!v.is_empty() && !v.contains(&b'\'') && !v.windows(2).any(|w| w == b"\r\n"), "a value without a kubelet form was not refused");
    }
    let envshim = EnvFile::parse(p.text.clone()).expect("the result parses in envshim's grammar");
    assert_eq!(keys(&envshim), want, "envshim's grammar reads the result otherwise");
    let kubelet = EnvFile::parse_kubelet(p.text.clone()).expect("within the limit");
    assert_eq!(kubelet.stop(), None, "the kubelet's grammar fails on the result");
    assert_eq!(keys(&kubelet), want, "the kubelet's grammar reads the result otherwise");
    let again = rewrite(&p.text).expect("the result is rewritten");
    assert_eq!(again.text, p.text, "not idempotent");
    assert!(again.fixes.is_empty());
});
