//! `kubectl-envshim krm`: the conversion as a step of kpt's or kustomize's
//! pipeline.
//!
//! - No argument: a KRM function (kpt, and standalone kustomize's exec
//!   functions): a `ResourceList` on stdin, written back on stdout with its
//!   items converted and `results` for errors and warnings; an item the
//!   conversion does not change is the tree it came as (annotations kept).
//!   Its `functionConfig` is a ConfigMap whose `data` keys are the long
//!   option names of `convert`.
//! - One argument: kustomize's exec transformer plugin (`kubectl kustomize
//!   --enable-alpha-plugins`): argv[1] is the transformer's config file (the
//!   same `data` keys), stdin and stdout plain YAML streams, converted as
//!   `convert` does (a document it does not change is copied byte for byte).

use clap::{ArgAction, Args, FromArgMatches};
use envshim::converter::{escape, ExitCode};
use serde_json::{json, Map, Value};

use crate::cli::{FunctionConfig, KrmArgs};
use crate::input::{self, data_error, MAX_INPUT_BYTES};
use crate::report::{fail, say, usage, write_stdout};
use crate::settings::{settings, Naming, Settings};
use crate::stream::Step;
use crate::{convert, stream, tree};

pub fn command(args: &KrmArgs) -> ExitCode {
    let stdin = match input::read(std::path::Path::new("-"), "stdin", MAX_INPUT_BYTES) {
        Ok(t) => t,
        Err(e) => return fail(&[e]),
    };
    match &args.config {
        Some(config) => transformer(config, &stdin),
        None => function(&stdin),
    }
}

/// kustomize's exec transformer plugin: the config file, a plain stream on stdin.
fn transformer(config: &std::ffi::OsString, stdin: &str) -> ExitCode {
    let shown = input::shown(std::path::Path::new(config));
    let config = input::read(std::path::Path::new(config), &shown, MAX_INPUT_BYTES).and_then(|text| tree::read(&text).map_err(|e| data_error(&shown, e)));
    let config = match config {
        Ok(docs) if docs.len() == 1 => docs.into_iter().next().unwrap_or_default(),
        Ok(_) => return fail(&[data_error(&shown, "expected one document, the transformer's config")]),
        Err(e) => return fail(&[e]),
    };
    let job = match config_job(&config) {
        Ok(job) => job,
        Err(e) => return usage(&format!("{shown}: {e}")),
    };
    let converted = stream::each(stdin, "stdin", &|doc| job.run(doc));
    // As convert: a container named that the stream lacks first, unless a document did not parse.
    let parsed = converted.as_ref().err().is_none_or(|errors| errors.iter().all(|e| e.code == ExitCode::Config));
    if let Err(e) = job.unknown_entrypoints().or_else(|e| if parsed { Err(e) } else { Ok(()) }) {
        return usage(&format!("{shown}: {}", e.what));
    }
    match converted {
        Ok(out) => {
            for (n, note) in &out.notes {
                for w in &note.warnings {
                    say(&format!("warning: stdin: document {n} ({}): {w}", note.object));
                }
            }
            write_stdout(out.text.as_bytes())
        }
        Err(errors) => fail(&errors),
    }
}

/// A KRM function: a `ResourceList` on stdin and stdout.
fn function(stdin: &str) -> ExitCode {
    let list = match tree::read(stdin) {
        Ok(docs) if docs.len() == 1 => docs.into_iter().next().unwrap_or_default(),
        Ok(_) => return fail(&[data_error("stdin", "expected one ResourceList (a KRM function's input)")]),
        Err(e) => return fail(&[data_error("stdin", e)]),
    };
    let Some(list) = list.as_object().filter(|l| l.get("kind").and_then(Value::as_str) == Some("ResourceList")).cloned() else {
        return fail(&[data_error(
            "stdin",
            "not a ResourceList; kpt and KRM function runners send one, and kustomize's exec transformer plugin gives its config file as the argument",
        )]);
    };
    let mut results = Vec::new();
    let config = list.get("functionConfig").cloned().unwrap_or_default();
    let items = list.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    // The exit code when it fails: the config's (as convert's options), or a pod's.
    let (converted, failure) = match config_job(&config) {
        Err(e) => {
            results.push(json!({"message": crate::report::one_line(&format!("functionConfig: {e}")), "severity": "error"}));
            (None, ExitCode::Usage)
        }
        Ok(job) => {
            let mut problems = Vec::new();
            let converted = convert_items(&items, &|doc| job.run(doc), &mut problems);
            // As convert: a container named that the items lack, alone (it explains their "no command").
            match job.unknown_entrypoints() {
                Ok(()) => {
                    results.extend(problems);
                    (converted, ExitCode::Config)
                }
                Err(e) => {
                    results.push(json!({"message": crate::report::one_line(&format!("functionConfig: {}", e.what)), "severity": "error"}));
                    (None, ExitCode::Usage)
                }
            }
        }
    };
    let text = output(stdin, list, &items, converted.as_deref(), results);
    let written = write_stdout(text.as_bytes());
    match converted {
        None => failure,
        Some(_) => written,
    }
}

/// The output: the input's text with each converted item's text replaced
/// (kpt rewrites each file from it: an item left alone stays byte for
/// byte), or, when the text is not laid out as kpt and kyaml write a
/// ResourceList, the whole list written anew; `results` at its end.
fn output(stdin: &str, mut list: Map<String, Value>, items: &[Value], converted: Option<&[Option<Value>]>, results: Vec<Value>) -> String {
    let results_text = if results.is_empty() { String::new() } else { tree::write(&json!({ "results": results })) };
    // Each span replaced reads back as its item: the layout was understood.
    let understood = |spans: &Vec<std::ops::Range<usize>>| {
        let replaced = spans.iter().zip(items).zip(converted.into_iter().flatten()).filter(|(_, c)| c.is_some());
        spans.len() == items.len()
            && replaced.into_iter().all(|((span, item), _)| tree::read(&unindent(&stdin[span.clone()])).is_ok_and(|d| d == [item.clone()]))
    };
    match item_spans(stdin).filter(|s| !list.contains_key("results") && understood(s)) {
        Some(spans) => {
            let mut out = String::with_capacity(stdin.len());
            let mut copied = 0;
            for (span, item) in spans.iter().zip(converted.into_iter().flatten()) {
                let Some(item) = item else { continue };
                out.push_str(&stdin[copied..span.start]);
                for (i, line) in tree::write(item).lines().enumerate() {
                    let indent = if i == 0 {
                        "- "
                    } else if line.is_empty() {
                        ""
                    } else {
                        "  "
                    };
                    out.push_str(&format!("{indent}{line}\n"));
                }
                copied = span.end;
            }
            out.push_str(&stdin[copied..]);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out + &results_text
        }
        None => {
            if let Some(converted) = converted {
                let items = items.iter().zip(converted).map(|(i, c)| c.as_ref().unwrap_or(i).clone()).collect();
                list.insert("items".into(), Value::Array(items));
            }
            if !results.is_empty() {
                list.insert("results".into(), Value::Array(results));
            }
            tree::write(&Value::Object(list))
        }
    }
}

/// An item's text as a document of its own: its `- ` and the indentation under it removed.
fn unindent(item: &str) -> String {
    item.split_inclusive('\n')
        .enumerate()
        .map(|(i, line)| match i {
            0 => line.strip_prefix("- ").or_else(|| line.strip_prefix('-')).unwrap_or(line),
            _ => line.strip_prefix("  ").unwrap_or(line),
        })
        .collect()
}

/// The byte ranges of the items in `text`, a ResourceList as kyaml writes
/// it: `items:` at column 0, each item a `- ` line at column 0 and the lines
/// under it indented. None: laid out otherwise.
fn item_spans(text: &str) -> Option<Vec<std::ops::Range<usize>>> {
    let (mut spans, mut current, mut offset, mut in_items) = (Vec::new(), None, 0, false);
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if !in_items {
            in_items = body == "items:";
            if body.starts_with("items:") && !in_items {
                return None; // `items: []`, a flow sequence
            }
            continue;
        }
        if body.starts_with("- ") || body == "-" {
            spans.extend(current.replace(start).map(|s| s..start));
        } else if body.starts_with(' ') || body.starts_with('#') || body.is_empty() {
            if current.is_none() && !body.trim().is_empty() && !body.starts_with('#') {
                return None; // `items:` then an indented sequence
            }
        } else {
            // The next key of the ResourceList: the items end here.
            spans.extend(current.take().map(|s| s..start));
            break;
        }
    }
    if !in_items {
        return None; // no `items:` line (a flow or JSON list): `results` could not follow as text
    }
    spans.extend(current.map(|s| s..offset));
    // A document marker after the items would put `results` in another document.
    let tail = spans.last().map_or(0, |s| s.end);
    (!text[tail..].lines().any(|l| l.starts_with("---") || l.starts_with("..."))).then_some(spans)
}

/// Each item converted (None: unchanged); the errors and warnings as
/// results. None when any item cannot be converted (the pipeline stops
/// there, its items as they came).
fn convert_items(items: &[Value], step: Step, results: &mut Vec<Value>) -> Option<Vec<Option<Value>>> {
    let mut out = Vec::with_capacity(items.len());
    let mut failed = false;
    for item in items {
        let mut converted = item.clone();
        match step(&mut converted) {
            Ok(notes) => {
                for w in notes.iter().flat_map(|n| &n.warnings) {
                    results.push(result(item, w, "warning", None));
                }
                out.push((!notes.is_empty()).then_some(converted));
            }
            Err(problems) => {
                failed = true;
                for p in problems {
                    results.push(result(item, &format!("{}: {}", p.subject, p.what), "error", p.path().map(ToString::to_string).as_deref()));
                }
            }
        }
    }
    (!failed).then_some(out)
}

/// A result of the KRM functions specification, naming the item and its file.
fn result(item: &Value, message: &str, severity: &str, field: Option<&str>) -> Value {
    let mut r = Map::new();
    r.insert("message".into(), crate::report::one_line(message).into());
    r.insert("severity".into(), severity.into());
    let meta = &item["metadata"];
    let mut reference = Map::new();
    for (key, value) in [("apiVersion", &item["apiVersion"]), ("kind", &item["kind"]), ("name", &meta["name"]), ("namespace", &meta["namespace"])] {
        if value.is_string() {
            reference.insert(key.into(), value.clone());
        }
    }
    r.insert("resourceRef".into(), Value::Object(reference));
    if let Some(path) = field {
        r.insert("field".into(), json!({"path": path}));
    }
    let annotations = &meta["annotations"];
    let path = ["internal.config.kubernetes.io/path", "config.kubernetes.io/path"].iter().find_map(|k| annotations[*k].as_str());
    if let Some(path) = path {
        r.insert("file".into(), json!({"path": path}));
    }
    Value::Object(r)
}

/// What a config asks for: the conversion, with its settings, or undoing it
/// (`unconvert: "true"`, which takes no setting).
enum Job {
    Convert(Box<Settings>),
    Unconvert,
}

impl Job {
    /// A container `--entrypoint` named that no converted document had.
    fn unknown_entrypoints(&self) -> Result<(), envshim::converter::Error> {
        match self {
            Job::Convert(s) => s.unknown_entrypoints(),
            Job::Unconvert => Ok(()),
        }
    }
    fn run(&self, doc: &mut Value) -> Result<Vec<crate::warn::Note>, Vec<envshim::converter::Error>> {
        match self {
            Job::Convert(s) => convert::document(doc, s),
            Job::Unconvert => crate::unconvert::document(doc),
        }
    }
}

/// The job a config's `data` gives. Err: why it gives none, as a usage
/// error's message (`data.KEY` names the option).
fn config_job(config: &Value) -> Result<Job, String> {
    let (config, given) = options(config)?;
    if config.unconvert {
        return Ok(Job::Unconvert);
    }
    let settings = settings(&config.options, &given, Naming::Config).map_err(|e| e.what)?;
    settings.image_needed().map_err(|e| e.what)?;
    Ok(Job::Convert(Box::new(settings)))
}

/// `convert`'s options from a config's `data`: each key the long name of
/// one, each value a string (a repeatable option's, one value a line),
/// parsed as `--KEY=VALUE` by the command line's own definition
/// ([`FunctionConfig`]): an option added there is a key here. Err: a key or
/// value it does not take. With the options, the matches they were parsed from.
fn options(config: &Value) -> Result<(FunctionConfig, clap::ArgMatches), String> {
    let no_data = Map::new();
    let data = match config.get("data") {
        None | Some(Value::Null) => &no_data,
        Some(Value::Object(data)) => data,
        Some(_) => return Err("data is not a mapping of option names to strings".into()),
    };
    let cmd = FunctionConfig::augment_args(clap::Command::new("data").no_binary_name(true).disable_help_flag(true).disable_version_flag(true));
    let mut words = Vec::new();
    for (key, value) in data {
        let Some(value) = value.as_str() else {
            return Err(format!("data.{} is not a string (quote it)", escape(key.as_bytes())));
        };
        // (Not a hidden one: the pod's index, which the converter writes itself.)
        let Some(option) = cmd.get_arguments().find(|a| a.get_long() == Some(key.as_str()) && !a.is_hide_set()) else {
            let keys: Vec<&str> = cmd.get_arguments().filter(|a| !a.is_hide_set()).filter_map(|a| a.get_long()).collect();
            let hint = match envshim::converter::closest(key.as_bytes(), &keys) {
                Some(k) => format!("did you mean {k}?"),
                None => format!("it takes {}", keys.join(", ")),
            };
            return Err(format!("data.{} is not an option of kubectl envshim ({hint})", escape(key.as_bytes())));
        };
        if matches!(option.get_action(), ArgAction::Append) {
            words.extend(value.lines().map(str::trim).filter(|l| !l.is_empty()).map(|l| format!("--{key}={l}")));
        } else if matches!(option.get_action(), ArgAction::SetTrue) {
            // A flag (`watch`): its words as envshim's variables take them (`ENVSHIM_WATCH`).
            match envshim::converter::values::switch(value) {
                Ok(true) => words.push(format!("--{key}")),
                Ok(false) => {}
                Err(e) => return Err(format!("data.{key}: {e} (quoted)")),
            }
        } else {
            words.push(format!("--{key}={value}"));
        }
    }
    let parsed = cmd.try_get_matches_from(words).and_then(|m| Ok((FunctionConfig::from_arg_matches(&m)?, m)));
    // A value envshim's parser refuses: the key and what it takes, never the value.
    parsed.map_err(|e| match envshim::converter::refused_value(&e) {
        Some((option, expected)) => format!("data.{}: {expected}", option.trim_start_matches('-')),
        None => format!("data: {}", e.kind()),
    })
}
