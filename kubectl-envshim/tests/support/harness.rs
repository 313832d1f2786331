//! The two paths of the differential test, through the real binaries:
//! native (the kubelet model on the pod as written) and converted
//! (`kubectl-envshim convert`, the same model on the converted container,
//! then the real `envshim` with exactly that environment, exec'ing the
//! printer). And the one comparison between them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Value};

use super::kubelet::{self, Started, World};

pub const CONVERTER: &str = env!("CARGO_BIN_EXE_kubectl-envshim");
/// A secret-looking value the named tests put in their inputs: no message of
/// the converter or of envshim may show it.
pub const SENTINEL: &str = "SENTINEL-s3cr3t-VALUE";

/// One pod and everything around it.
#[derive(Clone, Debug)]
pub struct Case {
    /// A whole `Pod` document; its name is unique in a batch.
    pub pod: Value,
    /// The container whose program the test compares.
    pub container: String,
    pub world: World,
    /// `--entrypoint CONTAINER=JSON` for this pod's container, when it has no command.
    pub entrypoint: Option<Vec<String>>,
}

impl Case {
    pub fn name(&self) -> &str {
        self.pod["metadata"]["name"].as_str().unwrap()
    }

    pub fn container_spec(&self) -> &Value {
        container(&self.pod, &self.container).expect("the case's container")
    }
}

/// What happens to a container: its program starts with this argv and
/// environment, or it does not start at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Started(Started),
    Fails(String),
}

/// The converter's answer for one case.
#[derive(Debug)]
pub enum Converted {
    /// The converted container (no `fileKeyRef` left) and the world around it
    /// (the cluster plus any ConfigMap or Secret the converter generated).
    Container(Value, Box<World>),
    /// A refusal: the exit code and stderr of converting this pod alone.
    Refused(i32, String),
}

#[derive(Clone, Copy, Debug)]
pub enum Format {
    YamlStream,
    YamlList,
    JsonStream,
    JsonList,
}

pub const FORMATS: [Format; 4] = [Format::YamlStream, Format::YamlList, Format::JsonStream, Format::JsonList];

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// The envshim binary of this workspace, built first (the shim may have
/// changed since: `cargo test -p kubectl-envshim` builds only its library),
/// in the profile the converter was built in.
pub fn envshim() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = Path::new(CONVERTER).with_file_name("envshim");
        let mut build = Command::new(env!("CARGO"));
        build.args(["build", "--quiet", "-p", "envshim", "--bin", "envshim"]);
        if bin.parent().and_then(Path::file_name).is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        assert!(build.status().unwrap().success(), "cargo build -p envshim");
        assert!(bin.exists(), "{} after cargo build", bin.display());
        bin
    })
}

/// The printer (`support/printer.rs`), compiled once per test run with rustc.
pub fn printer() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/printer.rs");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("exact-printer");
        let fresh = |o: &Path| Some(std::fs::metadata(o).ok()?.modified().ok()? >= std::fs::metadata(&src).ok()?.modified().ok()?);
        if fresh(&out) != Some(true) {
            let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
            let status = Command::new(rustc).args(["--edition", "2021", "-O", "-o"]).arg(&out).arg(&src).status().expect("run rustc");
            assert!(status.success(), "rustc {}", src.display());
        }
        out.to_str().unwrap().to_string()
    })
}

/// Runs `kubectl-envshim ARGS` with `input` on stdin.
pub fn kubectl_envshim(args: &[String], input: &str) -> Run {
    let out = super::piped(Command::new(CONVERTER).args(args), input);
    Run { code: out.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&out.stdout).into(), stderr: String::from_utf8_lossy(&out.stderr).into() }
}

/// The documents as a stream in `format`.
pub fn write(docs: &[Value], format: Format) -> String {
    // Not a YAML 1.2 emitter: it writes `Y` or `on` plain, which kubectl (YAML 1.1) reads as booleans.
    let yaml = super::quoted_yaml::block_yaml;
    match format {
        Format::YamlStream => docs.iter().map(|d| format!("---\n{}", yaml(d))).collect(),
        Format::YamlList => yaml(&json!({"apiVersion": "v1", "kind": "List", "items": docs})),
        Format::JsonStream => docs.iter().map(|d| serde_json::to_string_pretty(d).unwrap() + "\n").collect(),
        Format::JsonList => serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": docs})).unwrap(),
    }
}

/// The documents of the converter's output (a `List` flattened into its items).
pub fn read(text: &str) -> Vec<Value> {
    let docs: Vec<Value> = if text.trim_start().starts_with(['{', '[']) {
        serde_json::Deserializer::from_str(text).into_iter::<Value>().map(|d| d.expect("the converter's JSON output")).collect()
    } else {
        serde_norway::Deserializer::from_str(text).map(|d| Value::deserialize(d).expect("the converter's YAML output")).collect()
    };
    let mut out = Vec::new();
    for d in docs.into_iter().filter(|d| !d.is_null()) {
        match d.get("items").and_then(Value::as_array) {
            Some(items) if d["kind"] == "List" => out.extend(items.iter().cloned()),
            _ => out.push(d),
        }
    }
    out
}

/// The container NAME of a pod document.
pub fn container<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["containers", "initContainers"].iter().filter_map(|field| pod["spec"].get(*field).and_then(Value::as_array)).flatten().find(|c| c["name"] == name)
}

/// The converter's arguments for these cases: `--shim-path` the real envshim
/// (so no installer is needed and the command's first word runs as it is),
/// and each container's `--entrypoint`.
pub fn convert_args(cases: &[&Case], extra: &[String]) -> Vec<String> {
    let mut args = vec!["convert".to_string(), "--shim-path".into(), envshim().to_str().unwrap().into()];
    let mut entrypoints: BTreeMap<&str, String> = BTreeMap::new();
    for c in cases {
        if let Some(words) = &c.entrypoint {
            let text = serde_json::to_string(words).unwrap();
            let before = entrypoints.insert(&c.container, text.clone());
            assert!(before.is_none_or(|b| b == text), "two entrypoints for container {} in one batch", c.container);
        }
    }
    for (name, words) in entrypoints {
        args.extend(["--entrypoint".to_string(), format!("{name}={words}")]);
    }
    args.extend(extra.iter().cloned());
    args
}

/// Converts the cases in one call (a temp file in `format`); a batch the
/// converter refuses is halved until the refused pods are alone.
pub fn convert_batch(cases: &[&Case], format: Format, extra: &[String]) -> Vec<Converted> {
    let dir = tempfile::tempdir().unwrap();
    let ext = if matches!(format, Format::JsonStream | Format::JsonList) { "json" } else { "yaml" };
    let file = dir.path().join(format!("pods.{ext}"));
    std::fs::write(&file, write(&cases.iter().map(|c| c.pod.clone()).collect::<Vec<_>>(), format)).unwrap();
    let mut args = convert_args(cases, extra);
    args.extend(["-f".to_string(), file.to_str().unwrap().to_string()]);
    let run = kubectl_envshim(&args, "");
    assert!(!run.stderr.contains(SENTINEL), "the converter shows a value in a message: {}", run.stderr);
    if run.code != 0 {
        if cases.len() == 1 {
            return vec![Converted::Refused(run.code, run.stderr)];
        }
        let (a, b) = cases.split_at(cases.len() / 2);
        return [convert_batch(a, format, extra), convert_batch(b, format, extra)].into_iter().flatten().collect();
    }
    from_output(&run.stdout, cases)
}

/// Each case's converted container in the converter's output `text`.
pub fn from_output(text: &str, cases: &[&Case]) -> Vec<Converted> {
    let out = read(text);
    let (config_maps, secrets) = generated_objects(&out);
    cases
        .iter()
        .map(|c| {
            let pod = out
                .iter()
                .find(|d| d["kind"] == "Pod" && d["metadata"]["name"] == c.name())
                .unwrap_or_else(|| panic!("pod {} missing from the output", c.name()));
            let converted =
                container(pod, &c.container).unwrap_or_else(|| panic!("pod {}: container {} missing from the output", c.name(), c.container)).clone();
            let mut world = c.world.clone();
            world.config_maps.extend(config_maps.clone());
            world.secrets.extend(secrets.clone());
            Converted::Container(converted, Box::new(world))
        })
        .collect()
}

/// ConfigMaps and Secrets in the converter's output (the cluster gets them too).
pub type Store = BTreeMap<String, BTreeMap<String, String>>;
pub fn generated_objects(docs: &[Value]) -> (Store, Store) {
    let mut maps = (Store::new(), Store::new());
    for d in docs {
        let name = d["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let strings = |field: &str, decode: bool| -> BTreeMap<String, String> {
            d.get(field)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| {
                    let v = v.as_str().unwrap_or_default();
                    (k.clone(), if decode { base64(v) } else { v.to_string() })
                })
                .collect()
        };
        if d["kind"] == "ConfigMap" {
            maps.0.insert(name, strings("data", false));
        } else if d["kind"] == "Secret" {
            let mut data = strings("data", true);
            data.extend(strings("stringData", false));
            maps.1.insert(name, data);
        }
    }
    maps
}

fn base64(text: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (mut bits, mut n, mut out) = (0u32, 0, Vec::new());
    for c in text.bytes().filter(|c| *c != b'=' && !c.is_ascii_whitespace()) {
        let v = ABC.iter().position(|a| *a == c).expect("base64") as u32;
        bits = bits << 6 | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).expect("UTF-8 secret")
}

/// Natively: the kubelet model on the container as written.
pub fn native(case: &Case) -> Outcome {
    match kubelet::start(case.container_spec(), &case.world) {
        Ok(started) => Outcome::Started(started),
        Err(why) => Outcome::Fails(format!("kubelet: {why}")),
    }
}

/// Converted: the kubelet model on the converted container (it resolves every
/// entry left there), then the real envshim started with that argv and
/// environment, exactly, printing what reaches the program.
pub fn converted(container: &Value, world: &World) -> Outcome {
    assert!(!has_file_key_ref(container), "a fileKeyRef left in the converted container: {container}");
    // The harness provides the pod's own volumes (directories of this test);
    // one the converter added (a generated ConfigMap mounted as a file, say)
    // would need a mount namespace: say so rather than report a difference.
    for mount in container.get("volumeMounts").and_then(Value::as_array).into_iter().flatten() {
        let name = mount["name"].as_str().unwrap_or_default();
        assert!(
            world.volumes.contains_key(name),
            "the converted container mounts volume {name:?} at {}, which this harness cannot provide: extend support/harness.rs",
            mount["mountPath"]
        );
    }
    let started = match kubelet::start(container, world) {
        Ok(s) => s,
        Err(why) => return Outcome::Fails(format!("kubelet (converted): {why}")),
    };
    let out = Command::new(&started.argv[0]).args(&started.argv[1..]).env_clear().envs(&started.env).stdin(Stdio::null()).output();
    let out = match out {
        Ok(out) => out,
        // E2BIG and the like: the container never starts.
        Err(e) => return Outcome::Fails(format!("exec {}: {e}", started.argv[0])),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(SENTINEL), "envshim shows a value in a message: {stderr}");
    if !out.status.success() {
        return Outcome::Fails(format!("{} exits {:?}: {}", started.argv[0], out.status.code(), String::from_utf8_lossy(&out.stderr).trim_end()));
    }
    Outcome::Started(printed(&out.stdout))
}

/// Under an engine that does not expand `$(VAR)` (the model's
/// `engine_start`): the real envshim started with what that engine gives the
/// converted container. The outcome, and envshim's stderr.
pub fn under_engine(container: &Value, world: &World) -> (Outcome, String) {
    let started = match kubelet::engine_start(container, world) {
        Ok(s) => s,
        Err(why) => return (Outcome::Fails(format!("engine: {why}")), String::new()),
    };
    let out = Command::new(&started.argv[0]).args(&started.argv[1..]).env_clear().envs(&started.env).stdin(Stdio::null()).output();
    let out = match out {
        Ok(out) => out,
        Err(e) => return (Outcome::Fails(format!("exec {}: {e}", started.argv[0])), String::new()),
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains(SENTINEL), "envshim shows a value in a message: {stderr}");
    if !out.status.success() {
        return (Outcome::Fails(format!("{} exits {:?}: {}", started.argv[0], out.status.code(), stderr.trim_end())), stderr);
    }
    (Outcome::Started(printed(&out.stdout)), stderr)
}

/// A `fileKeyRef` field anywhere in the tree (not in a string's text: the
/// manifest carried in a variable holds the original entries).
pub fn has_file_key_ref(v: &Value) -> bool {
    match v {
        // A null one is absent to kubectl.
        Value::Object(m) => m.iter().any(|(k, v)| (k == "fileKeyRef" && !v.is_null()) || has_file_key_ref(v)),
        Value::Array(items) => items.iter().any(has_file_key_ref),
        _ => false,
    }
}

/// The printer's output: argc, argv, then `NAME=VALUE`, each ending in NUL.
fn printed(out: &[u8]) -> Started {
    let text = String::from_utf8(out.to_vec()).expect("the program's output is UTF-8");
    let mut items = text.split_terminator('\0');
    let argc: usize = items.next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("not the printer's output: {text:?}"));
    let argv = items.by_ref().take(argc).map(String::from).collect();
    let env = items.map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())).unwrap()).collect();
    Started { argv, env }
}

/// Where the converted program's start differs from the native one. Empty:
/// the same argv and environment, or both fail to start.
pub fn differences(native: &Outcome, converted: &Outcome) -> Vec<String> {
    match (native, converted) {
        (Outcome::Fails(_), Outcome::Fails(_)) => vec![],
        (Outcome::Fails(why), Outcome::Started(_)) => vec![format!("natively the container does not start ({why}); converted it starts")],
        (Outcome::Started(_), Outcome::Fails(why)) => vec![format!("natively the container starts; converted it does not ({why})")],
        (Outcome::Started(n), Outcome::Started(c)) => {
            let mut diffs = Vec::new();
            if n.argv != c.argv {
                diffs.push(format!("argv: native {:?}, converted {:?}", n.argv, c.argv));
            }
            let names: std::collections::BTreeSet<&String> = n.env.keys().chain(c.env.keys()).collect();
            for name in names {
                let (a, b) = (n.env.get(name), c.env.get(name));
                // No allowance for KUBERNETES_SERVICE_URL (docs/kubelet-differences.md
                // entry 9): a converted container never gets one the kubelet does not set.
                if a != b {
                    diffs.push(format!("{name}: native {a:?}, converted {b:?}"));
                }
            }
            diffs
        }
    }
}
