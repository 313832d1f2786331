#!/usr/bin/env bash
# `envshim run --watch` in Docker and in Podman, as in production (read-only, user
# 65532, no capabilities, no network): the env file comes from a bind-mounted
# directory laid out as the kubelet lays out a Secret volume, and the test swaps it
# as the kubelet's atomic writer does (a new timestamped directory, a `..data_tmp`
# link renamed over `..data`, the user path a link through `..data`, the old
# directory removed). The program prints its value; after the swap the container
# prints the new value, having ended the old program first (one program at a time),
# and envshim's stderr names the variable, never a value. The poll is 1 h, so the
# change comes through inotify on the bind mount. `$engine stop` ends envshim and
# its program (143); the container is removed, and none of its processes is left.
source "$(dirname "$0")/lib.sh"
img=$NAME-watch:1

# swap DIR NAME CONTENT: NAME in DIR replaced as the kubelet's atomic writer does.
swap() {
  local d=$1 name=$2 content=$3 ts old
  ts=..$(date -u +%Y_%m_%d_%H_%M_%S.%N)
  old=$(readlink "$d/..data")
  mkdir "$d/$ts"
  printf '%s' "$content" >"$d/$ts/$name"
  chmod 0755 "$d/$ts"; chmod 0644 "$d/$ts/$name"
  ln -s "$ts" "$d/..data_tmp"
  mv -T "$d/..data_tmp" "$d/..data"
  [ -L "$d/$name" ] || ln -s "..data/$name" "$d/$name"
  rm -rf "${d:?}/$old"
}

# wait_for ENGINE CONTAINER LINE: the container's stdout has LINE (20 s at most).
wait_for() {
  local i
  for i in $(seq 200); do
    $1 logs "$2" >out 2>err || true
    grep -qxF -- "$3" out && return 0
    sleep 0.1
  done
  sed 's/^/      stdout| /' out; sed 's/^/      stderr| /' err
  fail "$1: no line '${3//$SENTINEL/<sentinel>}' within 20 s"
}

# The image: envshim and a static busybox, FROM scratch, no libc.
mkdir -p image/rootfs/bin
install -m 0755 "$DIST/envshim-linux-amd64" image/rootfs/envshim
install -m 0755 /bin/busybox image/rootfs/bin/busybox
ln -s busybox image/rootfs/bin/sh
printf '%s\n' 'FROM scratch' 'COPY rootfs/ /' 'ENV PATH=/bin' 'ENTRYPOINT ["/envshim", "run"]' >image/Dockerfile

# The program: its value, then a sleep that SIGTERM ends (the restart signal).
program='echo "A=$A"; exec /bin/busybox sleep 3600'
for engine in $ENGINES; do
  echo "  -- $engine"
  engine_build "$engine" legacy -q -t "$img" image >/dev/null
  printf "A='%s'\n" "$SENTINEL-1" >app.env
  kubelet_volume config app.env=app.env
  c=$NAME-watch-$engine
  $engine run -d --name "$c" --read-only --user 65532 --cap-drop ALL --network none -v "$PWD/config:/config:ro" "$img" \
    --watch --watch-settle 200ms --watch-poll 1h --env-grammar kubelet --env-file /config/app.env -- sh -c "$program" >/dev/null
  wait_for "$engine" "$c" "A=$SENTINEL-1"
  ok "the program started with the first value"

  t0=$(date +%s%3N)
  swap config app.env "# rotated"$'\n'"A='$SENTINEL-2'"$'\n'
  wait_for "$engine" "$c" "A=$SENTINEL-2"
  ok "after the swap, the program started again with the new value ($(( $(date +%s%3N) - t0 )) ms)"
  [ "$(grep -c '^A=' out)" = 2 ] || { sed 's/^/      stdout| /' out; fail "want two starts of the program"; }
  grep -qx 'envshim: watch: changed A: restarting the program' err || { sed 's/^/      stderr| /' err; fail "no change line on stderr"; }
  ok "stderr: envshim: watch: changed A: restarting the program"
  # One program at a time: envshim as PID 1 and one sleep, the old one gone.
  $engine exec "$c" /bin/busybox ps -o pid,args >ps
  [ "$(grep -cE '^ *[0-9]+ /bin/busybox sleep 3600$' ps)" = 1 ] || { sed 's/^/      ps| /' ps; fail "want exactly one program running"; }
  grep -qE '^ *1 /envshim run --watch' ps || { sed 's/^/      ps| /' ps; fail "envshim is not PID 1"; }
  ok "one program running, envshim PID 1"

  # A swap with the same values (a comment changed) restarts nothing.
  swap config app.env "# rotated again"$'\n'"A='$SENTINEL-2'"$'\n'
  sleep 1.5
  $engine logs "$c" >out 2>err
  [ "$(grep -c '^A=' out)" = 2 ] || { sed 's/^/      stdout| /' out; fail "a swap with the same value restarted the program"; }
  ok "a swap with the same value: no restart"

  $engine stop -t 10 "$c" >/dev/null
  expect_rc 143 "$($engine inspect --format '{{.State.ExitCode}}' "$c")" "$engine stop: envshim and its program ended"
  $engine logs "$c" >out 2>err
  expect_absent "$SENTINEL" err
  $engine rm "$c" >/dev/null
  ! $engine inspect "$c" >/dev/null 2>&1 || fail "$c still exists"
  left='^(/bin/busybox sleep 3600|/envshim run --watch --watch-settle 200ms --watch-poll 1h)'
  ! pgrep -f "$left" >/dev/null || fail "a process of the container is left: $(pgrep -af "$left")"
  ok "container removed, none of its processes left"
  $engine rmi "$img" >/dev/null
done
