#!/usr/bin/env bash
# Every Kubernetes YAML under examples/ validates against the Kubernetes schemas
# with kubernetes-validate --strict (unknown fields are errors), for the newest
# schemas it ships and for 1.25 (an old cluster: envshim is for any version);
# a YAML with a misspelt field is rejected, so the check is really strict.
source "$(dirname "$0")/lib.sh"
python3 -c "import kubernetes_validate" || fail "kubernetes-validate missing: run tests/e2e/deps.sh"
kv() { python3 -m kubernetes_validate "$@"; }
mapfile -t files < <(find "$ROOT/examples" -name '*.yaml' -o -name '*.yml' | sort)
[ ${#files[@]} -ge 3 ] || fail "found only ${#files[@]} YAML files"
for k in "" 1.25.0; do
  kv --strict --quiet ${k:+-k $k} "${files[@]}" || fail "kubernetes-validate --strict ${k:+-k $k} failed"
  ok "kubernetes-validate --strict ${k:+-k $k}: all ${#files[@]} files"
done
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
