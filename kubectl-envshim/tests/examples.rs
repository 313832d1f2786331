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
