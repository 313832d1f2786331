#!/usr/bin/env bash
# What `run --init` costs over `run`, against what the least supervisor costs
# (bench/execenv.c -w: vfork, execve, waitpid) over the job floor. Commands
# alternate in rounds of RUNS starts each (bench/spawnloop.c), so load that
# comes and goes on the machine lands on all of them; prints each round's
# differences and their medians (docs/performance-history.md, "Start-up at the job floor").
#
#   bench/startup.sh && bench/supervise.sh      # uses startup.sh's inputs and builds
#
# Environment: OUT (default target/startup-bench, as startup.sh), ROUNDS
# (default 6), RUNS (default 500), ENVSHIM (default dist/envshim-linux-amd64).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/target/startup-bench}
ROUNDS=${ROUNDS:-6}
RUNS=${RUNS:-500}
ENVSHIM=${ENVSHIM:-$ROOT/dist/envshim-linux-amd64}
for f in "$OUT/noop" "$OUT/execenv" "$OUT/final-env.txt" "$OUT/in/manifest.json" "$ENVSHIM"; do
    [ -e "$f" ] || { echo "missing $f: run bench/startup.sh first" >&2; exit 1; }
done
musl-gcc -static -O2 -s -o "$OUT/spawnloop" "$ROOT/bench/spawnloop.c"

N=$OUT/noop M=$OUT/in/manifest.json F=$OUT/final-env.txt
cd "$OUT/in"  # the manifest's volume paths are relative to it
for r in $(seq 1 "$ROUNDS"); do
    floor=$("$OUT/spawnloop" "$RUNS" "$OUT/execenv" "$F" "$N")
    sup=$("$OUT/spawnloop" "$RUNS" "$OUT/execenv" -w "$F" "$N")
    run=$("$OUT/spawnloop" "$RUNS" "$ENVSHIM" run --manifest "$M" -- "$N")
    init=$("$OUT/spawnloop" "$RUNS" "$ENVSHIM" run --init --manifest "$M" -- "$N")
    bare=$("$OUT/spawnloop" "$RUNS" "$ENVSHIM" run -- "$N")
    bare_init=$("$OUT/spawnloop" "$RUNS" "$ENVSHIM" run --init -- "$N")
    echo "$floor $sup $run $init $bare $bare_init"
done | python3 -c '
import statistics, sys
rows = [list(map(float, l.split())) for l in sys.stdin]
print("| round | job floor | supervised floor − floor | envshim run | run --init − run | no manifest: run --init − run |")
print("|---:|---:|---:|---:|---:|---:|")
for i, (fl, sup, run, init, bare, bi) in enumerate(rows, 1):
    print(f"| {i} | {fl:.0f} µs | {sup - fl:+.0f} µs | {run:.0f} µs | {init - run:+.0f} µs | {bi - bare:+.0f} µs |")
med = lambda k: statistics.median(k)
print(f"| median | {med([r[0] for r in rows]):.0f} µs | {med([r[1] - r[0] for r in rows]):+.0f} µs "
      f"| {med([r[2] for r in rows]):.0f} µs | {med([r[3] - r[2] for r in rows]):+.0f} µs | {med([r[5] - r[4] for r in rows]):+.0f} µs |")
'
