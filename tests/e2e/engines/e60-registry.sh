#!/usr/bin/env bash
# The envshim image as users get it: pushed to a real registry (Debian's
# docker-registry, the CNCF distribution registry, listening on 127.0.0.1 only, its
# storage in this test's directory, stopped at the end) with skopeo, then pulled BY
# DIGEST with Podman and Docker and run: `envshim --version`, and the three
# deployment modes from the pulled image, as the README's Install section shows them:
#   1. a FROM scratch image with COPY --from=REGISTRY/envshim@sha256:... /envshim /envshim
#      (built by Docker's legacy builder and by podman build);
#   2. the installer initContainer of examples/init-container/pod.yaml, its image the
#      registry's by digest, under `podman kube play` (which pulls it);
#   3. that image's ENTRYPOINT /envshim with flags after the image (docker run, podman run).
source "$(dirname "$0")/lib.sh"
reg=$PWD/registry
mkdir -p "$reg/data"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$reg/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $reg/data
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$reg/config.yml" >"$reg/log" 2>&1 &
regpid=$!
stop_registry() { kill "$regpid" 2>/dev/null && wait "$regpid" 2>/dev/null || true; }
trap stop_registry EXIT
R=127.0.0.1:$port
for i in $(seq 50); do
  curl -fsS "http://$R/v2/" >/dev/null 2>&1 && break
  kill -0 $regpid 2>/dev/null || { cat "$reg/log" >&2; fail "docker-registry exited"; }
  sleep 0.2
done
curl -fsS "http://$R/v2/" >/dev/null || { cat "$reg/log" >&2; fail "the registry does not answer on $R"; }
listening=$(ss -Hltnp | grep "pid=$regpid," | awk '{print $4}' | xargs)
[ "$listening" = "$R" ] || fail "the registry listens on '$listening', want $R only"
ok "docker-registry $(docker-registry --version 2>/dev/null | awk '{print $3}') on $R only"

# Push the multi-arch index as the README says, and find it by the layout's digest.
want=$(jq -r --arg v "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' "$OCI_IMAGES/index.json")
skopeo --insecure-policy copy --quiet --all --dest-tls-verify=false "oci:$OCI_IMAGES:$VERSION" "docker://$R/envshim:$VERSION" \
  || fail "skopeo copy --all to $R"
got=sha256:$(skopeo inspect --raw --tls-verify=false "docker://$R/envshim:$VERSION" | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "the registry's index is $got, the layout's $want"
arches=$(skopeo inspect --raw --tls-verify=false "docker://$R/envshim@$want" | jq -r '[.manifests[].platform.architecture] | join(" ")')
[ "$arches" = "amd64 arm64" ] || fail "the pushed index's platforms: $arches"
IMG=$R/envshim@$want
ok "skopeo copy --all: $IMG (amd64 arm64), the layout's index digest"

# Pull by digest and run it, each engine.
podman pull -q --tls-verify=false "$IMG" >/dev/null || fail "podman pull $IMG"
docker pull -q "$IMG" >/dev/null || fail "docker pull $IMG"
for e in podman docker; do
  v=$($e run --rm --network none "$IMG" -V 2>run.err) || { cat run.err >&2; fail "$e run $IMG --version"; }
  [ "$v" = "envshim $VERSION" ] || fail "$e run $IMG -V: $v"
  $e image inspect --format '{{json .RepoDigests}}' "$IMG" | grep -qF "envshim@$want" || fail "$e: $IMG has not the pulled digest"
  [ "$($e image inspect --format '{{.Architecture}}' "$IMG")" = amd64 ] || fail "$e: not the amd64 image"
done
ok "podman and docker pull $IMG; each runs envshim -V: envshim $VERSION"

# Mode 1: the README's Dockerfile, FROM scratch, envshim copied from the image by digest.
mkdir -p m1 config
install -m 0755 "$WORK/bin/showenv-amd64" m1/app
printf '%s\n' 'GREETING=hello from the registry' "TOKEN=$SENTINEL" >config/app.env
python3 - "$ROOT/README.md" "$IMG" >m1/Dockerfile <<'PY'
import re, sys
readme, image = open(sys.argv[1]).read(), sys.argv[2]
m = re.search(r"```[Dd]ockerfile\n(FROM scratch\nCOPY --from=\S+@sha256:\S+ /envshim /envshim\n.*?)```", readme, re.S)
if not m:
    sys.exit("README.md: no Dockerfile block FROM scratch / COPY --from=...@sha256:... /envshim /envshim")
print(re.sub(r"--from=\S+@sha256:\S+", "--from=" + image, m.group(1)), end="")
PY
grep -qF "COPY --from=$IMG /envshim /envshim" m1/Dockerfile || fail "the Dockerfile: $(cat m1/Dockerfile)"
DOCKER_BUILDKIT=0 docker build -q -t "$NAME-m1:docker" m1 >/dev/null 2>build.err || { cat build.err >&2; fail "docker build (legacy) of the README's Dockerfile"; }
expect_only_docker_warnings build.err
podman build -q --tls-verify=false -t "$NAME-m1:podman" m1 >/dev/null 2>build.err || { cat build.err >&2; fail "podman build of the README's Dockerfile"; }
for e in docker podman; do
  c=$($e create --network none "$NAME-m1:$e")
  [ "$($e export "$c" | tar -t | grep -xE 'app|envshim' | sort | xargs)" = "app envshim" ] || fail "$e: no /app and /envshim in the image"
  $e export "$c" | tar -xO envshim | cmp -s - "$DIST/envshim-linux-amd64" || fail "$e: /envshim is not the released binary"
  $e rm "$c" >/dev/null
  # Mode 3: the image's ENTRYPOINT is envshim; its flags follow the image.
  $e run --rm --network none -v "$PWD/config:/config:ro" "$NAME-m1:$e" --env-file /config/app.env -- /app >out.$e 2>err.$e \
    || { cat err.$e >&2; fail "$e run"; }
  expect_line out.$e "pid=1"
  expect_line out.$e "argv[0]=/app"
  expect_line out.$e "env:GREETING=hello from the registry"
  expect_line out.$e "env:TOKEN=$SENTINEL"
  [ ! -s err.$e ] || fail "$e: stderr: $(cat err.$e)"
done
ok "mode 1 and 3: the README's FROM scratch image, COPY --from=$IMG, built by docker and podman, run with --env-file after the image"

# Mode 2: the installer initContainer from the registry, pulled by podman kube play.
pod=envshim-init-container-demo
# The image by its ID, with every name it has (e02 loads the same index as envshim:VERSION).
podman rmi -f "$(podman image inspect --format '{{.Id}}' "$IMG")" >/dev/null
! podman image inspect "$IMG" >/dev/null 2>&1 || fail "podman still has $IMG"
python3 - "$ROOT/examples/init-container/pod.yaml" "$IMG" >pod.yaml <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
n = 0
for d in docs:
    if d["kind"] != "Pod":
        continue
    for c in d["spec"]["initContainers"]:
        if c["command"][:2] == ["/envshim", "install"]:
            c["image"] = sys.argv[2]; n += 1
    # Podman 4.3 rejects fieldRef metadata.namespace: the kubelet's value (as e20 does).
    for c in d["spec"]["containers"]:
        for e in c.get("env", []):
            if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                e.pop("valueFrom"); e["value"] = "default"
assert n == 1, n
yaml.safe_dump_all(docs, sys.stdout, sort_keys=False)
PY
podman kube play --tls-verify=false --network none pod.yaml >play.out 2>play.err || { cat play.out play.err >&2; fail "podman kube play"; }
for i in $(seq 100); do
  [ "$(podman pod inspect $pod --format '{{.State}}')" = Exited ] && break
  sleep 0.2
done
# removed before the play, there again after it: the play pulled it (the app's image
# has no envshim: the app ran through the one the installer copied).
podman image inspect "$IMG" >/dev/null || fail "podman kube play did not pull $IMG"
podman logs $pod-app >out 2>err
[ "$(podman inspect $pod-app --format '{{.State.ExitCode}}')" = 0 ] || { cat out err >&2; fail "app exit code"; }
expect_line out "pid=1"
expect_line out "env:CONFIG_VAR=HELLO"
expect_line out "env:GREETING=config is HELLO in default"
[ ! -s err ] || fail "stderr: $(cat err)"
podman pod rm -f $pod >/dev/null
ok "mode 2: podman kube play pulled the installer $IMG; the app got its env through it"
# the secret of app.env reached the app (above) and nothing else
expect_absent "$SENTINEL" err* build.err play.out play.err "$reg/log"

stop_registry
! kill -0 "$regpid" 2>/dev/null || fail "docker-registry $regpid still runs"
ok "the registry stopped"
