//! `--watch` and its settings through the converter (each checked by
//! envshim's own parser, each a functionConfig key of the same name), and
//! the walls a first hour meets: `--entrypoint` spelt with blanks or for a
//! container the input lacks, `--check` without an image.

use super::*;

/// A value envshim takes, for each kind of value a setting takes (its value
/// name); `n` tells the settings' values apart.
fn sample(value_name: &str, n: usize) -> String {
    match value_name {
        "ACTION" => "exit".into(),
        "SIG" => "SIGQUIT".into(),
        "DURATION" => format!("{}s", 40 + n),
        "N" => "3".into(),
        other => panic!("no sample value for a setting's {other}: add one here"),
    }
}

/// `--watch`'s settings, read from the definitions (the converter's options
/// are envshim's own, flattened): each of envshim's settings the converter
/// takes as an option (not the pod's index, which it writes itself), in
/// their order, with a value envshim takes and envshim's variable for it:
/// (flag, value, variable).
fn settings() -> Vec<(String, String, String)> {
    use clap::Args;
    let envshim = envshim::converter::WatchOptions::augment_args(clap::Command::new("run"));
    let converter = kubectl_envshim::cli::Options::augment_args(clap::Command::new("convert"));
    let taken = |a: &&clap::Arg| converter.get_arguments().any(|c| c.get_id() == a.get_id() && !c.is_hide_set());
    let settings: Vec<_> = envshim
        .get_arguments()
        .filter(taken)
        .enumerate()
        .map(|(n, a)| {
            let value = sample(a.get_value_names().unwrap()[0].as_str(), n);
            (format!("--{}", a.get_long().unwrap()), value, a.get_env().unwrap().to_str().unwrap().to_string())
        })
        .collect();
    assert!(settings.len() >= 9 && settings.len() < envshim.get_arguments().count(), "{settings:?}");
    settings
}

/// The converter reads none of envshim's variables from its own environment
/// (they are what it writes), and the per-pod setting (`--pod-index`, which
/// the converter writes from the downward API) is no option of its own: not
/// in its help, not a functionConfig key.
#[test]
fn the_converters_settings_are_envshims_without_their_variables() {
    let (pod, _) = workload("Pod");
    let ours = kubectl_envshim(&["convert", "--watch"], &pod).ok().to_string();
    let mut command = Command::new(BIN);
    command.args(["convert", "--watch"]).env("KUBECTL_ENVSHIM_SHIM_IMAGE", IMAGE).env("ENVSHIM_POD_INDEX", SENTINEL);
    for (_, _, variable) in settings() {
        command.env(variable, SENTINEL);
    }
    assert_eq!(run(&mut command, &pod).ok(), ours);
    kubectl_envshim(&["convert", "--watch", "--pod-index", "2"], &pod).fails(2, &["unexpected argument '--pod-index"]);
    let help = kubectl_envshim(&["convert", "--help"], "").ok().to_string();
    assert!(help.contains("--watch-splay") && !help.contains("--pod-index"), "{help}");
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("c.yaml");
    std::fs::write(&config, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  watch: \"true\"\n  pod-index: \"2\"\n").unwrap();
    kubectl_envshim(&["krm", config.to_str().unwrap()], &pod).fails(2, &["c.yaml: data.pod-index is not an option of kubectl envshim"]);
}

/// The converted app container's env (name, value), in order.
fn shim_env(doc: &Value) -> Vec<(String, String)> {
    let env = json_of(&doc["spec"]["containers"][0]["env"]);
    env.as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap_or("").to_string())).collect()
}

#[test]
fn every_watch_setting_reaches_envshim_and_envshim_takes_it() {
    let (pod, _) = workload("Pod");
    // A program envshim's check finds.
    let pod = pod.replace(r#"command: ["/app","#, r#"command: ["/bin/true","#);
    let mut args = vec!["convert", "--watch"];
    let settings = settings();
    args.extend(settings.iter().flat_map(|(flag, value, _)| [flag.as_str(), value.as_str()]));
    let doc = yaml(kubectl_envshim(&args, &pod).ok());
    let app = &doc["spec"]["containers"][0];
    let env = shim_env(&doc);
    // After the manifest and the grammar, in the options' order, each as given; the marker last.
    assert_eq!(env[env.len() - 1], ("ENVSHIM_EXPANDED".to_string(), "$$".to_string()));
    let tail: Vec<(String, String)> = env[env.len() - 1 - settings.len()..env.len() - 1].to_vec();
    let expected: Vec<(String, String)> = settings.iter().map(|(_, value, var)| (var.clone(), value.clone())).collect();
    assert_eq!(tail, expected);
    let command: Vec<String> = app["command"].as_sequence().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect();
    assert_eq!(command[1..], ["run", "--watch"]);
    // envshim reads the container as the kubelet starts it: `check` with the
    // same options and variables validates every setting with its own parser.
    let vol = tempfile::tempdir().unwrap();
    std::fs::write(vol.path().join("app.env"), "TOKEN='t'\n").unwrap();
    let kubelet = kubelet_env(&app["env"], &BTreeMap::from([("NS", "prod")]));
    let check = |env: &[(String, String)]| {
        let manifest = env.iter().find(|(n, _)| n == "ENVSHIM_MANIFEST_JSON").unwrap().1.replace("/.envshim/volumes/config", vol.path().to_str().unwrap());
        let env = env.iter().map(|(n, v)| (n.clone(), if n == "ENVSHIM_MANIFEST_JSON" { manifest.clone() } else { v.clone() }));
        Command::new(envshim_bin()).arg("check").args(&command[2..]).env_clear().envs(env).env("PATH", "/usr/bin:/bin").output().unwrap()
    };
    let out = check(&kubelet);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // (The check can fail: a value envshim refuses is exit 2, named.)
    let mut bad = kubelet.clone();
    bad.iter_mut().find(|(n, _)| n == "ENVSHIM_WATCH_SPLAY").unwrap().1 = "soon".into();
    let out = check(&bad);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ENVSHIM_WATCH_SPLAY"));
}

#[test]
fn a_watch_setting_needs_watch_and_a_bad_value_is_named_never_shown() {
    let (pod, _) = workload("Pod");
    for (flag, value, _) in settings() {
        let given = format!("{flag}={value}");
        kubectl_envshim(&["convert", &given], &pod).fails(2, &[&format!("{flag} needs --watch")]);
        let bad = format!("{flag}={SENTINEL}");
        let message = kubectl_envshim(&["convert", "--watch", &bad], &pod).fails(2, &[&format!("{flag}: expected")]).to_string();
        assert_eq!(message.lines().count(), 1, "{message}");
    }
    // The words envshim takes, and only those: `signal:` needs a signal, a poll more than 0.
    kubectl_envshim(&["convert", "--watch", "--on-change", "signal:HUP", "--watch-poll", "1"], &pod).ok();
    kubectl_envshim(&["convert", "--watch", "--on-change", "signal:0"], &pod).fails(2, &["--on-change: 0 is no signal"]);
    kubectl_envshim(&["convert", "--watch", "--watch-poll", "0"], &pod).fails(2, &["--watch-poll: must be more than 0"]);
    kubectl_envshim(&["convert", "--env-grammar", SENTINEL], &pod).fails(2, &["--env-grammar: expected envshim or kubelet"]);
}

#[test]
fn the_watch_settings_are_config_keys_under_kpt_and_kustomize() {
    let (pod, _) = workload("Pod");
    let d = tempfile::tempdir().unwrap();
    let config = |name: &str, data: &str| {
        let path = d.path().join(name);
        std::fs::write(&path, format!("apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {{name: c}}\ndata:\n  shim-image: r/e:1\n{data}")).unwrap();
        path.to_str().unwrap().to_string()
    };
    // kustomize's transformer: the keys of the same names, a flag's words as envshim's variables take them.
    let settings = settings();
    let data: String = settings.iter().map(|(flag, value, _)| format!("  {}: \"{value}\"\n", &flag[2..])).collect();
    let good = config("good.yaml", &format!("  watch: \"yes\"\n{data}"));
    let doc = yaml(kubectl_envshim(&["krm", &good], &pod).ok());
    let env = shim_env(&doc);
    let (_, value, variable) = settings.last().unwrap();
    assert_eq!(env[env.len() - 2], (variable.clone(), value.clone()));
    assert_eq!(doc["spec"]["containers"][0]["command"][2], "--watch");
    let off = config("off.yaml", &format!("  watch: \"0\"\n{data}"));
    kubectl_envshim(&["krm", &off], &pod).fails(2, &["data.on-change needs data.watch"]);
    let bad = config("bad.yaml", &format!("  watch: \"on\"\n  watch-settle: \"{SENTINEL}\"\n"));
    kubectl_envshim(&["krm", &bad], &pod).fails(2, &["bad.yaml: data.watch-settle: expected a whole number and a unit"]);
    // kpt: the same key, a result naming it, exit 2.
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- {}functionConfig: {{data: {{shim-image: r/e:1, watch: 'true', restart-signal: '{SENTINEL}'}}}}\n",
        pod.lines().collect::<Vec<_>>().join("\n  ") + "\n"
    );
    let out = kubectl_envshim(&["krm"], &list);
    assert_eq!(out.code, 2, "{}", out.stderr);
    let results = &docs(&out.stdout)[0]["results"];
    assert_eq!(results[0]["message"], "functionConfig: data.restart-signal: expected a signal (a name like TERM or SIGTERM, or a number from 0 to 64)");
    assert!(!out.stdout.split("results:").nth(1).unwrap().contains(SENTINEL));
}

/// `pod` with the env entry NAME=VALUE before its entry URL.
fn with_entry(pod: &str, name: &str, value: &str) -> String {
    let line = pod.lines().find(|l| l.trim() == "- name: URL").unwrap();
    let indent = &line[..line.len() - line.trim_start().len()];
    pod.replace(&format!("{line}\n"), &format!("{indent}- name: {name}\n{indent}  value: \"{value}\"\n{line}\n"))
}

#[test]
fn an_envshim_entry_in_the_pod_names_the_option_that_sets_it() {
    let (pod, _) = workload("Pod");
    for (entry, flag) in
        [("ENVSHIM_WATCH_SPLAY", "--watch-splay"), ("ENVSHIM_WAIT", "--wait"), ("ENVSHIM_WATCH", "--watch"), ("ENVSHIM_ENV_GRAMMAR", "--env-grammar")]
    {
        let with = with_entry(&pod, entry, SENTINEL);
        assert_ne!(with, pod);
        kubectl_envshim(&["convert"], &with).fails(78, &[&format!("{entry} is envshim's configuration: set it with `kubectl envshim convert {flag}`")]);
    }
    // One no option sets: rename it.
    let with = with_entry(&pod, "ENVSHIM_OTHER", "x");
    kubectl_envshim(&["convert"], &with).fails(78, &["ENVSHIM_OTHER is envshim's configuration (every ENVSHIM_* name is)", "rename it"]);
}

#[test]
fn entrypoint_blanks_unknown_containers_and_one_word_with_blanks() {
    let (pod, _) = workload("Pod");
    let no_command = pod.replace(NO_COMMAND.0, NO_COMMAND.1);
    // Blanks around `=` and the program: the name and program without them.
    let doc = yaml(kubectl_envshim(&["convert", "--entrypoint", r#" app = ["/bin/app","serve"] "#], &no_command).ok());
    assert_eq!(manifest_seen(&doc["spec"]["containers"][0])["command"], serde_json::json!(["/bin/app", "serve"]));
    // The same line in a functionConfig.
    let d = tempfile::tempdir().unwrap();
    let config = d.path().join("c.yaml");
    std::fs::write(&config, "kind: Convert\ndata:\n  shim-image: r/e:1\n  entrypoint: |\n    app = [\"/bin/app\",\"serve\"]\n").unwrap();
    let doc = yaml(kubectl_envshim(&["krm", config.to_str().unwrap()], &no_command).ok());
    assert_eq!(manifest_seen(&doc["spec"]["containers"][0])["command"], serde_json::json!(["/bin/app", "serve"]));
    // A container the input lacks: exit 2, naming those it has (even when the one meant has no command).
    for input in [&pod, &no_command] {
        kubectl_envshim(&["convert", "--entrypoint", "ap=/bin/app"], input)
            .fails(2, &["--entrypoint ap: no container of that name (the input's containers: app, gen, plain)"]);
    }
    kubectl_envshim(&["convert", "--check", "--entrypoint", "ap=/bin/app"], &pod).fails(2, &["--entrypoint ap: no container"]);
    std::fs::write(&config, "kind: Convert\ndata:\n  shim-image: r/e:1\n  entrypoint: ap=/bin/app\n").unwrap();
    kubectl_envshim(&["krm", config.to_str().unwrap()], &no_command)
        .fails(2, &["c.yaml: data.entrypoint ap: no container of that name (the input's containers: app, gen, plain)"]);
    // One word with blanks: refused, with the list to write.
    kubectl_envshim(&["convert", "--entrypoint", "app=/app serve"], &no_command).fails(2, &[r#"--entrypoint 'app=["/app","serve"]'"#]);
}

#[test]
fn check_needs_no_image() {
    let (pod, _) = workload("Pod");
    let converted = convert(&pod).stdout;
    // Already converted: nothing would change, no image needed.
    let out = kubectl_envshim_with(&["convert", "--check"], &converted, None);
    assert_eq!((out.code, out.stdout.as_str(), out.stderr.as_str()), (0, "", ""));
    // To convert: --check says so without one; writing it needs one.
    let out = kubectl_envshim_with(&["convert", "--check"], &pod, None);
    assert_eq!((out.code, out.stderr.as_str()), (1, "kubectl-envshim: stdin: document 1 (Pod/w-pod): would convert containers app\n"));
    kubectl_envshim_with(&["convert"], &pod, None).fails(2, &["no envshim image: pass --shim-image IMAGE"]);
    // Nothing to convert is written as it came, with no image.
    let plain = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    assert_eq!(kubectl_envshim_with(&["convert"], plain, None).ok(), plain);
}

#[test]
fn listen_reaches_envshim_checked_by_its_parser_with_or_without_watch() {
    let (pod, _) = workload("Pod");
    for watch in [&[][..], &["--watch", "--on-change", "handover"]] {
        let mut args = vec!["convert", "--listen", "tcp::8080,unix:/run/app.sock"];
        args.extend_from_slice(watch);
        let doc = yaml(kubectl_envshim(&args, &pod).ok());
        let env = shim_env(&doc);
        assert!(env.contains(&("ENVSHIM_LISTEN".to_string(), "tcp::8080,unix:/run/app.sock".to_string())), "{env:?}");
    }
    let bad = format!("tcp:{SENTINEL}:80");
    let out = kubectl_envshim(&["convert", "--listen", &bad], &pod);
    out.fails(2, &["--listen: expected tcp:HOST:PORT"]);
    out.no_sentinel();
}
