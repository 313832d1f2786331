//! The converter after a renderer: kustomize's transformer form and Helm's post-renderer.

use super::*;

#[test]
fn the_transformer_form_keeps_kustomize_annotations_and_untouched_documents() {
    let d = tempfile::tempdir().unwrap();
    let config = write(d.path(), "c.yaml", "apiVersion: envshim.io/v1\nkind: Convert\nmetadata: {name: c}\n");
    let annotated =
        DEPLOYMENT.replace("  name: web # its name\n", "  name: web # its name\n  annotations:\n    kustomize.config.k8s.io/id: |\n      kind: Deployment\n");
    let stream = format!("{CONFIG_MAP}---\n{annotated}");
    let out = envshim(&["krm", config.to_str().unwrap()], &stream);
    let text = out.succeeds();
    assert!(text.starts_with(&format!("{CONFIG_MAP}---\n")), "{text}");
    assert_eq!(docs(text)[1]["metadata"]["annotations"]["kustomize.config.k8s.io/id"], "kind: Deployment\n");
    envshim(&["krm", d.path().join("missing.yaml").to_str().unwrap()], &stream).failed(65, &["missing.yaml: cannot be read (No such file or directory)"]);
}

#[test]
fn helm_post_renderer_path_stdin_to_stdout() {
    // Helm runs the post-renderer with the rendered chart on stdin and applies
    // what it prints: `--post-renderer kubectl-envshim --post-renderer-args convert`.
    let rendered = format!("---\n# Source: app/templates/cm.yaml\n{CONFIG_MAP}---\n# Source: app/templates/deployment.yaml\n{DEPLOYMENT}");
    let out = envshim(&["convert"], &rendered);
    let text = out.succeeds();
    assert!(
        text.starts_with(&format!("---\n# Source: app/templates/cm.yaml\n{CONFIG_MAP}---\n# Source: app/templates/deployment.yaml\n# the app\n")),
        "{text}"
    );
    assert_eq!(docs(text)[1]["spec"]["template"]["spec"]["initContainers"][0]["name"], "envshim-install");
}
