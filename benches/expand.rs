//! `$(VAR)` expansion (docs/reference.md §5): throughput at several input sizes, so a
//! constant throughput across sizes shows linear scaling (a quadratic case
//! would lose ~8× throughput per 8× size step).
//!
//! Run: `cargo bench --bench expand`.
//!
//! Sizes: 1 KiB, 8 KiB, 64 KiB, 1 MiB (the manifest limit, so the longest
//! literal envshim can ever expand). Shapes:
//! - `plain`: no `$` at all (the memchr floor).
//! - `refs_defined`: a long value made of references to a 1,000-variable
//!   environment, `x-$(APP_CONFIG_KEY_0123)/`, each replaced by a 48-byte value.
//! - `refs_undefined`: `$(MISSING_0123)` repeated, each copied back as written.
//! - `dollar_dollar`: `$$$$…` (each pair emits one `$`).
//! - `open_no_close`: `$($($(…` with no `)` anywhere (the classic quadratic trap:
//!   a naive implementation rescans the rest of the input at every `$(`).
//! - `open_then_close`: `$($($(…)` with a single `)` at the very end.
//! - `dollar_other`: `$x$é$x$é…` (a `$` before an ordinary or multi-byte character).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use envshim::internals::expand_into;
use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 4] = [1 << 10, 8 << 10, 64 << 10, 1 << 20];

/// `unit` repeated up to exactly `size` bytes (cut at a char boundary), then `tail`.
fn repeat_to(unit: &str, size: usize, tail: &str) -> Vec<u8> {
    let body = size - tail.len();
    let mut s = unit.repeat(body / unit.len() + 1);
    let mut cut = body;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push_str(tail);
    s.into_bytes()
}

fn refs_defined(size: usize) -> Vec<u8> {
    let mut s = String::with_capacity(size + 64);
    let mut i = 0usize;
    while s.len() < size {
        s.push_str(&format!("x-$(APP_CONFIG_KEY_{:04})/", (i * 7919) % 1000));
        i += 1;
    }
    s.into_bytes()
}

fn refs_undefined(size: usize) -> Vec<u8> {
    let mut s = String::with_capacity(size + 64);
    let mut i = 0usize;
    while s.len() < size {
        s.push_str(&format!("$(MISSING_{:04})", i % 10000));
        i += 1;
    }
    s.into_bytes()
}

/// A named input and how to make it `n` bytes long.
type Shape = (&'static str, fn(usize) -> Vec<u8>);

fn shapes() -> Vec<Shape> {
    vec![
        ("plain", |n| repeat_to("the quick brown fox jumps over the lazy dog ", n, "")),
        ("refs_defined", refs_defined),
        ("refs_undefined", refs_undefined),
        ("dollar_dollar", |n| repeat_to("$", n, "")),
        ("open_no_close", |n| repeat_to("$(", n, "")),
        ("open_then_close", |n| repeat_to("$(", n, ")")),
        ("dollar_other", |n| repeat_to("$x$é", n, "")),
    ]
}

fn bench_expand(c: &mut Criterion) {
    let names: Vec<String> = (0..1000).map(|i| format!("APP_CONFIG_KEY_{i:04}")).collect();
    let values: Vec<String> = (0..1000).map(|i| format!("value-{i:04}-{}", "v".repeat(37))).collect();
    let env: HashMap<&[u8], &[u8]> = names.iter().zip(&values).map(|(k, v)| (k.as_bytes(), v.as_bytes())).collect();
    let lookup = |name: &[u8]| env.get(name).copied();

    for (shape, make) in shapes() {
        let mut group = c.benchmark_group(format!("expand/{shape}"));
        for size in SIZES {
            let input = make(size);
            group.throughput(Throughput::Bytes(input.len() as u64));
            let mut out = Vec::with_capacity(input.len() * 4);
            group.bench_with_input(BenchmarkId::from_parameter(size), &input, |b, input| {
                b.iter(|| {
                    out.clear();
                    expand_into(black_box(input), lookup, &mut out);
                    black_box(out.len())
                })
            });
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2)).sample_size(40)
}

criterion_group! { name = benches; config = config(); targets = bench_expand }
criterion_main!(benches);
