use super::*;

fn problem_named(name: &str) -> Problem {
    use Problem::*;
    [
        TooLarge, ByteOrderMark, InvalidUtf8, NoEquals, EmptyName, InvalidName, NameTooLong, ValueTooLong,
        NulInValue, UnclosedSingleQuote, UnclosedDoubleQuote, TextAfterQuote,
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
            let got: Vec<(String, String, u64)> = file
                .iter()
                .map(|(n, v, l)| (String::from_utf8(n.to_vec()).unwrap(), String::from_utf8(v.to_vec()).unwrap(), l as u64))
                .collect();
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
        assert_eq!(f.get(b"A").unwrap().0.len(), MAX_VALUE_BYTES, "{form}");
        let over = form.replace("{}", &format!("{v}w"));
        let e = EnvFile::parse(over.into_bytes()).unwrap_err();
        assert_eq!((e.line, e.problem), (1, Problem::ValueTooLong), "{form}");
    }
}

#[test]
fn get_returns_last_occurrence() {
    let f = EnvFile::parse(b"A=1\nB=x\nA=2\nC=\nA=3\n".to_vec()).unwrap();
    assert_eq!(f.get(b"A"), Some((&b"3"[..], 5)));
    assert_eq!(f.get(b"B"), Some((&b"x"[..], 2)));
    assert_eq!(f.get(b"C"), Some((&b""[..], 4)));
    assert_eq!(f.get(b"D"), None);
    assert_eq!(f.len(), 5);
}

#[test]
fn error_messages_name_only_the_line() {
    for (input, msg) in [
        (&b"x"[..], "line 1: has no '=' (expected NAME=VALUE)"),
        (b"A='", "line 1: opens a single quote that is never closed"),
    ] {
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

/// Keys written `NAME=VALUE` and followed by a blank or line ending are
/// NUL-terminated in the file's bytes for `execve`; the others (blanks around
/// `=`, quotes, `export`, the last line without a newline) are not, and no
/// name or value changes either way.
#[test]
fn name_value_strings_in_place() {
    let text = "A=1\nB = 2\nC=3 # c\r\nD=\"q\"\nexport E=5\nF=\nG=x\tH=y   \nI=last";
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
            (s("D"), s("q"), None),
            (s("E"), s("5"), Some(s("E=5"))),
            (s("F"), s(""), Some(s("F="))),
            (s("G"), s("x\tH=y"), Some(s("G=x\tH=y"))),
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
