#!/usr/bin/env bash
# Mode 2 the converter's way: workloads written with native fileKeyRef, converted
# by `kubectl envshim convert` (the release binary), run by `podman kube play` with
# the stand-in images; each container's program must get exactly the argv and the
# environment native fileKeyRef gives (KEP-3721, the kubelet's expansion rules).
#   chain:    an initContainer writes the env file; $(VAR) chains mixing
#             configMapKeyRef and fileKeyRef entries in both orders; $$ in values,
#             command and args; an optional missing key; one container that mounts
#             the volume itself, one that does not (the converter mounts it).
#   late:     a sidecar writes the file 2 s after the start; converted with --wait.
#   failure:  a key missing from the file: exit 66, the message in the termination
#             log, the program never runs, no value printed.
#   deployment: examples/convert/deployment.yaml (a Deployment), converted.
# Podman 4.3 is not a kubelet: it does not expand $(VAR) in env values (nor turn $$
# into $). The converted pods are played as the converter wrote them: the marker
# ENVSHIM_EXPANDED reaches envshim as $$, and envshim does the kubelet's part itself,
# saying so in one line on stderr; each program's argv and environment are checked
# against what the kubelet gives the same pod (KEP-3721's rules: the expected lines).
# Where podman falls short in other ways the test stands in, nowhere else:
# - it removes a finished initContainer racily (its "once" type, a known flake:
#   "failed to remove once init container ... as it is running"): the played copies
#   keep them (annotation io.podman.annotations.init.container.type: always);
# - it rejects fieldRef metadata.namespace: the Deployment's POD_NAMESPACE is the
#   value the kubelet would give, `default` (as e20); and it plays each replica as
#   a pod sharing the emptyDir volumes: the Deployment is played with 1 replica;
# - it runs initContainers to completion, so a native sidecar (restartPolicy:
#   Always) would block the pod: the late writer is a plain container beside the
#   app (the converter converts native sidecars too: t51 and the cargo tests).
source "$(dirname "$0")/lib.sh"
KC=$DIST/kubectl-envshim-linux-amd64
[ -x "$KC" ] || fail "$KC missing: run musl-build.sh"
load_envshim podman
# the image load_envshim made (a plain build of the converter has no image of its own)
export KUBECTL_ENVSHIM_SHIM_IMAGE=envshim:$VERSION

cat >cm.yaml <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {ns: prod}
YAML

# podmanize IN OUT: the converted stream as the converter wrote it, its env untouched
# (no $(VAR) expanded, no $$ undone: podman does neither), init containers kept.
podmanize() {
  python3 - "$1" >"$2" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
markers = 0
for d in docs:
    # podman's "once" init containers (its default) are removed racily after they
    # exit ("cannot remove container ... as it is running", a known podman 4.3 flake)
    for m in [d['metadata']] + ([] if d['kind'] == 'Pod' else [d['spec']['template']['metadata']]):
        m.setdefault('annotations', {})['io.podman.annotations.init.container.type'] = 'always'
    spec = d['spec'] if d['kind'] == 'Pod' else d['spec']['template']['spec']
    for c in spec.get('initContainers', []) + spec['containers']:
        markers += {'name': 'ENVSHIM_EXPANDED', 'value': '$$'} in c.get('env', [])
assert markers, 'no converted container carries the marker'
yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
PY
}

# The line envshim says when it did the kubelet's part (podman expanded nothing).
NOTE='envshim: the engine did not expand $(VAR) in env (no kubelet): envshim expanded the container'"'"'s env, command and args as the kubelet would'
expect_note() {
  [ "$(cat "$1")" = "$NOTE" ] || { cat "$1" >&2; fail "stderr is not the one line saying envshim expanded the env"; }
  ok "stderr: envshim did the kubelet's part (one line)"
}

# play FILE POD [CONTAINER]: podman kube play, then wait until every container
# exited, or (a Deployment's pod: restartPolicy Always, restarted again and again)
# until CONTAINER has run once.
play() {
  podman kube play --network none --configmap cm.yaml "$1" >play.out 2>play.err || { cat play.out play.err >&2; fail "podman kube play $1"; }
  for _ in $(seq 150); do
    if [ -n "${3:-}" ]; then
      [ "$(podman inspect "$3" --format '{{.State.FinishedAt.Unix}}' 2>/dev/null)" -gt 0 ] 2>/dev/null && return 0
    else
      [ "$(podman pod inspect "$2" --format '{{.State}}')" = Exited ] && return 0
    fi
    sleep 0.2
  done
  fail "pod $2 did not exit"
}

# logs CONTAINER: its stdout in out, stderr in err; exit code 0 wanted unless given.
logs() {
  podman logs "$1" >out 2>err
  local code; code=$(podman inspect "$1" --format '{{.State.ExitCode}} {{.State.Status}}')
  [ "${code%% *}" = "${2:-0}" ] || { cat out err >&2; fail "$1: exit code and state $code, not ${2:-0}"; }
  ok "$1 exited ${2:-0}"
}

# --- chain -------------------------------------------------------------------
cat >chain.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: chain}
spec:
  restartPolicy: Never
  initContainers:
    - name: gen
      image: busybox:1.36
      command: ["sh", "-c", "printf \"TOKEN='t0k'\\nOTHER='o'\\n\" > /config/app.env"]
      volumeMounts: [{name: config, mountPath: /config}]
  containers:
    - name: app
      image: registry.example.com/app:1.0
      command: ["/app", "--url=$(URL)", "$$(TOKEN)"]
      args: ["--ns=$(NS)", "--early=$(EARLY)", "--late=$(LATE)", "$$$$"]
      env:
        - {name: NS, valueFrom: {configMapKeyRef: {name: cm, key: ns}}}
        - {name: EARLY, value: "$(TOKEN)-$(NS)"}
        - {name: TOKEN, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: TOKEN}}}
        - {name: URL, value: "http://$(TOKEN)/$(NS)/$$(NS)"}
        - {name: OPT, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: ABSENT, optional: true}}}
        - {name: LATE, value: "$(URL)|$(OPT)|$$$(OTHER)"}
      volumeMounts: [{name: config, mountPath: /config, readOnly: true}]
    - name: other
      image: registry.example.com/app:1.0
      command: ["/app"]
      env:
        - {name: OTHER, valueFrom: {fileKeyRef: {volumeName: config, path: app.env, key: OTHER}}}
  volumes:
    - {name: config, emptyDir: {}}
YAML
"$KC" convert -f chain.yaml >chain.converted.yaml || fail "convert chain.yaml"
podmanize chain.converted.yaml chain.play.yaml
play chain.play.yaml chain
logs chain-app
expect_line out "argv[0]=/app"
expect_line out 'argv[1]=--url=http://t0k/prod/$(NS)'
expect_line out 'argv[2]=$(TOKEN)'
expect_line out "argv[3]=--ns=prod"
expect_line out 'argv[4]=--early=$(TOKEN)-prod'
expect_line out 'argv[5]=--late=http://t0k/prod/$(NS)|$(OPT)|$$(OTHER)'
expect_line out 'argv[6]=$$'
expect_line out "argc=7"
expect_line out "env:NS=prod"
expect_line out 'env:EARLY=$(TOKEN)-prod'
expect_line out "env:TOKEN=t0k"
expect_line out 'env:URL=http://t0k/prod/$(NS)'
expect_line out 'env:LATE=http://t0k/prod/$(NS)|$(OPT)|$$(OTHER)'
expect_line out "pid=1"
expect_no_line out '^env:(OPT|OTHER|ENVSHIM_[A-Z_]*)='
expect_note err
logs chain-other
expect_line out "env:OTHER=o"
expect_no_line out '^env:ENVSHIM_'
grep -q 'mountPath: /.envshim/volumes/config' chain.converted.yaml || fail "the volume was not mounted for the container without a mount"
ok "the container without a mount of the volume got one from the converter"
pod_rm chain

# --- late: a sidecar writes the file after the start; --wait --------------------
cat >late.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  restartPolicy: Never
  containers:
    - name: writer
      image: busybox:1.36
      command: ["sh", "-c", "sleep 2; printf \"K='late'\\n\" > /config/late.env.tmp; mv /config/late.env.tmp /config/late.env"]
      volumeMounts: [{name: config, mountPath: /config}]
    - name: app
      image: registry.example.com/app:1.0
      command: ["/app", "--k=$(K)"]
      env:
        - {name: K, valueFrom: {fileKeyRef: {volumeName: config, path: late.env, key: K}}}
        - {name: V, value: "k=$(K)"}
  volumes:
    - {name: config, emptyDir: {}}
YAML
# Without --wait the app starts before the file is there: 66.
"$KC" convert -f late.yaml >late.converted.yaml || fail "convert late.yaml"
podmanize late.converted.yaml late.play.yaml
play late.play.yaml late
logs late-app 66
grep -q '^envshim: .*late.env.* not found' err || { cat err >&2; fail "without --wait: not the missing file's message"; }
ok "without --wait: $(cat err)"
pod_rm late
"$KC" convert --wait 30s -f late.yaml >late.converted.yaml || fail "convert --wait"
grep -q 'ENVSHIM_WAIT' late.converted.yaml || fail "no ENVSHIM_WAIT"
podmanize late.converted.yaml late.play.yaml
play late.play.yaml late
logs late-app
expect_line out "argv[1]=--k=late"
expect_line out "env:K=late"
expect_line out "env:V=k=late"
expect_no_line out '^env:ENVSHIM_'
# At most the line saying what the wait is for (none when the file came first).
grep -qxF "$NOTE" err || fail "stderr: no line saying envshim expanded the env: $(cat err)"
! grep -vxF "$NOTE" err | grep -qv '^envshim: waiting up to 30s for config/late.env$' || fail "stderr: $(cat err)"
pod_rm late

# --- failure: a missing key -----------------------------------------------------
mkdir -p secrets
printf "PRESENT='%s'\n" "$SENTINEL" >secrets/app.env
echo "stale message from an earlier run" >tlog
chmod 0666 tlog
cat >failure.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: failure}
spec:
  restartPolicy: Never
  containers:
    - name: app
      image: registry.example.com/app:1.0
      command: ["/app"]
      env:
        - {name: PRESENT, valueFrom: {fileKeyRef: {volumeName: secrets, path: app.env, key: PRESENT}}}
        - {name: GONE, valueFrom: {fileKeyRef: {volumeName: secrets, path: app.env, key: MISSING_KEY}}}
      volumeMounts:
        - {name: tlog, mountPath: /dev/termination-log}
  volumes:
    - {name: secrets, hostPath: {path: $PWD/secrets, type: Directory}}
    - {name: tlog, hostPath: {path: $PWD/tlog, type: File}}
YAML
"$KC" convert -f failure.yaml >failure.converted.yaml || fail "convert failure.yaml"
podmanize failure.converted.yaml failure.play.yaml
play failure.play.yaml failure
logs failure-app 66
sed 's/^/      stderr| /' err; sed 's/^/      termination-log| /' tlog
[ ! -s out ] || fail "the program ran (stdout: $(head -c 200 out))"
ok "the program did not run"
[ "$(wc -l <err)" = 1 ] && grep -q '^envshim: env\[1\] (GONE): key "MISSING_KEY" not found in .*app.env' err || fail "stderr is not one 'envshim: ' line naming the pod's env[1] (GONE), MISSING_KEY and app.env"
ok "stderr: one 'envshim: ' line naming the pod's env[1] (GONE), MISSING_KEY and app.env"
[ "$(cat tlog)" = "$(cat err)" ] || fail "the termination log does not hold exactly the message"
ok "the termination log holds the message"
expect_absent "$SENTINEL" out err tlog failure.converted.yaml
pod_rm failure

# --- the example Deployment --------------------------------------------------------
python3 -c 'import sys, yaml
docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
n = 0
for d in docs:
    for c in d["spec"]["template"]["spec"]["containers"]:
        for e in c.get("env", []):
            if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                e.pop("valueFrom"); e["value"] = "default"; n += 1
assert n == 1, n
# podman plays each replica as a pod of its own, sharing the emptyDir volumes: one is enough.
docs[0]["spec"]["replicas"] = 1
yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)' <"$ROOT/examples/convert/deployment.yaml" >deployment.yaml
"$KC" convert -f deployment.yaml >deployment.converted.yaml || fail "convert the example"
podmanize deployment.converted.yaml deployment.play.yaml
pod=envshim-convert-demo-pod-0
play deployment.play.yaml $pod $pod-app
logs $pod-app
expect_line out "pid=1"
expect_line out "argv[0]=/app"
expect_line out "argv[1]=--greeting=config is HELLO in default"
expect_line out "argc=2"
expect_line out "env:CONFIG_VAR=HELLO"
expect_line out "env:GREETING=config is HELLO in default"
expect_no_line out '^env:(OPTIONAL_VAR|ENVSHIM_[A-Z_]*)='
# restarted (restartPolicy Always): the line once a start, nothing else
grep -qxF "$NOTE" err && ! grep -vxF "$NOTE" err || { cat err >&2; fail "stderr: not only the line saying envshim expanded the env"; }
ok "stderr: envshim did the kubelet's part ($(wc -l <err) starts, one line each)"
pod_stop $pod
podman kube down deployment.play.yaml >/dev/null
