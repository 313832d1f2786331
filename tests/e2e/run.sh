#!/usr/bin/env bash
# End-to-end tests of envshim in real runtimes (runc, bubblewrap, qemu-user).
# Needs root and the tools of tests/e2e/deps.sh.
#   bash tests/e2e/run.sh [t10-mode1-baked-in-runc ...]    (default: every tests/e2e/t*.sh)
# Prints PASS/FAIL/SKIP per test and ends with "N passed, M failed"; exits non-zero on a failure.
# Env: KEEP=1 keeps the scratch directory; DIST=dir (default dist).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "e2e: needs root (runc, bwrap namespaces, binfmt_misc)" >&2; exit 1; }
start=$(date +%s)

WORK=$(mktemp -d /tmp/envshim-e2e.XXXXXX)
export WORK
cleanup() { [ "${KEEP:-}" = 1 ] && echo "e2e: kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT

prepare() {
  if [ ! -x "$DIST/envshim-linux-amd64" ] || [ ! -x "$DIST/envshim-linux-arm64" ]; then
    DIST=$DIST "$ROOT/musl-build.sh"
  elif [ -n "$(find "$ROOT/src" "$ROOT/Cargo.toml" "$ROOT/Cargo.lock" -newer "$DIST/envshim-linux-amd64" -print -quit)" ]; then
    echo "e2e: WARNING: sources are newer than $DIST: run ./musl-build.sh (testing the old binaries)" >&2
  fi
  DIST=$DIST "$ROOT/images/build.sh"
  mkdir -p "$WORK/bin"
  # the static test program, for both architectures (rust-lld links without a C cross toolchain)
  rustc --edition 2021 -C opt-level=s -C panic=abort -C strip=symbols --target x86_64-unknown-linux-musl \
    -C linker=rust-lld "$E2E/showenv.rs" -o "$WORK/bin/showenv-amd64"
  rustc --edition 2021 -C opt-level=s -C panic=abort -C strip=symbols --target aarch64-unknown-linux-musl \
    -C linker=rust-lld "$E2E/showenv.rs" -o "$WORK/bin/showenv-arm64"
  for arch in amd64 arm64; do
    umoci unpack --image "$OCI_IMAGES:$VERSION-$arch" "$WORK/img-$arch" >/dev/null
  done
  build_mode1_image
}

# The image of examples/baked-in/Dockerfile, made the daemonless way: the envshim
# image (it stands in for distroless/static: neither has a shell) plus /app
# (the test program), with ENTRYPOINT and CMD read from the Dockerfile.
build_mode1_image() {
  local df=$ROOT/examples/baked-in/Dockerfile b=$WORK/mode1-bundle ep cmd
  ep=$(sed -n 's/^ENTRYPOINT //p' "$df"); cmd=$(sed -n 's/^CMD //p' "$df")
  skopeo --insecure-policy copy --quiet "oci:$OCI_IMAGES:$VERSION-amd64" "oci:$WORK/oci:app-with-envshim"
  umoci unpack --image "$WORK/oci:app-with-envshim" "$b" >/dev/null
  install -D -m 0755 "$WORK/bin/showenv-amd64" "$b/rootfs/app"
  umoci repack --image "$WORK/oci:app-with-envshim" "$b" >/dev/null
  local a=() x
  while IFS= read -r x; do a+=(--config.entrypoint "$x"); done < <(jq -r '.[]' <<<"$ep")
  while IFS= read -r x; do a+=(--config.cmd "$x"); done < <(jq -r '.[]' <<<"$cmd")
  umoci config --image "$WORK/oci:app-with-envshim" "${a[@]}" >/dev/null
  umoci unpack --image "$WORK/oci:app-with-envshim" "$WORK/img-mode1" >/dev/null
}

echo "== e2e: prepare"
set +e
(set -e; prepare) # a subshell with its own set -e: the first error stops it
rc=$?
set -e
if [ $rc != 0 ]; then echo "FAIL prepare (exit $rc)"; echo "0 passed, 1 failed"; exit 1; fi
echo "e2e: prepared in $(( $(date +%s) - start ))s"

tests=("$@")
[ ${#tests[@]} -gt 0 ] || mapfile -t tests < <(cd "$E2E" && ls t*.sh | sed 's/\.sh$//')
passed=0 failed=0 skipped=0 failures=()
for t in "${tests[@]}"; do
  echo "== $t"
  t0=$(date +%s%3N)
  set +e
  (cd "$WORK" && bash "$E2E/$t.sh")
  rc=$?
  set -e
  ms=$(( $(date +%s%3N) - t0 )); dt=$((ms / 1000)).$((ms % 1000 / 100))
  case $rc in
    0) echo "PASS $t (${dt}s)"; passed=$((passed + 1)) ;;
    77) echo "SKIP $t"; skipped=$((skipped + 1)) ;;
    *) echo "FAIL $t (exit $rc, ${dt}s)"; failed=$((failed + 1)); failures+=("$t") ;;
  esac
done
echo "== e2e: $(( $(date +%s) - start ))s in all"
[ $failed = 0 ] || echo "failed: ${failures[*]}"
if [ $skipped -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
[ $failed = 0 ]
