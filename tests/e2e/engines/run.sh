#!/usr/bin/env bash
# envshim in real container engines: Debian 12's Docker (20.10, docker.io) and
# Podman (4.3), both private to this run and removed at the end.
#   bash tests/e2e/engines/run.sh [e10-mode1-baked-in ...]   (default: every e*.sh here)
# Needs root. Installs what it needs (tests/e2e/deps.sh). Prints PASS/FAIL/SKIP per
# test and "N passed, M failed"; exits non-zero on a failure, and when a mount or
# a process of this run is left behind after the engines are stopped.
# Env: KEEP=1 keeps the scratch directory (the engines are stopped anyway); DIST=dir.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ENGINE_TESTS=$E2E/engines
[ "$(id -u)" = 0 ] || { echo "engines: needs root (rootful dockerd and podman)" >&2; exit 1; }
start=$(date +%s)
deps_log=$(mktemp)
bash "$E2E/deps.sh" >"$deps_log" 2>&1 || { cat "$deps_log" >&2; rm -f "$deps_log"; exit 1; }
tail -1 "$deps_log"; rm -f "$deps_log"

WORK=$(mktemp -d /tmp/envshim-engines.XXXXXX)
NAME=envshim-$(basename "$WORK" | cut -d. -f2 | tr 'A-Z' 'a-z')
export WORK NAME

# Stops both engines and removes their state; then nothing of this run may be left:
# no new mount (under $WORK or anywhere else, e.g. /run/netns), no process of this
# run (dockerd, containerd, shims, conmon, containers: see ours), no engine state in a
# default place (/var/lib/docker, /run/libpod, ...), no new network interface or
# iptables rule of an engine. Only this run's are looked at: when another engine runs
# on the machine (not this run's), the mounts, state and network outside $WORK may be
# its, and are not checked (said so). Runs on every exit, failure and interrupt included.
net_state() { ip -o link | awk -F': ' '{print $2}' | grep -E 'docker|podman|cni|veth' || true; iptables -S 2>/dev/null | grep -iE 'docker|cni|podman' || true; }
# other runs' scratch mounts (tests/e2e/run.sh's runc rootfs) come and go in /tmp
mounts() { findmnt -rn -o TARGET | grep -vE '^/(proc|sys|dev)(/|$)|^/tmp/envshim-' | sort || true; }
# the engines' processes and those of their containers (in a cgroup of theirs)
engine_procs() {
  { ps -e -o pid=,comm= | awk '$2 ~ /^(dockerd|containerd|containerd-shim.*|conmon|podman|catatonit|docker-init|runc)$/ { print $1 }'
    grep -lE ':/(docker|libpod_parent)/' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3; } | sort -u || true
}
# processes whose root directory is in $WORK (a container's rootfs)
rooted_in_work() { local p; for p in /proc/[0-9]*; do [[ $(readlink "$p/root" 2>/dev/null) != "$WORK"/* ]] || echo "${p#/proc/}"; done; }
# Of the pids on stdin, this run's: the environment holds this run's WORK (exported:
# every process the run starts inherits it, dockerd, containerd, its shims, podman,
# conmon), the command line names $WORK or $NAME, or the root is in $WORK (a container).
ours() {
  local p
  while read -r p; do
    { tr '\0' '\n' 2>/dev/null <"/proc/$p/environ" | grep -qxF "WORK=$WORK" \
        || tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | grep -qF -e "$WORK" -e "$NAME" \
        || [[ $(readlink "/proc/$p/root" 2>/dev/null) == "$WORK"/* ]]; } && echo "$p"
  done
  return 0
}
# Made by the engines whatever their configuration says, empty once they stopped:
# removed when this run made them (dockerd: /run/docker/plugins; containerd's shims:
# /run/containerd/s; skopeo and images/build.sh: /var/lib/containers/cache; conmon
# runs runc with its default state directory, /run/runc). Never to
# be made: the engines' default state (podman's network state included: its CNI lock
# and configuration are in the run's directory, lib.sh's setup_podman).
made_anyway=(/run/docker /run/containerd /var/lib/containers /run/runc)
never=(/var/lib/docker /var/lib/containerd /run/containers /run/libpod /run/podman /run/docker.sock
       /var/lib/cni /run/netns /run/docker/netns /run/user/0/containers /root/.local/share/containers
       /etc/cni/net.d/cni.lock /etc/containers/networks /run/lock/netavark.lock)
existing() { local p; for p in "$@"; do [ ! -e "$p" ] || echo "$p"; done; }
net_before=$(net_state) mounts_before=$(mounts) procs_before=$(engine_procs)
made_before=$(existing "${made_anyway[@]}") never_before=$(existing "${never[@]}")
stopped=
cleanup() {
  local rc=$? leaks p
  [ -z "$stopped" ] || return 0
  stopped=1
  trap - INT TERM
  stop_podman
  stop_docker "$WORK/docker"
  for p in "${made_anyway[@]}"; do
    grep -qxF "$p" <<<"$made_before" || rm -rf "$p"
  done
  # Another engine on the machine: running before this run, or one that is not this run's now.
  foreign=$( { echo "$procs_before"; engine_procs | grep -vxF -f <(engine_procs | ours) -e ''; } | grep -v '^$' | sort -u | xargs -r ps -o pid=,args= -p || true)
  leaks=$( (findmnt -rn -o TARGET | grep -F "$WORK"; pgrep -af -- "$WORK|$NAME" | grep -v "^$$ ";
            { comm -13 <(echo "$procs_before") <(engine_procs) | ours; rooted_in_work; } | sort -u | xargs -r ps -o pid=,args= -p
            if [ -z "$foreign" ]; then
              diff <(echo "$mounts_before") <(mounts) | sed -n 's/^> /mount: /p'
              diff <(echo "$never_before") <(existing "${never[@]}") | sed -n 's/^> /engine state: /p'
              diff <(echo "$net_before") <(net_state) | sed -n 's/^> /network: /p'
            fi) || true)
  if [ -n "$foreign" ]; then
    echo "engines: another engine runs on this machine, not this run's: mounts, engine state and network outside $WORK not checked:"
    sed 's/^/  /' <<<"$foreign" | head -5
  fi
  if [ -n "$leaks" ]; then
    echo "engines: FAIL: left behind after the engines stopped:" >&2
    sed 's/^/  /' <<<"$leaks" >&2
    { pgrep -f -- "$WORK|$NAME" | grep -vx "$$"; rooted_in_work; } | xargs -r kill -KILL 2>/dev/null || true
    findmnt -rn -o TARGET | grep -F "$WORK" | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
    rc=1
  else
    echo "engines: nothing left behind (mounts, processes, engine state, network)"
  fi
  if [ "${KEEP:-}" = 1 ]; then echo "engines: kept $WORK"; else rm -rf "$WORK"; fi
  echo "== engines: $(( $(date +%s) - start ))s in all"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

prepare() {
  ARCHS=amd64 prepare_dist >/dev/null
  # `docker` is Debian's client: a newer one earlier on PATH may refuse BuildKit.
  ln -s /usr/bin/docker "$WORK/bin/docker"
  start_docker "$WORK/docker"
  setup_podman "$WORK/podman"
  local e
  for e in $ENGINES; do build_standins "$e" "$WORK/standins"; done
  echo "engines: $(/usr/bin/docker version --format 'docker client {{.Client.Version}}, server {{.Server.Version}}');" \
    "$(podman --version); $(runc --version | head -1)"
}

echo "== engines: prepare"
export PATH=$WORK/bin:$PATH
set +e
(set -e; prepare)
rc=$?
set -e
# the subshell's exports are lost: set them again
export DOCKER_HOST=unix://$WORK/docker/docker.sock CONTAINERS_CONF=$WORK/podman/containers.conf \
  CONTAINERS_STORAGE_CONF=$WORK/podman/storage.conf
if [ $rc != 0 ]; then echo "FAIL prepare (exit $rc)"; echo "0 passed, 1 failed"; exit 1; fi
echo "engines: prepared in $(( $(date +%s) - start ))s"

run_tests "$ENGINE_TESTS" "$@"
