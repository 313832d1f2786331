//! What a new user trips over, through the binary: a whole Pod or workload
//! as the manifest (`--container`), YAML, misspelt options and variables,
//! duplicate keys, `--verbose`, `check --format json`, message style.
//! Every failing input carries the sentinel, which no output may hold.

mod common;

use common::*;
use serde_json::json;

/// A Pod as `kubectl get pod -o json` prints it: two containers and an
/// initContainer, one variable of each from a file.
fn pod(v: &Volume) -> serde_json::Value {
    v.file("vol/app.env", format!("APP_KEY={SENTINEL}\nSIDE_KEY=side\nINIT_KEY=init\n"));
    let fkr = |name: &str| json!({"name": name, "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "app.env", "key": name}}});
    let mounts = json!([{"name": "cfg", "mountPath": v.join("vol").to_str().unwrap(), "readOnly": true}]);
    json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "initContainers": [{"name": "init", "image": "busybox", "volumeMounts": mounts, "env": [fkr("INIT_KEY")]}],
            "containers": [
                {"name": "app", "image": "app", "volumeMounts": mounts, "env": [fkr("APP_KEY"), {"name": "POD", "value": "", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]},
                {"name": "side", "image": "side", "volumeMounts": mounts, "env": [fkr("SIDE_KEY")]}
            ]
        },
        "status": {"phase": "Running"}
    })
}

#[test]
fn a_whole_pod_is_refused_with_what_to_do() {
    let v = Volume::new();
    let m = v.manifest(&pod(&v));
    let line = envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[]).clone();
    assert_eq!(
        line,
        format!("envshim: manifest {m} is a Pod, not a container spec: pass one container's spec (kubectl get pod POD -o jsonpath='{{.spec.containers[0]}}'), or choose one with --container NAME (it has app, side, init)")
    );
}

#[test]
fn container_picks_one_container_of_a_pod() {
    let v = Volume::new();
    let m = v.manifest(&pod(&v));
    for (how, name, var, want) in [("option", "side", "SIDE_KEY", "side"), ("variable", "init", "INIT_KEY", "init")] {
        let shim = if how == "option" { envshim(["run", "--manifest", &m, "--container", name, "--"]) } else { envshim(["run", "--manifest", &m, "--"]).env("ENVSHIM_CONTAINER", name) };
        let out = shim.args(print_env()).run();
        out.ok();
        let env = out.env_map();
        assert_eq!(env[var], want);
        assert!(!env.contains_key("APP_KEY") && !env.contains_key("ENVSHIM_CONTAINER"), "{env:?}");
    }
    // `"value": ""` beside a valueFrom means the valueFrom (here the platform's: inherited).
    let out = envshim(["run", "--manifest", &m, "--container", "app", "--"]).args(print_env()).env("POD", "p-1").run();
    out.ok();
    assert_eq!(out.env_map()["POD"], "p-1");
}

#[test]
fn container_works_across_a_list_of_workloads_and_refuses_ambiguity() {
    let v = Volume::new();
    let c = |name: &str, value: &str| json!({"name": name, "env": [{"name": "WHO", "value": value}]});
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [c("web", "deployment")]}}}},
        {"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [c("cron", "cronjob")], "initContainers": [c("dup", "a")]}}}}}},
        {"apiVersion": "v1", "kind": "PodTemplate", "template": {"spec": {"containers": [c("tmpl", "podtemplate"), c("dup", SENTINEL)]}}}
    ]});
    let m = v.manifest(&list);
    for (name, want) in [("web", "deployment"), ("cron", "cronjob"), ("tmpl", "podtemplate")] {
        let out = envshim(["run", "--manifest", &m, "--container", name, "--"]).args(print_env()).run();
        out.ok();
        assert_eq!(out.env_map()["WHO"], want);
    }
    envshim(["check", "--manifest", &m, "--container", "dup"]).run().no_sentinel().fails_with(
        78,
        &["--container dup: two containers of manifest", "items[1].spec.jobTemplate.spec.template.spec.initContainers[0] and items[2].template.spec.containers[1]"],
    );
    envshim(["check", "--manifest", &m, "--container", "nope"]).run().no_sentinel().fails_with(78, &["--container nope: no such container in manifest", "a List (it has web, cron, dup, tmpl, dup)"]);
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &["is a List, not a container spec"]);
    // A schema error in the chosen container names its whole path.
    let bad = json!({"kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "web", "env": [{"name": "A", "valu": SENTINEL}]}]}}}});
    let m = v.manifest(&bad);
    envshim(["check", "--manifest", &m, "--container", "web"]).run().no_sentinel().fails_with(78, &[&format!("manifest {m}: spec.template.spec.containers[0].env[0].valu: unknown field")]);
}

#[test]
fn container_with_a_container_spec_must_name_it() {
    let v = Volume::new();
    let m = v.manifest(&json!({"name": "web", "env": [{"name": "A", "value": SENTINEL}]}));
    envshim(["check", "--manifest", &m, "--container", "web"]).run().ok();
    envshim(["check", "--manifest", &m, "--container", "db"]).run().no_sentinel().fails_with(78, &[&format!("--container db: manifest {m} is a single container spec, named web")]);
}

#[test]
fn value_beside_value_from_is_still_an_error_when_not_empty() {
    let v = Volume::new();
    let m = v.manifest(&json!({"env": [{"name": "A", "value": SENTINEL, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[&format!("manifest {m}: env[0]: has both value and valueFrom")]);
}

#[test]
fn a_yaml_manifest_says_so_and_how_to_get_json() {
    let v = Volume::new();
    for yaml in [format!("apiVersion: v1\nkind: Pod\nmetadata:\n  name: {SENTINEL}\n"), format!("# app\nenv:\n- name: A\n  value: {SENTINEL}\n"), format!("---\nname: {SENTINEL}\n")] {
        let m = v.file_str("m.yaml", &yaml);
        envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(
            78,
            &[&format!("manifest {m} looks like YAML, but envshim reads JSON: convert it (yq -o json FILE, or kubectl create --dry-run=client -o json -f FILE for a whole object)")],
        );
    }
    // Broken JSON is not called YAML.
    let m = v.file_str("m.json", format!("{{\"env\": [{{\"name\": \"{SENTINEL}\"}}\n"));
    envshim(["check", "--manifest", &m]).run().no_sentinel().fails_with(78, &[&format!("manifest {m} is not valid JSON: ")]);
}
