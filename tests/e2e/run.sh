#!/usr/bin/env bash
# End-to-end tests of envshim in real runtimes (runc, bubblewrap, qemu-user).
# Needs root and the tools of tests/e2e/deps.sh.
#   bash tests/e2e/run.sh [t10-mode1-baked-in-runc ...]    (default: every tests/e2e/t*.sh)
# Prints PASS/FAIL/SKIP per test and ends with "N passed, M failed"; exits non-zero on a failure.
# Env: KEEP=1 keeps the scratch directory; DIST=dir (default dist).
# The tests in real container engines (Docker, Podman) are tests/e2e/engines/run.sh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "e2e: needs root (runc, bwrap namespaces, binfmt_misc)" >&2; exit 1; }
start=$(date +%s)

WORK=$(mktemp -d /tmp/envshim-e2e.XXXXXX)
export WORK
cleanup() { [ "${KEEP:-}" = 1 ] && echo "e2e: kept $WORK" || rm -rf "$WORK"; }
trap cleanup EXIT

prepare() {
  prepare_dist
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

set +e
run_tests "$E2E" "$@"
rc=$?
set -e
echo "== e2e: $(( $(date +%s) - start ))s in all"
exit $rc
