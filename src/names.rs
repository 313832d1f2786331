//! Environment variable name rules (KEP-4369).

/// Which rule names that become variables must pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NameRule {
    /// One or more bytes, each printable ASCII (32..=126) except `=`.
    #[default]
    Relaxed,
    /// `[-._a-zA-Z][-._a-zA-Z0-9]*`, and not `.`, `..` or starting with `..`.
    Strict,
}

impl NameRule {
    pub fn accepts(self, name: &[u8]) -> bool {
        match self {
            NameRule::Relaxed => is_relaxed(name),
            NameRule::Strict => is_strict(name),
        }
    }
}

/// Eight bytes in a word, for the scans that test them at once (here, in
/// the env-file parser and the manifest reader): each byte 1, each byte's high bit.
pub(crate) const ONES: u64 = 0x0101_0101_0101_0101;
pub(crate) const HIGH: u64 = ONES * 0x80;

pub fn is_relaxed(name: &[u8]) -> bool {
    // Eight bytes at a time: every key of every env file is checked.
    let bad_word = |w: u64| {
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let above_tilde = w.wrapping_add(ONES) | w; // a byte >= 0x7f sets its high bit
        let eq = w ^ (ONES * u64::from(b'='));
        let equals = eq.wrapping_sub(ONES) & !eq;
        (below_space | above_tilde | equals) & HIGH != 0
    };
    let n = name.len();
    if n < 8 {
        // 4 to 7 bytes (the manifest's short names): the first four and the
        // last four (overlapping) as one word, not a byte loop.
        if n >= 4 {
            let half = |at: usize| u64::from(u32::from_le_bytes(name[at..at + 4].try_into().unwrap_or_default()));
            return !bad_word(half(0) | half(n - 4) << 32);
        }
        return n > 0 && name.iter().all(|&b| (0x20..=0x7e).contains(&b) && b != b'=');
    }
    // Whole words, then the last eight bytes (overlapping the previous word)
    // rather than a byte loop over the tail.
    let word = |at: usize| u64::from_le_bytes(name[at..at + 8].try_into().unwrap_or_default());
    (0..n / 8).all(|i| !bad_word(word(i * 8))) && !bad_word(word(n - 8))
}

pub fn is_strict(name: &[u8]) -> bool {
    let Some((&first, rest)) = name.split_first() else { return false };
    let word = |b: u8| b == b'-' || b == b'.' || b == b'_' || b.is_ascii_alphabetic();
    word(first) && rest.iter().all(|&b| word(b) || b.is_ascii_digit()) && name != b"." && !name.starts_with(b"..")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, relaxed, strict)
    const TABLE: &[(&[u8], bool, bool)] = &[
        (b"A", true, true),
        (b"FOO_BAR", true, true),
        (b"_x1", true, true),
        (b"-dash", true, true),
        (b".dot", true, true),
        (b"a.b-c_d", true, true),
        (b".", true, false),
        (b"..", true, false),
        (b"..x", true, false),
        (b"1ABC", true, false),
        (b"Logging:LogLevel:Default", true, false),
        (b"with space", true, false),
        (b" ", true, false),
        (b"~!@#$%^&*()", true, false),
        (b"", false, false),
        (b"A=B", false, false),
        (b"=", false, false),
        (b"tab\there", false, false),
        (b"nl\n", false, false),
        (b"nul\0", false, false),
        (b"del\x7f", false, false),
        (b"caf\xc3\xa9", false, false),
    ];

    #[test]
    fn name_rules_table() {
        for &(name, relaxed, strict) in TABLE {
            assert_eq!(NameRule::Relaxed.accepts(name), relaxed, "relaxed {:?}", String::from_utf8_lossy(name));
            assert_eq!(NameRule::Strict.accepts(name), strict, "strict {:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn relaxed_is_exactly_printable_ascii_except_equals() {
        // Every byte, at every place of names of 1 to 25 bytes (the word and the tail paths).
        for len in 1..=25 {
            for at in 0..len {
                for b in 0u8..=255 {
                    let mut name = vec![b'A'; len];
                    name[at] = b;
                    assert_eq!(is_relaxed(&name), (32..=126).contains(&b) && b != b'=', "byte {b} at {at} of {len}");
                }
            }
        }
    }
}
