//! `envshim render` (docs/reference.md §1): `--format env` and `json`, sources, masking,
//! and `--show-values` output that re-parses as an env file with identical values.

use crate::common::*;
use serde_json::json;

/// A manifest using a volume `v` with one file of each kind of source.
fn sources_setup() -> (Volume, Volume, String) {
    let vol = Volume::new();
    vol.file("conf/all.env", "# header\nFROM_FILE=abc\n");
    vol.file("conf/keys.env", "\nK=\"x\\ny\"\n");
    let d = Volume::new();
    let m = d.manifest(&json!({
        "volumeMounts": [mount("v", &vol)],
        "envFrom": [file_ref("v", "conf/all.env", false, Some("P_"))],
        "env": [
            {"name": "LIT", "value": "lit-$(P_FROM_FILE)"},
            file_key_ref("KEYED", "v", "/conf/keys.env", "K", false),
            {"name": "PLAT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        ],
    }));
    (vol, d, m)
}

#[test]
fn env_format_masked_shows_sources_and_sizes() {
    let (_vol, d, m) = sources_setup();
    let extra = d.file_str("extra.env", "X=1\n\nY=\n");
    let out = envshim(["render", "--manifest", &m, "--env-file", &extra, "--env", "CLI=héllo€"]).env("INH", "inherited-value").env("PLAT", "p").run();
    out.ok();
    let want = format!(
        "# env files read with envshim's grammar\n\
         # INH from inherited\nINH=<set, 15 bytes>\n\
         # PLAT from secretKeyRef s/k\nPLAT=<set, 1 bytes>\n\
         # P_FROM_FILE from v/conf/all.env:2\nP_FROM_FILE=<set, 3 bytes>\n\
         # X from {extra}:1\nX=<set, 1 bytes>\n\
         # Y from {extra}:3\nY=<set, 0 bytes>\n\
         # LIT from manifest env[0]\nLIT=<set, 7 bytes>\n\
         # KEYED from v/conf/keys.env:2\nKEYED=<set, 3 bytes>\n\
         # CLI from --env\nCLI=<set, 9 bytes>\n"
    );
    assert_eq!(out.stdout_str(), want);
    assert!(!out.stdout_str().contains("inherited-value"));
}

#[test]
fn env_format_is_the_default() {
    let a = envshim(["render", "--env", "A=1"]).run();
    let b = envshim(["render", "--format", "env", "--env", "A=1"]).run();
    a.ok();
    b.ok();
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn source_is_the_last_definition() {
    let d = Volume::new();
    let f = d.file_str("f.env", "A=file\nB=file\n");
    let m = d.manifest(&json!({"env": [{"name": "B", "value": "m"}]}));
    let out = envshim(["render", "--format", "json", "--manifest", &m, "--env-file", &f]).env("A", "inh").env("B", "inh").run();
    out.ok();
    assert_eq!(
        out.json(),
        json!({
            "A": {"source": format!("{f}:1"), "bytes": 4},
            "B": {"source": "manifest env[0]", "bytes": 1},
        })
    );
}

#[test]
fn empty_environment_renders_nothing() {
    let out = envshim(["render"]).run();
    out.ok();
    assert!(out.stdout.is_empty());
    let out = envshim(["render", "--format", "json"]).run();
    out.ok();
    assert_eq!(out.json(), json!({}));
}

#[test]
fn json_format_masked_and_with_values() {
    let (_vol, _d, m) = sources_setup();
    let out = envshim(["render", "--format", "json", "--manifest", &m, "--env", "Q=a\"b\\c\nd\te\u{1}"]).env("INH", "v").run();
    out.ok();
    let want = json!({
        "INH": {"source": "inherited", "bytes": 1},
        "P_FROM_FILE": {"source": "v/conf/all.env:2", "bytes": 3},
        "LIT": {"source": "manifest env[0]", "bytes": 7},
        "KEYED": {"source": "v/conf/keys.env:2", "bytes": 3},
        "Q": {"source": "--env", "bytes": 10},
    });
    assert_eq!(out.json(), want);
    let out = envshim(["render", "--format", "json", "--show-values", "--manifest", &m, "--env", "Q=a\"b\\c\nd\te\u{1}"]).env("INH", "v").run();
    out.ok();
    let mut want = want;
    for (k, v) in [("INH", "v"), ("P_FROM_FILE", "abc"), ("LIT", "lit-abc"), ("KEYED", "x\ny"), ("Q", "a\"b\\c\nd\te\u{1}")] {
        want[k]["value"] = json!(v);
    }
    assert_eq!(out.json(), want);
}

#[test]
fn json_escapes_names() {
    let out = envshim(["render", "--format", "json", "--show-values", "--env", "a\"b\\c d=1"]).run();
    out.ok();
    assert_eq!(out.json(), json!({"a\"b\\c d": {"source": "--env", "bytes": 1, "value": "1"}}));
}

#[test]
fn show_values_quotes_only_when_needed() {
    let cases: &[(&str, &str)] = &[
        ("plain", "plain"),
        ("", ""),
        ("a b", "a b"),
        ("x#y", "x#y"),
        ("multi\nline", "\"multi\\nline\""),
        ("say \"hi\"", "\"say \\\"hi\\\"\""),
        ("back\\slash", "\"back\\\\slash\""),
        ("$(VAR)", "\"\\$(VAR)\""),
        ("cost $5", "\"cost \\$5\""),
    ];
    for (value, shown) in cases {
        let out = envshim(["render", "--show-values"]).env("V", value).run();
        out.ok();
        assert_eq!(out.stdout_str(), format!("# V from inherited\nV={shown}\n"), "value {value:?}");
    }
}

/// Values that are hard to write in an env file.
const TRICKY: &[&str] = &[
    "plain",
    "",
    " leading",
    "trailing ",
    "\tboth\t",
    "in ner  spaces",
    "x #not a comment",
    "#hash",
    " #",
    "'single'",
    "\"double\"",
    "'unbalanced",
    "\"unbalanced",
    "it's",
    "back\\slash\\",
    "\\n literally",
    "$(VAR) $$ $ ${X} $X",
    "line1\nline2\n",
    "crlf\r\nx\r",
    "tab\there",
    "caf\u{e9} \u{20ac} \u{1F600}",
    "a=b=c",
    "'a''b'",
    "\"a\" \"b\"",
    "\u{1}\u{7f}control",
    "export X=1",
    "=",
];

#[test]
fn show_values_output_reparses_with_identical_values() {
    let vars: Vec<(String, String)> = TRICKY.iter().enumerate().map(|(i, v)| (format!("V{i:02}"), v.to_string())).collect();
    let mut shim = envshim(["render", "--show-values"]);
    for (k, v) in &vars {
        shim = shim.env(k, v);
    }
    // Names the relaxed rule allows, too.
    shim = shim.env("with space", "s p").env("Logging:Level", "Debug").env("x.y-z", "'q'");
    let out = shim.run();
    out.ok();
    let d = Volume::new();
    let file = d.file_str("rendered.env", &out.stdout);
    let got = values(&render_values(["--env-file", &file]));
    let mut want: std::collections::BTreeMap<String, String> = vars.into_iter().collect();
    want.insert("with space".into(), "s p".into());
    want.insert("Logging:Level".into(), "Debug".into());
    want.insert("x.y-z".into(), "'q'".into());
    assert_eq!(got, want, "rendered file:\n{}", out.stdout_str());
    // And the re-parsed file renders the same values again.
    let again = envshim(["render", "--show-values", "--env-file", &file]).run();
    again.ok();
    let lines = |s: &str| s.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect::<Vec<_>>();
    let mut a = lines(&out.stdout_str());
    let mut b = lines(&again.stdout_str());
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[test]
fn show_values_round_trip_of_file_values() {
    // Values read from a file (quoted forms, escapes, multi-line) round-trip too.
    let d = Volume::new();
    let src = d.file_str("src.env", "A='x\n  y\n# z'\nB=\"q\\\"\\\\\\n\\t\\r\\$\"\nC=v # c\nD=\"\\a\\b\"\nE='$(X)'\nF=\r\n");
    let first = envshim(["render", "--show-values", "--env-file", &src]).run();
    first.ok();
    let copy = d.file_str("copy.env", &first.stdout);
    assert_eq!(values(&render_values(["--env-file", &src])), values(&render_values(["--env-file", &copy])));
}

#[test]
fn masked_output_never_holds_a_value() {
    let d = Volume::new();
    let f = d.file_str("s.env", format!("FILE_SECRET={SENTINEL}\nQ='{SENTINEL}'\n"));
    for format in ["env", "json"] {
        let out = envshim(["render", "--format", format, "--env-file", &f, "--env", &format!("CLI={SENTINEL}"), "--env", "REF=x$(FILE_SECRET)"])
            .env("INH", SENTINEL)
            .run();
        out.ok();
        out.no_sentinel();
        let with = envshim(["render", "--format", format, "--show-values", "--env-file", &f]).run();
        with.ok();
        assert!(with.stdout_str().contains(SENTINEL), "--show-values shows values");
    }
}

#[test]
fn render_prints_nothing_when_something_fails() {
    let d = Volume::new();
    let bad = d.file_str("bad.env", "A=1\nB\n");
    for format in ["env", "json"] {
        let out = envshim(["render", "--format", format, "--show-values", "--env-file", &bad, "--env", "OK=1"]).env("INH", "x").run();
        out.fails(65);
        assert!(out.stdout.is_empty(), "{}", out.stdout_str());
    }
}

#[test]
fn render_does_not_validate_a_program() {
    // render takes no program line and does not look at the manifest's command.
    let d = Volume::new();
    let m = d.manifest(&json!({"command": ["no-such-program-envshim"], "env": [{"name": "A", "value": "1"}]}));
    let out = envshim(["render", "--manifest", &m]).run();
    out.ok();
    envshim(["render", "--", "/bin/true"]).run().fails(2);
}

#[test]
fn the_service_url_is_a_platform_variable_whose_source_is_inherited() {
    let out = envshim(["render", "--format", "json"]).env("KUBERNETES_SERVICE_HOST", "fd00::1").env("KUBERNETES_SERVICE_PORT", "443").run();
    out.ok();
    let url = &out.json()["KUBERNETES_SERVICE_URL"];
    assert_eq!(url["source"], "inherited");
    assert_eq!(url["bytes"], "https://[fd00::1]:443".len());
}

/// A platform-resolved entry is shown by what it names, not as `inherited`,
/// in a converted container too (where its value comes from its copies).
#[test]
fn a_platform_entry_names_its_source() {
    let env = json!([
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "MODE", "optional": true}}},
        {"name": "PASS", "valueFrom": {"secretKeyRef": {"key": "k", "name": "db"}}},
        {"name": "NS", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"containerName": "app", "resource": "limits.memory"}}},
    ]);
    let out = envshim(["render", "--format", "json", "--manifest-json", &json!({ "env": env }).to_string()])
        .envs([("MODE", "m"), ("PASS", SENTINEL), ("NS", "n"), ("MEM", "1")])
        .run();
    out.ok().no_sentinel();
    let sources: Vec<String> = ["MODE", "PASS", "NS", "MEM"].iter().map(|n| out.json()[n]["source"].as_str().unwrap().to_string()).collect();
    assert_eq!(sources, ["configMapKeyRef settings/MODE", "secretKeyRef db/k", "fieldRef metadata.namespace", "resourceFieldRef limits.memory"]);
    let converted = json!({ "env": [env[0].clone()], "converted": { "seen": [] } }).to_string();
    let out = envshim(["render", "--manifest-json", &converted]).envs([("ENVSHIM_VALUE_0_A", "m"), ("ENVSHIM_VALUE_0_B", "m")]).run();
    out.ok();
    assert_eq!(out.stdout_str(), "# MODE from configMapKeyRef settings/MODE\nMODE=<set, 1 bytes>\n");
}

/// `render` and `check` name the grammar the env files were read with (a
/// comment heading the env format; check's summary), so a preview says how a
/// converted pod will read them.
#[test]
fn render_and_check_name_the_grammar_of_the_env_files() {
    let d = Volume::new();
    let f = d.file_str("f.env", "A='1'\n");
    for (grammar, words) in [("envshim", "# env files read with envshim's grammar\n"), ("kubelet", "# env files read with the kubelet's grammar\n")] {
        let out = envshim(["render", "--env-grammar", grammar, "--env-file", &f]).run();
        out.ok();
        assert_eq!(out.stdout_str(), format!("{words}# A from {f}:1\nA=<set, 1 bytes>\n"));
        let out = envshim(["check", "--env-grammar", grammar, "--env-file", &f]).run();
        out.ok();
        assert_eq!(out.stderr_str(), format!("envshim: ok: 1 variables (1 from files; {}), no program line\n", &words[2..words.len() - 1]));
    }
    // No env file, no line about one.
    let out = envshim(["render", "--env", "A=1"]).run();
    assert_eq!(out.ok().stdout_str(), "# A from --env\nA=<set, 1 bytes>\n");
}
