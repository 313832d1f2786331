#!/usr/bin/env bash
# `docker stop` / `podman stop` of the mode-1 image running `/app sleep 60` (a
# program with no SIGTERM handler), six ways:
#   plain           envshim execs /app as PID 1: the kernel drops SIGTERM to a PID 1
#                   without a handler, so the engine kills it after the timeout: 137
#   envshim --init  envshim stays PID 1 and forwards SIGTERM to /app: 143
#   --term-delay 2s as --init, but SIGTERM is held 2 s first: 143, after >= 2 s
#   --rewrite-signal TERM:QUIT  as --init, but SIGTERM reaches /app as SIGQUIT, which
#                   kills it as no SIGTERM would: 131 (128 + 3) shows the program saw QUIT
#   --success-exit 143  as --init, but the 143 of /app killed by the forwarded SIGTERM
#                   counts as success: 0 (tini -e 143)
#   engine --init   tini (docker-init) or catatonit (podman-init) as PID 1 in front
#                   of envshim, which execs /app; the init forwards SIGTERM: 143
# and a foreground run behind each engine's --init shows that init as PID 1 and /app
# as its child.
source "$(dirname "$0")/lib.sh"
img=registry.example.com/app-with-envshim:1.0
for engine in $ENGINES; do
  echo "  -- $engine"
  app_with_envshim $engine
  case $engine in docker) init=docker-init ;; podman) init=podman-init ;; esac
  $engine run --rm --init --network none "$img" /app >out 2>err || { cat err >&2; fail "$engine run --init"; }
  expect_line out "pid1=$init"
  expect_line out "ppid=1"
  expect_no_line out '^pid=1$'
  [ ! -s err ] || fail "stderr: $(cat err)"

  # name:stop-timeout:want-exit:run-args...
  cases=("plain:1:137:/app sleep 60" "init:10:143:--init -- /app sleep 60" "delay:10:143:--init --term-delay 2s -- /app sleep 60"
         "rewrite:10:131:--init --rewrite-signal TERM:QUIT -- /app sleep 60" "success:10:0:--init --success-exit 143 -- /app sleep 60"
         "engine-init:10:143:--init /app sleep 60")
  for c in "${cases[@]}"; do
    IFS=: read -r name timeout want args <<<"$c"
    opts=(); words=($args)
    if [ $name = engine-init ]; then opts=(--init); words=("${words[@]:1}"); fi
    $engine run -d --name "$NAME-$name" --network none --read-only --user 65532 --cap-drop ALL "${opts[@]}" "$img" "${words[@]}" >/dev/null
  done
  for c in "${cases[@]}"; do # each program has started (and so envshim has exec'd or forked it)
    name=${c%%:*}
    for i in $(seq 100); do $engine logs "$NAME-$name" 2>&1 | grep -qx sleeping && break; sleep 0.1; done
    $engine logs "$NAME-$name" 2>&1 | grep -qx sleeping || fail "$name: /app did not start"
  done
  for c in "${cases[@]}"; do # stop all of them at once, timing each
    IFS=: read -r name timeout want args <<<"$c"
    ( t0=$(date +%s%3N); $engine stop -t "$timeout" "$NAME-$name" >/dev/null 2>"$name.err"; echo $(( $(date +%s%3N) - t0 )) >"$name.ms" ) &
  done
  wait
  for c in "${cases[@]}"; do
    IFS=: read -r name timeout want args <<<"$c"
    got=$($engine inspect --format '{{.State.ExitCode}}' "$NAME-$name")
    $engine rm "$NAME-$name" >/dev/null
    expect_rc "$want" "$got" "$engine stop -t $timeout, $name ($args), after $(cat "$name.ms") ms"
  done
  [ "$(cat delay.ms)" -ge 2000 ] || fail "--term-delay 2s: stopped after $(cat delay.ms) ms"
  ok "--term-delay 2s held SIGTERM: stopped after $(cat delay.ms) ms"
done
