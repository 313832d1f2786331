//! A `subPathExpr` that names a variable the converter moves out of the kubelet's sight.

use super::*;

#[test]
fn a_sub_path_expr_on_a_late_name_is_refused() {
    // The kubelet expands subPathExpr with the container's final values: one
    // that envshim sets (from the first fileKeyRef on) would differ.
    let (pod, _) = workload("Pod");
    let line = pod.lines().find(|l| l.trim_start().starts_with("resources:")).unwrap();
    let indent = &line[..line.len() - line.trim_start().len()];
    let late = pod.replace(line, &format!("{line}\n{indent}volumeMounts: [{{name: config, mountPath: /c, subPathExpr: \"$(URL)\"}}]"));
    assert_ne!(late, pod);
    convert(&late).fails(78, &["document 1 (Pod/w-pod): spec.containers[0].volumeMounts[0].subPathExpr: container app: refers to $(URL)"]);
    // A name the kubelet alone defines is fine.
    let early = late.replace("subPathExpr: \"$(URL)\"", "subPathExpr: \"$(NS)\"");
    convert(&early).ok();
}
