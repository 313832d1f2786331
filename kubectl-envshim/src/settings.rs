//! The conversion's settings: the options (the command line's, or a KRM
//! function's config) checked, and what `convert.rs` reads of them.

use envshim::error::Error;

use crate::cli::{Options, DEFAULT_SHIM_PATH};

pub struct Settings {
    pub shim_path: String,
    /// None: envshim is in the image (`--shim-path`): no installer, no volume.
    pub shim_image: Option<String>,
    pub entrypoints: Vec<(String, Vec<String>)>,
    pub wait: Option<String>,
    /// `--env-grammar envshim`: converted containers read env files with envshim's grammar, not the kubelet's.
    pub envshim_grammar: bool,
    /// `--watch`: converted containers run `envshim run --watch`.
    pub watch: bool,
    /// The envshim-install initContainer's requests and limits (Kubernetes quantities).
    pub installer_cpu: String,
    pub installer_memory: String,
    /// How messages name an option.
    pub naming: Naming,
    /// What the options let through but is likely wrong (names only, no value of a file).
    pub warnings: Vec<String>,
}

/// How a message names an option: `--entrypoint` on the command line; under
/// kpt and kustomize (`krm`), where no flag can be passed, the config's
/// `data` key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    Flags,
    Config,
}

impl Naming {
    /// The option `key` (its long name), as this user sets it.
    pub fn option(self, key: &str) -> String {
        match self {
            Naming::Flags => format!("--{key}"),
            Naming::Config => format!("data.{key}"),
        }
    }
    /// What to do to give the option `key` the `value` (for `entrypoint`,
    /// one of its lines).
    pub fn give(self, key: &str, value: &str) -> String {
        match self {
            Naming::Flags => format!("give --{key} {value}"),
            Naming::Config if key == "entrypoint" => format!("add the line {value} to the config's data.entrypoint"),
            Naming::Config => format!("set the config's data.{key} to {value}"),
        }
    }
}

/// The conversion's settings from the options (the command line's, or a
/// function's config, as `naming` says); Err: what is wrong, a usage error.
pub fn settings(o: &Options, naming: Naming) -> Result<Settings, Error> {
    checked(o, naming).map_err(Error::usage)
}

fn checked(o: &Options, naming: Naming) -> Result<Settings, String> {
    let opt = |key: &str| naming.option(key);
    let baked_in = o.shim_path != DEFAULT_SHIM_PATH;
    if baked_in && o.shim_image.is_some() {
        return Err(format!(
            "{} is for the envshim-install initContainer, which {} (envshim in the image) leaves out: give one",
            opt("shim-image"),
            opt("shim-path")
        ));
    }
    if !o.shim_path.starts_with('/') {
        return Err(format!("{} must be an absolute path, got {:?}", opt("shim-path"), o.shim_path));
    }
    if !matches!(o.env_grammar.as_str(), "kubelet" | "envshim") {
        return Err(format!("{}: expected kubelet or envshim, got {:?}", opt("env-grammar"), o.env_grammar));
    }
    if let Some(w) = &o.wait {
        envshim::wait::duration(w).map_err(|e| format!("{}: {e}", opt("wait")))?;
    }
    for (key, value) in [("installer-cpu", &o.installer_cpu), ("installer-memory", &o.installer_memory)] {
        if !crate::cli::quantity(value) {
            return Err(format!("{}: {value:?} is not a Kubernetes quantity (100m, 0.1, 32Mi)", opt(key)));
        }
    }
    let mut warnings = Vec::new();
    let entrypoints = entrypoints(&o.entrypoint, naming, &mut warnings)?;
    let no_shim_image = || match naming {
        Naming::Flags => NO_SHIM_IMAGE.to_string(),
        Naming::Config => "no envshim image: set the config's data.shim-image to IMAGE (best pinned: REGISTRY/envshim@sha256:DIGEST)".to_string(),
    };
    Ok(Settings {
        shim_path: o.shim_path.clone(),
        shim_image: if baked_in { None } else { Some(o.shim_image.clone().or_else(default_shim_image).ok_or_else(no_shim_image)?) },
        entrypoints,
        wait: o.wait.clone(),
        envshim_grammar: o.env_grammar == "envshim",
        watch: o.watch,
        installer_cpu: o.installer_cpu.clone(),
        installer_memory: o.installer_memory.clone(),
        naming,
        warnings,
    })
}

/// The `--entrypoint` values, each `CONTAINER=PROGRAM` (a JSON list of
/// words, or one word), as (container, words); a likely mistake in `warnings`.
fn entrypoints(given: &[String], naming: Naming, warnings: &mut Vec<String>) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut entrypoints: Vec<(String, Vec<String>)> = Vec::new();
    let option = naming.option("entrypoint");
    for e in given {
        let Some((name, program)) = e.split_once('=') else {
            return Err(format!("{option} {e:?}: expected CONTAINER=PROGRAM"));
        };
        let words: Vec<String> = if program.trim_start().starts_with('[') {
            serde_json::from_str(program).map_err(|err| format!("{option} {name}: PROGRAM is not a JSON array of strings ({err})"))?
        } else {
            vec![program.to_string()]
        };
        if name.is_empty() || words.is_empty() || words[0].is_empty() {
            return Err(format!("{option} {e:?}: expected CONTAINER=PROGRAM with a container name and a program"));
        }
        if entrypoints.iter().any(|(n, _)| n == name) {
            return Err(format!("{option} {name}: given twice"));
        }
        if let [word] = &words[..] {
            warnings.extend(one_word_with_blanks(name, word, naming));
        }
        entrypoints.push((name.to_string(), words));
    }
    Ok(entrypoints)
}

/// `--entrypoint web=/docker-entrypoint.sh nginx -g daemon off;`: one word,
/// which the runtime runs as a program of that whole name (and fails to
/// find). The warning shows the JSON list of its blank-separated words.
fn one_word_with_blanks(name: &str, word: &str, naming: Naming) -> Option<String> {
    if !word.contains([' ', '\t']) {
        return None;
    }
    let list = serde_json::to_string(&word.split([' ', '\t']).filter(|w| !w.is_empty()).collect::<Vec<_>>()).unwrap_or_default();
    let form = match naming {
        Naming::Flags => format!("--entrypoint '{name}={list}'"),
        Naming::Config => format!("the line {name}={list} in data.entrypoint"),
    };
    Some(format!(
        "{} {name}: the program is one word with blanks, so the container would run a program of that whole name; \
         for a program and its arguments give a JSON list, one string a word: {form} \
         (split here at each blank: keep in one string what is one argument, as the image's ENTRYPOINT and CMD do)",
        naming.option("entrypoint")
    ))
}

/// The envshim image when `--shim-image` is not given: `KUBECTL_ENVSHIM_SHIM_IMAGE`,
/// else the one release/build.sh compiles in (REPO@sha256:DIGEST of the release's
/// image). A plain build has none and never guesses one: a short name like
/// `envshim:0.1.0` would be resolved by each node, from whatever registry answers.
fn default_shim_image() -> Option<String> {
    let from_env = std::env::var("KUBECTL_ENVSHIM_SHIM_IMAGE").ok().filter(|v| !v.is_empty());
    from_env.or_else(|| option_env!("KUBECTL_ENVSHIM_RELEASE_IMAGE").filter(|v| !v.is_empty()).map(str::to_string))
}

const NO_SHIM_IMAGE: &str = "no envshim image: pass --shim-image IMAGE (best pinned: REGISTRY/envshim@sha256:DIGEST) or set KUBECTL_ENVSHIM_SHIM_IMAGE (a release's converter defaults to its own image)";

