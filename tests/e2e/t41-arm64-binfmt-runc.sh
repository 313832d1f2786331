#!/usr/bin/env bash
# The arm64 image under runc, everything aarch64: binfmt_misc runs aarch64 ELF
# files with qemu-aarch64-static (flag F: the interpreter is opened now, so it
# works inside the container's rootfs). envshim (arm64, from the arm64 image) is
# PID 1 and the arm64 test program replaces it (pid 1, arch aarch64).
# `envshim install` is run there too. The registration is removed again at the end.
source "$(dirname "$0")/lib.sh"
bm=/proc/sys/fs/binfmt_misc
[ -e $bm/register ] || mount -t binfmt_misc binfmt_misc $bm 2>/dev/null || skip "cannot mount binfmt_misc here"
name=envshim-e2e-aarch64
[ ! -e $bm/$name ] || echo -1 >$bm/$name
trap 'echo -1 >$bm/$name 2>/dev/null || true' EXIT
magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
echo ":$name:M::$magic:$mask:$(command -v qemu-aarch64-static):F" >$bm/register 2>/dev/null \
  || skip "cannot register a binfmt_misc handler here"
ok "binfmt_misc: aarch64 ELF -> qemu-aarch64-static (F)"
d=$E2E/data
kubelet_volume "$WORK/vol" all.env="$d/all.env" secret.env="$d/secret.env"
mkdir -p "$WORK/manifest" && cp "$d/manifest.json" "$WORK/manifest/"
rootfs=$(image_rootfs arm64 arm64 "$WORK/bin/showenv-arm64:app")
only_files "$rootfs" envshim app
set +e
runc_run arm64 "$rootfs" -c "$WORK/img-arm64/config.json" -u 65532 -e HOST=h -e PORT=80 \
  -m "$WORK/vol:/config:ro" -m "$WORK/manifest:/etc/envshim:ro" -- /envshim run -- /app '$(URL)' >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "arm64 image under runc"
expect_line out "arch=aarch64"
expect_line out "pid=1"
expect_line out 'argv[1]=http://h:80/$(UNDEFINED)$'
expect_line out "env:SECRET_TOKEN=$SENTINEL-token"
expect_line out "env:ALL_A=1"
# the failure path on arm64: exit code 66 comes through qemu and runc
set +e
runc_run arm64-fail "$rootfs" -c "$WORK/img-arm64/config.json" -m "$WORK/vol:/config:ro" -m "$d:/etc/envshim:ro" \
  -- /envshim run --manifest /etc/envshim/manifest-missing-key.json -- /app >out 2>err
rc=$?
set -e
expect_rc 66 $rc "arm64: missing key"
expect_absent "$SENTINEL" out err
# `envshim install` under emulation copies the arm64 binary (qemu maps /proc/self/exe to it)
mkdir -p "$WORK/shim-arm64"; chmod 0777 "$WORK/shim-arm64"
runc_run arm64-install "$rootfs" -c "$WORK/img-arm64/config.json" -u 65532 -m "$WORK/shim-arm64:/shim:rw" \
  -- /envshim install /shim/envshim || fail "arm64 envshim install: exit $?"
cmp -s "$WORK/shim-arm64/envshim" "$DIST/envshim-linux-arm64" || fail "arm64 install did not copy the arm64 binary"
ok "arm64 envshim install copies itself (not qemu)"
