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

pub fn is_relaxed(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&b| (0x20..=0x7e).contains(&b) && b != b'=')
}

pub fn is_strict(name: &[u8]) -> bool {
    let Some((&first, rest)) = name.split_first() else { return false };
    let word = |b: u8| b == b'-' || b == b'.' || b == b'_' || b.is_ascii_alphabetic();
    word(first)
        && rest.iter().all(|&b| word(b) || b.is_ascii_digit())
        && name != b"."
        && !name.starts_with(b"..")
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
        for b in 0u8..=255 {
            assert_eq!(is_relaxed(&[b]), (32..=126).contains(&b) && b != b'=', "byte {b}");
        }
    }
}
