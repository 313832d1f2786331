//! `--watch-splay`'s slots through the converter: a StatefulSet's or an
//! Indexed Job's pods get the replicas the converter saw (unless
//! `--watch-replicas` gives them) and their index from the downward API;
//! other pods, and a count the converter cannot read, neither; envshim takes
//! what the kubelet makes of them; `unconvert` gives the workload back.

use super::*;

const LABEL: &str = "metadata.labels['apps.kubernetes.io/pod-index']";
const ANNOTATION: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// `workload(kind)` with `fields` added to the spec that holds the pod template.
fn with(kind: &str, fields: &str) -> String {
    let (doc, _) = workload(kind);
    let at = if kind == "CronJob" { "    spec:\n      template:" } else { "spec:\n  template:" };
    let indent = if kind == "CronJob" { "      " } else { "  " };
    let added: String = fields.lines().map(|l| format!("{indent}{l}\n")).collect();
    assert!(doc.contains(at), "{doc}");
    doc.replacen(at, &format!("{}\n{added}{indent}template:", at.trim_end_matches("template:").trim_end()), 1)
}

/// The converted app container's entries after the manifest, before the marker.
fn after_manifest(converted: &str) -> (Vec<serde_json::Value>, Value) {
    let doc = yaml(converted);
    let mut spec = &doc;
    while spec.get("containers").is_none() {
        spec = spec.get("spec").or_else(|| spec.get("jobTemplate")).or_else(|| spec.get("template")).unwrap();
    }
    let app = spec["containers"][0].clone();
    let env: Vec<serde_json::Value> = json_of(&app["env"]).as_array().unwrap().clone();
    let at = env.iter().position(|e| e["name"] == "ENVSHIM_MANIFEST_JSON").unwrap();
    assert_eq!(env.last().unwrap()["name"], "ENVSHIM_EXPANDED");
    (env[at + 1..env.len() - 1].to_vec(), app)
}

fn index(field: &str) -> serde_json::Value {
    serde_json::json!({"name": "ENVSHIM_POD_INDEX", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field}}})
}

fn literal(name: &str, value: &str) -> serde_json::Value {
    serde_json::json!({"name": name, "value": value})
}

#[test]
fn an_indexed_workloads_pods_get_the_replicas_and_their_index() {
    let splay = ["convert", "--watch", "--watch-splay", "60s"];
    let replicas = |n: &str| literal("ENVSHIM_WATCH_REPLICAS", n);
    let cases: Vec<(String, &[&str], Vec<serde_json::Value>)> = vec![
        (with("StatefulSet", "replicas: 3"), &splay, vec![replicas("3"), index(LABEL)]),
        // spec.replicas defaults to 1.
        (workload("StatefulSet").0, &splay, vec![replicas("1"), index(LABEL)]),
        // At most parallelism at once, never more than completions.
        (with("Job", "completionMode: Indexed\nparallelism: 4\ncompletions: 3"), &splay, vec![replicas("3"), index(ANNOTATION)]),
        (with("CronJob", "completionMode: Indexed\nparallelism: 2"), &splay, vec![replicas("2"), index(ANNOTATION)]),
        // Given: as given, once.
        (with("StatefulSet", "replicas: 3"), &["convert", "--watch", "--watch-splay", "60s", "--watch-replicas", "5"], vec![replicas("5"), index(LABEL)]),
    ];
    for (input, args, want) in cases {
        let out = kubectl_envshim(args, &input);
        let (entries, app) = after_manifest(out.ok());
        let grammar = entries.iter().position(|e| e["name"] == "ENVSHIM_WATCH_SPLAY").unwrap();
        assert_eq!(entries[grammar + 1..], want, "{args:?} {input}");
        // Back as it was.
        assert_eq!(docs(kubectl_envshim(&["unconvert"], out.ok()).ok()), docs(&input));
        // envshim takes what the kubelet makes of them: an index, or none (a
        // cluster before 1.28 has no label: the downward API gives "").
        for value in ["2", ""] {
            let env = kubelet_env(&app["env"], &BTreeMap::from([("NS", "prod"), ("ENVSHIM_POD_INDEX", value)]));
            let check = Command::new(envshim_bin())
                .args(["check", "--watch"])
                .env_clear()
                .envs(env.iter().filter(|(n, _)| n.starts_with("ENVSHIM_") && n != "ENVSHIM_MANIFEST_JSON").cloned())
                .output()
                .unwrap();
            assert!(check.status.success(), "{value:?}: {}", String::from_utf8_lossy(&check.stderr));
        }
    }
}

#[test]
fn other_pods_and_counts_the_converter_cannot_read_get_neither() {
    for (input, args) in [
        (with("StatefulSet", "replicas: 3"), &["convert", "--watch"][..]),
        (with("StatefulSet", "replicas: 3"), &["convert", "--watch", "--watch-splay", "0"]),
        (workload("Deployment").0, &["convert", "--watch", "--watch-splay", "60s"]),
        (with("Job", "parallelism: 3\ncompletions: 3"), &["convert", "--watch", "--watch-splay", "60s"]),
        (with("StatefulSet", "replicas: \"${REPLICAS}\""), &["convert", "--watch", "--watch-splay", "60s"]),
        (with("StatefulSet", "replicas: 0"), &["convert", "--watch", "--watch-splay", "60s"]),
    ] {
        let (entries, _) = after_manifest(kubectl_envshim(args, &input).ok());
        assert!(entries.iter().all(|e| e["name"] != "ENVSHIM_POD_INDEX" && e["name"] != "ENVSHIM_WATCH_REPLICAS"), "{args:?} {input}: {entries:?}");
    }
    // A Deployment with --watch-replicas: the given count, no index (a random delay).
    let (entries, _) =
        after_manifest(kubectl_envshim(&["convert", "--watch", "--watch-splay", "60s", "--watch-replicas", "3"], &workload("Deployment").0).ok());
    assert_eq!(entries.last().unwrap(), &literal("ENVSHIM_WATCH_REPLICAS", "3"));
    // A per-pod value is no option of the converter's.
    kubectl_envshim(&["convert", "--watch", "--pod-index", "2"], &workload("Pod").0).fails(2, &["--pod-index"]);
}

/// `unconvert` takes the index entry only as the converter writes it, with `--watch`, once.
#[test]
fn a_changed_index_entry_is_refused() {
    let converted = json_of(&yaml(kubectl_envshim(&["convert", "--watch", "--watch-splay", "60s"], &with("StatefulSet", "replicas: 3")).ok()));
    let containers = "/spec/template/spec/containers/0";
    let k = converted.pointer(&format!("{containers}/env")).unwrap().as_array().unwrap().iter().position(|e| e["name"] == "ENVSHIM_POD_INDEX").unwrap();
    type Edit<'e> = &'e dyn Fn(&mut serde_json::Value);
    let edits: [(Edit, String); 3] = [
        (
            &|c| c["env"][k]["valueFrom"]["fieldRef"]["fieldPath"] = "metadata.name".into(),
            format!("env[{k}]: container app: ENVSHIM_POD_INDEX is not the converter's entry"),
        ),
        (&|c| drop(c["command"].as_array_mut().unwrap().pop()), format!("env[{k}]: container app: ENVSHIM_POD_INDEX is a setting of --watch")),
        (&|c| c["env"].as_array_mut().unwrap().insert(k + 1, index(ANNOTATION)), format!("env[{}]: container app: ENVSHIM_POD_INDEX again", k + 1)),
    ];
    for (edit, message) in edits {
        let mut doc = converted.clone();
        edit(doc.pointer_mut(containers).unwrap());
        kubectl_envshim(&["unconvert"], &doc.to_string()).fails(78, &[&format!("spec.template.spec.containers[0].{message}")]);
    }
}
