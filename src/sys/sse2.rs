//! Byte scans of the env-file parser, sixteen bytes at a time with SSE2 (part
//! of every x86_64 target: no run-time detection, whose CPUID traps to the
//! hypervisor on some machines). The parser scans eight bytes at a time
//! without them (other targets, and its tests, which check both agree).

use std::arch::x86_64::*;

/// The first byte from `i` that is a control byte or a blank (at most
/// 0x20: NUL, TAB, LF, CR, space), or `data.len()`.
#[inline(always)]
pub fn control_or_blank(data: &[u8], i: usize) -> usize {
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    scan(data, i, |x| unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x20)), x)) as u32 })
}

/// The first byte from `i` that is a control byte or a blank, `=`, or
/// from 0x7f (what cannot be in a name written without blanks), or `data.len()`.
#[inline(always)]
pub fn not_in_plain_name(data: &[u8], i: usize) -> usize {
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    scan(data, i, |x| unsafe {
        // 0x21..=0x7e, less `=`: the bytes that are not marked.
        let y = _mm_sub_epi8(x, _mm_set1_epi8(0x21));
        let printable = _mm_cmpeq_epi8(_mm_min_epu8(y, _mm_set1_epi8(0x7e - 0x21)), y);
        let eq = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'=' as i8));
        _mm_movemask_epi8(_mm_andnot_si128(eq, printable)) as u32 ^ 0xffff
    })
}

/// The first byte from `i` that is `quote`, `also`, or a control byte
/// (below 0x20: NUL, TAB, LF, CR), or `data.len()`.
#[inline(always)]
pub fn quote_or_control(data: &[u8], i: usize, quote: u8, also: u8) -> usize {
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    scan(data, i, |x| unsafe {
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let q = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(quote as i8)), _mm_cmpeq_epi8(x, _mm_set1_epi8(also as i8)));
        _mm_movemask_epi8(_mm_or_si128(control, q)) as u32
    })
}

/// Whether every byte of `data` is ASCII: 64 bytes a step (four blocks
/// or-ed, one test), then 16, then the rest: fewer instructions than
/// `<[u8]>::is_ascii`.
pub fn is_ascii(data: &[u8]) -> bool {
    let mut chunks = data.chunks_exact(64);
    for c in &mut chunks {
        // SAFETY: SSE2 is enabled (the module's `cfg`).
        let high = unsafe {
            let x = _mm_or_si128(_mm_or_si128(load(c), load(&c[16..])), _mm_or_si128(load(&c[32..]), load(&c[48..])));
            _mm_movemask_epi8(x)
        };
        if high != 0 {
            return false;
        }
    }
    let mut blocks = chunks.remainder().chunks_exact(16);
    // SAFETY: as above.
    blocks.all(|b| unsafe { _mm_movemask_epi8(load(b)) } == 0) && blocks.remainder().is_ascii()
}

/// The first byte from `i` whose bit `marks` sets (bit k: byte k of the 16 it is given).
#[inline(always)]
fn scan(data: &[u8], mut i: usize, marks: impl Fn(__m128i) -> u32) -> usize {
    let len = data.len();
    while let Some(block) = data.get(i..i + 16) {
        let m = marks(load(block));
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    if i >= len {
        return len;
    }
    // Fewer than 16 bytes left: the data's last 16 bytes, those before `i`
    // shifted out, or (shorter data) a copy padded with bytes never looked at.
    let m = if len >= 16 {
        marks(load(&data[len - 16..])) >> (i + 16 - len)
    } else {
        let mut padded = [0u8; 16];
        padded[..len - i].copy_from_slice(&data[i..]);
        marks(load(&padded)) & ((1 << (len - i)) - 1)
    };
    if m != 0 { i + m.trailing_zeros() as usize } else { len }
}

#[inline(always)]
fn load(block: &[u8]) -> __m128i {
    assert!(block.len() >= 16);
    // SAFETY: SSE2 is enabled; the unaligned load reads 16 bytes of `block`.
    unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
}
