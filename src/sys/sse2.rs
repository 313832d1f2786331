//! SSE2 compares of sixteen bytes for the env-file parser's scans
//! (src/envfile/scan.rs, which holds the scans themselves). SSE2 is part of
//! every x86_64 target: no run-time detection, whose CPUID traps to the
//! hypervisor on some machines. Each returns a mask: bit k set when byte k
//! of `block` is in the set.

use std::arch::x86_64::*;

/// Control bytes and blanks (at most 0x20: NUL, TAB, LF, CR, space).
#[inline(always)]
pub fn control_or_blank(block: &[u8; 16]) -> u32 {
    let x = load(block);
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x20)), x)) as u32 }
}

/// What cannot be in a name written without blanks: control bytes and
/// blanks, `=`, and the bytes from 0x7f.
#[inline(always)]
pub fn not_in_plain_name(block: &[u8; 16]) -> u32 {
    let x = load(block);
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    unsafe {
        // 0x21..=0x7e, less `=`: the bytes that are not marked.
        let y = _mm_sub_epi8(x, _mm_set1_epi8(0x21));
        let printable = _mm_cmpeq_epi8(_mm_min_epu8(y, _mm_set1_epi8(0x7e - 0x21)), y);
        let eq = _mm_cmpeq_epi8(x, _mm_set1_epi8(b'=' as i8));
        _mm_movemask_epi8(_mm_andnot_si128(eq, printable)) as u32 ^ 0xffff
    }
}

/// `quote`, `also`, and control bytes (below 0x20: NUL, TAB, LF, CR).
#[inline(always)]
pub fn quote_or_control(block: &[u8; 16], quote: u8, also: u8) -> u32 {
    let x = load(block);
    // SAFETY: SSE2 is enabled (the module's `cfg`).
    unsafe {
        let control = _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(0x1f)), x);
        let q = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8(quote as i8)), _mm_cmpeq_epi8(x, _mm_set1_epi8(also as i8)));
        _mm_movemask_epi8(_mm_or_si128(control, q)) as u32
    }
}

#[inline(always)]
fn load(block: &[u8; 16]) -> __m128i {
    // SAFETY: SSE2 is enabled; the unaligned load reads the 16 bytes of `block`.
    unsafe { _mm_loadu_si128(block.as_ptr().cast()) }
}
