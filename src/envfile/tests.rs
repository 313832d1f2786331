use super::*;

fn problem_named(name: &str) -> Problem {
    use Problem::*;
    [
        TooLarge,
        ByteOrderMark,
        InvalidUtf8,
        NoEquals,
        EmptyName,
        InvalidName,
        NameTooLong,
        ValueTooLong,
        NulInValue,
        UnclosedSingleQuote,
        UnclosedDoubleQuote,
        TextAfterQuote,
    ]
    .into_iter()
    .find(|p| format!("{p:?}") == name)
    .unwrap_or_else(|| panic!("unknown problem {name}"))
}

/// Every row of tests/data/envfile-grammar.json.
#[test]
fn grammar_table() {
    let doc: serde_json::Value = serde_json::from_str(include_str!("../../tests/data/envfile-grammar.json")).unwrap();
    let sentinel = doc["sentinel"].as_str().unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert!(rows.len() > 40);
    for row in rows {
        let rule = row["rule"].as_str().unwrap();
        let input = row["input"].as_str().unwrap();
        let parsed = EnvFile::parse(input.as_bytes().to_vec());
        if let Some(want) = row.get("error") {
            let e = parsed.expect_err(rule);
            assert_eq!(e.line as u64, want["line"].as_u64().unwrap(), "{rule}");
            assert_eq!(e.problem, problem_named(want["problem"].as_str().unwrap()), "{rule}");
            assert!(!e.to_string().contains(sentinel), "{rule}");
        } else {
            let file = parsed.unwrap_or_else(|e| panic!("{rule}: {e}"));
            let got: Vec<(String, String, u64)> =
                file.iter().map(|(n, v, l)| (String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap(), l as u64)).collect();
            let want: Vec<(String, String, u64)> = row["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e[0].as_str().unwrap().into(), e[1].as_str().unwrap().into(), e[2].as_u64().unwrap()))
                .collect();
            assert_eq!(got, want, "{rule}");
        }
    }
}

#[test]
fn invalid_utf8_names_the_line() {
    let e = EnvFile::parse(b"A=1\nB=2\nC=\xff\xfe\n".to_vec()).unwrap_err();
    assert_eq!((e.line, e.problem), (3, Problem::InvalidUtf8));
    let e = EnvFile::parse(b"A='x\n\xc3'\n".to_vec()).unwrap_err();
    assert_eq!((e.line, e.problem), (2, Problem::InvalidUtf8));
}

#[test]
fn file_limit_is_inclusive() {
    let mut at = b"A=".to_vec();
    at.resize(MAX_ENV_FILE_BYTES, b'#');
    // "A=####..." is one value longer than the value limit; make it a comment file instead.
    at[0] = b'#';
    assert!(EnvFile::parse(at.clone()).is_ok());
    at.push(b'#');
    assert_eq!(EnvFile::parse(at).unwrap_err(), ParseError { line: 0, problem: Problem::TooLarge });
}

#[test]
fn name_limit_is_inclusive() {
    let name = "N".repeat(MAX_NAME_BYTES);
    let f = EnvFile::parse(format!("{name}=v\n").into_bytes()).unwrap();
    assert_eq!(f.iter().next().unwrap().0.len(), MAX_NAME_BYTES);
    let e = EnvFile::parse(format!("A=1\n{name}X=v\n").into_bytes()).unwrap_err();
    assert_eq!((e.line, e.problem), (2, Problem::NameTooLong));
}

#[test]
fn value_limit_is_inclusive_in_every_form() {
    let v = "v".repeat(MAX_VALUE_BYTES);
    for form in ["A={}\n", "A='{}'\n", "A=\"{}\"\n", "A=\"\\${}\"\n"] {
        let at = if form.contains("\\$") { form.replace("{}", &v[1..]) } else { form.replace("{}", &v) };
        let f = EnvFile::parse(at.into_bytes()).unwrap_or_else(|e| panic!("{form}: {e}"));
        assert_eq!(f.get(b"A").unwrap().unwrap().0.len(), MAX_VALUE_BYTES, "{form}");
        let over = form.replace("{}", &format!("{v}w"));
        let e = EnvFile::parse(over.into_bytes()).unwrap_err();
        assert_eq!((e.line, e.problem), (1, Problem::ValueTooLong), "{form}");
    }
}

#[test]
fn get_returns_last_occurrence() {
    let f = EnvFile::parse(b"A=1\nB=x\nA=2\nC=\nA=3\n".to_vec()).unwrap();
    assert_eq!(f.get(b"A"), Ok(Some((&b"3"[..], 5))));
    assert_eq!(f.get(b"B"), Ok(Some((&b"x"[..], 2))));
    assert_eq!(f.get(b"C"), Ok(Some((&b""[..], 4))));
    assert_eq!(f.get(b"D"), Ok(None));
    assert_eq!(f.len(), 5);
}

#[test]
fn error_messages_name_only_the_line() {
    for (input, msg) in [(&b"x"[..], "line 1: has no '=' (expected NAME=VALUE)"), (b"A='", "line 1: opens a single quote that is never closed")] {
        assert_eq!(EnvFile::parse(input.to_vec()).unwrap_err().to_string(), msg);
    }
}

#[test]
fn unique_is_each_name_once_at_its_first_place_with_its_last_value() {
    let f = EnvFile::parse(b"A=1\nB=2\nA=3\nC=4\nB=5\nA=6\n".to_vec()).unwrap();
    let got: Vec<_> = f.unique().collect();
    assert_eq!(got, vec![(&b"A"[..], &b"6"[..], 6), (&b"B"[..], &b"5"[..], 5), (&b"C"[..], &b"4"[..], 4)]);
    assert_eq!(f.unique_len(), 3);
    assert_eq!(f.len(), 6);
}

/// Keys written `NAME=VALUE` and followed by a blank or line ending, and
/// quoted ones on one line with nothing after the closing quote and no
/// escape, are NUL-terminated in the file's bytes for `execve`; the others
/// (blanks around `=`, escapes, a comment after a quote, `export`, the last
/// line without a newline) are not, and no name or value changes either way.
#[test]
fn name_value_strings_in_place() {
    let text = "A=1\nB = 2\nC=3 \t\r\nD=\"q\"\nexport E=5\nF=\nG=x\tH=y   \nJ='s p'\r\nK=\"a\\\\b\"\nL='x' # c\nM=''\nN=\"\"\nI=last";
    let f = EnvFile::parse(text.as_bytes().to_vec()).unwrap();
    let got: Vec<(String, String, Option<String>)> = f
        .unique_keys()
        .map(|k| {
            let place = k.in_place.map(|at| {
                let n = k.name.len() + 1 + k.value.len();
                assert_eq!(f.raw()[at + n], 0, "{:?}", k.name);
                String::from_utf8(f.raw()[at..at + n].to_vec()).unwrap()
            });
            (String::from_utf8(k.name.to_vec()).unwrap(), String::from_utf8(k.value.to_vec()).unwrap(), place)
        })
        .collect();
    let s = |v: &str| v.to_string();
    assert_eq!(
        got,
        [
            (s("A"), s("1"), Some(s("A=1"))),
            (s("B"), s("2"), None),
            (s("C"), s("3"), Some(s("C=3"))),
            (s("D"), s("q"), Some(s("D=q"))),
            (s("E"), s("5"), Some(s("E=5"))),
            (s("F"), s(""), Some(s("F="))),
            (s("G"), s("x\tH=y"), Some(s("G=x\tH=y"))),
            (s("J"), s("s p"), Some(s("J=s p"))),
            (s("K"), s("a\\b"), None),
            (s("L"), s("x"), None),
            (s("M"), s(""), Some(s("M="))),
            (s("N"), s(""), Some(s("N="))),
            (s("I"), s("last"), None),
        ]
    );
    // The parse of the same bytes sees the same entries: the NULs went over no name or value.
    let again: Vec<_> = f.iter().map(|(n, v, l)| (n.to_vec(), v.to_vec(), l)).collect();
    let fresh = EnvFile::parse(text.as_bytes().to_vec()).unwrap();
    assert_eq!(again, fresh.iter().map(|(n, v, l)| (n.to_vec(), v.to_vec(), l)).collect::<Vec<_>>());
}

/// `unique_bytes` is the names and values of the final key set, the last value of a name counting.
#[test]
fn unique_bytes_counts_the_final_key_set() {
    for text in ["", "A=1\n", "A=1\nA=22\nBB=\"x\\ny\"\nA=\n", "# c\nK=v\nK='long value'\nL=2\nK=3"] {
        let f = EnvFile::parse(text.as_bytes().to_vec()).unwrap();
        let sum: usize = f.unique().map(|(k, v, _)| k.len() + v.len()).sum();
        assert_eq!(f.unique_bytes(), sum, "{text:?}");
    }
}

// ---------------------------------------------------------------------------
// The parse against docs/reference.md §4 read literally (the fuzz target's reference,
// fuzz/fuzz_targets/envfile.rs), on generated files that mix the shapes the
// parse's fast path takes and every one it leaves to the general path.

/// A small deterministic generator (xorshift), so the test needs no crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Pieces of lines: plain names and values of lengths around the word size,
/// and every byte the parse treats specially.
const PIECES: &[&[u8]] = &[
    b"A",
    b"NAME",
    b"APP_CONFIG_KEY_0001",
    b"x",
    b"value",
    b"v1234567",
    b"=",
    b"==",
    b" ",
    b"\t",
    b"\n",
    b"\r\n",
    b"\r",
    b"#",
    b" #",
    b"'",
    b"\"",
    b"\\",
    b"\\n",
    b"export ",
    b"export",
    b"\0",
    b"\x01",
    b"\x7f",
    b"\xc3\xa9",
    b"~!@",
    b"$(X)",
    b"a.b-c:d",
];

/// A line (without its ending) for the differential tests: mostly
/// `NAME=VALUE`, some with pieces inserted anywhere, a few at the limits.
fn random_line(rng: &mut Rng, long_name: &[u8], long_value: &[u8]) -> Vec<u8> {
    // Mostly `NAME=VALUE` lines, some of them with pieces inserted anywhere.
    let mut line = Vec::new();
    if rng.below(4) != 0 {
        for _ in 0..1 + rng.below(3) {
            line.extend_from_slice(PIECES[rng.below(3)]);
        }
        line.push(b'=');
        for _ in 0..rng.below(4) {
            line.extend_from_slice(PIECES[3 + rng.below(3)]);
        }
    }
    for _ in 0..rng.below(3) {
        let at = rng.below(line.len() + 1);
        let piece = PIECES[rng.below(PIECES.len())];
        line.splice(at..at, piece.iter().copied());
    }
    match rng.below(40) {
        0 => line.splice(0..0, long_name.iter().copied().chain(*b"=")).for_each(drop),
        1 => line.splice(0..0, long_name.iter().copied().chain(*b"X=")).for_each(drop),
        2 => line.extend_from_slice(long_value),
        3 => line.extend_from_slice(&long_value[1..]),
        _ => {}
    }
    line
}

#[test]
fn parse_is_the_literal_reading_of_the_spec() {
    let mut rng = Rng(0x656e_7673_6869_6d32);
    let long_name = [b'N'; MAX_NAME_BYTES];
    let long_value = vec![b'v'; MAX_VALUE_BYTES];
    for case in 0..60_000 {
        let mut data = Vec::new();
        for _ in 0..rng.below(6) {
            let line = random_line(&mut rng, &long_name, &long_value);
            data.extend_from_slice(&line);
            if rng.below(8) != 0 {
                data.extend_from_slice(if rng.below(6) == 0 { b"\r\n" } else { b"\n" });
            }
        }
        if std::str::from_utf8(&data).is_err() || data.len() > MAX_ENV_FILE_BYTES {
            continue;
        }
        let parsed = EnvFile::parse(data.clone());
        let got = parsed
            .as_ref()
            .map(|f| f.iter().map(|(n, v, l)| (n.to_vec(), v.to_vec(), l as usize)).collect::<reference::Entries>())
            .map_err(|e| (e.line, e.problem));
        assert_eq!(got, reference::reference(&data), "case {case}: {:?}", String::from_utf8_lossy(&data));
        if let Ok(f) = parsed {
            // Each in-place string is `NAME=VALUE` and a NUL, and the final key set's bytes add up.
            for k in f.unique_keys() {
                if let Some(at) = k.in_place {
                    let n = k.name.len() + 1 + k.value.len();
                    assert_eq!(&f.raw()[at..at + n], [k.name, b"=", k.value].concat(), "case {case}");
                    assert_eq!(f.raw()[at + n], 0, "case {case}");
                }
                assert_eq!(f.get(k.name), Ok(Some((k.value, k.line))));
            }
            assert_eq!(f.unique_bytes(), f.unique().map(|(n, v, _)| n.len() + v.len()).sum::<usize>());
        }
    }
}

/// The fast path reads each line it takes as the general parser, its
/// specification, does: the same name, value and next line, and a value the
/// general parser's later checks (limit, NUL) accept.
#[test]
fn fast_path_reads_a_line_as_the_general_parser_does() {
    let mut rng = Rng(0x6661_7374_7061_7468);
    let long_name = [b'N'; MAX_NAME_BYTES];
    let long_value = vec![b'v'; MAX_VALUE_BYTES];
    let mut taken = 0;
    for _ in 0..60_000 {
        let mut data = random_line(&mut rng, &long_name, &long_value);
        data.extend_from_slice([&b""[..], b"\n", b"\r\n", b"\r", b"\nB=2\n"][rng.below(5)]);
        if data.is_empty() {
            continue; // (the parse asks only for a line that has a byte)
        }
        let mut bytes = data.clone();
        let Some(fast) = fast::one_line(&mut bytes, 0) else {
            assert_eq!(bytes, data, "a line the fast path leaves is untouched");
            continue;
        };
        taken += 1;
        let mut arena = Vec::new();
        let Ok(general::Read::Entry(general)) = general::line(&data, 0, 1, &mut arena) else {
            panic!("the general parser reads an entry: {:?}", String::from_utf8_lossy(&data));
        };
        let value = if general.value.in_arena { &arena[..] } else { &data[..] };
        let value = &value[general.value.start as usize..general.value.end as usize];
        let what = String::from_utf8_lossy(&data);
        assert_eq!(&bytes[fast.name.clone()], &data[general.name.clone()], "{what:?}");
        assert_eq!(&bytes[fast.value.start as usize..fast.value.end as usize], value, "{what:?}");
        assert_eq!((fast.next, fast.lines, general.lines), (general.next, 1, 1), "{what:?}");
        assert!(value.len() <= MAX_VALUE_BYTES && !value.contains(&0), "{what:?}");
    }
    assert!(taken > 10_000, "{taken}");
}

/// The fast path's scans stop where a byte-by-byte reading of their sets
/// does: every byte value at every place of data of every length up to 40
/// (blocks and the bytes after them; sixteen a step and eight), and every
/// start against every place.
///
/// Not every byte from every start: a scan's marks of a block or a word are
/// a function of its bytes alone, and the start only chooses the blocks and
/// how far the last one is shifted. So every byte value is read at every
/// place (each lane of a block, of a word, of the last block read again from
/// the end, of a short copy) from the start, from itself and from just past
/// it (in the last block, never found), and every start is tried with a byte
/// of each kind the four sets tell apart. The same coverage, in a fraction
/// of the time the full product took.
#[test]
fn scans_stop_at_the_first_byte_of_their_set() {
    let value_stop = |b: u8| b <= b' ';
    let single_stop = |b: u8| b < b' ' || b == b'\'';
    let double_stop = |b: u8| b < b' ' || b == b'"' || b == b'\\';
    let name_stop = |b: u8| b <= b' ' || b == b'=' || b >= 0x7f;
    let first = |data: &[u8], i: usize, stop: &dyn Fn(u8) -> bool| (i..data.len()).find(|&k| stop(data[k])).unwrap_or(data.len());
    let check = |data: &[u8], i: usize, what: &dyn Fn() -> String| {
        let (value, name) = (first(data, i, &value_stop), first(data, i, &name_stop));
        let (single, double) = (first(data, i, &single_stop), first(data, i, &double_stop));
        assert_eq!(scan::control_or_blank(data, i), value, "value: {}", what());
        assert_eq!(scan::not_in_plain_name(data, i), name, "name: {}", what());
        assert_eq!(scan::quote_or_control(data, i, b'\'', b'\''), single, "': {}", what());
        assert_eq!(scan::quote_or_control(data, i, b'"', b'\\'), double, "\": {}", what());
        // The word-at-a-time scans (other targets) too.
        assert_eq!(scan::words::control_or_blank(data, i), value, "value: {}", what());
        assert_eq!(scan::words::not_in_plain_name(data, i), name, "name: {}", what());
        assert_eq!(scan::words::quote_or_control(data, i, b'\'', b'\''), single, "': {}", what());
        assert_eq!(scan::words::quote_or_control(data, i, b'"', b'\\'), double, "\": {}", what());
    };
    for len in 0..=40 {
        for at in 0..len {
            let mut data = vec![b'a'; len];
            for b in 0u8..=255 {
                data[at] = b;
                for i in [0, at, at + 1] {
                    check(&data, i, &|| format!("{b} at {at} of {len} from {i}"));
                }
            }
            // In all four sets, in some, in none; each set's edges.
            for b in [0, 0x1f, b' ', b'!', b'"', b'\'', b'=', b'\\', b'a', 0x7e, 0x7f, 0x80, 0xff] {
                data[at] = b;
                for i in 0..=len {
                    check(&data, i, &|| format!("{b} at {at} of {len} from {i}"));
                }
            }
        }
    }
    // Several marked bytes (the first one found must be the first one).
    let mut rng = Rng(0x7363_616e_7332);
    let alphabet =
        [0u8, 1, b'\t', b'\n', b'\r', b' ', b'!', b'=', b'\'', b'"', b'\\', 0x1f, 0x20, b'<', b'>', b'a', b'~', 0x7f, 0x80, 0xa0, 0xa1, 0xc3, 0xfe, 0xff];
    for _ in 0..20_000 {
        let data: Vec<u8> = (0..rng.below(48)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        for i in 0..=data.len() {
            check(&data, i, &|| format!("{data:?} from {i}"));
        }
    }
}

/// Files of short lines outgrow the entries' first room (sized for 64-byte
/// lines): every entry is kept, up to the most a file at its limit holds.
#[test]
fn entries_grow_past_their_first_room() {
    for n in [1, 15, 16, 17, 100, 1_000, 5_000] {
        let text: String = (0..n).map(|i| format!("K{i}={i}\n")).collect();
        let f = EnvFile::parse(text.into_bytes()).unwrap();
        assert_eq!((f.len(), f.unique_len()), (n, n));
        assert_eq!(f.get(format!("K{}", n - 1).as_bytes()), Ok(Some((format!("{}", n - 1).as_bytes(), n as u32))));
    }
    // `A=` and a newline, 21,845 times: the most entries 64 KiB holds.
    let most = b"A=\n".repeat(MAX_ENV_FILE_BYTES / 3);
    let f = EnvFile::parse(most).unwrap();
    assert_eq!((f.len(), f.unique_len()), (MAX_ENV_FILE_BYTES / 3, 1));
    assert_eq!(f.get(b"A"), Ok(Some((&b""[..], (MAX_ENV_FILE_BYTES / 3) as u32))));
}

/// Random files of the forms the two grammars read differently, and every
/// name in them asked for: `parse_kubelet` and its `get` give what the
/// literal reading of docs/reference.md §4.1 gives (the value, not found, or
/// the line the read fails on), and the lint never fails on a line it reads.
#[test]
fn the_kubelet_grammar_is_the_literal_reading_of_the_spec() {
    let mut rng = Rng(0x6b75_6265_6c65_7421);
    let pieces: [&[u8]; 24] = [
        b"K",
        b"L",
        b"export K",
        b"=",
        b"'",
        b"''",
        b"\"",
        b" ",
        b"\t",
        b"#",
        b"\n",
        b"\r\n",
        b"\r",
        b"v",
        b"x y",
        b"$(K)",
        b"\\",
        b"\0",
        b"=",
        b"\n#c\n",
        b"K='v'\n",
        b"L='a\nb'\n",
        b"K= 'w'\n",
        b"\xef\xbb\xbf",
    ];
    for _ in 0..20_000 {
        let mut data = Vec::new();
        for _ in 0..rng.below(14) {
            data.extend_from_slice(pieces[rng.below(pieces.len())]);
        }
        let parsed = EnvFile::parse_kubelet(data.clone());
        for key in [&b"K"[..], b"L", b"export K", b"v", b"x y"] {
            let expected = reference::kubelet_value(&data, key);
            let got = match &parsed {
                Ok(f) => f.get(key).map(|v| v.map(|(v, _)| v.to_vec())).map_err(|e| e.line),
                Err(e) => Err(e.line),
            };
            assert_eq!(got, expected, "{:?} for {:?}", String::from_utf8_lossy(&data), String::from_utf8_lossy(key));
        }
        let linted = kubelet::lint(&data);
        if let Ok(Some(_)) = reference::kubelet_value(&data, b"K") {
            // K was read: no failing line before K's.
            let k_line = parsed.as_ref().unwrap().get(b"K").unwrap().unwrap().1;
            assert!(linted.iter().all(|(l, f)| !matches!(f, kubelet::Finding::Fails(_)) || *l > k_line), "{:?}: {linted:?}", String::from_utf8_lossy(&data));
        }
    }
}

/// A value [`written`] (`render --show-values`) reads back as itself.
#[test]
fn a_written_value_reads_back_as_itself() {
    let values: &[&[u8]] = &[
        b"plain",
        b"",
        b"a b",
        b" lead",
        b"trail ",
        b"x #c",
        b"#x",
        b"q\"q",
        b"s'q",
        b"back\\slash",
        b"$(VAR)",
        b"multi\nline",
        b"cr\rlf\r\n",
        b"tab\t",
        b"'single'",
        b"\"double\"",
        "caf\u{e9}".as_bytes(),
    ];
    for v in values {
        let mut file = b"K=".to_vec();
        file.extend_from_slice(&written(v));
        file.push(b'\n');
        let parsed = EnvFile::parse(file.clone()).unwrap_or_else(|e| panic!("{:?}: {e}", String::from_utf8_lossy(&file)));
        assert_eq!(parsed.get(b"K").unwrap().unwrap().0, *v, "{:?}", String::from_utf8_lossy(v));
    }
}
