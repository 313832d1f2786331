//! The converter's command line: each option of `convert` and what it does
//! to a pod, the usage errors (2), `--help` and `--version`.

use super::*;

#[test]
fn options_entrypoint_wait_shim_image_and_shim_path() {
    let (pod, _) = workload("Pod");
    let no_command = pod.replace(NO_COMMAND.0, NO_COMMAND.1);
    assert_ne!(no_command, pod);
    // --entrypoint: a JSON array, or one path; the container's args follow it.
    for (given, expected) in [(r#"app=["/bin/app","--serve"]"#, serde_json::json!(["/bin/app", "--serve"])), ("app=/bin/app", serde_json::json!(["/bin/app"]))]
    {
        let doc = yaml(kubectl_envshim(&["convert", "--entrypoint", given], &no_command).ok());
        let m = manifest_seen(&doc["spec"]["containers"][0]);
        assert_eq!(m["command"], expected);
        assert_eq!(m["args"], serde_json::json!(["--url=$(URL)", "$$(KEEP)"]));
    }
    // One word with blanks: refused, with the JSON list to give instead.
    let out = kubectl_envshim(&["convert", "--entrypoint", "app=/docker-entrypoint.sh nginx -g daemon off;"], &no_command);
    let message = out.fails(2, &[r#"--entrypoint 'app=["/docker-entrypoint.sh","nginx","-g","daemon","off;"]'"#]).to_string();
    assert!(message.contains("--entrypoint app: the program is one word with blanks"), "{message}");
    // A path with a blank, as a list of one string: taken, nothing said.
    let out = kubectl_envshim(&["convert", "--entrypoint", r#"app=["/bin/my app"]"#], &no_command);
    out.succeeds();
    assert_eq!(out.stderr, "");
    // The container's own command wins over --entrypoint.
    let doc = yaml(kubectl_envshim(&["convert", "--entrypoint", "app=/other"], &pod).ok());
    assert_eq!(manifest_seen(&doc["spec"]["containers"][0])["command"], serde_json::json!(["/app", "--token=$(TOKEN)"]));
    // --wait: ENVSHIM_WAIT after the manifest.
    let doc = yaml(kubectl_envshim(&["convert", "--wait", "30s"], &pod).ok());
    let env = json_of(&doc["spec"]["containers"][0]["env"]);
    let env = env.as_array().unwrap();
    assert_eq!(env[env.len() - 4]["name"], "ENVSHIM_MANIFEST_JSON");
    assert_eq!(env[env.len() - 3], serde_json::json!({"name": "ENVSHIM_WAIT", "value": "30s"}));
    // --env-grammar: the kubelet's by default (a converted container reads env
    // files as it will natively), envshim's when asked, and said by --check.
    assert_eq!(env[env.len() - 2], serde_json::json!({"name": "ENVSHIM_ENV_GRAMMAR", "value": "kubelet"}));
    // Last, the marker a kubelet's expansion turns into `$`.
    assert_eq!(env[env.len() - 1], serde_json::json!({"name": "ENVSHIM_EXPANDED", "value": "$$"}));
    let doc = yaml(kubectl_envshim(&["convert", "--env-grammar", "envshim"], &pod).ok());
    let env = json_of(&doc["spec"]["containers"][0]["env"]);
    let env = env.as_array().unwrap();
    assert_eq!(env[env.len() - 2], serde_json::json!({"name": "ENVSHIM_ENV_GRAMMAR", "value": "envshim"}));
    let check = kubectl_envshim(&["convert", "--check", "--env-grammar", "envshim"], &pod);
    assert_eq!(check.code, 1);
    assert!(check.stderr.contains("would read env files with envshim's grammar (--env-grammar envshim)"), "{}", check.stderr);
    assert!(!kubectl_envshim(&["convert", "--check"], &pod).stderr.contains("grammar"));
    kubectl_envshim(&["convert", "--env-grammar", "dotenv"], &pod).failed(2, &["--env-grammar"]);
    // --watch: envshim runs with --watch; without it, not.
    let doc = yaml(kubectl_envshim(&["convert", "--watch"], &pod).ok());
    assert_eq!(json_of(&doc["spec"]["containers"][0]["command"]), serde_json::json!(["/.envshim/bin/envshim", "run", "--watch"]));
    let doc = yaml(kubectl_envshim(&["convert"], &pod).ok());
    assert_eq!(json_of(&doc["spec"]["containers"][0]["command"]), serde_json::json!(["/.envshim/bin/envshim", "run"]));
    // --shim-image, over KUBECTL_ENVSHIM_SHIM_IMAGE, and without it.
    for image in [Some(IMAGE), None] {
        let doc = yaml(kubectl_envshim_with(&["convert", "--shim-image", "registry.example.com/envshim:1"], &pod, image).ok());
        assert_eq!(doc["spec"]["initContainers"][0]["image"].as_str(), Some("registry.example.com/envshim:1"));
    }
    // No image at all (a plain build has none of its own): a usage error naming the way out
    // (--check needs none: convert/production.rs); an empty variable is no image; --shim-path needs none.
    for (args, image) in [(vec!["convert"], None), (vec!["convert"], Some(""))] {
        let out = kubectl_envshim_with(&args, &pod, image);
        out.fails(2, &["no envshim image", "--shim-image", "KUBECTL_ENVSHIM_SHIM_IMAGE"]);
        assert!(!out.stderr.contains(SENTINEL));
    }
    let doc = yaml(kubectl_envshim_with(&["convert", "--shim-path", "/usr/local/bin/envshim"], &pod, None).ok());
    assert!(doc["spec"]["initContainers"].as_sequence().unwrap().iter().all(|c| c["name"].as_str() != Some("envshim-install")));
    // --shim-path elsewhere: envshim is in the image; no installer, no volume, no mount of it.
    let doc = yaml(kubectl_envshim(&["convert", "--shim-path", "/usr/local/bin/envshim"], &pod).ok());
    let spec = &doc["spec"];
    assert_eq!(spec["initContainers"].as_sequence().unwrap().len(), 1);
    assert_eq!(spec["volumes"].as_sequence().unwrap().len(), 1);
    assert_eq!(json_of(&spec["containers"][0]["command"]), serde_json::json!(["/usr/local/bin/envshim", "run"]));
    assert_eq!(
        json_of(&spec["containers"][0]["volumeMounts"]),
        serde_json::json!([{"name": "config", "mountPath": "/.envshim/volumes/config", "readOnly": true}])
    );
}

#[test]
fn usage_errors_exit_2() {
    let (pod, _) = workload("Pod");
    for (args, part) in [
        (vec!["convert", "--entrypoint", "app"], "expected CONTAINER=PROGRAM"),
        (vec!["convert", "--entrypoint", "app=[\"/a\", 1]"], "not a JSON array of strings"),
        (vec!["convert", "--entrypoint", "app=[]"], "with a container name and a program"),
        (vec!["convert", "--entrypoint", "app=/a", "--entrypoint", "app=/b"], "given twice"),
        (vec!["convert", "--wait", "soon"], "--wait: expected a whole number"),
        (vec!["convert", "--shim-path", "/bin/envshim", "--shim-image", "x"], "give one"),
        (vec!["convert", "--shim-path", "envshim"], "absolute"),
        (vec!["convert", "-f", "-", "-f", "-"], "only once"),
        (vec!["convert", "--bogus"], "--bogus"),
        (vec!["frobnicate"], "frobnicate"),
        (vec![], "subcommand"),
    ] {
        kubectl_envshim(&args, &pod).fails(2, &[part]);
    }
}

#[test]
fn help_and_version() {
    let out = kubectl_envshim(&["--version"], "");
    assert_eq!(out.ok(), format!("kubectl-envshim {}\n", env!("CARGO_PKG_VERSION")));
    let out = kubectl_envshim(&["convert", "--help"], "");
    // How to read what --entrypoint stands for.
    let inspect = "docker image inspect -f '{{json .Config.Entrypoint}} {{json .Config.Cmd}}' IMAGE";
    for part in ["--shim-image", "--shim-path", "--entrypoint", "--wait", "--check", "-f, --filename", inspect] {
        assert!(out.ok().contains(part), "{part}: {}", out.stdout);
    }
    let help = kubectl_envshim(&["--help"], "");
    assert!(help.ok().contains("kubectl envshim"));
    // The exit codes: envshim's table, the converter's rows (as envshim's own help ends).
    assert!(help.ok().trim_end().ends_with(envshim::converter::exit_code_help(envshim::converter::Tool::Converter)), "{}", help.stdout);
    assert!(help.ok().contains("\n  1      convert --check: a document would change; fmt --check: a line to fix\n"), "{}", help.stdout);
}
