#!/usr/bin/env bash
# Mode 3 with the real Docker: examples/docker-run/run.sh, unchanged, on the
# mode-1 image (its default IMAGE); the three commands of examples/docker-run/README.md
# and the one of the project README, as written. envshim reads the env file from
# a read-only --volume, takes --env-file/--env after the image name, `render`
# prints no value, and /app runs as PID 1 with the values of app.env; with the
# Compose-style secret (step 3), DB_PASSWORD comes from the bind-mounted file that
# DB_PASSWORD_FILE names, and DB_PASSWORD_FILE is gone.
source "$(dirname "$0")/lib.sh"
app_with_envshim docker

# runs OUT: splits OUT into OUT.0 (before the first run of /app: render's output),
# OUT.1, OUT.2, ... (each run of /app, which starts with its arch= line)
runs() { awk -v f="$1" 'BEGIN { n = 0 } /^arch=/ { n++ } { print > (f "." n) }' "$1"; }

# expect_app_env FILE: /app's output for the example's app.env (step 2)
expect_app_env() {
  [ "$(grep -c '^pid=' "$1")" = 1 ] || fail "want one run of /app"
  expect_line "$1" "pid=1"
  expect_line "$1" "argv[0]=/app"
  expect_line "$1" "argv[1]=--listen=:8080"
  expect_line "$1" "argv[2]=--log-level=debug"
  expect_line "$1" "env:DB_HOST=host.docker.internal"
  expect_line "$1" "env:DB_USER=dev"
  expect_line "$1" "env:LOG_LEVEL=debug"
  expect_line "$1" "env:DATABASE_URL=postgres://dev:local pass # kept@host.docker.internal:5432/app"
  expect_line "$1" "env:GREETING=hello"
  expect_line "$1" "from a two-line value"
}

# expect_render FILE: render's output (step 1): sources and sizes, no value
expect_render() {
  expect_line "$1" "# DB_PASSWORD from /config/app.env:4"
  expect_line "$1" "DB_PASSWORD=<set, 17 bytes>"
  expect_no_line "$1" 'local pass'
  expect_no_line "$1" '^env:'
  ok "render printed no value"
}

# expect_secret FILE: /app's output for the Compose-style secret (step 3)
expect_secret() {
  [ "$(grep -c '^pid=' "$1")" = 1 ] || fail "want one run of /app"
  expect_line "$1" "pid=1"
  expect_line "$1" "argc=2"
  expect_line "$1" "argv[1]=--listen=:8080"
  expect_line "$1" "env:DB_PASSWORD=dev-db-password"
  expect_no_line "$1" '^env:DB_PASSWORD_FILE='
  expect_no_line "$1" '^env:DB_USER='
  ok "step 3: DB_PASSWORD from the secret file, no DB_PASSWORD_FILE"
}

echo "  -- examples/docker-run/run.sh"
bash "$ROOT/examples/docker-run/run.sh" >out 2>err || { cat err >&2; fail "run.sh: exit $?"; }
runs out
[ ! -e out.3 ] || fail "run.sh: want two runs of /app"
expect_render out.0
expect_app_env out.1
expect_secret out.2
expect_only_docker_warnings err

echo "  -- examples/docker-run/README.md"
rm -rf tree; cp -a "$ROOT/examples/docker-run" tree # the README's $PWD: that directory
: >out; : >err
readme=$ROOT/examples/docker-run/README.md
run_doc "$readme" 'docker run --rm --volume "$PWD:/config:ro" --entrypoint /envshim' 'docker run --rm --volume "$PWD:/config:ro" --env' \
  'docker run --rm --volume "$PWD/secrets/db_password:'
runs out
[ ! -e out.3 ] || fail "README: want two runs of /app"
expect_render out.0
expect_app_env out.1
expect_secret out.2
expect_only_docker_warnings err

echo "  -- README.md (mode 3)"
rm -rf tree; mkdir -p tree/config
printf '%s\n' 'HOST=example.org' "TOKEN=$SENTINEL" >tree/config/app.env
: >out; : >err
run_doc "$ROOT/README.md" 'docker run --rm -v "$PWD/config:/config:ro"'
expect_line out "pid=1"
expect_line out "env:URL=http://example.org"
expect_line out "env:TOKEN=$SENTINEL"
expect_only_docker_warnings err
