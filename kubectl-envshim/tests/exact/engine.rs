//! Under an engine that does not expand `$(VAR)` in `env` (`podman kube
//! play`, `docker run` given the converted env; the model's `engine_start`):
//! the converted program gets what the kubelet gives it natively, envshim
//! saying so in one line, or envshim refuses to start (78) with one line
//! naming the entry; never the program with `$(VAR)` text. And the runtime
//! messages of a converted container name the pod's own entry.

use super::*;

const NOTE: &str =
    "envshim: the engine did not expand $(VAR) in env (no kubelet): envshim expanded the container's env, command and args as the kubelet would\n";
const REFUSED: &str = "envshim: the engine did not expand $(VAR) in env (no kubelet), and envshim cannot do the kubelet's part exactly: ";

/// An engine makes no service variables (no kubelet, no Services): the
/// native start is taken in the same world.
fn no_services(mut case: Case) -> Case {
    case.world.service_env.clear();
    case
}

/// The converted container of `case` and its world.
#[track_caller]
fn convert(case: &Case) -> (Value, World) {
    match harness::convert_batch(&[case], Format::YamlStream, &[]).remove(0) {
        Converted::Container(c, w) => (c, *w),
        Converted::Refused(code, err) => panic!("refused ({code}): {err}\n{}", describe(case)),
    }
}

/// Converted, started under the engine: exactly the native start, and the one line on stderr.
#[track_caller]
fn exact_under_engine(case: &Case) -> Started {
    let (c, w) = convert(case);
    let (outcome, stderr) = harness::under_engine(&c, &w);
    let native = harness::native(case);
    let diffs = harness::differences(&native, &outcome);
    assert!(diffs.is_empty(), "under the engine the program differs from the native one: {}\n{}", diffs.join("; "), describe(case));
    assert_eq!(stderr, NOTE);
    match native {
        Outcome::Started(s) => s,
        Outcome::Fails(why) => panic!("the native pod does not start ({why}): a test mistake"),
    }
}

fn cm(name: &str, key: &str) -> Value {
    json!({"name": name, "valueFrom": {"configMapKeyRef": {"name": "cm", "key": key}}})
}

/// Every kind of entry before and after the first fileKeyRef: references to
/// earlier, later, missing and own names, a name set twice (read between),
/// a ConfigMap value holding `$(A)` (never expanded), the image's names
/// (invisible to the kubelet), `$$` in values, command and args.
#[test]
fn under_an_engine_envshim_does_the_kubelets_part() {
    let dir = tempfile::tempdir().unwrap();
    let env = json!([
        {"name": "A", "value": "a"},
        {"name": "B", "value": "$(A)-b$$"},
        {"name": "SELF", "value": "x$(SELF)"},
        cm("CM", "k"),
        {"name": "DUP", "value": "one$(A)"},
        {"name": "USE", "value": "$(DUP)|$(CM)"},
        {"name": "DUP", "value": "two$$(A)"},
        {"name": "IMG", "value": "$(PATH):$(HOME):$(HOSTNAME)"},
        {"name": "FWD", "value": "$(LATER)"},
        {"name": "EMPTY"},
        f(),
        {"name": "C", "value": "$(F)/$(B)/$$(A)/$(NOPE)/$(CM)/$(DUP)/$(USE)/$(SELF)/$(FWD)"},
        {"name": "LATER", "value": "l$(C)"},
        {"name": "B", "value": "b2"},
    ]);
    let fields = json!({"command": printer(&["$(C)", "$$", "$(F)", "$(LATER)", "$(IMG)", "$(B)"]), "args": ["$(DUP)", "$$(A)"], "env": env});
    let mut case = no_services(pod(&dir, fields, "K='v'\n"));
    case.world.config_maps.insert("cm".into(), BTreeMap::from([("k".into(), "c$(A)$$".into())]));
    let s = exact_under_engine(&case);
    assert_eq!(
        s.argv[1..],
        [
            "v/a-b$/$(A)/$(NOPE)/c$(A)$$/two$(A)/onea|c$(A)$$/x$(SELF)/$(LATER)",
            "$",
            "v",
            "lv/a-b$/$(A)/$(NOPE)/c$(A)$$/two$(A)/onea|c$(A)$$/x$(SELF)/$(LATER)",
            "$(PATH):$(HOME):$(HOSTNAME)",
            "b2",
            "two$(A)",
            "$(A)"
        ]
    );
    assert_eq!((s.env["EMPTY"].as_str(), s.env["USE"].as_str()), ("", "onea|c$(A)$$"));
    // And under the kubelet, the marker `$`: exact as before.
    exact(&case, Format::JsonStream, &[]);
}

/// Optional references the engine did or did not resolve, `envFrom`
/// without a reference to what it may hold, an image's ENTRYPOINT
/// (`--entrypoint`): exact.
#[test]
fn under_an_engine_optional_references_env_from_and_the_image_entrypoint() {
    let dir = tempfile::tempdir().unwrap();
    let env = json!([
        {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "absent", "optional": true}}},
        {"name": "OK", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": true}}},
        {"name": "U", "value": "$(OPT)+$(OK)"},
        f(),
        {"name": "OPT2", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "k", "optional": true}}},
        {"name": "V", "value": "$(U)/$(OPT2)/$(F)"},
    ]);
    let mut case =
        no_services(pod(&dir, json!({"args": ["$(V)", "$$"], "env": env, "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}]}), "K='v'\n"));
    case.world.config_maps.insert("cm".into(), BTreeMap::from([("k".into(), "kv".into())]));
    let s = exact_under_engine(&case);
    assert_eq!((s.env["U"].as_str(), s.env["V"].as_str(), s.env["CM_k"].as_str()), ("$(OPT)+kv", "$(OPT)+kv/$(OPT2)/v", "kv"));
    assert!(!s.env.contains_key("OPT"));
    assert_eq!(s.argv[5..], ["$(OPT)+kv/$(OPT2)/v", "$"]);
}

/// Without the marker (an older conversion): as before, under the kubelet.
#[test]
fn without_the_marker_a_converted_container_reads_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let env = json!([{"name": "A", "value": "a$$"}, f(), {"name": "C", "value": "$(A)/$(F)"}]);
    let case = no_services(pod(&dir, json!({"command": printer(&["$(C)"]), "env": env}), "K='v'\n"));
    let (mut c, w) = convert(&case);
    let list = c["env"].as_array_mut().unwrap();
    assert_eq!(list.last().unwrap(), &json!({"name": "ENVSHIM_EXPANDED", "value": "$$"}), "the marker is the last entry");
    list.pop();
    let diffs = harness::differences(&harness::native(&case), &harness::converted(&c, &w));
    assert!(diffs.is_empty(), "{}", diffs.join("; "));
}

/// A pod's `env`, the entry a `docker run` user leaves out, and the message.
type Variant<'a> = (Value, Option<&'a str>, &'a str);

/// What the engine's variables cannot tell: refused (78), one line naming
/// the entry, the program not run.
#[test]
fn under_an_engine_what_cannot_be_told_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s_ref = cm("S", "k");
    let variants: Vec<(&str, Variant)> = vec![
        // `docker run` given the converted env, without the value the kubelet resolves.
        (
            "a reference the engine did not resolve",
            (json!([{"name": "X", "value": "x"}, s_ref.clone(), f()]), Some("S"), "env[2] (S): the engine did not resolve its reference (valueFrom)"),
        ),
        (
            "a name envFrom or the image may hold",
            (
                json!([{"name": "U", "value": "$(PATH)"}, f()]),
                None,
                "env[1] (U) refers to $(PATH), which no entry before it sets: the engine does not say whether it came from envFrom",
            ),
        ),
        (
            "a resolved value a later entry replaced",
            (
                json!([s_ref.clone(), {"name": "U", "value": "<$(S)>"}, {"name": "S", "value": "s"}, f()]),
                None,
                "env[2] (U) refers to $(S), which env[1] took from a reference (valueFrom) and a later entry of the same name replaced",
            ),
        ),
        (
            "an optional reference over an earlier entry",
            (
                json!([{"name": "S", "value": "s"}, {"name": "S", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k", "optional": true}}}, f()]),
                None,
                "env[2] (S): an optional reference to a name an entry before it sets",
            ),
        ),
    ];
    every(variants, |(env, drop, message)| {
        let mut fields = json!({"command": printer(&[]), "env": env.clone()});
        if message.contains("envFrom") {
            fields["envFrom"] = json!([{"configMapRef": {"name": "cm"}}]);
        }
        let mut case = no_services(pod(&dir, fields, "K='v'\n"));
        case.world.config_maps.insert("cm".into(), BTreeMap::from([("k".into(), "kv".into())]));
        let (mut c, w) = convert(&case);
        if let Some(name) = *drop {
            c["env"].as_array_mut().unwrap().retain(|e| e["name"] != *name);
        }
        let (outcome, stderr) = harness::under_engine(&c, &w);
        assert!(matches!(outcome, Outcome::Fails(ref why) if why.contains("Some(78)")), "{outcome:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("{REFUSED}{message}")), "{stderr}");
    });
}

/// A marker that is neither `$` nor `$$`: the env was edited (78).
#[test]
fn a_marker_changed_by_hand_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let case = no_services(pod(&dir, json!({"command": printer(&[]), "env": [f()]}), "K='v'\n"));
    let (mut c, w) = convert(&case);
    *c["env"].as_array_mut().unwrap().last_mut().unwrap() = json!({"name": "ENVSHIM_EXPANDED", "value": "yes"});
    let (outcome, stderr) = harness::under_engine(&c, &w);
    assert!(matches!(outcome, Outcome::Fails(ref why) if why.contains("Some(78)")), "{outcome:?}");
    assert!(stderr.starts_with("envshim: ENVSHIM_EXPANDED is neither $ (a kubelet expanded the container's env) nor $$"), "{stderr}");
}

/// A runtime message of a converted container names the pod's own entry
/// (`env[3] (GONE)`, its place in the pod's list), under the kubelet and
/// under an engine alike, never the entry's place in envshim's manifest.
#[test]
fn runtime_messages_name_the_pods_own_entry() {
    let dir = tempfile::tempdir().unwrap();
    let gone = json!({"name": "GONE", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": "MISSING"}}});
    let env = json!([{"name": "SECRET", "value": SENTINEL}, {"name": "A", "value": "a"}, f(), gone]);
    let case = no_services(pod(&dir, json!({"command": printer(&[]), "env": env}), "K='v'\n"));
    let (c, w) = convert(&case);
    let expected = "envshim: env[3] (GONE): key \"MISSING\" not found in ";
    match harness::converted(&c, &w) {
        Outcome::Fails(why) => assert!(why.contains("exits Some(66)") && why.contains(expected), "under the kubelet: {why}"),
        started => panic!("under the kubelet: {started:?}"),
    }
    let (outcome, stderr) = harness::under_engine(&c, &w);
    assert!(matches!(outcome, Outcome::Fails(ref why) if why.contains("Some(66)")), "{outcome:?}");
    assert!(stderr.starts_with(expected) && stderr.lines().count() == 1, "under the engine: {stderr}");
}

/// A refusal over what an entry after the first fileKeyRef, or the program
/// line, refers to names the pod's own entry (its place in the pod's list
/// and its name) or the program line's word: never "an entry after the
/// first fileKeyRef, or the command or args".
#[test]
fn under_an_engine_a_refusal_names_the_entry_or_the_word() {
    let dir = tempfile::tempdir().unwrap();
    let secret = json!({"name": "SECRET", "value": SENTINEL});
    let env_from = json!([{"configMapRef": {"name": "cm"}}]);
    let variants: Vec<(&str, (Value, &str))> = vec![
        (
            "an entry after the fileKeyRef, to a resolved value a later entry replaced",
            (
                json!({"command": printer(&[]), "env": [secret, cm("S", "k"), f(), {"name": "U", "value": "<$(S)>"}, {"name": "S", "value": "s"}]}),
                "env[3] (U) refers to $(S), which env[1] took from a reference (valueFrom) and a later entry of the same name replaced",
            ),
        ),
        (
            "an entry after the fileKeyRef, to a name envFrom or the image may hold",
            (
                json!({"command": printer(&[]), "env": [secret, f(), {"name": "V", "value": "$(HOME)"}], "envFrom": env_from}),
                "env[2] (V) refers to $(HOME), which no entry before it sets",
            ),
        ),
        (
            "a word of args",
            (
                json!({"command": printer(&[]), "args": ["x", "y", "$(PATH)"], "env": [secret, f()], "envFrom": env_from}),
                "args[2] refers to $(PATH), which no entry before it sets",
            ),
        ),
        (
            "a word of the command",
            (
                json!({"command": printer(&["$(PATH)"]), "env": [secret, f()], "envFrom": env_from}),
                "command[1] refers to $(PATH), which no entry before it sets",
            ),
        ),
    ];
    every(variants, |(fields, message)| {
        let mut case = no_services(pod(&dir, fields.clone(), "K='v'\n"));
        case.world.config_maps.insert("cm".into(), BTreeMap::from([("k".into(), "kv".into())]));
        let (c, w) = convert(&case);
        let (outcome, stderr) = harness::under_engine(&c, &w);
        assert!(matches!(outcome, Outcome::Fails(ref why) if why.contains("Some(78)")), "{outcome:?}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(&format!("{REFUSED}{message}")), "{stderr}");
    });
}
