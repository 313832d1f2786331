#!/usr/bin/env bash
# bubblewrap --as-pid-1: a rootfs holding only envshim and the static test program
# (no shell, no libc); manifest and env files on read-only binds. envshim is PID 1,
# then /app replaces it (pid 1), with the environment built as docs/reference.md §2-§5 say.
source "$(dirname "$0")/lib.sh"
d=$E2E/data
kubelet_volume "$WORK/vol" all.env="$d/all.env" secret.env="$d/secret.env"
mkdir -p "$WORK/manifest" && cp "$d/manifest.json" "$WORK/manifest/"
rootfs=$(new_rootfs bwrap "$DIST/envshim-linux-amd64:envshim" "$WORK/bin/showenv-amd64:app")
only_files "$rootfs" envshim app
set +e
bwrap_run "$rootfs" -e PATH=/ -e HOST=h -e PORT=80 -e KEEP=inherited -e ALL_B=inherited \
  -e KUBERNETES_SERVICE_HOST=fd00::1 -e KUBERNETES_SERVICE_PORT=443 -e ENVSHIM_STRICT_NAMES=false \
  -m "$WORK/vol:/config:ro" -m "$WORK/manifest:/etc/envshim:ro" \
  -- /envshim run -- app '$(URL)' 'lit$$(URL)' '$(NOPE)' >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "bwrap"
expect_line out "pid=1"
expect_line out "argc=4"
expect_line out "argv[0]=app"
expect_line out 'argv[1]=http://h:80/$(UNDEFINED)$'
expect_line out 'argv[2]=lit$(URL)'
expect_line out 'argv[3]=$(NOPE)'
expect_line out "env:KEEP=inherited"
expect_line out "env:ALL_A=1"
expect_line out "env:ALL_B=two words"
expect_line out "env:ALL_C=x"
expect_line out "env:SECRET_TOKEN=$SENTINEL-token"
expect_line out "env:URL=http://h:80/\$(UNDEFINED)\$"
expect_line out "env:KUBERNETES_SERVICE_URL=https://[fd00::1]:443"
expect_line out "env:EMPTY="
python3 - "$SENTINEL" <<'PY' || fail "MULTI is not the two-line value"
import sys
env = dict(l.split("=", 1) for l in open("out").read().split("\nenv:")[1:])
assert env["MULTI"].startswith("line one\nline two " + sys.argv[1]), repr(env["MULTI"])
PY
ok "MULTI is the two-line value"
expect_no_line out '^env:ENVSHIM_'
expect_no_line out '^env:OPTIONAL_MISSING='
[ ! -s err ] || fail "envshim wrote to stderr"
ok "nothing on stderr"
