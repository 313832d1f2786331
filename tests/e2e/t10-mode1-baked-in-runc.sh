#!/usr/bin/env bash
# Mode 1 under runc: the image of examples/baked-in/Dockerfile (envshim ENTRYPOINT)
# run as examples/baked-in/kubernetes.yaml's Deployment would run it: non-root,
# read-only rootfs, the Secret and the manifest ConfigMap (at /etc/envshim, the
# default manifest path) as read-only volumes laid out as the kubelet does
# (..data symlinks). envshim is PID 1 and /app replaces it: /app prints pid 1.
source "$(dirname "$0")/lib.sh"
y=$ROOT/examples/baked-in/kubernetes.yaml
for k in db.env tuning.env; do printf '%s\n' "$(k8s "$y" Secret app-secrets ".stringData[\"$k\"]")" >"$WORK/$k"; done
kubelet_volume "$WORK/secret-vol" db.env="$WORK/db.env" tuning.env="$WORK/tuning.env"
k8s "$y" ConfigMap app-envshim-manifest '.data["manifest.json"]' >"$WORK/manifest.json"
kubelet_volume "$WORK/cm-vol" manifest.json="$WORK/manifest.json"
rootfs=$WORK/rootfs/mode1; rm -rf "$rootfs"; mkdir -p "$WORK/rootfs"; cp -a "$WORK/img-mode1/rootfs" "$rootfs"
only_files "$rootfs" envshim app
c=$(k8s "$y" Deployment app '.spec.template.spec.containers[0]')
[ "$(jq -r '.command // "none"' <<<"$c")" = none ] || fail "the Deployment overrides the ENTRYPOINT"
mapfile -t cmd < <(skopeo inspect --config "oci:$WORK/oci:app-with-envshim" | jq -r '.config.Entrypoint + .config.Cmd | .[]')
set +e
runc_run mode1 "$rootfs" -c "$WORK/img-mode1/config.json" -u 65532 \
  -e "DB_HOST=$(jq -r '.env[] | select(.name == "DB_HOST") | .value' <<<"$c")" \
  -e LOG_LEVEL=info -e KUBERNETES_SERVICE_HOST=10.96.0.1 -e KUBERNETES_SERVICE_PORT=443 \
  -m "$WORK/secret-vol:$(jq -r '.volumeMounts[] | select(.name == "app-secrets") | .mountPath' <<<"$c"):ro" \
  -m "$WORK/cm-vol:$(jq -r '.volumeMounts[] | select(.name == "envshim-manifest") | .mountPath' <<<"$c"):ro" \
  -- "${cmd[@]}" \
  >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "runc run"
expect_line out "pid=1"
expect_line out "argv[0]=/app"
expect_line out "argv[1]=--listen=:8080"
expect_line out "argv[2]=--db-host=postgres.default.svc.cluster.local"
expect_line out "env:DB_USER=app"
expect_line out "env:DB_PASSWORD=p@ss w0rd # not a comment"
expect_line out "env:DATABASE_URL=postgres://app:p@ss w0rd # not a comment@postgres.default.svc.cluster.local:5432/app"
expect_line out "env:APP_WORKERS=4"
expect_line out "env:APP_CACHE_TTL=90s"
expect_line out "env:LOG_LEVEL=info"
expect_line out "env:KUBERNETES_SERVICE_URL=https://10.96.0.1:443"
expect_no_line out '^env:ENVSHIM_'
[ ! -s err ] || fail "envshim wrote to stderr"
ok "nothing on stderr"
