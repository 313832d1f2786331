use super::import::*;
use super::platform::*;
use super::*;
use crate::limits::MAX_SHOWN_NAME_BYTES;

fn url(host: &str, port: &str) -> Option<String> {
    let mut env = Environment::default();
    env.set(b"KUBERNETES_SERVICE_HOST", host, Source::Inherited);
    env.set(b"KUBERNETES_SERVICE_PORT", port, Source::Inherited);
    service_url(&env).map(|u| String::from_utf8(u).unwrap())
}

#[test]
fn service_url_table() {
    assert_eq!(url("10.0.0.1", "443").as_deref(), Some("https://10.0.0.1:443"));
    assert_eq!(url("kubernetes.default", "6443").as_deref(), Some("https://kubernetes.default:6443"));
    assert_eq!(url("fd00::1", "443").as_deref(), Some("https://[fd00::1]:443"));
    assert_eq!(url("1080::8:800:200C:417A", "6443").as_deref(), Some("https://[1080::8:800:200C:417A]:6443"));
    assert_eq!(url("[fd00::1]", "443").as_deref(), Some("https://[fd00::1]:443"));
    assert_eq!(url("", "443"), None);
    assert_eq!(url("h", ""), None);
}

#[test]
fn shown_names_keep_the_key_and_cut_a_long_prefix() {
    assert_eq!(shown_name(b"P_", b"1KEY"), "P_1KEY");
    assert_eq!(shown_name(b"", b"a\\b"), "a\\\\b");
    let long = shown_name(&[b'='; 10_000], b"KEY");
    assert_eq!(long.len(), MAX_SHOWN_NAME_BYTES);
    assert!(long.starts_with("====") && long.ends_with("=...KEY"), "{long}");
}

#[test]
fn set_keeps_first_position_and_takes_last_value() {
    let mut env = Environment::default();
    env.set(b"A", b"1", Source::Inherited);
    env.set(b"B", b"2", Source::Inherited);
    env.set(b"A", b"3", Source::CliEnv);
    let got: Vec<_> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec(), v.source.clone())).collect();
    assert_eq!(got, vec![(b"A".to_vec(), b"3".to_vec(), Source::CliEnv), (b"B".to_vec(), b"2".to_vec(), Source::Inherited)]);
}

#[test]
fn remove_keeps_the_order_and_the_index_of_the_rest() {
    let mut env = Environment::default();
    for n in ["A", "B", "C", "D"] {
        env.set(n.as_bytes(), n, Source::Inherited);
    }
    let before = env.exec_bytes();
    env.remove(b"B");
    env.remove(b"nope");
    let names: Vec<_> = env.vars().map(|v| v.name.to_vec()).collect();
    assert_eq!(names, [b"A".to_vec(), b"C".to_vec(), b"D".to_vec()]);
    assert_eq!(env.get(b"D"), Some(&b"D"[..]));
    assert_eq!(env.get(b"B"), None);
    assert_eq!(env.exec_bytes(), before - (1 + 1 + 1 + 1 + std::mem::size_of::<usize>()));
    env.set(b"D", b"x", Source::CliEnv);
    assert_eq!(env.vars().nth(2).unwrap().value, b"x");
}

#[test]
fn a_name_set_again_after_its_removal_comes_last() {
    let mut env = Environment::default();
    for n in ["A", "B", "C"] {
        env.set(n.as_bytes(), n, Source::Inherited);
    }
    env.remove(b"A");
    env.remove(b"A");
    assert_eq!((env.len(), env.get(b"A")), (2, None));
    env.set(b"A", b"again", Source::CliEnv);
    let got: Vec<_> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec())).collect();
    assert_eq!(got, [(b"B".to_vec(), b"B".to_vec()), (b"C".to_vec(), b"C".to_vec()), (b"A".to_vec(), b"again".to_vec())]);
    assert_eq!(env.get(b"A"), Some(&b"again"[..]));
    env.remove(b"A");
    assert_eq!(env.get(b"A"), None);
    assert_eq!(env.string_bytes(), env.vars().map(|v| v.text.len() + 1).sum::<usize>());
}

/// What `--file-env` does for each of 20,000 names: set NAME, remove
/// NAME_FILE; replaced values compacted on the way. Every string stays
/// where `envp` will point, and nothing removed is left in it.
#[test]
fn many_removals_between_sets_and_compactions() {
    let mut env = Environment::default();
    let n = 20_000;
    for i in 0..n {
        env.set(format!("S{i}_FILE").as_bytes(), format!("/run/secrets/{i}"), Source::Inherited);
    }
    for i in 0..n {
        env.set(format!("S{i}").as_bytes(), vec![b'v'; 100], Source::FileEnv("f".into()));
        env.set(format!("S{i}").as_bytes(), format!("{i}"), Source::FileEnv("f".into()));
        env.remove(format!("S{i}_FILE").as_bytes());
    }
    assert_eq!(env.len(), n);
    let p = env.pointers();
    assert_eq!(p.len(), n + 1);
    for (i, (v, &ptr)) in env.vars().zip(&p).enumerate() {
        assert_eq!(v.text, format!("S{i}={i}").as_bytes());
        assert_eq!(v.text.as_ptr(), ptr.cast());
    }
    assert_eq!(env.exec_bytes(), env.string_bytes() + n * std::mem::size_of::<usize>());
}

#[test]
fn file_strings_used_in_place_survive_replacement_and_compaction() {
    let file = Rc::new(EnvFile::parse(b"A=1\nB = 2\nC=3\nA=4\n".to_vec()).unwrap());
    let mut env = Environment::default();
    env.set(b"C", b"inherited", Source::Inherited);
    let held = env.hold(&file).unwrap();
    assert!(env.hold(&file).is_some_and(|h| h.0 == held.0));
    for k in file.unique_keys() {
        let origin = env.origin(Source::EnvFrom { file: "f".into(), line: k.line });
        env.set_in_place(held, &k, origin);
    }
    let raw = file.raw().as_ptr_range();
    // A (its last value) and C point into the file; B (blanks around `=`) was copied.
    let texts: Vec<(&[u8], bool)> = env.vars().map(|v| (v.text, raw.contains(&v.text.as_ptr()))).collect();
    assert_eq!(texts, [(&b"C=3"[..], true), (&b"A=4"[..], true), (&b"B=2"[..], false)]);
    // Replacing an in-place string leaves no dead bytes in the buffer; compaction keeps it.
    let before = env.string_bytes();
    for i in 0..20_000u32 {
        env.set(b"N", i.to_string(), Source::CliEnv);
    }
    env.set(b"A", b"x", Source::CliEnv);
    assert_eq!(env.get(b"C"), Some(&b"3"[..]));
    assert_eq!(env.get(b"A"), Some(&b"x"[..]));
    assert_eq!(env.string_bytes(), before - 4 + 4 + 8);
    for (v, &p) in env.vars().zip(&env.pointers()) {
        assert_eq!(p.cast::<u8>(), v.text.as_ptr());
    }
    // Each `NAME=VALUE` is followed by a NUL in its buffer.
    for s in env.vars.iter().filter(|s| !s.removed()) {
        let buf = match s.file {
            0 => &env.texts.strings[..],
            f => env.texts.files[f as usize - 1].raw(),
        };
        assert_eq!(buf[s.start as usize + s.len as usize], 0);
    }
    env.remove(b"C");
    assert_eq!(env.get(b"C"), None);
    assert_eq!(env.vars().map(|v| v.name).collect::<Vec<_>>(), [&b"A"[..], b"B", b"N"]);
}

#[test]
fn compaction_in_place_keeps_every_variable_and_its_order() {
    // Variables replaced in a scattered order with values of many sizes:
    // their strings are in the buffer out of the variables' order, and
    // each compaction (dead bytes past the live ones and 64 KiB) moves them.
    let mut env = Environment::default();
    let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut compactions = 0;
    for round in 0..3_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let name = format!("V{}", x % 40).into_bytes();
        let value = vec![b'a' + (round % 26) as u8; (x >> 8) as usize % 3_000];
        let dead = env.dead;
        env.set(&name, &value, Source::CliEnv);
        compactions += usize::from(env.dead < dead);
        match model.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => model.push((name, value)),
        }
        let got: Vec<(Vec<u8>, Vec<u8>)> = env.vars().map(|v| (v.name.to_vec(), v.value.to_vec())).collect();
        assert_eq!(got, model, "round {round}");
    }
    assert!(compactions > 10, "only {compactions} compactions");
    assert_eq!(env.string_bytes(), model.iter().map(|(n, v)| n.len() + v.len() + 2).sum::<usize>());
    assert!(env.texts.strings.len() - env.dead == env.string_bytes());
}

#[test]
fn at_most_max_held_files() {
    let mut env = Environment::default();
    let files: Vec<Rc<EnvFile>> = (0..=MAX_HELD_FILES).map(|i| Rc::new(EnvFile::parse(format!("K{i}=v\n").into_bytes()).unwrap())).collect();
    for (i, f) in files.iter().enumerate() {
        let held = env.hold(f);
        assert_eq!(held.is_some(), i < MAX_HELD_FILES);
        let k = f.unique_keys().next().unwrap();
        match held {
            Some(h) => {
                let origin = env.origin(Source::Inherited);
                env.set_in_place(h, &k, origin)
            }
            None => env.set_hashed(k.name, k.hash, k.value, Source::Inherited),
        }
    }
    assert_eq!(env.len(), MAX_HELD_FILES + 1);
    assert_eq!(env.get(format!("K{MAX_HELD_FILES}").as_bytes()), Some(&b"v"[..]));
}

#[test]
fn replaced_values_are_compacted_away_and_envp_points_at_the_live_strings() {
    let mut env = Environment::default();
    env.set(b"KEEP", b"k", Source::Inherited);
    let big = vec![b'v'; 10_000];
    for i in 0..1_000u32 {
        env.set(b"BIG", &big, Source::ManifestEnv(i as usize));
        env.set(b"N", i.to_string(), Source::CliEnv);
    }
    // 10 MB were written; the buffer keeps at most the live bytes and 64 KiB more, twice.
    assert!(env.texts.strings.len() <= 2 * (env.string_bytes() + (64 << 10)), "{}", env.texts.strings.len());
    assert_eq!(env.get(b"N"), Some(&b"999"[..]));
    assert_eq!(env.get(b"BIG"), Some(&big[..]));
    assert_eq!(env.get(b"KEEP"), Some(&b"k"[..]));
    let p = env.pointers();
    assert_eq!(p.len(), 4);
    assert!(p[3].is_null());
    for (v, &ptr) in env.vars().zip(&p) {
        // Each pointer is at its variable's text, which a NUL ends.
        assert_eq!(ptr.cast::<u8>(), v.text.as_ptr());
        let at = v.text.as_ptr() as usize - env.texts.strings.as_ptr() as usize;
        assert_eq!(env.texts.strings[at + v.text.len()], 0);
    }
    assert_eq!(env.string_bytes(), env.vars().map(|v| v.text.len() + 1).sum::<usize>());
}
