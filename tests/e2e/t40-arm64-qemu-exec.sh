#!/usr/bin/env bash
# The arm64 binary doing a real run under qemu-aarch64-static, with no binfmt_misc:
# bubblewrap makes a rootfs of qemu, arm64 envshim and the amd64 test program;
# qemu (PID 1) runs envshim, which reads the manifest and env files and execve()s
# /app. qemu-user performs a guest execve as a host execve, so the new program
# runs natively: an amd64 /app, same pid (1), with envshim's environment.
# (An arm64 /app needs binfmt_misc: t41.)
source "$(dirname "$0")/lib.sh"
d=$E2E/data
kubelet_volume "$WORK/vol" all.env="$d/all.env" secret.env="$d/secret.env"
mkdir -p "$WORK/manifest" && cp "$d/manifest.json" "$WORK/manifest/"
rootfs=$(new_rootfs qemu "$(command -v qemu-aarch64-static):qemu-aarch64-static" \
  "$DIST/envshim-linux-arm64:envshim" "$WORK/bin/showenv-amd64:app")
set +e
bwrap_run "$rootfs" -e PATH=/ -e HOST=h -e PORT=80 -m "$WORK/vol:/config:ro" -m "$WORK/manifest:/etc/envshim:ro" \
  -- /qemu-aarch64-static /envshim run --env 'FROM_ARM64=$(HOST)-ok' -- /app '$(URL)' >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "arm64 envshim under qemu"
expect_line out "arch=x86_64"
expect_line out "pid=1"
expect_line out 'argv[1]=http://h:80/$(UNDEFINED)$'
expect_line out "env:FROM_ARM64=h-ok"
expect_line out "env:SECRET_TOKEN=$SENTINEL-token"
expect_line out "env:ALL_B=two words"
expect_no_line out '^env:ENVSHIM_'
# check and render of the arm64 binary, too
set +e
bwrap_run "$rootfs" -m "$WORK/vol:/config:ro" -m "$WORK/manifest:/etc/envshim:ro" \
  -- /qemu-aarch64-static /envshim render --format json >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "arm64 render"
jq -e '.SECRET_TOKEN.bytes == 34 and (.SECRET_TOKEN | has("value") | not)' out >/dev/null || fail "render json: $(cat out)"
ok "render --format json: SECRET_TOKEN 34 bytes, no value"
expect_absent "$SENTINEL" out err
