//! `$(VAR)` expansion: the algorithm of the Kubernetes expansion package
//! (`third_party/forked/golang/expansion`), on bytes.
//!
//! Working on bytes gives the same result as working on characters: after a
//! `$` the next byte is either `$`, `(` or the first byte of a character, and
//! the rest of that character's bytes are copied as they come.

use memchr::memchr;

/// Appends the expansion of `input` to `out`. `lookup` maps a name to its
/// value; an undefined name leaves the reference as written.
///
/// Linear in the input: the position of the next `)` is remembered, so a run
/// like `$($($(…` does not rescan the rest of the input at every `$(`.
pub fn expand_into<'a>(input: &[u8], lookup: impl Fn(&[u8]) -> Option<&'a [u8]>, out: &mut Vec<u8>) {
    expand_capped(input, lookup, out, usize::MAX);
}

/// Like [`expand_into`], but appends at most `limit` bytes (a prefix of the
/// expansion) and returns the length the whole expansion has. A caller can
/// so refuse a result too large for `execve` without ever holding it: a
/// manifest that multiplies a value (`$(A)$(A)…`, chained over entries)
/// cannot exhaust memory.
pub fn expand_capped<'a>(input: &[u8], lookup: impl Fn(&[u8]) -> Option<&'a [u8]>, out: &mut Vec<u8>, limit: usize) -> usize {
    let mut total = 0usize;
    let mut emit = |out: &mut Vec<u8>, bytes: &[u8]| {
        total = total.saturating_add(bytes.len());
        if total <= limit {
            out.extend_from_slice(bytes);
        }
    };
    let mut pos = 0;
    // Result of the last search for `)`: None before the first search, then the
    // first `)` after the `$(` it was searched from (Some(None): there is none).
    let mut last_close: Option<Option<usize>> = None;
    while let Some(i) = memchr(b'$', &input[pos..]) {
        let dollar = pos + i;
        emit(out, &input[pos..dollar]);
        match input.get(dollar + 1) {
            // A trailing `$` is literal.
            None => {
                emit(out, b"$");
                pos = dollar + 1;
            }
            Some(b'$') => {
                emit(out, b"$");
                pos = dollar + 2;
            }
            Some(b'(') => {
                let open = dollar + 2;
                let close = match last_close {
                    Some(Some(c)) if c >= open => Some(c),
                    Some(None) => None,
                    _ => {
                        let found = memchr(b')', &input[open..]).map(|c| open + c);
                        last_close = Some(found);
                        found
                    }
                };
                match close {
                    Some(c) => {
                        match lookup(&input[open..c]) {
                            Some(value) => emit(out, value),
                            None => emit(out, &input[dollar..=c]),
                        }
                        pos = c + 1;
                    }
                    // No closing paren: `$(` is literal and scanning resumes after it.
                    None => {
                        emit(out, b"$(");
                        pos = open;
                    }
                }
            }
            Some(_) => {
                emit(out, &input[dollar..dollar + 2]);
                pos = dollar + 2;
            }
        }
    }
    emit(out, &input[pos..]);
    total
}

/// The names of the references in `input` that `lookup` leaves unresolved
/// (`$(NAME)` kept as written), each once, in order: the first `keep` of
/// them, and how many more there are. Found by the expansion itself (writing
/// nothing), so exactly the references the expansion leaves. For `check`.
pub fn unresolved<'a>(input: &[u8], lookup: impl Fn(&[u8]) -> Option<&'a [u8]>, keep: usize) -> (Vec<&[u8]>, usize) {
    // The names are slices of `input`: a reference is `$(` NAME `)`, found again
    // by position (the lookup is given the name as a slice of `input`).
    let found = std::cell::RefCell::new((Vec::<&[u8]>::new(), 0usize));
    let base = input.as_ptr() as usize;
    expand_capped(
        input,
        |name| {
            let value = lookup(name);
            if value.is_none() {
                let start = name.as_ptr() as usize - base;
                let name = &input[start..start + name.len()];
                let (kept, more) = &mut *found.borrow_mut();
                if !kept.contains(&name) {
                    if kept.len() < keep {
                        kept.push(name);
                    } else {
                        *more += 1;
                    }
                }
            }
            value
        },
        &mut Vec::new(),
        0,
    );
    found.into_inner()
}

/// The expansion of `input` as a new buffer.
pub fn expand<'a>(input: &[u8], lookup: impl Fn(&[u8]) -> Option<&'a [u8]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len());
    expand_into(input, lookup, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_names_are_those_the_expansion_leaves() {
        let lookup = |n: &[u8]| (n == b"A").then_some(&b"$(B)"[..]);
        let (names, more) = unresolved(b"$(A) $(B) $$(C) $(D $(B) $() $(E", lookup, 10);
        assert_eq!(names, [&b"B"[..], b"D $(B", b""]);
        assert_eq!(more, 0);
        let (names, more) = unresolved(b"$(X1)$(X2)$(X3)$(X1)", lookup, 2);
        assert_eq!((names, more), (vec![&b"X1"[..], b"X2"], 1));
    }

    const MAPPING: &[(&str, &str)] = &[("VAR_A", "A"), ("VAR_B", "B"), ("VAR_C", "C"), ("VAR_REF", "$(VAR_A)"), ("VAR_EMPTY", "")];

    fn lookup(name: &[u8]) -> Option<&'static [u8]> {
        MAPPING.iter().find(|(k, _)| k.as_bytes() == name).map(|(_, v)| v.as_bytes())
    }

    fn exp(input: &str) -> String {
        String::from_utf8(expand(input.as_bytes(), lookup)).unwrap()
    }

    /// The normative table of seeds/002 (the expansion design doc), decoded.
    #[test]
    fn seed_table_from_conformance_data() {
        let text = include_str!("../tests/data/expansion-seed-table.json");
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let mapping = doc["mapping"].as_object().unwrap();
        assert_eq!(mapping.len(), MAPPING.len());
        for (k, v) in MAPPING {
            assert_eq!(mapping[*k].as_str().unwrap(), *v);
        }
        let rows = doc["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 36);
        for row in rows {
            let input = row["input"].as_str().unwrap();
            let expected = row["expected"].as_str().unwrap();
            assert_eq!(exp(input), expected, "input {input:?}");
        }
    }

    /// Cases the seed table does not cover.
    #[test]
    fn edge_cases() {
        let table: &[(&str, &str)] = &[
            ("", ""),
            ("plain", "plain"),
            ("$", "$"),
            ("$$", "$"),
            ("$$$", "$$"),
            ("$()", "$()"),
            ("$(", "$("),
            ("$(VAR_A", "$(VAR_A"),
            ("$(VAR_A)$(VAR_B)", "AB"),
            ("$é", "$é"),
            ("$€x$(VAR_A)", "$€xA"),
            ("$😀", "$😀"),
            ("a$(VAR_EMPTY)", "a"),
            ("$(VAR_A)$", "A$"),
            ("$(VAR_A))", "A)"),
            ("$($(VAR_A))", "$($(VAR_A))"),
            ("$(x)$(VAR_C", "$(x)$(VAR_C"),
        ];
        for (input, expected) in table {
            assert_eq!(exp(input), *expected, "input {input:?}");
        }
    }

    #[test]
    fn substituted_values_are_not_rescanned() {
        assert_eq!(exp("$(VAR_REF)$(VAR_REF)"), "$(VAR_A)$(VAR_A)");
    }

    #[test]
    fn linear_on_adversarial_input() {
        let input = "$(".repeat(200_000);
        assert_eq!(exp(&input), input);
        let dollars = "$".repeat(400_001);
        assert_eq!(exp(&dollars).len(), 200_001);
    }
}
