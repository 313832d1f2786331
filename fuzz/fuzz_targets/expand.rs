//! Fuzzes the `$(VAR)` expander (docs/reference.md §5).
//!
//! Input layout: `INPUT \xff NAME=VALUE \xff NAME=VALUE ...` (0xFF never occurs
//! in UTF-8, so the seeds stay readable). Invariants:
//! - the result equals a straightforward reference implementation of docs/reference.md §5
//!   (a direct port of the Kubernetes algorithm, no memoised `)` search);
//! - input without `$` is returned unchanged;
//! - escaping every `$` as `$$` and expanding gives the input back;
//! - substituted values are not rescanned: the output is bounded by the input
//!   plus one copy of a value per reference;
//! - valid UTF-8 in (input and values) gives valid UTF-8 out;
//! - `expand_capped` returns the whole length and keeps a prefix within its limit.
#![no_main]

use envshim::internals::{expand, expand_capped};
use libfuzzer_sys::fuzz_target;

/// docs/reference.md §5 read literally, on bytes with UTF-8 characters kept whole.
fn reference(input: &[u8], lookup: &dyn Fn(&[u8]) -> Option<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        if input[i] != b'$' || i + 1 == input.len() {
            out.push(input[i]);
            i += 1;
            continue;
        }
        match input[i + 1] {
            b'$' => {
                out.push(b'$');
                i += 2;
            }
            b'(' => match input[i + 2..].iter().position(|&b| b == b')') {
                Some(len) => {
                    let name = &input[i + 2..i + 2 + len];
                    match lookup(name) {
                        Some(v) => out.extend_from_slice(&v),
                        None => out.extend_from_slice(&input[i..i + 3 + len]),
                    }
                    i += 3 + len;
                }
                None => {
                    out.extend_from_slice(b"$(");
                    i += 2;
                }
            },
            _ => {
                // `$` and the whole next character; continuation bytes of a
                // multi-byte character are copied as they come, either way.
                out.push(b'$');
                out.push(input[i + 1]);
                i += 2;
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0xff);
    let input = parts.next().unwrap_or_default();
    let mut mapping: Vec<(&[u8], &[u8])> = Vec::new();
    for p in parts {
        let (name, value) = match p.iter().position(|&b| b == b'=') {
            Some(eq) => (&p[..eq], &p[eq + 1..]),
            None => (p, &p[p.len()..]),
        };
        mapping.push((name, value));
    }
    // The first definition of a name wins, like a map built in order with `entry().or_insert`.
    let find = |name: &[u8]| mapping.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);

    let got = expand(input, find);
    let want = reference(input, &|n| find(n).map(<[u8]>::to_vec));
    assert_eq!(got, want, "differs from the reference");

    // The capped form: the whole length, and a prefix of at most `limit` bytes.
    for limit in [0, got.len() / 2, got.len().saturating_sub(1), got.len(), usize::MAX] {
        let mut capped = b"kept".to_vec();
        let total = expand_capped(input, find, &mut capped, limit);
        assert_eq!(total, got.len(), "expand_capped must return the whole length");
        assert!(capped.starts_with(b"kept"));
        let capped = &capped[4..];
        assert!(capped.len() <= limit && got.starts_with(capped), "capped output must be a prefix within the limit");
        if limit >= got.len() {
            assert_eq!(capped, &got[..]);
        }
    }

    if !input.contains(&b'$') {
        assert_eq!(got, input, "input without `$` must be the identity");
    }

    let mut escaped = Vec::with_capacity(input.len() * 2);
    for &b in input {
        escaped.push(b);
        if b == b'$' {
            escaped.push(b'$');
        }
    }
    assert_eq!(expand(&escaped, find), input, "`$$` doubling must round-trip");

    let refs = input.windows(2).filter(|w| w == b"$(").count();
    let longest = mapping.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    assert!(got.len() <= input.len() + refs * longest, "values were rescanned or duplicated");

    if std::str::from_utf8(input).is_ok() && mapping.iter().all(|(_, v)| std::str::from_utf8(v).is_ok()) {
        assert!(std::str::from_utf8(&got).is_ok(), "valid UTF-8 in, invalid out");
    }
});
