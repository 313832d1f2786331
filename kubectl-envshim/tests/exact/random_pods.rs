//! The random pods: `random_pods_start_converted_as_natively` (see
//! `exact.rs` for its variables) and the harness's own check that a refusal
//! is found in its batch; a differing pod is shrunk to a minimal one.

use std::time::Instant;

use super::*;

/// Every batch checked by three workers, each taking every third batch.
fn check_batches<'c>(batches: &[(&'c [Case], Format)]) -> Vec<Verdict<'c>> {
    std::thread::scope(|s| {
        let workers: Vec<_> =
            (0..3).map(|w| s.spawn(move || batches.iter().skip(w).step_by(3).flat_map(|(b, f)| check_batch(b, *f)).collect::<Vec<_>>())).collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    })
}

#[test]
fn random_pods_start_converted_as_natively() {
    let seed: u64 = std::env::var("EXACT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0065_7861_6374_3235);
    let pods: usize = std::env::var("EXACT_PODS").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    let started = Instant::now();
    let root = tempfile::tempdir().unwrap();
    let printer = harness::printer();
    harness::envshim();
    let mut rng = generate::Rng::new(seed);
    let pool = generate::pool(&mut rng, root.path());
    let mut cases: Vec<Case> = (0..pods).map(|n| generate::case(&mut rng, n, &pool, printer)).collect();
    // EXACT_ONLY=p17: that pod alone (the others are generated all the same, so it is the same pod).
    if let Ok(only) = std::env::var("EXACT_ONLY") {
        cases.retain(|c| c.name() == only);
    }
    let count = cases.len();
    eprintln!("exact: {count} pods generated in {:.1} s", started.elapsed().as_secs_f64());
    let batches: Vec<(&[Case], Format)> = cases.chunks(100).map(|b| (b, *rng.pick(&harness::FORMATS))).collect();

    let results = check_batches(&batches);

    let natively_started = results.iter().filter(|r| matches!(r, Verdict::Compared { native: true, .. })).count();
    let refused: Vec<_> = results.iter().filter_map(|r| if let Verdict::Refused(c, code, err) = r { Some((c, code, err)) } else { None }).collect();
    let differing: Vec<_> = results
        .iter()
        .filter_map(|r| if let Verdict::Compared { case, diffs, .. } = r { (!diffs.is_empty()).then_some((case, diffs)) } else { None })
        .collect();
    eprintln!(
        "exact: seed {seed}, {count} pods in {:.1} s: {natively_started} start natively, {} refused, {} differ",
        started.elapsed().as_secs_f64(),
        refused.len(),
        differing.len()
    );

    // A refusal is fine only with a documented exit code and a message that
    // says where (document, container, path), and only for a small share.
    for (case, code, err) in &refused {
        assert_eq!(**code, 78, "pod {} refused with {code}: {err}", case.name());
        for part in ["document 1", &format!("container {}", case.container), "spec.containers[0]"] {
            assert!(err.contains(part), "pod {}: the refusal does not name {part:?}: {err}", case.name());
        }
    }
    assert!(refused.len() * 50 <= count, "{} of {count} pods refused (seed {seed}); the first: {}", refused.len(), refused[0].2);
    // Most pods must start natively, or the test compares little.
    assert!(count < 100 || natively_started * 10 >= count * 6, "only {natively_started} of {count} pods start natively");

    if let Some((first, _)) = differing.first() {
        let summary: Vec<String> = differing
            .iter()
            .take(std::env::var("EXACT_SHOW").ok().and_then(|s| s.parse().ok()).unwrap_or(8))
            .map(|(c, d)| format!("  {}: {}", c.name(), d[0]))
            .collect();
        let (minimal, diffs) = shrink((**first).clone());
        panic!(
            "seed {seed} (EXACT_SEED={seed} EXACT_PODS={pods}): {} of {count} pods differ, e.g.\n{}\n\nthe first, made minimal:\n{}\ndifferences:\n  {}",
            differing.len(),
            summary.join("\n"),
            describe(&minimal),
            diffs.join("\n  ")
        );
    }
}

/// The harness itself: a pod the converter refuses (a fileKeyRef naming a
/// volume the pod lacks: 78) is found alone in its batch, the others converted.
#[test]
fn a_refusal_is_found_in_its_batch() {
    let root = tempfile::tempdir().unwrap();
    let mut rng = generate::Rng::new(7);
    let pool = generate::pool(&mut rng, root.path());
    let mut cases: Vec<Case> = (0..9).map(|n| generate::case(&mut rng, n, &pool, harness::printer())).collect();
    let env = cases[6].pod["spec"]["containers"][0]["env"].as_array_mut().unwrap();
    env.push(json!({"name": "X", "valueFrom": {"fileKeyRef": {"volumeName": "nope", "path": "a.env", "key": "X"}}}));
    for format in harness::FORMATS {
        let converted = harness::convert_batch(&cases.iter().collect::<Vec<_>>(), format, &[]);
        for (i, c) in converted.iter().enumerate() {
            match c {
                Converted::Refused(code, err) => {
                    assert_eq!((i, *code), (6, 78), "{err}");
                    assert!(err.contains("document 1 (Pod/p6)") && err.contains("volumeName"), "{err}");
                }
                Converted::Container(..) => assert_ne!(i, 6),
            }
        }
    }
}

enum Verdict<'a> {
    /// Whether the pod starts natively, and the differences.
    Compared { case: &'a Case, native: bool, diffs: Vec<String> },
    /// The exit code and stderr.
    Refused(&'a Case, i32, String),
}

fn check_batch(batch: &[Case], format: Format) -> Vec<Verdict<'_>> {
    let refs: Vec<&Case> = batch.iter().collect();
    let converted = harness::convert_batch(&refs, format, &[]);
    batch
        .iter()
        .zip(converted)
        .map(|(case, conv)| match conv {
            Converted::Refused(code, err) => Verdict::Refused(case, code, err),
            Converted::Container(container, world) => {
                let native = harness::native(case);
                let diffs = harness::differences(&native, &harness::converted(&container, &world));
                Verdict::Compared { case, native: matches!(native, Outcome::Started(_)), diffs }
            }
        })
        .collect()
}

/// The differences of one case converted alone; None when there are none
/// (or the converter refuses it).
fn differs(case: &Case) -> Option<Vec<String>> {
    match harness::convert_batch(&[case], Format::YamlStream, &[]).remove(0) {
        Converted::Refused(..) => None,
        Converted::Container(container, world) => {
            Some(harness::differences(&harness::native(case), &harness::converted(&container, &world))).filter(|d| !d.is_empty())
        }
    }
}

/// Removes env entries, envFrom sources, args and command words while the
/// case still differs. (Args are not emptied when there is no command: the
/// image's CMD would then run, and `--entrypoint` says ENTRYPOINT alone.)
fn shrink(mut case: Case) -> (Case, Vec<String>) {
    let mut diffs = differs(&case).unwrap_or_else(|| vec!["(does not differ when converted alone)".into()]);
    'outer: loop {
        let c = case.container_spec().clone();
        let has_command = c["command"].as_array().is_some_and(|w| !w.is_empty());
        for (field, keep) in [("env", 0), ("envFrom", 0), ("args", if has_command { 0 } else { 1 }), ("command", 1)] {
            let len = c[field].as_array().map_or(0, Vec::len);
            for i in 0..len {
                if len <= keep || (field == "command" && i == 0) {
                    continue;
                }
                let mut smaller = case.clone();
                let spec = &mut smaller.pod["spec"]["containers"][0];
                spec[field].as_array_mut().unwrap().remove(i);
                if let Some(d) = differs(&smaller) {
                    (case, diffs) = (smaller, d);
                    continue 'outer;
                }
            }
        }
        return (case, diffs);
    }
}

/// `unconvert(convert(x)) == x`, key order aside, on the random pods above
/// (the same seed gives the same pods), in every format: half the batches
/// with envshim in the image (`--shim-path`), half with the installer,
/// `--wait` and `--watch`. A pod the converter refuses is left out (the
/// test above checks those). A `fileKeyRef` entry's null fields come back
/// absent: the manifest holds the entry as kubectl sends it.
#[test]
fn random_pods_unconvert_to_what_was_written() {
    let seed: u64 = std::env::var("EXACT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0065_7861_6374_3235);
    let pods: usize = std::env::var("EXACT_PODS").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    let root = tempfile::tempdir().unwrap();
    let mut rng = generate::Rng::new(seed);
    let pool = generate::pool(&mut rng, root.path());
    let cases: Vec<Case> = (0..pods).map(|n| generate::case(&mut rng, n, &pool, harness::printer())).collect();
    let (mut checked, mut with_entrypoint) = (0, 0);
    for (b, batch) in cases.chunks(100).enumerate() {
        let format = harness::FORMATS[b % 4];
        let options: &[String] = if b % 2 == 0 { &[] } else { &["--wait".into(), "5s".into(), "--watch".into()] };
        let refs: Vec<&Case> = batch.iter().collect();
        let (convertible, whole) = convertible(&refs, format, options, b % 2 == 1);
        // The batch's own conversion, unless it had to be halved.
        let converted = whole
            .unwrap_or_else(|| harness::kubectl_envshim(&convert_args(&convertible, options, b % 2 == 1), &harness::write(&pods_of(&convertible), format)));
        assert_eq!(converted.code, 0, "{}", converted.stderr);
        let back = harness::kubectl_envshim(&["unconvert".into()], &converted.stdout);
        assert_eq!((back.code, back.stderr.as_str()), (0, ""), "batch {b}");
        let (back, converted) = (harness::read(&back.stdout), harness::read(&converted.stdout));
        assert_eq!(back.len(), convertible.len());
        for ((case, doc), conv) in convertible.iter().zip(&back).zip(&converted) {
            let written = as_sent(&case.pod);
            assert!(*doc == written, "pod {} (seed {seed}): unconverted\n{}\nwritten\n{}", case.name(), pretty(doc), pretty(&written));
            // (A pod whose only fileKeyRef is null is not converted, and comes back as it went.)
            if harness::container(conv, &case.container).is_some_and(|c| c["env"].as_array().unwrap().iter().any(|e| e["name"] == "ENVSHIM_MANIFEST_JSON")) {
                checked += 1;
                with_entrypoint += usize::from(case.entrypoint.is_some());
            }
        }
    }
    eprintln!("unconvert: seed {seed}, {checked} of {pods} pods converted and back as written ({with_entrypoint} run the image's program)");
    assert!(checked * 10 >= pods * 9 && with_entrypoint * 5 >= checked, "{checked} pods converted, {with_entrypoint} without a command");
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn pods_of(cases: &[&Case]) -> Vec<Value> {
    cases.iter().map(|c| c.pod.clone()).collect()
}

/// The converter's arguments: `--shim-path` (the harness's), or the installer's defaults.
fn convert_args(cases: &[&Case], options: &[String], installer: bool) -> Vec<String> {
    let mut args = harness::convert_args(cases, options);
    if installer {
        args.drain(1..3);
    }
    args
}

/// The cases the converter converts, found by halving a batch it refuses;
/// with the conversion of them all when it took them in one run (the usual
/// case: no second run of the same batch).
fn convertible<'c>(cases: &[&'c Case], format: Format, options: &[String], installer: bool) -> (Vec<&'c Case>, Option<harness::Run>) {
    let run = harness::kubectl_envshim(&convert_args(cases, options, installer), &harness::write(&pods_of(cases), format));
    if run.code == 0 {
        return (cases.to_vec(), Some(run));
    }
    if cases.len() == 1 {
        return (Vec::new(), None);
    }
    let (a, b) = cases.split_at(cases.len() / 2);
    ([convertible(a, format, options, installer).0, convertible(b, format, options, installer).0].concat(), None)
}

/// The pod with each `fileKeyRef` entry's null fields dropped.
fn as_sent(pod: &Value) -> Value {
    fn without_nulls(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect()),
            other => other.clone(),
        }
    }
    let mut pod = pod.clone();
    for c in pod["spec"]["containers"].as_array_mut().unwrap() {
        for e in c["env"].as_array_mut().into_iter().flatten() {
            if e["valueFrom"]["fileKeyRef"].is_object() {
                *e = without_nulls(e);
            }
        }
    }
    pod
}

/// Converting again, on the random pods above (the same seed, the same
/// pods), in every format: `convert(convert(x, s1), s2) == convert(x, s2)`
/// for three settings in turn (envshim in the image; the installer with
/// `--wait` and `--watch`; the installer with `--env-grammar envshim` and a
/// `--watch` setting), `convert --check` with s2 says 1 exactly when that
/// differs from `convert(x, s1)`, and each kind of hand edit (one a pod, in
/// turn) fails `convert --check` (78), every edited pod named. A batch is
/// one stream: one run each.
#[test]
fn random_pods_convert_again() {
    let seed: u64 = std::env::var("EXACT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x0065_7861_6374_3235);
    let pods: usize = std::env::var("EXACT_PODS").ok().and_then(|s| s.parse().ok()).unwrap_or(3000);
    let root = tempfile::tempdir().unwrap();
    let mut rng = generate::Rng::new(seed);
    let pool = generate::pool(&mut rng, root.path());
    let cases: Vec<Case> = (0..pods).map(|n| generate::case(&mut rng, n, &pool, harness::printer())).collect();
    let settings: [(&[&str], bool); 3] =
        [(&[], false), (&["--wait", "5s", "--watch"], true), (&["--env-grammar", "envshim", "--watch", "--watch-splay", "30s"], true)];
    let (mut again_checked, mut changed, mut edits) = (0, 0, 0);
    for (b, batch) in cases.chunks(100).enumerate() {
        let format = harness::FORMATS[b % 4];
        let ((o1, i1), (o2, i2)) = (settings[b % 3], settings[(b + 1 + b / 3 % 2) % 3]);
        let (o1, o2): (Vec<String>, Vec<String>) = (o1.iter().map(|s| s.to_string()).collect(), o2.iter().map(|s| s.to_string()).collect());
        let refs: Vec<&Case> = batch.iter().collect();
        let (convertible, whole) = convertible(&refs, format, &o1, i1);
        let text = harness::write(&pods_of(&convertible), format);
        let once = whole.unwrap_or_else(|| harness::kubectl_envshim(&convert_args(&convertible, &o1, i1), &text));
        assert_eq!(once.code, 0, "{}", once.stderr);
        let direct = harness::kubectl_envshim(&convert_args(&convertible, &o2, i2), &text);
        assert_eq!(direct.code, 0, "{}", direct.stderr);
        let again = harness::kubectl_envshim(&convert_args(&convertible, &o2, i2), &once.stdout);
        assert_eq!((again.code, again.stderr.as_str()), (0, ""), "batch {b}");
        assert!(again.stdout == direct.stdout, "batch {b} (seed {seed}): converted with {o1:?}, then {o2:?}: not what converting with {o2:?} gives");
        let mut check = convert_args(&convertible, &o2, i2);
        check.insert(1, "--check".into());
        let check = harness::kubectl_envshim(&check, &once.stdout);
        assert_eq!(check.code, i32::from(once.stdout != direct.stdout), "batch {b}: {}", check.stderr);
        again_checked += convertible.len();
        changed += usize::from(check.code == 1);

        let edited = hand_edited(&convertible, &once.stdout);
        let mut check = convert_args(&convertible, &o1, i1);
        check.insert(1, "--check".into());
        let out = harness::kubectl_envshim(&check, &harness::write(&edited, format));
        assert_eq!((out.code, out.stdout.as_str()), (78, ""), "batch {b}: {}", out.stderr);
        assert!(!out.stderr.contains(SENTINEL), "a value in a message: {}", out.stderr);
        for doc in &edited {
            let (name, container) = (doc["metadata"]["name"].as_str().unwrap(), doc["spec"]["containers"][0]["name"].as_str().unwrap());
            let named = format!("(Pod/{name}): ");
            assert!(
                out.stderr.lines().any(|l| l.contains(&named) && l.contains("spec.containers[0]") && l.contains(&format!("container {container}: "))),
                "batch {b}: pod {name} edited, not refused: {}",
                out.stderr
            );
        }
        edits += edited.len();
    }
    eprintln!("convert again: seed {seed}, {again_checked} pods converted again ({changed} batches changed), {edits} hand edits refused");
    assert!(again_checked * 10 >= pods * 9 && edits * 10 >= pods * 9, "{again_checked} pods converted again, {edits} edited");
}

/// A hand edit in each pod of `convertible` as `converted` has it (the
/// kinds in turn): the pods edited.
fn hand_edited(convertible: &[&Case], converted: &str) -> Vec<Value> {
    let mut edited = Vec::new();
    for (case, doc) in convertible.iter().zip(harness::read(converted)) {
        let Some(c) = harness::container(&doc, &case.container)
            .filter(|c| c["env"].as_array().is_some_and(|env| env.iter().any(|e| e["name"] == "ENVSHIM_MANIFEST_JSON")))
        else {
            continue;
        };
        let kinds = crate::support::edits::hand_edits(c);
        let (_, c) = &kinds[edited.len() % kinds.len()];
        let mut doc = doc.clone();
        doc["spec"]["containers"][0] = c.clone();
        assert_eq!(doc["spec"]["containers"][0]["name"], case.container.as_str());
        edited.push(doc);
    }
    edited
}
