# shellcheck shell=bash disable=SC2034
# Helpers for the e2e tests; sourced by run.sh, every t*.sh and fake-docker.sh.
# run.sh exports WORK (scratch dir) after preparing (see prepare in run.sh):
#   $WORK/bin/showenv-{amd64,arm64}   static test programs
#   $WORK/img-{amd64,arm64}/           envshim images unpacked by umoci (config.json + rootfs)
#   $WORK/oci                          OCI layout holding the mode-1 example image
set -euo pipefail
E2E=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$E2E/../.." && pwd)
DIST=${DIST:-$ROOT/dist}
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
OCI_IMAGES=$DIST/images/oci
SENTINEL=sentinel-7f3a9c-DO-NOT-PRINT # secret values in test env files contain this

fail() { echo "    FAIL: $*" >&2; exit 1; }
ok() { echo "    ok: $*"; }
skip() { echo "    SKIP: $*"; exit 77; }

# expect_line FILE LINE: FILE has exactly this line (the sentinel is masked in the log)
expect_line() { grep -qxF -- "$2" "$1" || { sed 's/^/      | /' "$1" >&2; fail "$1: no line '$2'"; }; ok "${2//$SENTINEL/<sentinel>}"; }
# expect_no_line FILE REGEX
expect_no_line() { ! grep -qE -- "$2" "$1" || fail "$1: unexpected line matching '$2'"; ok "no line matching '$2'"; }
# expect_absent TEXT FILE...: TEXT (e.g. a secret) appears in none of the files
expect_absent() { local t=$1; shift; ! grep -qF -- "$t" "$@" || fail "a secret was printed in one of: $*"; ok "the secret is in none of: $(basename -a "$@" | tr '\n' ' ')"; }
# expect_rc WANT GOT WHAT
expect_rc() { [ "$1" = "$2" ] || fail "$3: exit code $2, want $1"; ok "$3: exit code $2"; }

# only_files DIR FILE...: DIR holds exactly these regular files (paths relative to DIR)
only_files() {
  local d=$1; shift
  local got want
  got=$(cd "$d" && find . -type f -printf '%P\n' | sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$d holds [$got], want [$want]"
  ok "rootfs holds only: $want"
}

# new_rootfs NAME [FILE:DEST]...: a fresh directory holding only the given files (mode 0755)
new_rootfs() {
  local r=$WORK/rootfs/$1; shift
  rm -rf "$r"; mkdir -p "$r"
  local spec
  for spec in "$@"; do install -D -m 0755 "${spec%%:*}" "$r/${spec#*:}"; done
  echo "$r"
}

# image_rootfs NAME ARCH [FILE:DEST]...: a copy of the unpacked envshim image plus files
image_rootfs() {
  local r=$WORK/rootfs/$1 arch=$2; shift 2
  rm -rf "$r"; mkdir -p "$WORK/rootfs"; cp -a "$WORK/img-$arch/rootfs" "$r"
  local spec
  for spec in "$@"; do install -D -m 0755 "${spec%%:*}" "$r/${spec#*:}"; done
  echo "$r"
}

# kubelet_volume DIR NAME=SRCFILE...: DIR laid out as the kubelet's atomic writer
# does for Secret/ConfigMap volumes: NAME -> ..data/NAME, ..data -> ..TIMESTAMP/
kubelet_volume() {
  local d=$1; shift
  local ts=..2026_01_01_00_00_00.000000001 kv
  rm -rf "$d"; mkdir -p "$d/$ts"
  for kv in "$@"; do
    cp "${kv#*=}" "$d/$ts/${kv%%=*}"; chmod 0644 "$d/$ts/${kv%%=*}"
    ln -s "..data/${kv%%=*}" "$d/${kv%%=*}"
  done
  ln -s "$ts" "$d/..data"
}

# json_array ARGS...: the arguments as a JSON array of strings (any bytes but NUL)
json_array() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }

# runc with its state in the run's directory, not in /run/runc (`timeout` runs
# the binary, not this function: runc_run gives the root itself).
runc() { command runc --root "$WORK/runc-root" "$@"; }

# runc_run NAME ROOTFS [-c CONFIG] [-u UID] [-e K=V]... [-m SRC:DST:ro|rw]... -- ARGS...
# Runs ARGS as the container's process (PID 1) under runc, read-only rootfs.
# CONFIG (default: the envshim image's, from umoci unpack) supplies namespaces,
# default mounts and the base environment; -e adds or replaces variables.
runc_run() {
  local name=$1 rootfs=$2; shift 2
  local cfg=$WORK/img-amd64/config.json uid=0 envs=() mounts='[]' src dst mode
  while [ "$1" != -- ]; do
    case $1 in
      -c) cfg=$2 ;;
      -u) uid=$2 ;;
      -e) envs+=("$2") ;;
      -m) IFS=: read -r src dst mode <<<"$2"
          mounts=$(jq -c --arg s "$src" --arg d "$dst" --arg m "$mode" \
            '. + [{destination: $d, type: "bind", source: $s, options: ["rbind", $m]}]' <<<"$mounts") ;;
      *) fail "runc_run: bad option $1" ;;
    esac
    shift 2
  done
  shift
  local b=$WORK/bundles/$name
  rm -rf "$b"; mkdir -p "$b"
  jq --arg r "$rootfs" --argjson uid "$uid" --argjson m "$mounts" \
     --argjson env "$(json_array "${envs[@]}")" --argjson args "$(json_array "$@")" \
     '.root = {path: $r, readonly: true} | .process.terminal = false
      | .process.user = {uid: $uid, gid: $uid} | .process.args = $args
      | .process.env = ([.process.env[], $env[]] | map({key: sub("=.*"; ""), value: .})
                        | reduce .[] as $e ({}; .[$e.key] = $e.value) | [.[]])
      | .mounts += $m' "$cfg" >"$b/config.json"
  timeout --kill-after=5 60 runc --root "$WORK/runc-root" run --bundle "$b" "e2e-$name-$$"
}

# bwrap_run ROOTFS [-e K=V]... [-m SRC:DST:ro|rw]... -- ARGS...
# Runs ARGS as PID 1 (--as-pid-1) in new namespaces with ROOTFS read-only as /,
# a clean environment (only the -e variables), /proc and a minimal /dev.
bwrap_run() {
  local rootfs=$1; shift
  local a=(--unshare-all --die-with-parent --unshare-pid --as-pid-1 --ro-bind "$rootfs" / --proc /proc --dev /dev --clearenv)
  local src dst mode
  mkdir -p "$rootfs/proc" "$rootfs/dev"
  while [ "$1" != -- ]; do
    case $1 in
      -e) a+=(--setenv "${2%%=*}" "${2#*=}") ;;
      -m) IFS=: read -r src dst mode <<<"$2"
          case $dst in /dev/*) ;; *) if [ -d "$src" ]; then mkdir -p "$rootfs$dst"; else mkdir -p "$(dirname "$rootfs$dst")"; touch "$rootfs$dst"; fi ;; esac
          if [ "$mode" = ro ]; then a+=(--ro-bind "$src" "$dst"); else a+=(--bind "$src" "$dst"); fi ;;
      *) fail "bwrap_run: bad option $1" ;;
    esac
    shift 2
  done
  shift
  timeout --kill-after=5 60 bwrap "${a[@]}" -- "$@"
}

# prepare_dist: release binaries in $DIST (built by musl-build.sh if missing or
# older than the sources, so the tests never run a stale binary against newer docs),
# the images of images/build.sh, and the static test program $WORK/bin/showenv-ARCH
# for each ARCH in ARCHS (default amd64 arm64).
prepare_dist() {
  local b stale=
  for b in {envshim,kubectl-envshim}-linux-{amd64,arm64}; do
    if [ ! -x "$DIST/$b" ] ||
       [ -n "$(find "$ROOT/src" "$ROOT/build.rs" "$ROOT/tools" "$ROOT/kubectl-envshim" "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" -newer "$DIST/$b" -print -quit)" ]; then
      stale=1
    fi
  done
  [ -s "$DIST/man/envshim.1" ] || stale=1
  if [ -n "$stale" ]; then
    DIST=$DIST "$ROOT/musl-build.sh"
  fi
  DIST=$DIST "$ROOT/images/build.sh"
  mkdir -p "$WORK/bin"
  local arch triple
  for arch in ${ARCHS:-amd64 arm64}; do
    case $arch in amd64) triple=x86_64-unknown-linux-musl ;; arm64) triple=aarch64-unknown-linux-musl ;; esac
    # static, no libc needed at run time (rust-lld links without a C cross toolchain)
    rustc --edition 2021 -C opt-level=s -C panic=abort -C strip=symbols --target "$triple" \
      -C linker=rust-lld "$E2E/showenv.rs" -o "$WORK/bin/showenv-$arch"
  done
}

# run_tests DIR [NAME...]: runs each DIR/NAME.sh (default: every DIR/[te]*.sh) in
# its own directory $WORK/run/NAME, prints PASS/FAIL/SKIP (exit 77) per test and "N passed, M failed"; fails on a failure.
run_tests() {
  local dir=$1; shift
  local tests=("$@") t t0 rc ms passed=0 failed=0 skipped=0 failures=()
  [ ${#tests[@]} -gt 0 ] || mapfile -t tests < <(cd "$dir" && ls [te][0-9]*.sh | sed 's/\.sh$//')
  for t in "${tests[@]}"; do
    echo "== $t"
    t0=$(date +%s%3N)
    set +e
    mkdir -p "$WORK/run/$t"
    (cd "$WORK/run/$t" && bash "$dir/$t.sh")
    rc=$?
    set -e
    ms=$(( $(date +%s%3N) - t0 ))
    case $rc in
      0) echo "PASS $t ($((ms / 1000)).$((ms % 1000 / 100))s)"; passed=$((passed + 1)) ;;
      77) echo "SKIP $t"; skipped=$((skipped + 1)) ;;
      *) echo "FAIL $t (exit $rc, $((ms / 1000)).$((ms % 1000 / 100))s)"; failed=$((failed + 1)); failures+=("$t") ;;
    esac
  done
  [ $failed = 0 ] || echo "failed: ${failures[*]}"
  echo "$passed passed, $failed failed$([ $skipped = 0 ] || echo ", $skipped skipped")"
  [ $failed = 0 ]
}

# k8s FILE KIND NAME JQ: a field of one object of a multi-document Kubernetes YAML file
k8s() {
  python3 -c 'import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))' "$1" |
    jq -r --arg k "$2" --arg n "$3" ".[] | select(.kind == \$k and .metadata.name == \$n) | $4"
}
