//! The fast path's byte scans: where the first byte of a set is, many bytes
//! a step. On x86_64, sixteen a step with SSE2 (its compares are in
//! `crate::sys::sse2`, with the crate's other unsafe code); elsewhere eight
//! a step in a word. The tests check both against a byte-by-byte reading.

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(super) use sixteen::*;
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
pub(super) use words::*;

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(super) mod sixteen {
    use crate::sys::sse2;

    /// The first byte from `i` that is a control byte or a blank (at most
    /// 0x20: NUL, TAB, LF, CR, space), or `data.len()`.
    #[inline(always)]
    pub fn control_or_blank(data: &[u8], i: usize) -> usize {
        first(data, i, sse2::control_or_blank)
    }

    /// The first byte from `i` that cannot be in a name written without
    /// blanks (a control byte or a blank, `=`, or from 0x7f), or `data.len()`.
    #[inline(always)]
    pub fn not_in_plain_name(data: &[u8], i: usize) -> usize {
        first(data, i, sse2::not_in_plain_name)
    }

    /// The first byte from `i` that is `quote`, `also`, or a control byte
    /// (below 0x20: NUL, TAB, LF, CR), or `data.len()`.
    #[inline(always)]
    pub fn quote_or_control(data: &[u8], i: usize, quote: u8, also: u8) -> usize {
        first(data, i, |b| sse2::quote_or_control(b, quote, also))
    }

    /// The first byte from `i` whose bit `marks` sets (bit k: byte k of the block).
    #[inline(always)]
    fn first(data: &[u8], mut i: usize, marks: impl Fn(&[u8; 16]) -> u32) -> usize {
        let len = data.len();
        while let Some(block) = data.get(i..i + 16) {
            let m = marks(block.try_into().unwrap_or(&[0; 16]));
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
            marks(data[len - 16..].try_into().unwrap_or(&[0; 16])) >> (i + 16 - len)
        } else {
            let mut padded = [0u8; 16];
            padded[..len - i].copy_from_slice(&data[i..]);
            marks(&padded) & ((1 << (len - i)) - 1)
        };
        if m != 0 {
            i + m.trailing_zeros() as usize
        } else {
            len
        }
    }
}

/// Eight bytes a step (the first in the low byte of a word): each function
/// sets the high bit of each byte of the set. A byte's borrow can only mark
/// bytes after a marked one, so the lowest marked byte is exact.
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
pub(super) mod words {
    use crate::names::{HIGH, ONES};

    /// See `sixteen::control_or_blank`.
    pub fn control_or_blank(data: &[u8], i: usize) -> usize {
        first(data, i, control_or_blank_word)
    }

    /// See `sixteen::not_in_plain_name`.
    pub fn not_in_plain_name(data: &[u8], i: usize) -> usize {
        first(data, i, |w| {
            let eq = w ^ (ONES * u64::from(b'='));
            control_or_blank_word(w) | ((w.wrapping_add(ONES) | w) & HIGH) | (eq.wrapping_sub(ONES) & !eq & HIGH)
        })
    }

    /// See `sixteen::quote_or_control`.
    pub fn quote_or_control(data: &[u8], i: usize, quote: u8, also: u8) -> usize {
        first(data, i, |w| {
            let (q, a) = (w ^ (ONES * u64::from(quote)), w ^ (ONES * u64::from(also)));
            (w.wrapping_sub(ONES * 0x20) & !w & HIGH) | (q.wrapping_sub(ONES) & !q & HIGH) | (a.wrapping_sub(ONES) & !a & HIGH)
        })
    }

    #[inline(always)]
    fn control_or_blank_word(w: u64) -> u64 {
        w.wrapping_sub(ONES * 0x21) & !w & HIGH
    }

    /// The first byte from `i` that `marks` marks, or `data.len()`: eight bytes
    /// at a time, then the last ones one by one (each as the low byte of a word).
    #[inline(always)]
    fn first(data: &[u8], mut i: usize, marks: impl Fn(u64) -> u64) -> usize {
        while let Some(w) = data.get(i..i + 8) {
            let m = marks(u64::from_le_bytes(w.try_into().unwrap_or_default()));
            if m != 0 {
                return i + (m.trailing_zeros() / 8) as usize;
            }
            i += 8;
        }
        while i < data.len() && marks(u64::from(data[i])) & 0x80 == 0 {
            i += 1;
        }
        i
    }
}
