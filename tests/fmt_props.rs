//! The property of `kubectl envshim fmt` (src/envfile/portable.rs), on thousands of
//! random env files in every form envshim's grammar reads (unquoted, single-
//! and double-quoted values spanning lines, `export`, blanks around `=`,
//! comments inside and after values, duplicates, CRLF): for every file it
//! accepts, its result read with envshim's grammar and with the kubelet's
//! gives exactly the variables envshim's grammar reads from the file, in
//! the same order (a name given more than once keeps its first place), and
//! `fmt` of the result changes nothing; it refuses a file only for a value
//! the kubelet's grammar cannot hold, and fails only a file envshim's
//! grammar fails. The fuzz target `fmt` checks the same on arbitrary bytes.

use envshim::internals::portable::{rewrite, Inexpressible};
use envshim::internals::EnvFile;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

const NAMES: &[&str] = &["A", "B", "DB_URL", "a.b-c", "Logging:Level", "X Y", "export", "#H"];
const PREFIX: &[&str] = &["", "", " ", "\t", "export ", "export\t ", "export export "];
const EQ: &[&str] = &["=", "=", "=", " =", "= ", " = ", "\t=\t"];
const TRAILER: &[&str] = &["", "", " # c", "  ", "\t#x 'q'", "#x"];
const END: &[&str] = &["\n", "\n", "\n", "\r\n"];
const CHARS: &[&str] = &["a", "b", "1", " ", "\t", "#", " #", "'", "\"", "\\", "$", "é", "\n", "\r", "=", "\\n", "\r\n"];
const OTHER: &[&str] = &["# comment\n", "  # it's a comment\n", "\n", "   \n", "\r\n"];

/// One line: another (comment, blank) or an entry of a name, a form and value pieces.
fn line() -> impl Strategy<Value = String> {
    let sel = |s: &'static [&'static str]| prop::sample::select(s);
    let entry =
        (sel(PREFIX), sel(NAMES), sel(EQ), 0..3u8, prop_oneof![19 => prop::collection::vec(sel(CHARS), 1..6), 1 => Just(Vec::new())], sel(TRAILER), sel(END))
            .prop_map(|(prefix, name, eq, form, pieces, trailer, end)| {
                let raw: String = pieces.concat();
                let value = match form {
                    // Unquoted: one line.
                    0 => raw.replace(['\n', '\r'], ""),
                    1 => format!("'{}'", raw.replace('\'', "")),
                    _ => format!("\"{}\"", raw.replace('"', "\\\"")),
                };
                format!("{prefix}{name}{eq}{value}{trailer}{end}")
            });
    prop_oneof![4 => entry, 1 => sel(OTHER).prop_map(String::from)]
}

fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 4000;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0x666d_7470_726f_7073);
    }
    c.failure_persistence = None;
    c
}

/// (name, value) of a parsed file's final key set, in the order of the environment it gives.
fn keys(file: &EnvFile) -> Vec<(Vec<u8>, Vec<u8>)> {
    file.unique_keys().map(|k| (k.name.to_vec(), k.value.to_vec())).collect()
}

/// The property on one file (also run on the fixed cases below).
fn check(data: &[u8]) {
    let shown = String::from_utf8_lossy(data);
    let Ok(original) = EnvFile::parse(data.to_vec()) else {
        assert!(rewrite(data).is_err(), "{shown:?}: fmt accepts a file envshim's grammar fails");
        return;
    };
    let want = keys(&original);
    let p = rewrite(data).unwrap_or_else(|e| panic!("{shown:?}: {e}"));
    let entry_at = |line: u32| original.unique().find(|&(_, _, l)| l == line).map(|(n, v, _)| (n.to_vec(), v.to_vec()));
    if let Some((line, why)) = p.refused() {
        let entry = entry_at(line);
        let value = entry.clone().map(|(_, v)| v);
        let holds = match why {
            Inexpressible::Quote => value.is_some_and(|v| v.contains(&b'\'')),
            Inexpressible::Empty => value.is_some_and(|v| v.is_empty()),
            Inexpressible::CrLf => value.is_some_and(|v| v.windows(2).any(|w| w == b"\r\n")),
            Inexpressible::Name => entry.is_some_and(|(n, _)| n.starts_with(b"#") || n.starts_with(b"export ") || n.starts_with(b"export\t")),
            Inexpressible::LongLine => p.text.len() >= 65_536 && !p.text.contains(&b'\n'),
            Inexpressible::TooLarge => p.text.len() > 65_536,
        };
        assert!(holds, "{shown:?}: refused for {why:?} on line {line}");
        return;
    }
    // Nothing refused: no value of the file is one the kubelet cannot hold.
    for (n, v) in &want {
        assert!(!n.starts_with(b"#") && !n.starts_with(b"export ") && !n.starts_with(b"export\t"), "{shown:?}: a name export hid not refused");
        assert!(!v.is_empty() && !v.contains(&b'\'') && !v.windows(2).any(|w| w == b"\r\n"), "{shown:?}: not refused");
    }
    let out = String::from_utf8_lossy(&p.text);
    let envshim = EnvFile::parse(p.text.clone()).unwrap_or_else(|e| panic!("{shown:?} -> {out:?}: {e}"));
    assert_eq!(keys(&envshim), want, "{shown:?} -> {out:?}: envshim's grammar");
    let kubelet = EnvFile::parse_kubelet(p.text.clone()).unwrap();
    assert_eq!(kubelet.stop(), None, "{shown:?} -> {out:?}: the kubelet fails");
    assert_eq!(keys(&kubelet), want, "{shown:?} -> {out:?}: the kubelet's grammar");
    let again = rewrite(&p.text).unwrap();
    assert_eq!(again.text, p.text, "{shown:?}: not idempotent");
    assert!(again.fixes.is_empty(), "{out:?}: {:?}", again.fixes);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fmt_output_reads_alike_in_both_grammars(lines in prop::collection::vec(line(), 0..14), last_end in any::<bool>()) {
        let mut data = lines.concat();
        if last_end && data.ends_with('\n') {
            data.pop();
        }
        check(data.as_bytes());
    }
}

/// The cases the generator may reach only rarely, written out.
#[test]
fn fixed_cases_hold_the_property() {
    for case in [
        "K='a\n# kept\nb'\n",
        "K=\"a\\r\\nb\"\n",
        "K=v\r",
        "K=''",
        "K=x\nK=it's\n",
        "K=it's\nK=x\n",
        "export  K =  v  # c\n",
        "K=\"#x\" #y\n",
        "K= #c\n",
        "  # c\n\nK=\"a'b\"\n",
        "export=1\nexport #\\\"= A=QQoNEL=3\n",
        "export=1\nexport export L=3\x08",
        "A='1'\nB='2'\nA='3'\n",
        "A=1\r\nB=2 # b\nexport A = \"x\ny\" # last\nC=3\nA=4\r",
    ] {
        check(case.as_bytes());
    }
    // 65,536 bytes of short lines, the last without a line feed: the kubelet's
    // reader takes each line on its own.
    let mut long = String::new();
    while long.len() < 65_536 - 120 {
        long += &format!("K{}='{}'\n", long.len(), "v".repeat(100));
    }
    long += &format!("LAST='{}'", "w".repeat(65_536 - long.len() - 7));
    assert_eq!((long.len(), long.lines().count()), (65_536, 597));
    check(long.as_bytes());
}
