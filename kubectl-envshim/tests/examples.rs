//! The examples the docs show: the converted Deployment is exactly what the
//! converter prints for the native one, and every other example (none uses
//! `fileKeyRef`) comes out byte for byte as it went in.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::BIN;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// The image examples/convert/README.md converts with (the one images/ builds).
const SHIM_IMAGE: &str = concat!("envshim:", env!("CARGO_PKG_VERSION"));

fn convert(file: &Path, extra: &[&str]) -> (i32, Vec<u8>) {
    let out = Command::new(BIN).arg("convert").arg("--shim-image").arg(SHIM_IMAGE).arg("-f").arg(file).args(extra).output().unwrap();
    assert!(out.stderr.is_empty(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), out.stdout)
}

#[test]
fn the_converted_deployment_is_what_the_converter_prints() {
    let dir = examples().join("convert");
    let expected = std::fs::read(dir.join("deployment.converted.yaml")).unwrap();
    let (code, printed) = convert(&dir.join("deployment.yaml"), &[]);
    assert_eq!(code, 0);
    assert!(
        printed == expected,
        "examples/convert/deployment.converted.yaml is not what the converter prints; regenerate it:\n  \
         kubectl-envshim convert --shim-image envshim:VERSION -f examples/convert/deployment.yaml > examples/convert/deployment.converted.yaml\n--- printed:\n{}",
        String::from_utf8_lossy(&printed)
    );
    assert_eq!(convert(&dir.join("deployment.converted.yaml"), &["--check"]), (0, Vec::new()));
    let check = Command::new(BIN).args(["convert", "--check", "--shim-image", SHIM_IMAGE, "-f"]).arg(dir.join("deployment.yaml")).output().unwrap();
    assert_eq!(check.status.code(), Some(1));
    assert!(check.stdout.is_empty());
    assert!(String::from_utf8_lossy(&check.stderr).ends_with("deployment.yaml: document 1 (Deployment/envshim-convert-demo): would convert containers app\n"));
}

#[test]
fn every_other_example_comes_out_unchanged() {
    let mut seen = 0;
    let mut dirs = vec![examples()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if (name.ends_with(".yaml") || name.ends_with(".json")) && !name.ends_with("convert/deployment.yaml") {
                let (code, printed) = convert(&path, &[]);
                assert_eq!(code, 0, "{name}");
                assert!(printed == std::fs::read(&path).unwrap(), "{name} changed");
                seen += 1;
            }
        }
    }
    assert!(seen >= 6, "only {seen} examples");
}

/// The env files of the examples that feed `fileKeyRef` are in the kubelet's
/// grammar: the portability lint (`envshim check --env-grammar kubelet`)
/// passes each, as the examples' manifests read them or as their
/// initContainers and Secrets write them.
#[test]
fn the_env_files_that_feed_file_key_ref_pass_the_kubelet_lint() {
    let envshim = crate::support::harness::envshim();
    let lint = |args: &[&str], dir: &Path| {
        let out = Command::new(envshim).args(["check", "--env-grammar", "kubelet"]).args(args).arg("--").arg("/bin/true").current_dir(dir).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    // The quickstart, from the repository's root as its README runs it.
    lint(&["--manifest", "examples/quickstart/manifest.json"], &examples().join(".."));

    let tmp = tempfile::tempdir().unwrap();
    // What the initContainers write: their `sh -c` line, run into a directory of the test's.
    for example in ["convert/deployment.yaml", "init-container/pod.yaml"] {
        let text = std::fs::read_to_string(examples().join(example)).unwrap();
        let line = text.lines().find(|l| l.contains("> /config/config.env")).unwrap_or_else(|| panic!("{example}: no initContainer writes config.env"));
        let command: Vec<String> = serde_json::from_str(line.trim().trim_start_matches("command:").trim()).unwrap();
        let script = command[2].replace("/config/", &format!("{}/", tmp.path().display()));
        assert!(Command::new("sh").args(["-c", &script]).status().unwrap().success(), "{example}: {script}");
        lint(&["--env-file", "config.env"], tmp.path());
    }
    // The baked-in example's Secret: db.env feeds its fileKeyRef entries.
    let text = std::fs::read_to_string(examples().join("baked-in/kubernetes.yaml")).unwrap();
    let secret: serde_json::Value = serde_norway::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    std::fs::write(tmp.path().join("db.env"), secret["stringData"]["db.env"].as_str().unwrap()).unwrap();
    lint(&["--env-file", "db.env"], tmp.path());
}
