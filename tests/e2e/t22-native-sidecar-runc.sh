#!/usr/bin/env bash
# examples/native-sidecar/pod.yaml under runc: the app container (a rootfs with
# ONLY /app, envshim from the `shim` emptyDir, non-root, read-only rootfs) runs
# the Pod's command `/shim/envshim run --wait 60s --env-file /secrets/app.env
# --file-env DB_PASSWORD -- /app ...` while the sidecar's own script (from the
# YAML, its `sleep 5` shortened to 1 s) writes the files late into the `secrets`
# emptyDir. Then: SIGTERM during the wait ends the container at once with 143.
source "$(dirname "$0")/lib.sh"
y=$ROOT/examples/native-sidecar/pod.yaml
pod=envshim-native-sidecar-demo
uid=$(k8s "$y" Pod $pod '.spec.securityContext.runAsUser')
shim=$WORK/ns-shim secrets=$WORK/ns-secrets
mkdir -p "$shim" "$secrets"; chmod 0777 "$shim" "$secrets"
install -m 0755 "$DIST/envshim-linux-amd64" "$shim/envshim" # t20 proves `envshim install`
c=$(k8s "$y" Pod $pod '.spec.containers[0]')
mapfile -t cmd < <(jq -r '.command[]' <<<"$c")
envs=()
while IFS= read -r e; do envs+=(-e "$e"); done < <(jq -r '.env[] | "\(.name)=\(.value)"' <<<"$c")
mounts=()
for v in shim:"$shim" secrets:"$secrets"; do
  mounts+=(-m "${v#*:}:$(jq -r --arg n "${v%%:*}" '.volumeMounts[] | select(.name == $n) | .mountPath' <<<"$c"):ro")
done
r=$(new_rootfs ns-app "$WORK/bin/showenv-amd64:app")
only_files "$r" app

# 1. The sidecar writes its files a second after the app started: the app waits.
k8s "$y" Pod $pod '.spec.initContainers[] | select(.name == "secrets-agent") | .command[2]' |
  sed -e "s#/secrets#$secrets#g" -e 's/^sleep 5$/sleep 1/' -e 's/^exec sleep .*$/true/' >"$WORK/sidecar.sh"
grep -q "^sleep 1$" "$WORK/sidecar.sh" || fail "the sidecar script has no 'sleep 5' to shorten"
sh "$WORK/sidecar.sh" &
writer=$!
t0=$(date +%s%3N)
set +e
runc_run ns-app "$r" -u "$uid" "${envs[@]}" "${mounts[@]}" -- "${cmd[@]}" >out 2>err
rc=$?
set -e
ms=$(( $(date +%s%3N) - t0 ))
wait $writer
cat err >&2
expect_rc 0 $rc "app container"
[ $ms -ge 1000 ] || fail "the app ran after ${ms} ms, before the sidecar wrote its files"
ok "the app waited (${ms} ms) for the sidecar's files"
expect_line out "pid=1"
expect_line out "argv[1]=--db-host=db.internal"
expect_line out "env:DB_HOST=db.internal"
expect_line out "env:DB_USER=app"
expect_line out "env:DB_PASSWORD=example-password"
expect_no_line out '^env:DB_PASSWORD_FILE='

# 2. The files never come: SIGTERM (as the kubelet sends on delete) ends the wait at once.
rm -f "$secrets"/*
set +e
runc_run ns-term "$r" -u "$uid" "${envs[@]}" "${mounts[@]}" -- "${cmd[@]}" >out2 2>err2 &
runner=$!
set -e
id=e2e-ns-term-$$
# Signal once envshim (PID 1 of the container) sleeps in its wait: a SIGTERM before
# the wait blocks it would be dropped, as for any PID 1 without a handler.
for _ in $(seq 200); do
  pid=$(runc state "$id" 2>/dev/null | jq -r '.pid // empty' || true)
  [ -n "$pid" ] && grep -q sigtimedwait "/proc/$pid/wchan" 2>/dev/null && break
  sleep 0.05
done
grep -q sigtimedwait "/proc/$pid/wchan" || fail "envshim never reached its wait"
runc kill "$id" TERM
set +e
wait $runner
rc=$?
set -e
cat err2 >&2
expect_rc 143 $rc "SIGTERM during the wait"
# Two lines: what the wait is for when it begins, then the signal that ended it.
[ "$(wc -l <err2)" = 2 ] || fail "want two lines on stderr"
head -1 err2 | grep -q '^envshim: waiting up to 60s for ' || fail "the first line does not say what envshim waits for"
tail -1 err2 | grep -q '^envshim: SIGTERM while waiting' || fail "the last line does not name SIGTERM"
expect_line err2 "envshim: SIGTERM while waiting (--wait) for missing files: /secrets/app.env, /secrets/db_password (DB_PASSWORD_FILE)"
