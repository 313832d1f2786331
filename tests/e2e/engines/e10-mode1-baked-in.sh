#!/usr/bin/env bash
# Mode 1 in Docker and in Podman: examples/baked-in/README.md's commands as written
# (docker load, docker tag, docker build of examples/baked-in/Dockerfile on the
# distroless stand-in; for Podman the same words with `podman`), then its
# `docker run`: read-only root, user 65532, no capabilities, no network; the
# manifest ConfigMap of kubernetes.yaml at envshim's default path
# /etc/envshim/manifest.json and the Secret's env files as read-only volumes.
# envshim execs /app, which prints pid 1 and the environment the README lists.
source "$(dirname "$0")/lib.sh"
readme=$ROOT/examples/baked-in/README.md y=$ROOT/examples/baked-in/kubernetes.yaml
build='docker build -t registry.example.com/app-with-envshim:1.0'
[ "$(doc_cmd "$ROOT/examples/baked-in/Dockerfile" "$build")" = "$(doc_cmd "$readme" "$build")" ] \
  || fail "examples/baked-in/Dockerfile and its README show different build commands"
doc_tree
install -m 0755 "$WORK/bin/showenv-amd64" tree/examples/baked-in/app # the README's `cp` of your app
mkdir -p tree/envshim tree/secrets
k8s "$y" ConfigMap app-envshim-manifest '.data["manifest.json"]' >tree/envshim/manifest.json
for k in db.env tuning.env; do k8s "$y" Secret app-secrets ".stringData[\"$k\"]" >"tree/secrets/$k"; done
chmod -R a+rX tree/envshim tree/secrets

for engine in $ENGINES; do
  echo "  -- $engine"
  $engine rmi -f "envshim:$VERSION" registry.example.com/app-with-envshim:1.0 >/dev/null 2>&1 || true
  : >out; : >err
  DOC_ENGINE=$engine run_doc "$readme" "docker load -i dist/images/" "docker tag envshim:" \
    "$build"
  : >out; : >err
  DOC_ENGINE=$engine run_doc "$readme" "docker run --rm --read-only"
  cp out app.out
  expect_line app.out "pid=1"
  expect_line app.out "argv[0]=/app"
  expect_line app.out "argv[1]=--listen=:8080"
  expect_line app.out "argv[2]=--db-host=postgres.default.svc.cluster.local"
  expect_line app.out "env:DB_USER=app"
  expect_line app.out "env:DB_PASSWORD=p@ss w0rd # not a comment"
  expect_line app.out "env:DATABASE_URL=postgres://app:p@ss w0rd # not a comment@postgres.default.svc.cluster.local:5432/app"
  expect_line app.out "env:APP_WORKERS=4"
  expect_line app.out "env:APP_CACHE_TTL=90s"
  expect_line app.out "env:LOG_LEVEL=info"
  expect_no_line app.out '^env:ENVSHIM_'
  expect_line app.out "pid1=app"
  [ ! -s err ] || fail "$engine: something on stderr: $(cat err)"
  ok "$engine: nothing on stderr"
done
