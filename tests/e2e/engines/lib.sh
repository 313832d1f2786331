# shellcheck shell=bash
# Helpers for the engine tests (tests/e2e/engines/run.sh and every e*.sh there).
# run.sh starts the engines and exports, for every test:
#   DOCKER_HOST          the private dockerd's socket
#   CONTAINERS_CONF      the private containers.conf (runc, ulimits, private tmp dir)
#   CONTAINERS_STORAGE_CONF  the private storage (--root/--runroot) of podman
#   PATH                 $WORK/bin first: `docker` there is Debian's /usr/bin/docker
#   NAME                 a prefix unique to this run, for containers, pods and tags
# so that plain `docker ...` and `podman ...` commands (the ones in the docs) reach
# this run's engines and nothing else on the machine.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
ENGINES=${ENGINES:-docker podman}

# start_docker DIR: a private dockerd (own data-root, exec-root, pidfile, socket,
# containerd namespace; no iptables, no bridge) in the background; waits until it answers.
start_docker() {
  local d=$1 i
  mkdir -p "$d"
  dockerd --iptables=false --ip-forward=false --bridge=none \
    --data-root "$d/data" --exec-root "$d/exec" --pidfile "$d/dockerd.pid" \
    -H "unix://$d/docker.sock" --containerd-namespace "$NAME" --containerd-plugins-namespace "$NAME-plugins" \
    >"$d/dockerd.log" 2>&1 &
  export DOCKER_HOST=unix://$d/docker.sock
  for i in $(seq 100); do
    /usr/bin/docker version >/dev/null 2>&1 && return 0
    kill -0 $! 2>/dev/null || break
    sleep 0.2
  done
  tail -20 "$d/dockerd.log" >&2
  echo "engines: dockerd did not start" >&2
  return 1
}

# stop_docker DIR: removes every container, stops dockerd (and the containerd it
# started), waits for it to exit (SIGKILL after 20 s).
stop_docker() {
  local d=$1 pid i
  [ -f "$d/dockerd.pid" ] || return 0
  pid=$(cat "$d/dockerd.pid")
  /usr/bin/docker ps -aq 2>/dev/null | xargs -r /usr/bin/docker rm -f >/dev/null 2>&1 || true
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.2; done
  echo "engines: dockerd $pid did not stop in 20 s: SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

# setup_podman DIR: containers.conf and storage.conf for a private rootful podman:
# runtime runc (crun fails on hybrid cgroups), the file and process limits pinned
# (runc cannot raise nofile above the hard limit: `error setting rlimit`),
# its own storage, run and tmp directories, and no network by default (podman's
# default bridge would add a host interface and iptables rules that outlive it).
# The network backend is CNI with its configuration (and cni.lock) in DIR: rootful
# netavark (picked on a fresh store when it is installed) makes /run/containers/networks
# at start-up, whatever the network, and that path is fixed in Podman 4.3.
setup_podman() {
  local d=$1 hard
  hard=$(ulimit -Hn)
  mkdir -p "$d/tmp" "$d/net"
  cat >"$d/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$hard:$hard", "nproc=32768:32768"]
netns = "none"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$d/events.log"
tmp_dir = "$d/tmp"

[network]
network_backend = "cni"
network_config_dir = "$d/net"
EOF
  cat >"$d/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$d/root"
runroot = "$d/run"
EOF
  export CONTAINERS_CONF=$d/containers.conf CONTAINERS_STORAGE_CONF=$d/storage.conf
  podman info --format '{{.Store.GraphRoot}}' >/dev/null
}

# stop_podman: removes every pod and container, and the storage (its mounts too).
stop_podman() {
  [ -n "${CONTAINERS_STORAGE_CONF:-}" ] && [ -f "$CONTAINERS_STORAGE_CONF" ] || return 0
  podman pod rm --all --force --time 0 >/dev/null 2>&1 || true
  podman rm --all --force --time 0 >/dev/null 2>&1 || true
  # A container's /dev/shm its cleanup has not unmounted yet (see pod_stop) would
  # make the storage's removal fail: unmounted first.
  findmnt -rn -o TARGET | grep -F "$(dirname "$CONTAINERS_STORAGE_CONF")/" | grep '/shm$' | sort -r | xargs -r -n1 umount 2>/dev/null || true
  podman system reset --force >/dev/null 2>&1 || true
}

# pod_stop POD: stops a podman pod and waits until nothing of its containers is
# mounted or running. Podman 4.3 may remove a container's directory while the
# container's own cleanup (conmon's `podman container cleanup`, run when it exits)
# still has its /dev/shm mounted there: "unlinkat .../userdata/shm: device or
# resource busy". A pod is removed (pod_rm, `podman kube down`) only once stopped so.
# A pod whose container restarts (restartPolicy Always) may start it again as it
# stops: stopped again every 2 s; a /dev/shm its cleanup still has not unmounted
# after 10 s is unmounted here (as stop_podman does).
pod_stop() {
  local pod=$1 ids i
  ids=$(podman ps -a --no-trunc --filter "pod=$pod" --format '{{.ID}}')
  podman pod stop --time 0 "$pod" >/dev/null
  [ -n "$ids" ] || return 0
  for i in $(seq 150); do
    ! findmnt -rn -o TARGET | grep -qF "$ids" && ! pgrep -f -- "$(paste -sd'|' <<<"$ids")" >/dev/null && return 0
    [ $((i % 20)) != 0 ] || podman pod stop --time 0 "$pod" >/dev/null 2>&1 || true
    [ "$i" != 100 ] || findmnt -rn -o TARGET | grep -F "$ids" | grep '/shm$' | xargs -r -n1 umount 2>/dev/null || true
    sleep 0.1
  done
  echo "engines: pod $pod: its containers' mounts or processes still there after 15 s:" \
    "$(findmnt -rn -o TARGET | grep -F "$ids" | head -3) $(pgrep -af -- "$(paste -sd'|' <<<"$ids")" | cut -c1-120 | head -3)" >&2
}

# pod_rm POD: stops (pod_stop) and removes a podman pod.
pod_rm() {
  pod_stop "$1"
  podman pod rm -f "$1" >/dev/null
}

# build_standins ENGINE DIR: the base images the examples name, which cannot be
# pulled here, made FROM scratch (a legacy-builder build, so no network is needed):
#   gcr.io/distroless/static-debian12:nonroot   /etc/passwd with nonroot (65532), /tmp, USER 65532
#   busybox:1.36                                Debian's busybox-static as /bin/busybox and /bin/sh
#   registry.example.com/app:1.0                only /app, the static test program
build_standins() {
  local engine=$1 d=$2
  if [ ! -d "$d/distroless" ]; then
    mkdir -p "$d/distroless/rootfs/etc" "$d/distroless/rootfs/tmp" "$d/distroless/rootfs/home/nonroot" \
      "$d/busybox/rootfs/bin" "$d/app"
    chmod 1777 "$d/distroless/rootfs/tmp"
    printf '%s\n' root:x:0:0:root:/root:/sbin/nologin nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin \
      nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin >"$d/distroless/rootfs/etc/passwd"
    printf '%s\n' root:x:0: nobody:x:65534: nonroot:x:65532: >"$d/distroless/rootfs/etc/group"
    printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' 'USER 65532:65532' 'WORKDIR /home/nonroot' \
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' >"$d/distroless/Dockerfile"
    install -m 0755 /bin/busybox "$d/busybox/rootfs/bin/busybox"
    ln -s busybox "$d/busybox/rootfs/bin/sh"
    printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' 'CMD ["sh"]' >"$d/busybox/Dockerfile"
    install -m 0755 "$WORK/bin/showenv-amd64" "$d/app/app"
    printf '%s\n' 'FROM scratch' 'COPY app /app' 'ENTRYPOINT ["/app"]' >"$d/app/Dockerfile"
  fi
  local img
  for img in distroless:gcr.io/distroless/static-debian12:nonroot busybox:busybox:1.36 app:registry.example.com/app:1.0; do
    engine_build "$engine" legacy -q -t "${img#*:}" "$d/${img%%:*}" >/dev/null
  done
}

# engine_build ENGINE BUILDER ARGS...: `docker build` with the legacy builder
# (DOCKER_BUILDKIT=0) or BuildKit (=1), or `podman build` (BUILDER ignored).
engine_build() {
  local engine=$1 builder=$2; shift 2
  case $engine/$builder in
    docker/legacy) DOCKER_BUILDKIT=0 docker build "$@" ;;
    docker/buildkit) DOCKER_BUILDKIT=1 docker build "$@" ;;
    podman/*) podman build "$@" ;;
  esac
}

# load_envshim ENGINE: the envshim image as envshim:VERSION, the documented way
# (images/README.md): load the host's tarball, tag its per-arch tag.
load_envshim() {
  local engine=$1
  $engine load -q -i "$DIST/images/envshim-$VERSION-amd64.docker.tar" >/dev/null
  $engine tag "envshim:$VERSION-amd64" "envshim:$VERSION"
}

# app_with_envshim ENGINE: registry.example.com/app-with-envshim:1.0, the image of
# examples/baked-in/Dockerfile with the test program as /app (e10 builds it the
# README's way; the tests that only need the image get it here).
app_with_envshim() {
  local d=$WORK/app-with-envshim
  rm -rf "$d"; mkdir -p "$d"; cp -a "$ROOT/examples/baked-in/." "$d/"
  install -m 0755 "$WORK/bin/showenv-amd64" "$d/app"
  load_envshim "$1"
  engine_build "$1" legacy -q -t registry.example.com/app-with-envshim:1.0 "$d" >/dev/null
}

# doc_cmd FILE START: the command in FILE's fenced code blocks (or `#   ` comment
# lines of a Dockerfile or script) whose first line starts with START, with its
# backslash-continued lines; fails when there is none, so a doc that changes
# without its test fails the test.
doc_cmd() {
  python3 - "$1" "$2" <<'PY'
import re, sys
path, start = sys.argv[1], sys.argv[2]
md = path.endswith('.md')
lines = open(path).read().split('\n')
def text(line):  # the command text of a line, or None
    if md:
        return line.lstrip()
    return re.sub(r'^#\s*', '', line) if line.startswith('#') else None
in_block = not md
for i, line in enumerate(lines):
    if md and line.lstrip().startswith('```'):
        in_block = not in_block
        continue
    t = text(line)
    if not in_block or t is None or not t.startswith(start):
        continue
    cmd = [t]
    while cmd[-1].endswith('\\'):
        i += 1
        cmd.append(text(lines[i]))
    print('\n'.join(cmd))
    sys.exit(0)
sys.exit(f"{path}: no command starting with {start!r}")
PY
}

# expect_only_docker_warnings FILE: FILE (a client's stderr) is empty but for
# Docker's note that this daemon has no IPv4 forwarding (it runs with
# --ip-forward=false; a run without --network none prints it).
expect_only_docker_warnings() {
  if grep -vx 'WARNING: IPv4 forwarding is disabled. Networking will not work.' "$1" | grep -q .; then
    sed 's/^/      stderr| /' "$1" >&2
    fail "unexpected output on stderr"
  fi
  ok "nothing on stderr (but Docker's IPv4 forwarding note)"
}

# doc_tree: ./tree, a stand-in for a checkout where the docs' commands run: dist/
# (a link to $DIST) and a copy of examples/, so that commands writing into the
# examples (cp app examples/baked-in/app) leave the real checkout alone.
doc_tree() {
  rm -rf tree; mkdir -p tree
  ln -s "$DIST" tree/dist
  cp -a "$ROOT/examples" tree/
}

# run_doc FILE START...: runs, in ./tree, each command of FILE that starts with
# START, exactly as written (see doc_cmd); stdout to ./out, stderr to ./err
# (appended); fails on a non-zero exit. DOC_ENGINE=podman: a leading `docker` of
# the command becomes `podman` (the docs say Podman takes the same commands).
run_doc() {
  local f=$1 start cmd; shift
  for start in "$@"; do
    cmd=$(doc_cmd "$f" "$start")
    [[ ${DOC_ENGINE:-docker} == docker || $cmd != docker\ * ]] || cmd=$DOC_ENGINE${cmd#docker}
    (cd tree && bash -euo pipefail -c "$cmd") >>out 2>>err || { sed 's/^/      | /' err >&2; fail "${f#"$ROOT"/}: $cmd"; }
    ok "${f#"$ROOT"/}: $cmd"
  done
}
