#!/usr/bin/env bash
# Mode 3: examples/docker-run/run.sh, unchanged, with `docker` played by
# fake-docker.sh (runc): envshim in the mode-1 image, no manifest, the env file
# from a read-only --volume, --env-file/--env flags. First `render` (no values),
# then the run: /app as PID 1 with the environment from app.env; then a
# Compose-style secret: a bind-mounted file named by DB_PASSWORD_FILE, --file-env.
source "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/fakebin"; ln -sf "$E2E/fake-docker.sh" "$WORK/fakebin/docker"
set +e
PATH=$WORK/fakebin:$PATH IMAGE=oci:$WORK/oci:app-with-envshim bash "$ROOT/examples/docker-run/run.sh" >out 2>err
rc=$?
set -e
cat err >&2
expect_rc 0 $rc "examples/docker-run/run.sh"
expect_line out "# DB_PASSWORD from /config/app.env:4"
expect_line out "DB_PASSWORD=<set, 17 bytes>"
[ "$(grep -c '^pid=' out)" = 2 ] || fail "want two runs of /app"
expect_line out "pid=1"
expect_line out "argv[0]=/app"
expect_line out "argv[1]=--listen=:8080"
expect_line out "argv[2]=--log-level=debug"
expect_line out "env:DB_HOST=host.docker.internal"
expect_line out "env:DB_USER=dev"
expect_line out "env:LOG_LEVEL=debug"
expect_line out "env:DATABASE_URL=postgres://dev:local pass # kept@host.docker.internal:5432/app"
expect_line out "env:GREETING=hello"
expect_line out "from a two-line value"
[ "$(grep -c 'local pass' out)" = 2 ] || fail "render printed a value"
ok "render printed no value"
# 3. the Compose-style secret
expect_line out "env:DB_PASSWORD=dev-db-password"
expect_no_line out '^env:DB_PASSWORD_FILE='
[ "$(grep -c '^pid=1$' out)" = 2 ] || fail "want /app as PID 1 in both runs"
ok "both runs: /app is PID 1"
