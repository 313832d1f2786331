#!/usr/bin/env bash
# Whether `envshim run --watch` keeps its memory bounded (docs/performance.md,
# `--watch`): envshim's RSS (VmRSS) idle after the start, then after SWAPS
# changes, each a swap of a volume as the kubelet's atomic writer makes it
# (a timestamped directory, `..data_tmp` renamed over `..data`) that changes a
# value of the env file and one of the manifest, waited for until the program
# restarted with it; then, with the manifest given as text (`--manifest-json`,
# as a converted container has it), after POLL_SECONDS of reads every 10 ms.
#
#   bench/watch_rss.sh                         # dist/envshim-linux-amd64
#   ENVSHIM=target/release/envshim SWAPS=200 bench/watch_rss.sh
#
# Environment: ENVSHIM (default dist/envshim-linux-amd64), SWAPS (default 1000),
# POLL_SECONDS (default 20), ENTRIES (the manifest's env entries, default 200).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ENVSHIM=$(realpath "${ENVSHIM:-$ROOT/dist/envshim-linux-amd64}")
SWAPS=${SWAPS:-1000}
POLL_SECONDS=${POLL_SECONDS:-20}
ENTRIES=${ENTRIES:-200}
D=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
cd "$D"

# swap N: the volume config (app.env, manifest.json) replaced as the kubelet's
# atomic writer does, both files' values N.
swap() {
  local d=config ts old name
  ts=..$(date -u +%Y_%m_%d_%H_%M_%S.%N)
  old=$(readlink "$d/..data" 2>/dev/null || true)
  mkdir -p "$d/$ts"
  printf 'A=a-%s\n' "$1" >"$d/$ts/app.env"
  manifest "$1" >"$d/$ts/manifest.json"
  ln -s "$ts" "$d/..data_tmp"
  mv -T "$d/..data_tmp" "$d/..data"
  for name in app.env manifest.json; do [ -L "$d/$name" ] || ln -s "..data/$name" "$d/$name"; done
  [ -z "$old" ] || rm -rf "${d:?}/$old"
}

# The manifest: ENTRIES env entries, the first one's value b-N (manifest N).
template=$(python3 -c 'import json, sys
env = [{"name": "B", "value": "b-@N@"}] + [{"name": f"VAR_{i:04}", "value": f"value-{i:04}-" + "x" * 32} for i in range(int(sys.argv[1]) - 1)]
print(json.dumps({"env": env, "envFrom": [{"fileRef": {"volumeName": "config", "path": "app.env"}}]}))' "$ENTRIES")
manifest() { printf '%s\n' "${template/@N@/$1}"; }
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pid/status"; }
# started V: waits until the program printed V (10 s at most).
started() {
  local i
  for i in $(seq 1000); do
    [ "$(cat out 2>/dev/null)" = "$1" ] && return 0
    sleep 0.01
  done
  echo "watch_rss: the program never started with '$1' (has '$(cat out 2>/dev/null)')" >&2
  exit 1
}

program='echo "$A $B" > out; exec sleep 3600'
swap 0
"$ENVSHIM" run --watch --watch-settle 5ms --volume config=config --manifest config/manifest.json --no-expand-args -- sh -c "$program" 2>stderr &
pid=$!
started "a-0 b-0"
sleep 1
idle=$(rss)
t0=$(date +%s%3N)
for n in $(seq 1 "$SWAPS"); do
  swap "$n"
  started "a-$n b-$n"
  case $n in 10|100|$SWAPS) echo "after $n swaps: $(rss) KiB";; esac
done
ms=$(( $(date +%s%3N) - t0 ))
sleep 1
after=$(rss)
restarts=$(grep -c 'restarting the program' stderr || true)
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
echo "swaps: idle $idle KiB, after $SWAPS swaps $after KiB ($restarts restarts, $((ms / SWAPS)) ms a swap)"

# The manifest as text: read again at every poll.
rm -f out
"$ENVSHIM" run --watch --watch-settle 5ms --watch-poll 10ms --volume config=config --manifest-json "$(manifest text)" --no-expand-args -- sh -c "$program" 2>stderr &
pid=$!
started "a-$SWAPS b-text"
sleep 1
idle=$(rss)
for t in 1 2 3 4; do
  sleep "$((POLL_SECONDS / 4))"
  echo "after $((t * POLL_SECONDS / 4)) s: $(rss) KiB"
done
echo "manifest text: idle $idle KiB, after $POLL_SECONDS s of reads every 10 ms $(rss) KiB"
