//! The converter where platform teams run it (docs/reference.md §10),
//! through the built binary and the real tools: kubectl's file conventions
//! (`-f DIR`, `-R`, no URL), `kubectl plugin list` and `kubectl envshim`,
//! suggestions, `--check`'s list, the warnings for probes and hooks, the
//! installer's resources, `manifest`, and `krm` run by `kpt fn eval --exec`
//! and by `kubectl kustomize --enable-alpha-plugins`, and Helm's
//! post-renderer path (stdin to stdout). kubectl and kpt: tests/e2e/deps.sh.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{json_docs as docs, Out, BIN, SENTINEL};

/// A Deployment whose container `app` reads TOKEN from a file; DB_URL is
/// built from it; a value holds the sentinel.
const DEPLOYMENT: &str = r#"# the app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # its name
spec:
  template:
    spec:
      containers:
      - name: app
        image: app:1
        command: ["/app"]
        env:
        - name: TOKEN
          valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: TOKEN}}
        - name: DB_URL
          value: "postgres://u:$(TOKEN)@db"
        - name: PLAIN
          value: "SENTINEL-s3cr3t-VALUE"
        volumeMounts: [{name: config, mountPath: /config}]
      - name: side
        image: side:1
        command: ["/side"]
      volumes:
      - name: config
        emptyDir: {}
"#;

const CONFIG_MAP: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm # kept\ndata:\n  mode: \"0644\"\n  on: \"yes\"\n";

/// Runs `program` with `args`, `stdin`, and PATH starting with `path` (when given).
fn run(program: &str, args: &[&str], stdin: &str, path: Option<&Path>, env: &[(&str, &Path)]) -> Out {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(dir) = path {
        cmd.env("PATH", format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default()));
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    crate::support::run(&mut cmd, stdin)
}

fn envshim(args: &[&str], stdin: &str) -> Out {
    run(BIN, args, stdin, None, &[])
}

/// A temp dir holding the binary as `kubectl-envshim`, for PATH.
fn bin_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(BIN, dir.path().join("kubectl-envshim")).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_directory_is_read_as_kubectl_reads_it() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    write(dir, "b.yaml", DEPLOYMENT);
    write(dir, "a.json", r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}"#);
    write(dir, "c.yml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n");
    write(dir, "notes.txt", "not read");
    write(dir, "sub/d.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: d}\n");
    let names = |out: &str| docs(out).iter().map(|d| d["metadata"]["name"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    let out = envshim(&["convert", "-f", dir.to_str().unwrap()], "");
    assert_eq!(names(out.succeeds()), ["a", "web", "c"]);
    let out = envshim(&["convert", "-R", "-f", dir.to_str().unwrap()], "");
    assert_eq!(names(out.succeeds()), ["a", "web", "c", "d"]);
    // --check names each file.
    let out = envshim(&["convert", "--check", "--recursive", "-f", dir.to_str().unwrap()], "");
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(out.stderr, format!("kubectl-envshim: {}: document 1 (Deployment/web): would convert containers app\n", dir.join("b.yaml").display()));
    // A directory with no such file.
    let empty = tempfile::tempdir().unwrap();
    write(empty.path(), "x/y.yaml", CONFIG_MAP);
    envshim(&["convert", "-f", empty.path().to_str().unwrap()], "").failed(65, &["no .yaml, .yml or .json file in it (-R reads its subdirectories)"]);
    assert_eq!(envshim(&["convert", "-R", "-f", empty.path().to_str().unwrap()], "").succeeds(), CONFIG_MAP);
}

#[test]
fn a_url_is_refused_and_a_bare_file_gets_told_to_use_f() {
    for url in [format!("https://u:{SENTINEL}@example.com/app.yaml"), format!("HTTP://example.com/{SENTINEL}")] {
        envshim(&["convert", "-f", &url], DEPLOYMENT).failed(2, &["-f URL: kubectl-envshim never reaches the network", "curl -fsSL URL"]);
    }
    let d = tempfile::tempdir().unwrap();
    let file = write(d.path(), "app.yaml", DEPLOYMENT);
    let file = file.to_str().unwrap();
    envshim(&["convert", file], "")
        .failed(2, &[&format!("unexpected argument \"{file}\": files are given with -f, as kubectl takes them (kubectl envshim convert -f {file})")]);
    envshim(&["manifest", file], "").failed(2, &["kubectl envshim manifest -f"]);
}

#[test]
fn misspelt_subcommands_and_options_get_a_suggestion() {
    for (args, said) in [
        (&["convrt"][..], "unrecognized subcommand 'convrt' (did you mean convert? see kubectl envshim --help)"),
        (&["manfest"], "did you mean manifest?"),
        (&["convert", "--shim-imag", "x"], "unexpected argument '--shim-imag' found (did you mean --shim-image? see kubectl envshim convert --help)"),
        (&["convert", "--chek"], "did you mean --check?"),
        (&["manifest", "--containr", "a"], "did you mean --container?"),
        (&["convert", "--zzzzzz"], "unexpected argument '--zzzzzz' found (see kubectl envshim convert --help)"),
        (&["convert", "-x"], "unexpected argument '-x' found (see kubectl envshim convert --help)"),
    ] {
        let err = envshim(args, "").failed(2, &[said]).to_string();
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn check_lists_each_document_that_would_change() {
    let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    initContainers:\n    - name: i\n      command: [/i]\n      env: [{name: T, valueFrom: {fileKeyRef: {volumeName: v, path: e, key: T}}}]\n    containers:\n    - name: c\n      command: [/c]\n      env: [{name: T, valueFrom: {fileKeyRef: {volumeName: v, path: e, key: T}}}]\n    volumes: [{name: v, emptyDir: {}}]\n- {apiVersion: v1, kind: Pod, metadata: {name: q}, spec: {containers: [{name: x}]}}\n";
    let stream = format!("{CONFIG_MAP}---\n{DEPLOYMENT}---\n{list}");
    let out = envshim(&["convert", "--check"], &stream);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(
        out.stderr,
        "kubectl-envshim: stdin: document 2 (Deployment/web): would convert containers app\n\
         kubectl-envshim: stdin: document 3 (Pod/p): would convert containers i, c\n"
    );
    // Converted, nothing is listed and nothing would change.
    let converted = envshim(&["convert"], &stream).succeeds().to_string();
    let out = envshim(&["convert", "--check"], &converted);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""));
}

#[test]
fn probes_and_hooks_that_need_an_envshim_variable_are_warned_about() {
    let with_probes = DEPLOYMENT.replace(
        "        volumeMounts: [{name: config, mountPath: /config}]\n",
        "        volumeMounts: [{name: config, mountPath: /config}]\n\
         \x20       livenessProbe: {exec: {command: [/check, \"--url=$(DB_URL)\"]}}\n\
         \x20       readinessProbe: {exec: {command: [sh, -c, \"curl -H \\\"X: $TOKEN\\\" ${PLAIN}\"]}}\n\
         \x20       startupProbe: {exec: {command: [/ok, \"$$(TOKEN)\", \"$(PLAIN)\"]}}\n\
         \x20       lifecycle: {preStop: {exec: {command: [sh, -c, \"/drain ${DB_URL}\"]}}}\n",
    );
    let out = envshim(&["convert"], &with_probes);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let at = "kubectl-envshim: warning: stdin: document 1 (Deployment/web): spec.template.spec.containers[0]";
    let expected = [
        format!("{at}.livenessProbe.exec.command: refers to DB_URL, which container app gets only from envshim: it runs outside envshim, without it"),
        format!("{at}.readinessProbe.exec.command: refers to TOKEN, which container app gets only from envshim: it runs outside envshim, without it"),
        format!("{at}.lifecycle.preStop.exec.command: refers to DB_URL, which container app gets only from envshim: it runs outside envshim, without it"),
    ];
    assert_eq!(out.stderr.lines().collect::<Vec<_>>(), expected, "{}", out.stderr);
    out.no_sentinel();
    // The output is the same as without the warnings' cause (warnings change nothing).
    assert!(docs(&out.stdout)[0]["spec"]["template"]["spec"]["initContainers"][0]["name"] == "envshim-install");
    // --check says them too; a pod without such a place gets none.
    let out = envshim(&["convert", "--check"], &with_probes);
    assert_eq!(out.stderr.lines().filter(|l| l.contains("warning:")).count(), 3);
    let plain = envshim(&["convert"], DEPLOYMENT);
    plain.succeeds();
    assert_eq!(plain.stderr, "");
}

/// The scan for references in probes and hooks is linear: a `$(` or `${`
/// that is never closed, or a reference among thousands of envshim-only
/// names, costs one pass (each `$(` searched for its `)` again took minutes
/// for a 2 MB probe word).
#[test]
fn probe_words_are_scanned_in_linear_time() {
    let names: Vec<String> = (0..1000).map(|i| format!("N{i}")).collect();
    let env: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::json!({"name": n, "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "a.env", "key": n}}}))
        .chain([serde_json::json!({"name": "SECRET", "value": "SENTINEL-s3cr3t-VALUE"})])
        .collect();
    let refs: String = names.iter().map(|n| format!("$({n})")).collect();
    let words = ["$(".repeat(1 << 20), "${".repeat(1 << 20), refs.repeat(100), "$N999 ".repeat(100_000)];
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "volumes": [{"name": "cfg", "emptyDir": {}}],
        "containers": [{"name": "app", "image": "x", "command": ["/app"], "env": env, "livenessProbe": {"exec": {"command": words}}}]}});
    let start = std::time::Instant::now();
    let out = envshim(&["convert"], &pod.to_string());
    let took = start.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.no_sentinel();
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("livenessProbe.exec.command: refers to N0, N1, N2,"), "{}", out.stderr);
    assert!(took.as_secs() < 20, "{took:?}");
}

/// The names a program line refers to are gathered in linear time, before
/// the manifest's size is checked: 100,000 names in one word took a minute.
#[test]
fn many_references_in_the_program_line_are_gathered_in_linear_time() {
    let word: String = (0..100_000).map(|i| format!("$(N{i})")).collect();
    let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "volumes": [{"name": "cfg", "emptyDir": {}}],
        "containers": [{"name": "app", "image": "x", "command": ["/app", word], "env": [
            {"name": "SECRET", "value": "SENTINEL-s3cr3t-VALUE"},
            {"name": "F", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "a.env", "key": "F"}}}]}]}});
    let start = std::time::Instant::now();
    let out = envshim(&["convert"], &pod.to_string());
    let took = start.elapsed();
    out.failed(78, &["over Linux's limit of 131071 bytes for one variable"]);
    assert!(took.as_secs() < 10, "{took:?}");
}

/// A converted pod with a long string above many mappings: `long` as the
/// object's name or as a key, `many` empty mappings below. Converted in
/// linear time (a copy of the name or the path at each node made it
/// quadratic: a minute for 10 MB).
fn long_above_many(long_key: bool) {
    let long = "n".repeat(8 << 20);
    let many = vec![serde_json::json!({}); 200_000];
    let container = serde_json::json!({"name": "app", "image": "x", "command": ["/app"], "env": [
        {"name": "SECRET", "value": "SENTINEL-s3cr3t-VALUE"},
        {"name": "F", "valueFrom": {"fileKeyRef": {"volumeName": "cfg", "path": "a.env", "key": "F"}}}]});
    let spec = serde_json::json!({"volumes": [{"name": "cfg", "emptyDir": {}}], "containers": [container]});
    let mut doc = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
    if long_key {
        doc["x"] = serde_json::json!({long: many});
    } else {
        doc["metadata"]["name"] = serde_json::json!(long);
        doc["x"] = serde_json::json!(many);
    }
    let start = std::time::Instant::now();
    let out = envshim(&["convert"], &doc.to_string());
    let took = start.elapsed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.no_sentinel();
    assert!(took.as_secs() < 15, "{took:?}");
}

#[test]
fn a_long_object_name_above_many_nodes_is_walked_in_linear_time() {
    long_above_many(false);
}

#[test]
fn a_long_key_above_many_nodes_is_walked_in_linear_time() {
    long_above_many(true);
}

#[test]
fn the_installer_has_small_requests_and_limits_set_by_options() {
    let installer = |out: &str| docs(out)[0]["spec"]["template"]["spec"]["initContainers"][0]["resources"].clone();
    let small = serde_json::json!({"requests": {"cpu": "50m", "memory": "16Mi"}, "limits": {"cpu": "50m", "memory": "16Mi"}});
    assert_eq!(installer(envshim(&["convert"], DEPLOYMENT).succeeds()), small);
    let out = envshim(&["convert", "--installer-cpu", "0.1", "--installer-memory", "32Mi"], DEPLOYMENT);
    assert_eq!(installer(out.succeeds()), serde_json::json!({"requests": {"cpu": "0.1", "memory": "32Mi"}, "limits": {"cpu": "0.1", "memory": "32Mi"}}));
    for (option, value) in [("--installer-cpu", "fast"), ("--installer-memory", "16MB"), ("--installer-cpu", ""), ("--installer-memory", "-1Mi")] {
        envshim(&["convert", &format!("{option}={value}")], DEPLOYMENT).failed(2, &[option, "expected a Kubernetes quantity"]);
    }
}

#[test]
fn manifest_prints_one_container_for_envshim() {
    let d = tempfile::tempdir().unwrap();
    let file = write(d.path(), "app.yaml", &format!("{CONFIG_MAP}---\n{DEPLOYMENT}"));
    let file = file.to_str().unwrap();
    // The one container with a fileKeyRef needs no --container.
    for args in [&["manifest", "-f", file][..], &["manifest", "-f", file, "--container", "app"]] {
        let out = envshim(args, "");
        let printed: serde_json::Value = serde_json::from_str(out.succeeds()).unwrap();
        let keys: Vec<&String> = printed.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["command", "env", "volumeMounts"]);
        assert_eq!(printed["env"][1], serde_json::json!({"name": "DB_URL", "value": "postgres://u:$(TOKEN)@db"}));
        // What envshim reads, as it reads it.
        let m =
            envshim::converter::parse_manifest(out.stdout.as_bytes()).unwrap_or_else(|e| panic!("{:?}", e.iter().map(ToString::to_string).collect::<Vec<_>>()));
        assert_eq!((m.env.len(), m.command.len(), m.volume_mounts.len()), (3, 1, 1));
    }
    let side: serde_json::Value = serde_json::from_str(envshim(&["manifest", "-f", file, "--container", "side"], "").succeeds()).unwrap();
    assert_eq!(side, serde_json::json!({"command": ["/side"]}));
    // Envshim's own messages for a missing or doubled name.
    envshim(&["manifest", "-f", file, "-c", "nope"], "").failed(78, &["--container nope: no such container in manifest", "it has app, side"]);
    let twice = format!("{DEPLOYMENT}---\n{}", DEPLOYMENT.replace("name: web", "name: web2"));
    envshim(&["manifest", "-c", "app"], &twice).failed(78, &["--container app: two containers of manifest stdin have that name"]);
    // Several with a fileKeyRef: choose one.
    envshim(&["manifest"], &twice).failed(2, &["stdin: choose the container with --container NAME (it has app, side, app, side)"]);
    // A volume it reads but does not mount: said, the manifest printed.
    let unmounted = DEPLOYMENT.replace("        volumeMounts: [{name: config, mountPath: /config}]\n", "");
    let out = envshim(&["manifest"], &unmounted);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr,
        "kubectl-envshim: warning: container app reads the volume config without mounting it: mount it in the container, where envshim reads it\n"
    );
    // Documents without containers are left out (a deep one too); none at all: said.
    let deep = format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep}}\nx: {}{}\n---\n{DEPLOYMENT}", "[".repeat(200), "]".repeat(200));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(envshim(&["manifest", "-c", "side"], &deep).succeeds()).unwrap(),
        serde_json::json!({"command": ["/side"]})
    );
    envshim(&["manifest"], CONFIG_MAP).failed(78, &["stdin: no document holds a container"]);
    // A schema error envshim would give at start-up, given now.
    envshim(&["manifest"], &DEPLOYMENT.replace("path: app.env", "path: app.env, paht: x")).failed(78, &["paht"]);
    envshim(&["manifest"], &format!("kind: Pod\nmetadata: {{name: \"{SENTINEL}\n")).failed(65, &["stdin: document 1 (line 2): not valid YAML"]);
}

#[test]
fn kubectl_finds_the_plugin_and_runs_it() {
    let bin = bin_dir();
    let out = run("kubectl", &["plugin", "list"], "", Some(bin.path()), &[]);
    assert!(out.stdout.contains(&bin.path().join("kubectl-envshim").display().to_string()), "{}\n{}", out.stdout, out.stderr);
    let out = run("kubectl", &["envshim", "convert", "-f", "-"], DEPLOYMENT, Some(bin.path()), &[]);
    let all = docs(out.succeeds());
    assert_eq!(all[0]["spec"]["template"]["spec"]["containers"][0]["command"], serde_json::json!(["/.envshim/bin/envshim", "run"]));
    let out = run("kubectl", &["envshim", "--version"], "", Some(bin.path()), &[]);
    assert_eq!(out.succeeds(), format!("kubectl-envshim {}\n", env!("CARGO_PKG_VERSION")));
    // kubectl passes the exit code and stderr through.
    run("kubectl", &["envshim", "convrt"], "", Some(bin.path()), &[]).failed(2, &["did you mean convert?"]);
}

/// A kpt package: the Deployment (with comments) and an unchanged file.
fn package() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "pkg/app.yaml", &format!("{DEPLOYMENT}---\n{CONFIG_MAP}"));
    write(d.path(), "pkg/other.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80, name: \"on\"}] # flow\n");
    d
}

#[test]
fn kpt_runs_it_as_a_function() {
    let d = package();
    let pkg = d.path().join("pkg");
    let other = std::fs::read_to_string(pkg.join("other.yaml")).unwrap();
    let config = write(d.path(), "fn.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: envshim}\ndata:\n  shim-image: registry.example/envshim:1\n  installer-memory: 8Mi\n  wait: 30s\n  env-grammar: envshim\n  entrypoint: |\n    side=/side\n");
    let exec = format!("{BIN} krm");
    let out = run("kpt", &["fn", "eval", pkg.to_str().unwrap(), "--exec", &exec, "--fn-config", config.to_str().unwrap()], "", None, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out.no_sentinel();
    assert!(out.stderr.contains("[PASS]"), "{}", out.stderr);
    // The untouched file byte for byte, the other file's ConfigMap too, comments kept.
    assert_eq!(std::fs::read_to_string(pkg.join("other.yaml")).unwrap(), other);
    let app = std::fs::read_to_string(pkg.join("app.yaml")).unwrap();
    assert!(app.ends_with(&format!("---\n{CONFIG_MAP}")), "{app}");
    assert!(app.starts_with("# the app\n") && app.contains("name: web # its name"), "{app}");
    let all = docs(&app);
    let spec = &all[0]["spec"]["template"]["spec"];
    assert_eq!(spec["initContainers"][0]["image"], "registry.example/envshim:1");
    assert_eq!(spec["initContainers"][0]["resources"]["limits"], serde_json::json!({"cpu": "50m", "memory": "8Mi"}));
    assert_eq!(spec["containers"][0]["env"][4], serde_json::json!({"name": "ENVSHIM_WAIT", "value": "30s"}));
    assert_eq!(spec["containers"][0]["env"][5], serde_json::json!({"name": "ENVSHIM_ENV_GRAMMAR", "value": "envshim"}));
    // No kpt annotation left behind.
    assert!(!app.contains("config.kubernetes.io"), "{app}");
    // Converting again changes nothing.
    let out = run("kpt", &["fn", "eval", pkg.to_str().unwrap(), "--exec", &exec, "--fn-config", config.to_str().unwrap()], "", None, &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(pkg.join("app.yaml")).unwrap(), app);
}

#[test]
fn a_kptfile_pipeline_runs_it_with_kpt_fn_render() {
    let d = package();
    let pkg = d.path().join("pkg");
    let bin = bin_dir();
    write(
        &pkg,
        "envshim.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: envshim\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  wait: 5s\n",
    );
    write(&pkg, "Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - exec: \"kubectl-envshim krm\"\n    configPath: envshim.yaml\n");
    let out = run("kpt", &["fn", "render", pkg.to_str().unwrap(), "--allow-exec"], "", Some(bin.path()), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let app = std::fs::read_to_string(pkg.join("app.yaml")).unwrap();
    let env = &docs(&app)[0]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[4], serde_json::json!({"name": "ENVSHIM_WAIT", "value": "5s"}));
    assert_eq!(env[5], serde_json::json!({"name": "ENVSHIM_ENV_GRAMMAR", "value": "kubelet"}));
    assert!(app.ends_with(&format!("---\n{CONFIG_MAP}")), "{app}");
}

#[test]
fn kpt_shows_its_errors_as_results_and_changes_nothing() {
    let d = package();
    let pkg = d.path().join("pkg");
    let app = pkg.join("app.yaml");
    let text = std::fs::read_to_string(&app).unwrap().replace("        command: [\"/app\"]\n", "");
    std::fs::write(&app, &text).unwrap();
    let exec = format!("{BIN} krm");
    let out = run("kpt", &["fn", "eval", pkg.to_str().unwrap(), "--exec", &exec], "", None, &[]);
    assert_ne!(out.code, 0);
    out.no_sentinel();
    for part in ["[error] apps/v1/Deployment/web", "Deployment/web: container app: no command", "spec.template.spec.containers[0].command"] {
        assert!(out.stderr.contains(part), "{part}: {}", out.stderr);
    }
    assert_eq!(std::fs::read_to_string(&app).unwrap(), text);
    // A misspelt config key: an error naming the key it meant.
    let config = write(d.path(), "fn.yaml", &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: e}}\ndata:\n  shim-imag: \"{SENTINEL}\"\n"));
    let out = run("kpt", &["fn", "eval", pkg.to_str().unwrap(), "--exec", &exec, "--fn-config", config.to_str().unwrap()], "", None, &[]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("functionConfig: data.shim-imag is not an option of kubectl envshim (did you mean shim-image?)"), "{}", out.stderr);
    out.no_sentinel();
}

#[test]
fn krm_reads_a_resource_list_and_keeps_every_item_it_does_not_change() {
    let items = format!("{}\n{}", indent_item(CONFIG_MAP), indent_item(DEPLOYMENT));
    let list = format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{items}functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data: {{wait: 5s, watch: \"true\"}}\n");
    let out = envshim(&["krm"], &list);
    let text = out.succeeds();
    // The ConfigMap's text as it came; the Deployment converted; results: the warning-free run has none.
    assert!(text.starts_with(&format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}", indent_item(CONFIG_MAP))), "{text}");
    let all = docs(text);
    assert_eq!(all[0]["items"][1]["spec"]["template"]["spec"]["containers"][0]["env"][4]["name"], "ENVSHIM_WAIT");
    assert!(all[0].get("results").is_none(), "{text}");
    assert_eq!(all[0]["functionConfig"]["data"]["wait"], "5s");
    assert_eq!(all[0]["items"][1]["spec"]["template"]["spec"]["containers"][0]["command"][2], "--watch");
    // A warning is a result, no value in it.
    let probe = DEPLOYMENT.replace("        volumeMounts:", "        livenessProbe: {exec: {command: [\"$(DB_URL)\"]}}\n        volumeMounts:");
    let out = envshim(&["krm"], &format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}", indent_item(&probe)));
    let results = &docs(out.succeeds())[0]["results"];
    assert_eq!(results[0]["severity"], "warning");
    assert_eq!(results[0]["resourceRef"], serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}));
    assert!(!out.stdout[out.stdout.find("results:").unwrap()..].contains("s3cr3t"));
    // A ResourceList laid out otherwise (JSON): written anew, converted the same.
    let as_json =
        serde_json::json!({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": docs(&format!("{CONFIG_MAP}---\n{DEPLOYMENT}"))});
    let out = envshim(&["krm"], &as_json.to_string());
    let all = docs(out.succeeds());
    assert_eq!(all[0]["items"][0], docs(CONFIG_MAP)[0]);
    assert_eq!(all[0]["items"][1]["spec"]["template"]["spec"]["initContainers"][0]["name"], "envshim-install");
    // A bad config: exit 2 as a bad option, with the result; a pod that cannot be converted: 78.
    let bad = format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}functionConfig: {{data: {{wait: soon}}}}\n", indent_item(DEPLOYMENT));
    let out = envshim(&["krm"], &bad);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stdout.contains("message: 'functionConfig: data.wait:") || out.stdout.contains("functionConfig: data.wait:"), "{}", out.stdout);
    let no_command =
        format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}", indent_item(&DEPLOYMENT.replace("        command: [\"/app\"]\n", "")));
    let out = envshim(&["krm"], &no_command);
    assert_eq!(out.code, 78, "{}", out.stderr);
    let listed = &docs(&out.stdout)[0];
    assert_eq!(listed["items"][0], docs(&DEPLOYMENT.replace("        command: [\"/app\"]\n", ""))[0], "the items as they came");
    assert_eq!(listed["results"][0]["field"]["path"], "spec.template.spec.containers[0].command");
    assert!(!out.stdout[out.stdout.find("results:").unwrap()..].contains("s3cr3t"));
    // Not a ResourceList, and no argument: what to do.
    envshim(&["krm"], DEPLOYMENT).failed(65, &["stdin: not a ResourceList", "kustomize's exec transformer plugin gives its config file as the argument"]);
}

/// A ResourceList without `items` (a misspelt key) whose function fails: the
/// output, with its `results`, is still one YAML document, in any layout.
#[test]
fn krm_results_of_a_list_without_items_are_one_document() {
    let config = format!("{{apiVersion: v1, kind: ConfigMap, data: {{bogus: \"{SENTINEL}\"}}}}");
    let inputs = [
        format!("{{\"apiVersion\": \"config.kubernetes.io/v1\", \"kind\": \"ResourceList\", \"itemz\": [], \"functionConfig\": {}}}", docs(&config)[0]),
        format!("{{apiVersion: config.kubernetes.io/v1, kind: ResourceList, itemz: [], functionConfig: {config}}}\n"),
        format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitemz: []\nfunctionConfig: {config}\n"),
    ];
    for input in inputs {
        let out = envshim(&["krm"], &input);
        assert_eq!(out.code, 2, "{}", out.stderr);
        let read: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&out.stdout)
            .map(|d| serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("not YAML ({e}):\n{}", out.stdout)))
            .collect();
        assert_eq!(read.len(), 1, "{}", out.stdout);
        assert_eq!(read[0]["kind"], "ResourceList");
        assert_eq!(read[0]["itemz"], serde_json::json!([]));
        assert!(read[0]["results"][0]["message"].as_str().unwrap().contains("functionConfig: data.bogus is not an option"), "{}", out.stdout);
        assert!(!read[0]["results"].to_string().contains("s3cr3t"), "{}", out.stdout);
    }
}

#[test]
fn under_kpt_and_kustomize_messages_name_the_config_keys_not_flags() {
    let no_command = DEPLOYMENT.replace("        command: [\"/app\"]\n", "");
    let list = |config: &str| {
        format!("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{}functionConfig: {{data: {{{config}}}}}\n", indent_item(&no_command))
    };
    // kpt: the results name data.entrypoint, never a flag that cannot be passed there.
    let out = envshim(&["krm"], &list(""));
    assert_eq!(out.code, 78, "{}", out.stderr);
    let message = docs(&out.stdout)[0]["results"][0]["message"].as_str().unwrap().to_string();
    assert!(message.ends_with("set command, or add the line app=PROGRAM to the config's data.entrypoint"), "{message}");
    let out = envshim(&["krm"], &list("shim-image: r/e:1, shim-path: /bin/envshim"));
    let message = docs(&out.stdout)[0]["results"][0]["message"].as_str().unwrap().to_string();
    assert_eq!(
        message,
        "functionConfig: data.shim-image is for the envshim-install initContainer, which data.shim-path (envshim in the image) leaves out: give one"
    );
    // A program of one word with blanks: refused, in the config's terms.
    let out = envshim(&["krm"], &list("entrypoint: 'app=/docker-entrypoint.sh nginx -g daemon off;'"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    let results = &docs(&out.stdout)[0]["results"];
    assert_eq!(results[0]["severity"], "error");
    let message = results[0]["message"].as_str().unwrap();
    assert!(message.starts_with("functionConfig: data.entrypoint app: the program is one word with blanks"), "{message}");
    assert!(message.contains(r#"the line app=["/docker-entrypoint.sh","nginx","-g","daemon","off;"] in data.entrypoint"#), "{message}");
    // kustomize's transformer: the same on stderr.
    let d = tempfile::tempdir().unwrap();
    let config = write(d.path(), "c.yaml", "apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {name: c}\n");
    let err = envshim(&["krm", config.to_str().unwrap()], &no_command).fails(78, &["add the line app=PROGRAM to the config's data.entrypoint"]).to_string();
    assert!(!err.contains("--"), "{err}");
    let config = write(d.path(), "c.yaml", "apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {name: c}\ndata: {wait: soon}\n");
    let err = envshim(&["krm", config.to_str().unwrap()], &no_command).fails(2, &["c.yaml: data.wait: "]).to_string();
    assert!(!err.contains("--"), "{err}");
}

/// `text` as an item of a block sequence at column 0.
fn indent_item(text: &str) -> String {
    text.lines().enumerate().map(|(i, l)| format!("{}{l}\n", if i == 0 { "- " } else { "  " })).collect()
}

#[test]
fn kubectl_kustomize_runs_it_as_an_exec_transformer_plugin() {
    let d = tempfile::tempdir().unwrap();
    let bin = bin_dir();
    let plugin = write(d.path(), "plugins/envshim.io/v1/convert/Convert", "#!/bin/sh\nexec kubectl-envshim krm \"$@\"\n");
    std::os::unix::fs::PermissionsExt::set_mode(&mut std::fs::metadata(&plugin).unwrap().permissions(), 0o755);
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    write(d.path(), "app/deployment.yaml", DEPLOYMENT);
    write(d.path(), "app/cm.yaml", CONFIG_MAP);
    write(d.path(), "app/kustomization.yaml", "resources: [deployment.yaml, cm.yaml]\nnamePrefix: p-\ntransformers: [envshim.yaml]\n");
    write(
        d.path(),
        "app/envshim.yaml",
        "apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {name: envshim}\ndata:\n  shim-image: registry.example/envshim:2\n  installer-cpu: 20m\n",
    );
    // TMPDIR: kustomize leaves a copy of each plugin's config there (kust-plugin-config-N).
    let env = [("KUSTOMIZE_PLUGIN_HOME", &*d.path().join("plugins")), ("TMPDIR", d.path())];
    let out = run("kubectl", &["kustomize", "--enable-alpha-plugins", d.path().join("app").to_str().unwrap()], "", Some(bin.path()), &env);
    let all = docs(out.succeeds());
    let deployment = all.iter().find(|d| d["kind"] == "Deployment").unwrap();
    assert_eq!(deployment["metadata"]["name"], "p-web");
    let spec = &deployment["spec"]["template"]["spec"];
    assert_eq!(spec["initContainers"][0]["image"], "registry.example/envshim:2");
    assert_eq!(spec["initContainers"][0]["resources"]["requests"]["cpu"], "20m");
    assert_eq!(spec["containers"][0]["command"], serde_json::json!(["/.envshim/bin/envshim", "run"]));
    let cm = all.iter().find(|d| d["kind"] == "ConfigMap").unwrap();
    assert_eq!(cm["data"], serde_json::json!({"mode": "0644", "on": "yes"}));
    // kustomize's id annotations, which it needs back, are kept (and removed by it).
    assert!(!out.stdout.contains("kustomize.config.k8s.io/id"), "{}", out.stdout);
    // A config it does not take: kustomize fails, with the message.
    write(d.path(), "app/envshim.yaml", "apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {name: envshim}\ndata:\n  wiat: 5s\n");
    let out = run("kubectl", &["kustomize", "--enable-alpha-plugins", d.path().join("app").to_str().unwrap()], "", Some(bin.path()), &env);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("data.wiat is not an option of kubectl envshim (did you mean wait?)"), "{}", out.stderr);
}

/// The config's keys are convert's options, read with the command line's
/// own definition: the keys it lists are every option of `convert --help`
/// but the input's and --check; a repeatable one takes a value a line; a
/// message names the key as the config spells it.
#[test]
fn the_config_takes_every_option_of_convert_by_its_long_name() {
    let d = tempfile::tempdir().unwrap();
    let help = envshim(&["convert", "--help"], "");
    // Each option's line: `  -x, --long <VALUE>  help` (a help text naming another option is not one).
    let defined = help.stdout.lines().map(str::trim_start).filter(|l| l.starts_with('-'));
    let mut options: Vec<&str> =
        defined.filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--"))).map(|w| w.trim_end_matches([',', '=', '<'])).collect();
    options.retain(|o| !["--filename", "--recursive", "--check", "--help"].contains(o));
    options.dedup();
    let config = write(d.path(), "c.yaml", &format!("kind: Convert\ndata:\n  zzzzzzzzzzzzzz: \"{SENTINEL}\"\n"));
    let stderr = envshim(&["krm", config.to_str().unwrap()], "").failed(2, &["data.zzzzzzzzzzzzzz is not an option of kubectl envshim (it takes "]).to_string();
    let listed = stderr.split("it takes ").nth(1).unwrap().trim_end().trim_end_matches(')');
    // And the function's own key: `unconvert`.
    let options: Vec<String> = options.iter().map(|o| o.trim_start_matches('-').to_string()).chain(["unconvert".to_string()]).collect();
    assert_eq!(listed.split(", ").collect::<Vec<_>>(), options, "{stderr}");
    // Each line of a repeatable option is one of its values (a second line given twice: the conversion's own message).
    let twice = write(d.path(), "t.yaml", "kind: Convert\ndata:\n  shim-image: r/e:1\n  entrypoint: |\n    web=/app\n\n    web=/other\n");
    envshim(&["krm", twice.to_str().unwrap()], "").failed(2, &["t.yaml: data.entrypoint web: given twice"]);
    // A message names the option as the config spells it.
    let grammar = write(d.path(), "g.yaml", "kind: Convert\ndata:\n  shim-image: r/e:1\n  env-grammar: kubelets\n");
    let stderr = envshim(&["krm", grammar.to_str().unwrap()], "").failed(2, &["g.yaml: data.env-grammar: expected envshim or kubelet"]).to_string();
    assert!(!stderr.contains("--env-grammar") && !stderr.contains("kubelets"), "{stderr}");
    // A flag's key takes the words envshim's variables take (ENVSHIM_WATCH=yes).
    let flag = write(d.path(), "w.yaml", &format!("kind: Convert\ndata:\n  shim-image: r/e:1\n  watch: \"{SENTINEL}\"\n"));
    let stderr = envshim(&["krm", flag.to_str().unwrap()], "").failed(2, &["w.yaml: data.watch: must be one of 1/0, true/false, yes/no, on/off"]).to_string();
    assert!(!stderr.contains(SENTINEL), "{stderr}");
}

mod post;
