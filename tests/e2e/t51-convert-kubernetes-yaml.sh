#!/usr/bin/env bash
# kubectl envshim convert's output is valid Kubernetes, strictly (unknown fields
# are errors), for 1.29 (no fileKeyRef in the API: the clusters the converter is
# for) and for the newest schemas kubernetes-validate ships: every example, and a
# workload of every kind, a List, a native sidecar, and the options' shapes. The
# native input really is rejected by 1.29 (so the check means something).
source "$(dirname "$0")/lib.sh"
python3 -c "import kubernetes_validate" || fail "kubernetes-validate missing: run tests/e2e/deps.sh"
kv() { python3 -m kubernetes_validate "$@"; }
KC=$DIST/kubectl-envshim-linux-amd64
[ -x "$KC" ] || fail "$KC missing: run musl-build.sh"
# a plain build of the converter has no envshim image of its own: a qualified one
export KUBECTL_ENVSHIM_SHIM_IMAGE=registry.example.com/envshim:$VERSION
out=$PWD/converted; mkdir -p "$out"

# Every example, converted.
mapfile -t files < <(find "$ROOT/examples" -name '*.yaml' | sort)
for f in "${files[@]}"; do
  n=$(basename "$(dirname "$f")")-$(basename "$f")
  "$KC" convert -f "$f" >"$out/$n" || fail "convert ${f#$ROOT/}"
done
ok "converted ${#files[@]} example files"

# A pod spec with fileKeyRef, in every kind that holds one.
spec() { # INDENT
  sed "s/^/$(printf '%*s' "$1" '')/" <<'YAML'
initContainers:
  - name: gen
    image: busybox:1.36
    command: ["sh", "-c", "echo K=v > /config/app.env"]
    volumeMounts: [{name: config, mountPath: /config}]
  - name: sidecar
    image: busybox:1.36
    restartPolicy: Always
    command: ["sh", "-c", "sleep 1d"]
    env: [{name: S, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: K, optional: true}}}]
containers:
  - name: app
    image: registry.example.com/app:1.0
    command: ["/app"]
    args: ["--k=$(K)"]
    env:
      - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
      - {name: K, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: K}}}
      - {name: URL, value: "http://$(K)/$(NS)"}
    volumeMounts: [{name: config, mountPath: /config, readOnly: true}]
  - name: no-mount
    image: registry.example.com/app:1.0
    command: ["/app"]
    env: [{name: K, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: K}}}]
volumes:
  - name: config
    emptyDir: {}
YAML
}
sel='selector: {matchLabels: {app: a}}'
{
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n'; spec 2
  printf -- '---\napiVersion: v1\nkind: PodTemplate\nmetadata: {name: pt}\ntemplate:\n  metadata: {labels: {app: a}}\n  spec:\n'; spec 4
  for k in apps/v1:Deployment apps/v1:ReplicaSet apps/v1:DaemonSet apps/v1:StatefulSet v1:ReplicationController batch/v1:Job; do
    s=$sel; [ "${k#*:}" = ReplicationController ] && s='selector: {app: a}'
    [ "${k#*:}" = Job ] && s='backoffLimit: 1'
    [ "${k#*:}" = StatefulSet ] && s="$sel
  serviceName: s"
    printf -- '---\napiVersion: %s\nkind: %s\nmetadata: {name: w}\nspec:\n  %s\n  template:\n    metadata: {labels: {app: a}}\n    spec:\n' "${k%%:*}" "${k#*:}" "$s"
    [ "${k#*:}" = Job ] && printf '      restartPolicy: Never\n'
    spec 6
  done
  printf -- '---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec:\n  schedule: "* * * * *"\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          restartPolicy: Never\n'; spec 10
  printf -- '---\napiVersion: v1\nkind: List\nmetadata: {}\nitems:\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: in-list}\n    spec:\n'; spec 6
} >"$PWD/native.yaml"
! kv --strict --quiet -k 1.29.0 "$PWD/native.yaml" >/dev/null 2>&1 || fail "1.29 accepted fileKeyRef"
kv --strict --quiet "$PWD/native.yaml" || fail "the native input is not valid for the newest version"
ok "the native input: rejected by 1.29, valid for the newest"
"$KC" convert -f "$PWD/native.yaml" >"$out/all-kinds.yaml" || fail "convert all kinds"
"$KC" convert --wait 30s --shim-image registry.example.com/envshim:$VERSION -f "$PWD/native.yaml" >"$out/options.yaml" || fail "convert with options"
"$KC" convert --shim-path /usr/local/bin/envshim -f "$PWD/native.yaml" >"$out/baked-in.yaml" || fail "convert --shim-path"
grep -q 'envshim-install' "$out/all-kinds.yaml" || fail "no installer in the output"
! grep -q 'fileKeyRef:' "$out/all-kinds.yaml" || fail "a fileKeyRef field is left"
[ "$(grep -c 'name: envshim-install' "$out/all-kinds.yaml")" = 10 ] || fail "want one installer in each of the 10 pods"
ok "10 pods converted, no fileKeyRef field left"

# kubernetes-validate has no schema for a List: its items, converted, as documents of their own.
python3 -c 'import sys, yaml
items = [i for d in yaml.safe_load_all(open(sys.argv[1])) if d and d["kind"] == "List" for i in d["items"]]
assert items and all("envshim-install" in str(i) for i in items), items
yaml.safe_dump_all(items, open(sys.argv[2], "w"))' "$out/all-kinds.yaml" "$out/list-items.yaml" || fail "the List's items"
for f in "$out"/*.yaml; do
  kv --strict --quiet "$f" || fail "${f##*/}: not valid for the newest version"
  kv --strict --quiet -k 1.29.0 "$f" || fail "${f##*/}: not valid for 1.29"
  ok "kubernetes-validate --strict, newest and 1.29: ${f##*/}"
done
