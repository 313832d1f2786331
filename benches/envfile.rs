//! Env-file parsing throughput (docs/reference.md §4), on 64 KiB inputs: the limit, so
//! the largest file envshim ever parses. The target and the figures: docs/performance.md.
//!
//! Run: `cargo bench --bench envfile` (the bench profile inherits
//! `[profile.release]`, so this measures the code as shipped).
//!
//! Shapes:
//! - `typical_1000_keys`: 1,000 `NAME=value` lines, as the start-up benchmark's
//!   env file (`bench/gen_inputs.py` writes the same shape).
//! - `long_values`: two values of ~32 KiB (the value limit).
//! - `single_quoted` / `double_quoted`: 1,000 quoted values without escapes.
//! - `double_quoted_escapes`: 1,000 double-quoted values, each with three
//!   escapes (`\n`, `\"`, `\$`): every value goes through the rewriting (arena)
//!   path, the parser's slowest.
//! - `mixed`: comments, blank lines, `export`, CRLF, `#` comments after values.
//!
//!
//! `envfile_fmt_64KiB`: `kubectl envshim fmt`'s rewrite into the portable form (the
//! parse, then every entry written again as `NAME='VALUE'`) of the
//! double-quoted shapes, whose result stays within the limit.
//!
//! Each input is checked to parse (and to the expected number of keys)
//! before it is timed, so a grammar change that makes it fail is caught.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use envshim::internals::EnvFile;
use std::hint::black_box;
use std::time::Duration;

const LIMIT: usize = 64 * 1024;

/// A deterministic pseudo-random value of `len` bytes from a URL/base64-ish alphabet.
fn value(seed: usize, len: usize) -> String {
    const ALPHA: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:";
    let mut x = (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHA[(x % ALPHA.len() as u64) as usize] as char
        })
        .collect()
}

/// `n` lines built by `line(i, value_len)`, with value lengths chosen so the
/// file is as close to `LIMIT` as possible without exceeding it.
fn fill(n: usize, line: impl Fn(usize, usize) -> String) -> String {
    let fixed: usize = (0..n).map(|i| line(i, 0).len()).sum();
    let room = LIMIT - fixed;
    let (each, extra) = (room / n, room % n);
    let out: String = (0..n).map(|i| line(i, each + usize::from(i < extra))).collect();
    assert_eq!(out.len(), LIMIT);
    out
}

fn typical() -> String {
    fill(1000, |i, len| format!("APP_CONFIG_KEY_{i:04}={}\n", value(i, len)))
}

fn long_values() -> String {
    fill(2, |i, len| format!("LONG_{i}={}\n", value(i, len)))
}

fn single_quoted() -> String {
    fill(1000, |i, len| format!("QUOTED_KEY_{i:04}='{}'\n", value(i, len)))
}

fn double_quoted_plain() -> String {
    // No escape: the fast path, a span of the file like an unquoted value.
    fill(1000, |i, len| format!("DQ_KEY_{i:04}=\"{}\"\n", value(i, len)))
}

fn double_quoted() -> String {
    // Every value has escapes (`\n`, `\"`, `\$`), so each goes to the arena.
    fill(1000, |i, len| {
        let v = value(i, len);
        let (a, b) = v.split_at(v.len() / 2);
        format!("DQ_KEY_{i:04}=\"{a}\\n{b}\\\"\\$(x)\"\n")
    })
}

fn mixed() -> String {
    fill(1000, |i, len| match i % 5 {
        0 => format!("# comment {i}\r\nexport MIX_{i:04}={}\r\n", value(i, len)),
        1 => format!("\nMIX_{i:04} = {} # trailing comment\n", value(i, len)),
        2 => format!("MIX_{i:04}='{}' # c\n", value(i, len)),
        3 => format!("MIX_{i:04}=\"{}\"\n", value(i, len)),
        _ => format!("  MIX_{i:04}=#{}\n", value(i, len)),
    })
}

fn bench_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("envfile_parse_64KiB");
    group.throughput(Throughput::Bytes(LIMIT as u64));
    let inputs: [(&str, String, usize); 6] = [
        ("typical_1000_keys", typical(), 1000),
        ("long_values", long_values(), 2),
        ("single_quoted", single_quoted(), 1000),
        ("double_quoted", double_quoted_plain(), 1000),
        ("double_quoted_escapes", double_quoted(), 1000),
        ("mixed_comments_crlf_export", mixed(), 1000),
    ];
    for (name, text, keys) in inputs {
        let parsed = EnvFile::parse(text.clone().into_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(parsed.len(), keys, "{name}");
        // The parser takes ownership of its buffer (it keeps the bytes): each
        // iteration gets a fresh copy, made in the untimed setup, as envshim
        // hands over the buffer it read. Dropping the parsed file is timed.
        group.bench_function(name, |b| {
            b.iter_batched(|| text.clone().into_bytes(), |data| black_box(EnvFile::parse(black_box(data)).is_ok()), criterion::BatchSize::SmallInput)
        });
    }
    group.finish();
}

/// A lookup of every key of a parsed 1,000-key file (the first `get` builds
/// the sorted index; this measures the index build plus 1,000 binary searches).
fn bench_lookup(c: &mut Criterion) {
    let text = typical();
    let keys: Vec<String> = (0..1000).map(|i| format!("APP_CONFIG_KEY_{i:04}")).collect();
    let mut group = c.benchmark_group("envfile_index");
    group.throughput(Throughput::Elements(keys.len() as u64));
    group.bench_function("parse_then_get_1000_keys", |b| {
        b.iter_batched(
            || text.clone().into_bytes(),
            |data| {
                let f = EnvFile::parse(data).unwrap();
                let mut n = 0;
                for k in &keys {
                    n += f.get(k.as_bytes()).ok().flatten().map_or(0, |(v, _)| v.len());
                }
                black_box(n)
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// `kubectl envshim fmt`'s work on one file: `portable::rewrite` (the file read
/// and written are not timed).
fn bench_fmt(c: &mut Criterion) {
    let mut group = c.benchmark_group("envfile_fmt_64KiB");
    group.throughput(Throughput::Bytes(LIMIT as u64));
    for (name, text) in [("double_quoted", double_quoted_plain()), ("double_quoted_escapes", double_quoted())] {
        let done = envshim::internals::portable::rewrite(text.as_bytes()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(done.refused().is_none() && done.text != text.as_bytes(), "{name}");
        group.bench_function(name, |b| b.iter(|| black_box(envshim::internals::portable::rewrite(black_box(text.as_bytes())).is_ok())));
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3)).sample_size(60)
}

criterion_group! { name = benches; config = config(); targets = bench_parse, bench_lookup, bench_fmt }
criterion_main!(benches);
