//! The conversion's settings: the options (the command line's, or a KRM
//! function's config) checked, and what `convert.rs` reads of them.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use clap::{ArgMatches, Args};
use envshim::converter::Grammar;
use envshim::converter::{escape, Error};

use crate::cli::{Options, DEFAULT_SHIM_PATH};

pub struct Settings {
    pub shim_path: String,
    /// None: envshim is in the image (`--shim-path`): no installer, no volume.
    pub shim_image: Option<String>,
    /// Set when no image was given nor found: what to say when a pod
    /// would be written converted (`--check` needs none).
    pub image_missing: Option<String>,
    /// Whether a pod was converted with `shim_image` (not with the image its installer had).
    pub image_wanted: AtomicBool,
    pub entrypoints: Vec<(String, Vec<String>)>,
    /// The name of every container met in a pod spec, when `--entrypoint` is given (checked at the end).
    pub containers: Mutex<BTreeSet<String>>,
    /// `--env-grammar envshim`: converted containers read env files with envshim's grammar, not the kubelet's.
    pub envshim_grammar: bool,
    /// `--watch`: converted containers run `envshim run --watch`.
    pub watch: bool,
    /// The `ENVSHIM_*` entries converted containers get (`--wait`,
    /// `--env-grammar`, `--watch`'s settings), in that order: (name, value as given).
    pub shim_env: Vec<(String, String)>,
    /// Each `ENVSHIM_*` variable an option sets: (variable, the option's long name).
    pub settable: Vec<(String, String)>,
    /// `--watch-splay` not 0: a pod with an index gets its slot of it (convert/slots.rs).
    pub splay_slots: bool,
    /// `--watch-replicas` was given (else the converter writes the replicas it saw).
    pub replicas_given: bool,
    /// The envshim-install initContainer's requests and limits (Kubernetes quantities).
    pub installer_cpu: String,
    pub installer_memory: String,
    /// How messages name an option.
    pub naming: Naming,
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
    /// Where this user sets the option `key`: `kubectl envshim convert --KEY`, or the config's `data.KEY`.
    pub fn setting(self, key: &str) -> String {
        match self {
            Naming::Flags => format!("`kubectl envshim convert --{key}`"),
            Naming::Config => format!("the config's data.{key}"),
        }
    }
    /// What to do to give the repeatable option `key` one more `line`: one
    /// more `--KEY LINE`, or a line of the config's `data.KEY` (a repeatable
    /// option's value there is one value a line, krm.rs).
    pub fn add_line(self, key: &str, line: &str) -> String {
        match self {
            Naming::Flags => format!("give --{key} {line}"),
            Naming::Config => format!("add the line {line} to the config's data.{key}"),
        }
    }
}

/// The conversion's settings from the options (the command line's, or a
/// function's config, as `naming` says); Err: what is wrong, a usage error.
/// `given`: the matches `o` was parsed from, for the text of each option
/// passed on to envshim.
pub fn settings(o: &Options, given: &ArgMatches, naming: Naming) -> Result<Settings, Error> {
    checked(o, given, naming).map_err(Error::usage)
}

fn checked(o: &Options, given: &ArgMatches, naming: Naming) -> Result<Settings, String> {
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
        return Err(format!("{} must be an absolute path", opt("shim-path")));
    }
    for (key, value) in [("installer-cpu", &o.installer_cpu), ("installer-memory", &o.installer_memory)] {
        if !crate::cli::quantity(value) {
            return Err(format!("{}: expected a Kubernetes quantity (100m, 0.1, 32Mi)", opt(key)));
        }
    }
    // As envshim run: a setting of --watch without it is a mistake.
    if let Some(s) = shared().iter().find(|s| s.of_watch && !o.watch && given.get_raw(&s.id).is_some()) {
        return Err(format!("{} needs {} (it is a setting of envshim's --watch)", opt(&s.long), opt("watch")));
    }
    // Each value was checked by envshim's own parser (cli.rs): it goes to envshim as written.
    let written = |s: &Shared| Some((s.variable.clone(), given.get_raw(&s.id)?.next()?.to_str()?.to_string()));
    let shim_env = shared().iter().filter(|s| !s.flag).filter_map(written).collect();
    let settable = shared().iter().map(|s| (s.variable.clone(), s.long.clone())).collect();
    let watch = o.watch.then_some(&o.watch_settings);
    let splay_slots = watch.is_some_and(|w| !w.splay().is_zero());
    let replicas_given = watch.is_some_and(|w| w.replicas.is_some());
    let entrypoints = entrypoints(&o.entrypoint, naming)?;
    let no_shim_image = match naming {
        Naming::Flags => NO_SHIM_IMAGE.to_string(),
        Naming::Config => "no envshim image: set the config's data.shim-image to IMAGE (best pinned: REGISTRY/envshim@sha256:DIGEST)".to_string(),
    };
    let image = if baked_in { None } else { Some(o.shim_image.clone().or_else(default_shim_image).ok_or(no_shim_image)) };
    Ok(Settings {
        shim_path: o.shim_path.clone(),
        image_missing: image.as_ref().and_then(|i| i.clone().err()),
        shim_image: image.map(Result::unwrap_or_default),
        image_wanted: AtomicBool::new(false),
        entrypoints,
        containers: Mutex::default(),
        envshim_grammar: o.env_grammar == Grammar::Envshim,
        watch: o.watch,
        shim_env,
        settable,
        splay_slots,
        replicas_given,
        installer_cpu: o.installer_cpu.clone(),
        installer_memory: o.installer_memory.clone(),
        naming,
    })
}

impl Settings {
    /// The image, which a pod written converted needs: Err, a usage error, when none was given or found.
    pub fn image_needed(&self) -> Result<(), Error> {
        self.image_missing.clone().map_or(Ok(()), |m| Err(Error::usage(m)))
    }

    /// Notes that a pod was given `shim_image` (converting again without
    /// an image given nor found keeps the one the pod's installer had).
    pub fn image_written(&self) {
        self.image_wanted.store(true, Ordering::Relaxed);
    }

    /// [`Settings::image_needed`] when a pod was given `shim_image`.
    pub fn image_needed_by_pods(&self) -> Result<(), Error> {
        if self.image_wanted.load(Ordering::Relaxed) {
            self.image_needed()
        } else {
            Ok(())
        }
    }

    /// Notes the containers of a pod spec, for [`Settings::unknown_entrypoints`].
    pub fn met(&self, names: impl Iterator<Item = String>) {
        if !self.entrypoints.is_empty() {
            self.containers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(names);
        }
    }

    /// An `--entrypoint` for a container that no pod spec of the input has
    /// (a typo would otherwise go unseen): a usage error naming those there are.
    pub fn unknown_entrypoints(&self) -> Result<(), Error> {
        let met = self.containers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some((name, _)) = self.entrypoints.iter().find(|(n, _)| !met.contains(n)) else { return Ok(()) };
        let there = if met.is_empty() {
            "the input has no container".to_string()
        } else {
            format!("the input's containers: {}", met.iter().map(|n| escape(n.as_bytes())).collect::<Vec<_>>().join(", "))
        };
        let name = escape(name.as_bytes());
        Err(Error::usage(format!("{} {name}: no container of that name ({there})", self.naming.option("entrypoint"))))
    }
}

/// The `--entrypoint` values, each `CONTAINER=PROGRAM` (a JSON list of
/// words, or one path), blanks around either part dropped, as (container, words).
fn entrypoints(given: &[String], naming: Naming) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut entrypoints: Vec<(String, Vec<String>)> = Vec::new();
    let option = naming.option("entrypoint");
    for e in given {
        let Some((name, program)) = e.split_once('=') else {
            return Err(format!("{option}: expected CONTAINER=PROGRAM"));
        };
        let (name, program) = (name.trim(), program.trim());
        let shown = escape(name.as_bytes());
        let words: Vec<String> = if program.starts_with('[') {
            serde_json::from_str(program).map_err(|err| format!("{option} {shown}: PROGRAM is not a JSON array of strings ({err})"))?
        } else {
            vec![program.to_string()]
        };
        if name.is_empty() || words.is_empty() || words[0].is_empty() {
            return Err(format!("{option}: expected CONTAINER=PROGRAM with a container name and a program"));
        }
        if entrypoints.iter().any(|(n, _)| n == name) {
            return Err(format!("{option} {shown}: given twice"));
        }
        if !program.starts_with('[') && program.contains([' ', '\t']) {
            return Err(one_word_with_blanks(&shown, program, naming));
        }
        entrypoints.push((name.to_string(), words));
    }
    Ok(entrypoints)
}

/// `--entrypoint web=/docker-entrypoint.sh nginx -g daemon off;`: one word,
/// which the runtime would run as a program of that whole name (and fail to
/// find). The message shows the JSON list of its blank-separated words.
fn one_word_with_blanks(name: &str, word: &str, naming: Naming) -> String {
    let list = serde_json::to_string(&word.split([' ', '\t']).filter(|w| !w.is_empty()).collect::<Vec<_>>()).unwrap_or_default();
    let form = match naming {
        Naming::Flags => format!("--entrypoint '{name}={list}'"),
        Naming::Config => format!("the line {name}={list} in data.entrypoint"),
    };
    format!(
        "{} {name}: the program is one word with blanks, which the container would run as a program of that whole name; \
         give a JSON list, one string a word: {form} (split here at each blank: keep in one string what is one argument, \
         and a path with a blank as a list of one string)",
        naming.option("entrypoint")
    )
}

/// An option of the converter that is one of `envshim run`'s (the same long
/// name): the converter passes it on to envshim as its variable.
pub struct Shared {
    pub id: String,
    pub long: String,
    /// envshim's variable for it (`ENVSHIM_WAIT`), from envshim's definition.
    pub variable: String,
    /// A setting of `--watch` (envshim's `WatchOptions`).
    pub of_watch: bool,
    /// A flag (`--watch`), which the converter writes in the command.
    pub flag: bool,
    /// It has a default: the converter always writes it (`--env-grammar`).
    pub always: bool,
}

/// Each [`Shared`] option, in the definition's order (the order the
/// converter writes their variables in), read from the definitions; not
/// the hidden ones (the pod's index, which the converter writes itself).
pub fn shared() -> &'static [Shared] {
    static SHARED: std::sync::OnceLock<Vec<Shared>> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let variables = envshim::converter::values::variables();
        let watch = envshim::converter::WatchOptions::augment_args(clap::Command::new("watch"));
        let options = Options::augment_args(clap::Command::new("options"));
        let shared = options.get_arguments().filter(|a| !a.is_hide_set()).filter_map(|a| {
            let long = a.get_long()?;
            let (_, variable) = variables.iter().find(|(l, _)| l == long)?;
            Some(Shared {
                id: a.get_id().to_string(),
                long: long.to_string(),
                variable: variable.clone(),
                of_watch: watch.get_arguments().any(|w| w.get_id() == a.get_id()),
                flag: !a.get_action().takes_values(),
                always: !a.get_default_values().is_empty(),
            })
        });
        shared.collect()
    })
}

/// Whether `value` is one the converter's option `long` takes (checked by envshim's own parser, as on the command line).
pub fn valid(long: &str, value: &str) -> bool {
    static OPTIONS: std::sync::OnceLock<clap::Command> = std::sync::OnceLock::new();
    let options = OPTIONS.get_or_init(|| crate::cli::Options::augment_args(clap::Command::new("options").no_binary_name(true)));
    options.clone().try_get_matches_from([format!("--{long}={value}")]).is_ok()
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
