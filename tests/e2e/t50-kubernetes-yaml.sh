#!/usr/bin/env bash
# Every Kubernetes YAML under examples/ validates against the Kubernetes schemas
# with kubernetes-validate --strict (unknown fields are errors), for the newest
# schemas it ships and for 1.25 (an old cluster: envshim is for any version), or
# for the oldest version a file names (`# min-kubernetes: 1.29.0`: native sidecars);
# a YAML with a misspelt field is rejected, so the check is really strict.
source "$(dirname "$0")/lib.sh"
python3 -c "import kubernetes_validate" || fail "kubernetes-validate missing: run tests/e2e/deps.sh"
kv() { python3 -m kubernetes_validate "$@"; }
mapfile -t files < <(find "$ROOT/examples" -name '*.yaml' -o -name '*.yml' | sort)
[ ${#files[@]} -ge 3 ] || fail "found only ${#files[@]} YAML files"
kv --strict --quiet "${files[@]}" || fail "kubernetes-validate --strict failed"
ok "kubernetes-validate --strict: all ${#files[@]} files"
# An old cluster too: 1.25, or the version a file names in a `# min-kubernetes: X.Y.Z`
# line (a feature newer than 1.25, such as native sidecars).
for f in "${files[@]}"; do
  k=$(sed -n 's/^# min-kubernetes: *//p' "$f"); k=${k:-1.25.0}
  kv --strict --quiet -k "$k" "$f" || fail "kubernetes-validate --strict -k $k ${f#$ROOT/} failed"
  ok "kubernetes-validate --strict -k $k: ${f#$ROOT/}"
done
# ...and a native sidecar is really too new for 1.25 (so the line above is needed, and checked).
! kv --strict --quiet -k 1.25.0 "$ROOT/examples/native-sidecar/pod.yaml" >/dev/null 2>&1 \
  || fail "1.25 accepted an initContainer with restartPolicy"
for f in "${files[@]}"; do
  ok "${f#$ROOT/}: $(python3 -c 'import sys, yaml; print(", ".join(d["kind"] for d in yaml.safe_load_all(open(sys.argv[1])) if d))' "$f")"
done
bad=$WORK/bad.yaml
sed 's/^\(\s*\)restartPolicy:/\1restartPolicyy:/' "$ROOT/examples/init-container/pod.yaml" >"$bad"
! kv --strict --quiet "$bad" >/dev/null 2>&1 || fail "kubernetes-validate --strict accepted a misspelt field"
ok "a misspelt field is rejected"
# the JSON manifests in the examples' ConfigMaps parse
for f in "${files[@]}"; do
  python3 -c 'import json, sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d["kind"] == "ConfigMap":
        for k, v in d.get("data", {}).items():
            if k.endswith(".json"): json.loads(v); print(d["metadata"]["name"] + "/" + k)' "$f" | sed 's/^/    ok: JSON parses: /'
done
