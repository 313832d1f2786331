//! Random pods for the differential test, from a seed (splitmix64, so a seed
//! gives the same pods everywhere). Each pod mixes what the kubelet orders
//! and expands: `envFrom` with prefixes, service variables, literal values
//! referring to earlier, later, missing and own names, `$` in every position,
//! platform references optional or not and present or not, duplicate names,
//! `fileKeyRef` optional or not, image `ENV` names, and a program line with or
//! without `command` (absent, `[]`, `null`).
//!
//! Env files hold every form the kubelet's grammar reads otherwise than
//! envshim's (converted containers read them as the kubelet does); values
//! hold no `'`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::harness::Case;
use super::kubelet::{Image, World};

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` in 100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The names entries define and refer to: image ENV names (PATH, HOME,
/// APP_NAME), the runtime's HOSTNAME, service variables, envFrom keys with
/// and without their prefixes.
const NAMES: [&str; 16] = [
    "A",
    "B",
    "URL",
    "HOST",
    "MODE",
    "DB_PASS",
    "TOKEN",
    "LOG",
    "PATH",
    "HOME",
    "APP_NAME",
    "HOSTNAME",
    "KUBERNETES_SERVICE_HOST",
    "DB_SERVICE_PORT",
    "P_MODE",
    "Q_HOST",
];
/// Referred to, never defined by an entry.
const MISSING: [&str; 4] = ["NOPE", "KUBERNETES_SERVICE_PORT", "P_LOG", ""];
/// Keys of the ConfigMaps and Secrets, and of the env files.
const KEYS: [&str; 7] = ["A", "MODE", "HOST", "LOG", "TOKEN", "DB_PASS", "PATH"];
const PREFIXES: [&str; 3] = ["", "P_", "Q_"];

/// The image every pod runs: its ENTRYPOINT and CMD hold `$` that no one may expand.
pub fn image(printer: &str) -> Image {
    Image {
        entrypoint: vec![printer.to_string(), "ep".into(), "$(HOME)".into(), "$$".into(), "$(A)".into()],
        cmd: vec!["cmd".into(), "$(MODE)".into(), "$$x".into()],
        env: vec![
            ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
            ("HOME".into(), "/home/app".into()),
            ("APP_NAME".into(), "image-app".into()),
            ("MODE".into(), "image-mode".into()),
        ],
    }
}

/// A value or an argument: pieces of text, references and `$` in every position.
fn text(rng: &mut Rng, own: &str) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(6) {
        let name = match rng.below(10) {
            0..=6 => *rng.pick(&NAMES),
            7 | 8 => *rng.pick(&MISSING),
            _ => own,
        };
        let piece = match rng.below(14) {
            0..=4 => format!("$({name})"),
            5 => "$$".into(),
            6 => format!("$$({name})"),
            7 => "$(".into(),
            8 => "$".into(),
            9 => ")".into(),
            // A multi-byte character, never right after a `$` (docs/reference.md §5
            // and the kubelet agree only on ASCII there).
            10 => "xé".into(),
            _ => rng.pick(&["/opt/bin:", "http://", "-", " ", "#", "\"q\"", "\\", "v"]).to_string(),
        };
        out.push_str(&piece);
    }
    out
}

/// A value for a ConfigMap, a Secret or an env file: never expanded by anyone.
fn data_value(rng: &mut Rng) -> String {
    let v = text(rng, "A");
    if v.is_empty() {
        "plain".into()
    } else {
        v
    }
}

/// `optional`: true with `percent` in 100, else false or left out (false).
fn optional(rng: &mut Rng, percent: usize) -> Value {
    if rng.chance(percent) {
        json!(true)
    } else if rng.chance(50) {
        json!(false)
    } else {
        Value::Null
    }
}

/// Sets `optional` on a reference unless it is null (the field left out).
fn with_optional(mut r: Value, opt: Value) -> Value {
    if !opt.is_null() {
        r["optional"] = opt;
    }
    r
}

/// One `env` entry named `name`. Beside a `valueFrom`, sometimes what
/// kubectl reads as absent or empty there (a template renders them): a
/// `"value": ""` or `null`, a `"fileKeyRef": null` beside another source.
fn entry(rng: &mut Rng, name: &str) -> Value {
    let mut e = plain_entry(rng, name);
    if e.get("valueFrom").is_some() {
        if e["valueFrom"].get("fileKeyRef").is_none() && rng.chance(15) {
            e["valueFrom"]["fileKeyRef"] = Value::Null;
        }
        match rng.below(10) {
            0 => e["value"] = json!(""),
            1 => e["value"] = Value::Null,
            _ => {}
        }
    }
    e
}

fn plain_entry(rng: &mut Rng, name: &str) -> Value {
    match rng.below(100) {
        0..=44 => {
            let v = text(rng, name);
            if v.is_empty() {
                json!({"name": name, "value": ""})
            } else {
                json!({"name": name, "value": v})
            }
        }
        45..=47 => json!({"name": name}),
        48..=59 => {
            let map = rng.pick(&["cm-a", "cm-a", "cm-b", "cm-gone"]).to_string();
            let r = with_optional(json!({"name": map, "key": rng.pick(&KEYS)}), optional(rng, 85));
            json!({"name": name, "valueFrom": {"configMapKeyRef": r}})
        }
        60..=67 => {
            let secret = rng.pick(&["sec-a", "sec-a", "sec-gone"]).to_string();
            let r = with_optional(json!({"name": secret, "key": rng.pick(&KEYS)}), optional(rng, 85));
            json!({"name": name, "valueFrom": {"secretKeyRef": r}})
        }
        68..=72 => {
            json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": rng.pick(&["metadata.name", "metadata.namespace", "status.podIP"])}}})
        }
        _ => file_key_ref(rng, name),
    }
}

fn file_key_ref(rng: &mut Rng, name: &str) -> Value {
    let (volume, path) = *rng.pick(&[("cfg", "app.env"), ("cfg", "app.env"), ("data", "other.env"), ("cfg", "gone.env")]);
    let key = if rng.chance(80) { name } else { rng.pick(&KEYS) };
    let r = with_optional(json!({"volumeName": volume, "path": path, "key": key}), optional(rng, 90));
    json!({"name": name, "valueFrom": {"fileKeyRef": r}})
}

/// Some keys of KEYS with generated values.
fn data(rng: &mut Rng) -> BTreeMap<String, String> {
    let mut data = BTreeMap::new();
    for key in KEYS {
        if rng.chance(50) {
            data.insert(key.to_string(), data_value(rng));
        }
    }
    data
}

/// An env file as people write them: mostly `KEY='value'` lines, and every
/// form the kubelet's grammar reads otherwise than envshim's own (unquoted,
/// double-quoted, a blank before or after `=`, `export`, `K=''`, a name given
/// twice, text after the quote, a byte-order mark), with comments, blank
/// lines, values across lines and CRLF endings.
fn env_file(rng: &mut Rng, data: &BTreeMap<String, String>) -> String {
    let eol = if rng.chance(15) { "\r\n" } else { "\n" };
    let mut out = String::from(if rng.chance(2) { "\u{feff}" } else { "" });
    for (k, v) in data {
        if rng.chance(10) {
            let other: &&str = rng.pick(&["# a comment", "", "   ", "\t# indented"]);
            out.push_str(other);
            out.push_str(eol);
        }
        let line = match rng.below(100) {
            0..=64 => format!("{k}='{v}'"),
            65..=66 => format!("{k}={v}"),
            67 => format!("{k}=\"{v}\""),
            68..=70 => format!("{k}= '{v}'"),
            71 => format!("{k} ='{v}'"),
            72..=75 => format!(" \t{k}='{v}'"),
            76..=78 => format!("export {k}='{v}'"),
            79..=81 => format!("{k}=''"),
            82..=85 => format!("{k}='{v}' # a comment"),
            86..=90 => format!("{k}='{v}{eol}on a second line'"),
            91..=95 => format!("{k}='{v}'{eol}{k}='{}'", rng.pick(&["again", ""])),
            96 => format!("{k}='{v}' and text"),
            _ => format!("{k}='{v}'#"),
        };
        out.push_str(&line);
        out.push_str(eol);
    }
    out
}

/// Volume directories the pods share (a directory per pod costs seconds on a
/// slow disk): `cfg` mostly holds `app.env`, `data` holds `other.env` half
/// the time; no pod has a `gone.env`.
pub struct Pool {
    cfg: Vec<PathBuf>,
    data: Vec<PathBuf>,
}

pub fn pool(rng: &mut Rng, root: &Path) -> Pool {
    let mut dirs = |volume: &str, file: &str, percent: usize| -> Vec<PathBuf> {
        (0..40)
            .map(|i| {
                let dir = root.join(format!("{volume}{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                if rng.chance(percent) {
                    let data = data(rng);
                    std::fs::write(dir.join(file), env_file(rng, &data)).unwrap();
                }
                dir
            })
            .collect()
    };
    Pool { cfg: dirs("cfg", "app.env", 85), data: dirs("data", "other.env", 50) }
}

/// Case number `n`, its volumes from `pool`.
pub fn case(rng: &mut Rng, n: usize, pool: &Pool, printer: &str) -> Case {
    let pod = format!("p{n}");
    let world = world(rng, pod.clone(), pool, printer);
    // The container.
    let (env, env_from) = env_sources(rng);
    let (command, args) = program_line(rng, printer);
    let has_command = command.as_ref().and_then(Value::as_array).is_some_and(|c| !c.is_empty());
    let has_args = args.as_ref().and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let img = &world.image;
    // The converter cannot know the image: `--entrypoint` tells it, per
    // container name. With no args the image runs ENTRYPOINT then CMD, so
    // the words given are both (container `app0`); with args, ENTRYPOINT alone.
    let (name, entrypoint) = match (has_command, has_args) {
        (false, false) => ("app0", Some([img.entrypoint.clone(), img.cmd.clone()].concat())),
        (false, true) => ("app", Some(img.entrypoint.clone())),
        (true, _) => ("app", None),
    };
    let mut c = json!({"name": name, "image": "app:1"});
    if let Some(command) = command {
        c["command"] = command;
    }
    if let Some(args) = args {
        c["args"] = args;
    }
    if !env_from.is_empty() {
        c["envFrom"] = json!(env_from);
    }
    c["env"] = json!(env);
    c["volumeMounts"] = json!(world.volumes.iter().map(|(v, dir)| json!({"name": v, "mountPath": dir})).collect::<Vec<_>>());
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod},
        "spec": {
            "containers": [c],
            "volumes": world.volumes.keys().map(|v| json!({"name": v, "emptyDir": {}})).collect::<Vec<_>>(),
        }
    });
    Case { pod: doc, container: name.to_string(), world, entrypoint }
}

/// The world of pod `pod`: ConfigMaps, Secrets, service variables, fields, volumes, the image.
fn world(rng: &mut Rng, pod: String, pool: &Pool, printer: &str) -> World {
    let mut config_maps = BTreeMap::new();
    for (name, percent) in [("cm-a", 90), ("cm-b", 60)] {
        if rng.chance(percent) {
            config_maps.insert(name.to_string(), data(rng));
        }
    }
    let mut secrets = BTreeMap::new();
    if rng.chance(80) {
        secrets.insert("sec-a".to_string(), data(rng));
    }
    let mut service_env = BTreeMap::new();
    if rng.chance(80) {
        service_env.insert("KUBERNETES_SERVICE_HOST".into(), "10.96.0.1".into());
        service_env.insert("KUBERNETES_SERVICE_PORT".into(), "443".into());
        service_env.insert("KUBERNETES_PORT".into(), "tcp://10.96.0.1:443".into());
    }
    if rng.chance(50) {
        service_env.insert("DB_SERVICE_HOST".into(), "10.0.0.7".into());
        service_env.insert("DB_SERVICE_PORT".into(), "5432".into());
    }
    let fields = BTreeMap::from([
        ("metadata.name".to_string(), pod.clone()),
        ("metadata.namespace".to_string(), "default".to_string()),
        ("status.podIP".to_string(), "10.1.2.3".to_string()),
    ]);
    let volumes: BTreeMap<String, PathBuf> =
        [("cfg", &pool.cfg), ("data", &pool.data)].into_iter().map(|(v, dirs)| (v.to_string(), rng.pick(dirs).clone())).collect();

    World { config_maps, secrets, service_env, fields, volumes, image: image(printer), hostname: pod }
}

/// A container's `env` (with at least one `fileKeyRef`) and `envFrom`.
fn env_sources(rng: &mut Rng) -> (Vec<Value>, Vec<Value>) {
    let mut env: Vec<Value> = (0..rng.below(8))
        .map(|_| {
            let name = *rng.pick(&NAMES);
            entry(rng, name)
        })
        .collect();
    if !env.iter().any(|e| e["valueFrom"].get("fileKeyRef").is_some()) {
        let name = *rng.pick(&NAMES);
        let at = rng.below(env.len() + 1);
        env.insert(at, file_key_ref(rng, name));
    }
    let env_from: Vec<Value> = (0..rng.below(3))
        .map(|_| {
            let (field, name) = *rng.pick(&[("configMapRef", "cm-a"), ("configMapRef", "cm-b"), ("secretRef", "sec-a"), ("configMapRef", "cm-gone")]);
            let mut source = json!({field: with_optional(json!({"name": name}), optional(rng, 90))});
            let prefix = *rng.pick(&PREFIXES);
            if !prefix.is_empty() {
                source["prefix"] = json!(prefix);
            }
            source
        })
        .collect();
    (env, env_from)
}

/// A container's `command` and `args`: absent, empty, null or words.
fn program_line(rng: &mut Rng, printer: &str) -> (Option<Value>, Option<Value>) {
    let words = |rng: &mut Rng, n: usize| -> Vec<String> { (0..n).map(|_| text(rng, "A")).collect() };
    let command: Option<Value> = match rng.below(10) {
        0..=5 => {
            let mut c = vec![printer.to_string()];
            let n = rng.below(3);
            c.extend(words(rng, n));
            Some(json!(c))
        }
        6 | 7 => None,
        8 => Some(json!([])),
        _ => Some(Value::Null),
    };
    let args: Option<Value> = match rng.below(4) {
        0 => None,
        1 => Some(json!([])),
        _ => {
            let n = 1 + rng.below(3);
            Some(json!(words(rng, n)))
        }
    };
    (command, args)
}
