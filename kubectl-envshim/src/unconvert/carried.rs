//! What a converted container may carry besides its own fields: the
//! converter's command (`[SHIM, "run"]`, `--watch` when converted with it),
//! its settings (`ENVSHIM_*` after the manifest, each once), the copies of
//! the platform's values, its read-only mounts, and nothing else of its
//! own. Anything more there (a word after `run`, an `ENVSHIM_*` entry the
//! converter did not write, a setting given twice, a second manifest, a
//! mount of the converter's moved) changes what envshim runs while
//! `manifest` and `unconvert` would show the original: refused at its path.

use std::collections::HashSet;

use envshim::converter::MARKER;
use envshim::converter::VALUE_PREFIX;
use envshim::converter::{escape, Error, JsonPath};
use serde_json::Value;

use super::{container_field, name, Manifest, ADDED, CHANGED};
use crate::cli::DEFAULT_SHIM_PATH;
use crate::convert::slots::{index_entry, INDEX_FIELDS, POD_INDEX_VAR};
use crate::convert::{copies, env_entry, platform_source, problem, without_nulls, Mapping, MANIFEST_VAR, RESERVED, VOLUMES_DIR};
use crate::installer::{SHIM_DIR, SHIM_VOLUME};
use crate::settings::{shared, Shared};

/// Where only the converter mounts.
const OURS: &str = "/.envshim";

/// Everything of `c` (converted: its manifest `m` is `env[at]`) that the
/// converter did not write, each once, at paths relative to `c`.
pub(super) fn foreign(c: &Mapping, at: usize, m: &Manifest) -> Vec<Error> {
    let env: &[Value] = c.get("env").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let words: &[Value] = c.get("command").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let mut problems = Vec::new();
    // [SHIM, "run"], or [SHIM, "run", "--watch"]: any other word is an option of envshim's.
    let watch = words.get(2).is_some_and(|w| w == "--watch");
    if words.get(1).is_some_and(|w| w == "run") {
        for k in (if watch { 3 } else { 2 })..words.len() {
            problems.push(problem(
                JsonPath::item("command", k),
                format!("a word after the converter's [SHIM, \"run\"], which envshim reads as an option of its own: {ADDED}"),
            ));
        }
    }
    settings(env, at, watch, &mut problems);
    copies_of_values(env, at, m, &mut problems);
    for (i, e) in c.get("envFrom").and_then(Value::as_array).into_iter().flatten().enumerate() {
        if e.get("prefix").and_then(Value::as_str).is_some_and(|p| p.starts_with(RESERVED)) {
            problems
                .push(problem(JsonPath::item("envFrom", i).key("prefix"), format!("starts with {RESERVED}, which sets envshim's own configuration: {ADDED}")));
        }
    }
    mounts(c, words.first().is_some_and(|w| w == DEFAULT_SHIM_PATH), m, &mut problems);
    problems
}

/// The entries after the manifest: the converter's settings, each once
/// (`--watch`'s only with `--watch`; the pod's index as the downward-API
/// entry the converter writes), then the marker, last.
fn settings(env: &[Value], at: usize, watch: bool, problems: &mut Vec<Error>) {
    let written: Vec<&Shared> = shared().iter().filter(|s| !s.flag).collect();
    let mut given: HashSet<&str> = HashSet::new();
    let literal = |e: &Value| e.as_object().is_some_and(|o| o.len() == 2) && e.get("value").is_some_and(Value::is_string);
    for (j, e) in env.iter().enumerate().skip(at + 1) {
        let n = name(e).unwrap_or("");
        let shown = escape(n.as_bytes());
        let what = if n == MANIFEST_VAR {
            format!("a second {MANIFEST_VAR} (the kubelet keeps the last, and envshim reads it): {ADDED}")
        } else if n == MARKER {
            // (What follows it is each refused on its own.)
            if literal(e) && e["value"] == "$$" && !env[j + 1..].iter().any(|l| name(l) == Some(MARKER)) {
                continue;
            }
            format!("{MARKER} is not the converter's (the value `$$`, once, the last of its entries): {CHANGED}")
        } else if n == POD_INDEX_VAR {
            if !given.insert(n) {
                format!("{n} again (the converter writes it once; the kubelet keeps the last): {ADDED}")
            } else if !watch {
                format!("{n} is a setting of --watch, which the command does not give: {ADDED}")
            } else if !INDEX_FIELDS.iter().any(|f| without_nulls(e) == index_entry(f)) {
                format!("{n} is not the converter's entry (the pod's index, from the downward API): {CHANGED}")
            } else {
                continue;
            }
        } else if let Some(Shared { long, of_watch, .. }) = written.iter().find(|s| s.variable == n) {
            if !given.insert(n) {
                format!("{n} again (the converter writes each of its settings once; the kubelet keeps the last): {ADDED}")
            } else if !literal(e) {
                format!("{n} is not a literal value, as the converter writes it: {CHANGED}")
            } else if *of_watch && !watch {
                format!("{n} is a setting of --watch, which the command does not give: {ADDED}")
            } else if !crate::settings::valid(long, e["value"].as_str().unwrap_or_default()) {
                format!("{n} is not a value --{long} takes: {CHANGED}")
            } else {
                continue;
            }
        } else if n.starts_with(RESERVED) {
            format!("{shown} is not a setting the converter writes: {ADDED}")
        } else {
            format!("{shown} comes after {MANIFEST_VAR}, where the converter writes only its own settings: {ADDED}")
        };
        problems.push(problem(env_entry(j), what));
    }
    // `--env-grammar`'s, which the converter always writes.
    for s in written.iter().filter(|s| s.always && !given.contains(s.variable.as_str())) {
        problems.push(problem(container_field("env"), format!("lacks {}, which the converter writes after {MANIFEST_VAR}: {CHANGED}", s.variable)));
    }
    if !env.iter().skip(at + 1).any(|e| name(e) == Some(MARKER)) {
        problems.push(problem(container_field("env"), format!("lacks {MARKER}, which the converter writes last: {CHANGED}")));
    }
}

/// The `ENVSHIM_VALUE_*` entries: the copies the converter writes of each
/// platform entry of the manifest's list, in order, nothing else.
fn copies_of_values(env: &[Value], at: usize, m: &Manifest, problems: &mut Vec<Error>) {
    let mut want = m.rest.iter().enumerate().filter_map(|(i, e)| Some(copies(i, e, platform_source(e)?))).flatten();
    for (j, e) in env.iter().enumerate().take(at).filter(|(_, e)| name(e).is_some_and(|n| n.starts_with(VALUE_PREFIX))) {
        if want.next().is_none_or(|w| w != without_nulls(e)) {
            let n = escape(name(e).unwrap_or_default().as_bytes());
            problems
                .push(problem(env_entry(j), format!("{n} is not the copy the converter writes there of a platform entry of the manifest's list: {CHANGED}")));
            return;
        }
    }
    if want.next().is_some() {
        problems.push(problem(
            container_field("env"),
            format!("lacks {VALUE_PREFIX}* copies the converter writes of a platform entry of the manifest's list: {CHANGED}"),
        ));
    }
}

/// The converter's read-only mounts (the shim's, and each volume the
/// manifest reads that the container did not mount) as written, each once,
/// nothing else under `/.envshim`; and each volume the manifest reads from
/// the container's own mount still mounted there.
fn mounts(c: &Mapping, shim_mounted: bool, m: &Manifest, problems: &mut Vec<Error>) {
    let mounts: &[Value] = c.get("volumeMounts").and_then(Value::as_array).map_or(&[], Vec::as_slice);
    let read: Vec<(&str, &str)> =
        m.map.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().filter_map(|v| Some((name(v)?, v.get("mountPath")?.as_str()?))).collect();
    let added = |(n, p): &(&str, &str)| p.strip_prefix(VOLUMES_DIR).and_then(|p| p.strip_prefix('/')) == Some(*n);
    let mount = |n: &str, p: &str| crate::convert::mapping([("name", n.into()), ("mountPath", p.into()), ("readOnly", Value::Bool(true))]);
    let mut want: Vec<(Value, bool)> = shim_mounted
        .then(|| mount(SHIM_VOLUME, SHIM_DIR))
        .into_iter()
        .chain(read.iter().filter(|r| added(r)).map(|(n, p)| mount(n, p)))
        .map(|w| (w, false))
        .collect();
    for (k, v) in mounts.iter().enumerate() {
        let (n, p) = (name(v).unwrap_or_default(), v.get("mountPath").and_then(Value::as_str).unwrap_or_default().trim_end_matches('/'));
        if !((shim_mounted && n == SHIM_VOLUME) || p == OURS || p.starts_with(&format!("{OURS}/"))) {
            continue;
        }
        if let Some((_, found)) = want.iter_mut().find(|(w, found)| !found && *w == without_nulls(v)) {
            *found = true;
            continue;
        }
        // The converter's mount of this volume, changed: said once, here.
        let what = match want.iter_mut().find(|(w, found)| !found && name(w) == Some(n)) {
            Some((w, found)) => {
                *found = true;
                format!(
                    "not the converter's mount of {}, read-only at {}",
                    escape(n.as_bytes()),
                    escape(w["mountPath"].as_str().unwrap_or_default().as_bytes())
                )
            }
            None => format!("not a mount the converter writes (only it mounts {SHIM_VOLUME} and under {OURS}/, read-only, each once)"),
        };
        problems.push(problem(JsonPath::item("volumeMounts", k), format!("{what}: {CHANGED}")));
    }
    for (w, _) in want.iter().filter(|(_, found)| !found) {
        let (n, p) = (escape(name(w).unwrap_or_default().as_bytes()), escape(w["mountPath"].as_str().unwrap_or_default().as_bytes()));
        problems.push(problem(container_field("volumeMounts"), format!("lacks the converter's read-only mount of {n} at {p}: {CHANGED}")));
    }
    // The container's own mounts the manifest reads through: the first whole mount of each volume, where it was.
    let whole = |v: &&Value| ["subPath", "subPathExpr"].iter().all(|k| v.get(*k).and_then(Value::as_str).unwrap_or("").is_empty());
    for (n, p) in read.iter().filter(|r| !added(r)) {
        if mounts.iter().filter(whole).find(|v| name(v) == Some(n)).and_then(|v| v.get("mountPath")) != Some(&Value::from(*p)) {
            let (n, p) = (escape(n.as_bytes()), escape(p.as_bytes()));
            problems.push(problem(container_field("volumeMounts"), format!("no longer mounts {n} at {p}, where the manifest reads it: {CHANGED}")));
        }
    }
}
