#!/usr/bin/env bash
# Start-up benchmark: what envshim adds between the runtime's exec
# and the program's exec, against the floor (a static no-op exec'd directly)
# and against the peers doing their own job around the same no-op.
#
#   bench/startup.sh            # full run: builds, generates, times, prints one table
#   RUNS=200 ROUNDS=1 bench/startup.sh   # quicker
#
# Environment:
#   OUT      work and result directory   (default: target/startup-bench)
#   RUNS     hyperfine runs per command per round (default 500)
#   ROUNDS   hyperfine rounds; the runs of all rounds are pooled (default 3).
#            Rounds interleave the commands in time, so a burst of load from
#            another process on the machine does not land on one command only.
#   WARMUP   hyperfine warm-up runs per command per round (default 50)
#   ENVSHIM  use this envshim binary instead of building dist/envshim-linux-amd64 (musl-build.sh)
#   NO_INSTALL=1  never run apt-get (fail if a tool is missing)
#
# Writes OUT/report.md (everything printed below the build), OUT/hyperfine-*.json,
# OUT/strace.txt (the full listing) and OUT/syscalls.txt (start -> exec only).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/target/startup-bench}
RUNS=${RUNS:-500}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-50}
TARGET=x86_64-unknown-linux-musl
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

log() { printf '\n== %s\n' "$*" >&2; }

# --- 1. tools -------------------------------------------------------------------
log "tools"
missing=()
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v strace >/dev/null || missing+=(strace)
command -v valgrind >/dev/null || missing+=(valgrind)
command -v musl-gcc >/dev/null || missing+=(musl-tools)
[ -x /usr/bin/tini-static ] || missing+=(tini)          # Debian's tini ships tini-static
command -v dumb-init >/dev/null || missing+=(dumb-init)
command -v envdir >/dev/null || missing+=(daemontools)
[ -x /usr/bin/env ] || missing+=(coreutils)
[ -x /usr/bin/time ] || missing+=(time)
command -v python3 >/dev/null || missing+=(python3)
command -v file >/dev/null || missing+=(file)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "${NO_INSTALL:-0}" = 1 ]; then
        echo "missing: ${missing[*]} (NO_INSTALL=1)" >&2
        exit 1
    fi
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    echo "installing from Debian: ${missing[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
if [ -z "${ENVSHIM:-}" ] && ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
    rustup target add "$TARGET"
fi

# --- 2. the no-op (the floor) -------------------------------------------------------
log "no-op"
cat >"$OUT/noop.c" <<'EOF'
int main(void) {
    return 0;
}
EOF
musl-gcc -static -O2 -s -o "$OUT/noop" "$OUT/noop.c"
NOOP=$OUT/noop
musl-gcc -static -O2 -s -o "$OUT/execenv" "$ROOT/bench/execenv.c"

# --- 3. inputs ------------------------------------------------------------------------
log "inputs"
rm -rf "$OUT/in"
python3 "$ROOT/bench/gen_inputs.py" "$OUT/in"
M=$OUT/in/manifest.json
ENVDIR=$OUT/in/envdir
mapfile -t ENV_ARGS <"$OUT/in/env-args.txt"

# --- 4. envshim -------------------------------------------------------------------------
if [ -z "${ENVSHIM:-}" ]; then
    # The shipped binary: what musl-build.sh builds (pinned nightly, see README).
    log "envshim (./musl-build.sh amd64 -> dist/envshim-linux-amd64)"
    (cd "$ROOT" && nice ./musl-build.sh amd64 >&2)
    ENVSHIM=$ROOT/dist/envshim-linux-amd64
fi
[ -x "$ENVSHIM" ] || { echo "no envshim binary at $ENVSHIM" >&2; exit 1; }

# Every command does the same job, checked before anything is timed: the
# program ends up with the file's 1,000 variables (envshim also with the
# 150 manifest entries, expanded).
log "sanity checks"
unset ENVSHIM_MANIFEST ENVSHIM_STRICT_NAMES ENVSHIM_INIT
"$ENVSHIM" check --manifest "$M"
"$ENVSHIM" run --manifest "$M" -- /usr/bin/env >"$OUT/env.envshim"
envdir "$ENVDIR" /usr/bin/env >"$OUT/env.envdir"
env -i "${ENV_ARGS[@]}" /usr/bin/env >"$OUT/env.coreutils"
for f in envshim envdir coreutils; do
    grep '^APP_CONFIG_KEY_' "$OUT/env.$f" | sort >"$OUT/keys.$f"
done
cmp -s "$OUT/keys.envshim" "$OUT/keys.envdir" && cmp -s "$OUT/keys.envshim" "$OUT/keys.coreutils" \
    || { echo "the commands do not build the same 1,000 variables" >&2; exit 1; }
[ "$(wc -l <"$OUT/keys.envshim")" = 1000 ] || { echo "expected 1,000 file variables" >&2; exit 1; }
[ "$(grep -c '^FK_' "$OUT/env.envshim")" = 100 ] || { echo "expected 100 fileKeyRef variables" >&2; exit 1; }
[ "$(grep -c '^EXP_' "$OUT/env.envshim")" = 50 ] || { echo "expected 50 expanded variables" >&2; exit 1; }
! grep '^EXP_' "$OUT/env.envshim" | grep -qF '$(' || { echo "an expansion was left unexpanded" >&2; exit 1; }
"$NOOP"; "$ENVSHIM" run --manifest "$M" -- "$NOOP"; tini-static -s -- "$NOOP"; dumb-init "$NOOP"

REPORT=$OUT/report.md
: >"$REPORT"
say() { printf '%s\n' "$*" | tee -a "$REPORT"; }

say "## Start-up benchmark"
say ""
say "- machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), kernel $(uname -r)"
say "- load before: $(cut -d' ' -f1-3 /proc/loadavg)"
say "- envshim: $("$ENVSHIM" --version 2>/dev/null | head -1), $(stat -c %s "$ENVSHIM") bytes"
say "- hyperfine $(hyperfine --version | cut -d' ' -f2) -N, $ROUNDS round(s) x $RUNS runs (+ $WARMUP warm-up) per command, pooled"
say "- inputs: env file $(stat -c %s "$OUT/in/vol/app.env") bytes / 1,000 keys; manifest envFrom whole file + 100 fileKeyRefs + 50 expanded values; envdir of $(ls "$ENVDIR" | wc -l) files"
say ""

# --- 5. timing -----------------------------------------------------------------------------
log "hyperfine"
load1=$(cut -d' ' -f1 /proc/loadavg)
if python3 -c "import sys; sys.exit(0 if float('$load1') < 0.5 else 1)"; then :; else
    echo "warning: load average $load1: other work is running, the numbers may be noisy" >&2
fi
ENV_CMD="env -i ${ENV_ARGS[*]} $NOOP"
# envshim's --init mode is timed when this build has it.
INIT=()
if "$ENVSHIM" run --init --manifest "$M" -- "$NOOP" 2>/dev/null; then
    INIT=(-n "envshim run --init --manifest M -- noop" "$ENVSHIM run --init --manifest $M -- $NOOP")
else
    echo "note: envshim run --init does not work in this build: not timed" >&2
fi
# The job's floor: a minimal static C program that reads the final
# environment envshim builds (as NAME=VALUE lines) and execs the no-op with it
# (bench/execenv.c). Passing 1,000+ variables through execve costs the kernel
# real time that the direct start does not pay, so this row separates the
# cost of the job from the cost of envshim. With -w it runs the no-op as a
# child and waits for it: the least any supervisor (`run --init`, tini) adds.
# (Not hyperfine under that environment: hyperfine sets a variable per run,
# so it would copy its whole environment in userland for every run it times.)
grep -v '^_=' "$OUT/env.envshim" >"$OUT/final-env.txt"
NFINAL=$(wc -l <"$OUT/final-env.txt")
rm -f "$OUT"/hyperfine-*.json "$OUT"/hyperfine-*.txt
for r in $(seq 1 "$ROUNDS"); do
    hyperfine -N --style basic --runs "$RUNS" --warmup "$WARMUP" --export-json "$OUT/hyperfine-$r.json" \
        -n "direct no-op (the floor)" "$NOOP" \
        -n "job floor: static C execs noop with the $NFINAL final variables" "$OUT/execenv $OUT/final-env.txt $NOOP" \
        -n "supervised job floor: static C vforks, execs noop with them, waits" "$OUT/execenv -w $OUT/final-env.txt $NOOP" \
        -n "envshim run --manifest M -- noop" "$ENVSHIM run --manifest $M -- $NOOP" \
        "${INIT[@]}" \
        -n "envshim run -- noop (no manifest)" "$ENVSHIM run -- $NOOP" \
        -n "tini-static -s -- noop" "tini-static -s -- $NOOP" \
        -n "dumb-init noop" "dumb-init $NOOP" \
        -n "envdir DIR noop (1,000 files)" "envdir $ENVDIR $NOOP" \
        -n "env -i (1,000 NAME=VALUE) noop" "$ENV_CMD" \
        -n "env -i A=1 noop" "env -i A=1 $NOOP" \
        >"$OUT/hyperfine-$r.txt" 2>&1 || { cat "$OUT/hyperfine-$r.txt" >&2; exit 1; }
done
say "- load after: $(cut -d' ' -f1-3 /proc/loadavg)"
say ""
python3 - "$OUT" "$ROUNDS" <<'EOF' | tee -a "$REPORT"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
times, order = {}, []
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/hyperfine-{r}.json"))["results"]:
        if res["command"] not in times:
            order.append(res["command"])
        times.setdefault(res["command"], []).extend(res["times"])
def us(s): return s * 1e6
base, big = times[order[0]], times[order[1]]
bmean, bmed, gmed = statistics.fmean(base), statistics.median(base), statistics.median(big)
print("| command | runs | mean ± σ (µs) | median (µs) | min (µs) | mean / direct | median / direct | median / job floor |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for c in order:
    t = times[c]
    mean, med, sd = statistics.fmean(t), statistics.median(t), statistics.stdev(t)
    same = f"{med / gmed:.2f}×" if c.startswith(("envshim", "job floor", "supervised")) else ""
    print(f"| {c} | {len(t)} | {us(mean):.0f} ± {us(sd):.0f} | {us(med):.0f} | {us(min(t)):.0f} "
          f"| {mean / bmean:.2f}× | {med / bmed:.2f}× | {same} |")
EOF
say ""

# --- 5b. the start-up targets -----------------------------------------------------------------
log "instructions and page faults"
instr=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$ENVSHIM" check --manifest "$M" 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
# One /usr/bin/time figure (FORMAT) of COMMAND over 20 runs: the fewest
# (PICK=min) or the most (PICK=max). The process and what it execs count.
time_stat() {  # FORMAT PICK COMMAND...
    local fmt=$1 pick=$2 best='' v
    shift 2
    for _ in $(seq 20); do
        /usr/bin/time -f "$fmt" -o "$OUT/time.txt" "$@" >/dev/null 2>&1
        v=$(tail -1 "$OUT/time.txt")
        if [ -z "$best" ] || { [ "$pick" = min ] && [ "$v" -lt "$best" ]; } || { [ "$pick" = max ] && [ "$v" -gt "$best" ]; }; then
            best=$v
        fi
    done
    echo "$best"
}
faults() { time_stat '%R' min "$@"; }  # minor page faults, the fewest of 20 runs
rss() { time_stat '%M' max "$@"; }     # peak RSS in KiB, the largest of 20 runs
f_run=$(faults "$ENVSHIM" run --manifest "$M" -- "$NOOP")
f_init=$(faults "$ENVSHIM" run --init --manifest "$M" -- "$NOOP")
f_floor=$(faults "$OUT/execenv" "$OUT/final-env.txt" "$NOOP")
f_tini=$(faults tini-static -s -- "$NOOP")
f_noop=$(faults "$NOOP")
python3 - "$OUT" "$ROUNDS" "$instr" "$f_run" "$f_init" "$f_floor" "$f_tini" "$f_noop" "$(stat -c %s "$ENVSHIM")" <<'EOF' | tee -a "$REPORT"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
instr, f_run, f_init, f_floor, f_tini, f_noop, size = map(int, sys.argv[3:])
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/hyperfine-{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
floor = next(v for k, v in med.items() if k.startswith("job floor"))
sup_floor = next((v for k, v in med.items() if k.startswith("supervised job floor")), None)
run = med["envshim run --manifest M -- noop"]
init = med.get("envshim run --init --manifest M -- noop")
bare, tini = med["envshim run -- noop (no manifest)"], med["tini-static -s -- noop"]
print()
print("### The start-up targets")
print()
print("| figure | measured | target | holds? |")
print("|---|---:|---:|---|")
def row(name, shown, target, ok):
    print(f"| {name} | {shown} | {target} | {'yes' if ok else '**no**'} |")
row("`run` median / job-floor median", f"{run / floor:.2f}× ({run:.0f} / {floor:.0f} µs)", "≤ 1.5×", run / floor <= 1.5)
row("instructions of `check` (callgrind)", f"{instr:,}", "≤ 1,500,000", instr <= 1_500_000)
row("minor page faults of `run` (with the no-op it execs; min of 20)",
    f"{f_run} (job floor {f_floor}, tini-static {f_tini}, no-op alone {f_noop})", "≤ 120", f_run <= 120)
row("release amd64 binary", f"{size:,} B", "≤ 500,000 B", size <= 500_000)
row("`run` without a manifest vs `tini-static -s` (medians)", f"{bare:.0f} vs {tini:.0f} µs", "faster", bare < tini)
if init is not None:
    row("`run --init` minus `run` (medians)",
        f"{init - run:+.0f} µs (faults {f_init} vs {f_run}"
        + (f"; the supervised job floor minus the job floor: {sup_floor - floor:+.0f} µs)" if sup_floor is not None else ")"),
        "≤ +150 µs", init - run <= 150)
EOF
say ""

# --- 6. memory ------------------------------------------------------------------------------
log "peak RSS"
rss_check=$(rss "$ENVSHIM" check --manifest "$M")
rss_version=$(rss "$ENVSHIM" --version)
rss_noop=$(rss "$NOOP")
say "### Peak RSS (max of 20 runs, /usr/bin/time ru_maxrss)"
say ""
say "| process | peak RSS |"
say "|---|---:|"
say "| envshim check --manifest M | $rss_check KiB |"
say "| envshim --version | $rss_version KiB |"
say "| static no-op | $rss_noop KiB |"
if command -v valgrind >/dev/null; then
    valgrind --tool=massif --pages-as-heap=yes --massif-out-file="$OUT/massif.out" \
        "$ENVSHIM" check --manifest "$M" >/dev/null 2>&1 || true
    peak=$(grep -o 'mem_heap_B=[0-9]*' "$OUT/massif.out" | cut -d= -f2 | sort -n | tail -1)
    say "| envshim check, all mapped pages (valgrind massif --pages-as-heap) | $((peak / 1024)) KiB |"
fi
say ""

# --- 7. size ------------------------------------------------------------------------------
log "size"
size=$(stat -c %s "$ENVSHIM")
tmp=$(mktemp); cp "$ENVSHIM" "$tmp"; strip "$tmp"; stripped=$(stat -c %s "$tmp"); rm -f "$tmp"
say "### Binary"
say ""
say "- $(file -b "$ENVSHIM" | cut -d, -f1-6)"
say "- as built: $size bytes; stripped: $stripped bytes ($((stripped / 1000)) KB, $((stripped / 1024)) KiB)"
say ""

# --- 8. system calls ------------------------------------------------------------------------
log "system calls"
strace -f -o "$OUT/strace.txt" -- "$ENVSHIM" run --manifest "$M" -- "$NOOP"
strace -f -c -o "$OUT/strace-c.txt" -- "$ENVSHIM" run --manifest "$M" -- "$NOOP"
python3 - "$OUT" "$NOOP" <<'EOF' | tee -a "$REPORT"
import collections, re, sys
out, noop = sys.argv[1], sys.argv[2]
lines = [l.rstrip("\n") for l in open(f"{out}/strace.txt")]
calls = []
for l in lines:
    m = re.match(r"^(\d+)\s+(.*)$", l)
    body = m.group(2) if m else l
    if body.startswith(("+++", "---")):
        continue
    calls.append(body)
# From envshim's own execve (first line) to the execve of the no-op, inclusive of the latter.
start = 1
end = next(i for i, c in enumerate(calls) if i > 0 and c.startswith(f'execve("{noop}"'))
seg = calls[start:end + 1]
with open(f"{out}/syscalls.txt", "w") as f:
    f.write("\n".join(seg) + "\n")
counts = collections.Counter(re.match(r"^(?:<\.\.\. )?(\w+)", c).group(1) for c in seg)
print(f"### System calls between envshim's start and the program's exec: {len(seg)}")
print()
print("(strace -f; envshim's own execve not counted, the final execve counted)")
print()
print("| syscall | count |")
print("|---|---:|")
for name, n in counts.most_common():
    print(f"| {name} | {n} |")
print()
print("```")
for c in seg:
    print(c if len(c) <= 140 else c[:137] + "...")
print("```")
EOF
say ""
say "strace -f -c of the same run (it also counts envshim's own execve and the no-op's 2 start-up calls):"
say ""
say '```'
grep -v '^$' "$OUT/strace-c.txt" | tee -a "$REPORT"
say '```'
log "report: $REPORT"
