#!/usr/bin/env bash
# Mode 2 with `podman kube play` of examples/init-container/pod.yaml: the
# initContainer install-envshim (the envshim image) runs `envshim install
# /shim/envshim` into the emptyDir, generate-config (busybox) writes config.env,
# and the app container - registry.example.com/app:1.0, which holds only /app: no
# shell, no envshim - starts as /shim/envshim run --manifest ... -- /app and gets
# CONFIG_VAR from config.env, /app as its PID 1.
# Podman 4.3 is not a kubelet: it rejects `fieldRef: metadata.namespace` ("fieldPath
# metadata.namespace is either not valid or not supported"; checked below), so the
# test plays a copy in which POD_NAMESPACE is the value the kubelet would give,
# `default`. That is the only change: the Pod has no Secret volume (which podman 4.3
# also mishandles). The example itself stays right for Kubernetes (t50 validates it).
source "$(dirname "$0")/lib.sh"
y=$ROOT/examples/init-container/pod.yaml pod=envshim-init-container-demo
load_envshim podman
images=$(k8s "$y" Pod $pod '[.spec.initContainers[], .spec.containers[]] | map(.image) | join(" ")')
[ "$images" = "envshim:$VERSION busybox:1.36 registry.example.com/app:1.0" ] || fail "the Pod's images: $images"
set +e
podman kube play --network none "$y" >out 2>err
rc=$?
set -e
[ $rc != 0 ] && grep -q 'metadata.namespace' err || { cat out err >&2; fail "podman 4.3 accepted fieldRef metadata.namespace: play the example itself"; }
ok "podman kube play of the example itself: $(cat err)"
podman pod rm -f $pod >/dev/null 2>&1 || true

python3 - "$y" >pod.yaml <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
n = 0
for d in docs:
    for c in d.get('spec', {}).get('containers', []) if d['kind'] == 'Pod' else []:
        for e in c.get('env', []):
            if e.get('valueFrom', {}).get('fieldRef', {}).get('fieldPath') == 'metadata.namespace':
                e.pop('valueFrom'); e['value'] = 'default'; n += 1
assert n == 1, n
yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
PY
podman kube play --network none pod.yaml >play.out 2>play.err || { cat play.out play.err >&2; fail "podman kube play"; }
for i in $(seq 100); do
  [ "$(podman pod inspect $pod --format '{{.State}}')" = Exited ] && break
  sleep 0.2
done
app=$pod-app
[ "$(podman inspect $app --format '{{.State.ExitCode}}')" = 0 ] || { podman logs $app >&2; fail "app exit code"; }
ok "the app container exited 0"
podman logs $app >out 2>err
c=$(podman create registry.example.com/app:1.0 x)
[ "$(podman export "$c" | tar -t | grep -v '/$' | sort | tr '\n' ' ')" = "app " ] || fail "the app image holds more than /app"
podman rm "$c" >/dev/null
ok "the app image holds only /app: no shell, no envshim"
expect_line out "pid=1"
expect_line out "pid1=app"
expect_line out "argv[0]=/app"
expect_line out "argv[1]=--greeting=config is HELLO in default"
expect_line out "env:CONFIG_VAR=HELLO"
expect_line out "env:GREETING=config is HELLO in default"
expect_no_line out '^env:OPTIONAL_VAR='
[ ! -s err ] || fail "stderr: $(cat err)"
ok "nothing on stderr"
podman pod rm -f $pod >/dev/null
