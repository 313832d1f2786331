#!/usr/bin/env bash
# Mode 2 (examples/init-container/pod.yaml) as three runc containers sharing host
# directories the way a Pod shares emptyDirs, all non-root with read-only rootfs:
#   1. install-envshim: the envshim image runs its command `envshim install /shim/envshim`;
#   2. generate-config: a rootfs with only the test program writes config.env;
#   3. app: a rootfs with ONLY /app (no envshim, no shell) runs the Pod's command,
#      /shim/envshim run --manifest ... -- /app ..., with the ConfigMap's manifest
#      mounted as the kubelet mounts a ConfigMap. /app must come up as PID 1.
source "$(dirname "$0")/lib.sh"
y=$ROOT/examples/init-container/pod.yaml
pod=envshim-init-container-demo
uid=$(k8s "$y" Pod $pod '.spec.securityContext.runAsUser')
shim=$WORK/emptydir-shim config=$WORK/emptydir-config
mkdir -p "$shim" "$config"; chmod 0777 "$shim" "$config" # as the kubelet makes emptyDirs
k8s "$y" ConfigMap app-envshim-manifest '.data["manifest.json"]' >"$WORK/manifest.json"
kubelet_volume "$WORK/cm-vol" manifest.json="$WORK/manifest.json"

# 1. install-envshim
mapfile -t cmd < <(k8s "$y" Pod $pod '.spec.initContainers[] | select(.name == "install-envshim") | .command[]')
[ "${cmd[*]}" = "/envshim install /shim/envshim" ] || fail "install-envshim command: ${cmd[*]}"
r1=$(image_rootfs install amd64)
runc_run install "$r1" -u "$uid" -m "$shim:/shim:rw" -- "${cmd[@]}" || fail "envshim install: exit $?"
[ "$(cd "$shim" && ls -A)" = envshim ] || fail "the shim dir holds $(ls -A "$shim"), want only envshim"
[ "$(stat -c %a "$shim/envshim")" = 755 ] || fail "installed mode $(stat -c %a "$shim/envshim")"
cmp -s "$shim/envshim" "$DIST/envshim-linux-amd64" || fail "installed binary differs"
ok "install-envshim: /shim/envshim, mode 0755, identical, no other file"

# 2. generate-config (the Pod uses busybox sh -c 'echo CONFIG_VAR=HELLO > ...'; same file here)
r2=$(new_rootfs gen "$WORK/bin/showenv-amd64:writer")
runc_run gen "$r2" -u "$uid" -m "$config:/config:rw" -- /writer write /config/config.env $'CONFIG_VAR=HELLO\n' \
  || fail "generate-config: exit $?"
ok "generate-config wrote config.env"

# 3. app
r3=$(new_rootfs app "$WORK/bin/showenv-amd64:app")
only_files "$r3" app
c=$(k8s "$y" Pod $pod '.spec.containers[0]')
mounts=()
for v in shim:"$shim" config:"$config" manifest:"$WORK/cm-vol"; do
  mounts+=(-m "${v#*:}:$(jq -r --arg n "${v%%:*}" '.volumeMounts[] | select(.name == $n) | .mountPath' <<<"$c"):ro")
done
mapfile -t cmd < <(jq -r '.command[]' <<<"$c")
set +e
runc_run app "$r3" -u "$uid" -e POD_NAMESPACE=default "${mounts[@]}" -- "${cmd[@]}" >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "app container"
expect_line out "pid=1"
expect_line out "argv[0]=/app"
expect_line out "argv[1]=--greeting=config is HELLO in default"
expect_line out "env:CONFIG_VAR=HELLO"
expect_line out "env:GREETING=config is HELLO in default"
expect_no_line out '^env:OPTIONAL_VAR='
