#!/usr/bin/env bash
# Where envshim's bytes go, and what build choices cost in size and start-up time.
#
#   bench/size.sh                # all variants (a few minutes: one release build each)
#   VARIANTS="shipped optz" bench/size.sh
#
# Each variant is built from a copy of the work tree (Cargo.toml edited in the
# copy only, never in the repo) with its own target directory, for
# x86_64-unknown-linux-musl. For each: the stripped size, the instructions
# `envshim check` executes on the start-up benchmark's manifest (callgrind,
# deterministic), and the start-up time of `envshim run --manifest M -- noop`
# (hyperfine -N, pooled medians). Then `cargo bloat --crates` and the largest
# functions of the shipped configuration.
#
# Environment: OUT (default target/size-bench), RUNS (default 300), ROUNDS (default 2),
# VARIANTS (default: all below), NO_BLOAT=1 to skip cargo bloat.
# Exits 1 when a variant fails to build (after measuring the others).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/target/size-bench}
RUNS=${RUNS:-300}
ROUNDS=${ROUNDS:-2}
TARGET=x86_64-unknown-linux-musl
ALL="shipped opt3 optz opts-nopie opts-nounwind clap-minimal clap-default"
VARIANTS=${VARIANTS:-$ALL}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v musl-gcc >/dev/null || need+=(musl-tools)
command -v valgrind >/dev/null || need+=(valgrind)
command -v strace >/dev/null || need+=(strace)
[ -x /usr/bin/time ] || need+=(time)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
rustup target list --installed 2>/dev/null | grep -qx "$TARGET" || rustup target add "$TARGET"

# The same no-op and inputs as bench/startup.sh.
printf 'int main(void) {\n    return 0;\n}\n' >"$OUT/noop.c"
musl-gcc -static -O2 -s -o "$OUT/noop" "$OUT/noop.c"
rm -rf "$OUT/in" && python3 "$ROOT/bench/gen_inputs.py" "$OUT/in"
M=$OUT/in/manifest.json

# A copy of the work tree (sources, manifests, lock file; no target, no .git).
SRC=$OUT/src
rm -rf "$SRC" && mkdir -p "$SRC"
(cd "$ROOT" && tar --exclude=./target --exclude=./.git --exclude=./fuzz --exclude=./dist -cf - .) | tar -C "$SRC" -xf -
cp "$SRC/Cargo.toml" "$OUT/Cargo.toml.orig"

# clap's feature list as the manifest has it, to derive the variants from.
clap_line=$(grep -E '^clap *=' "$OUT/Cargo.toml.orig")

variant_env() {  # prints: opt-level|rustflags|clap line
    case $1 in
        shipped) echo "||" ;;
        opt3) echo "3||" ;;
        optz) echo "z||" ;;
        opts-nopie) echo "|-C relocation-model=static|" ;;
        opts-nounwind) echo "|-C force-unwind-tables=no|" ;;
        clap-minimal) echo '||clap = { version = "4.5", default-features = false, features = ["std", "derive"] }' ;;
        clap-default) echo '||clap = { version = "4.5", features = ["derive"] }' ;;
        *) echo "unknown variant $1" >&2; exit 1 ;;
    esac
}

for v in $VARIANTS; do variant_env "$v" >/dev/null || exit 2; done

declare -A BIN
failed=()  # variants that did not build: measured without them, then exit 1
for v in $VARIANTS; do
    IFS='|' read -r opt flags clap <<<"$(variant_env "$v")"
    rm -rf "$SRC/src" && cp -r "$ROOT/src" "$SRC/src"
    cp "$OUT/Cargo.toml.orig" "$SRC/Cargo.toml"
    if [ -n "$clap" ]; then
        python3 - "$SRC/Cargo.toml" "$clap_line" "$clap" <<'EOF'
import sys
p, old, new = sys.argv[1:]
s = open(p).read()
assert old in s
open(p, "w").write(s.replace(old, new, 1))
EOF
    fi
    echo "== build $v (opt-level=${opt:-as shipped} rustflags='${flags}' ${clap:+clap: $clap})" >&2
    (
        cd "$SRC"
        export CARGO_TARGET_DIR="$OUT/target-$v"
        [ -n "$opt" ] && export CARGO_PROFILE_RELEASE_OPT_LEVEL="$opt"
        [ -n "$flags" ] && export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="$flags"
        if ! nice cargo build --release --target "$TARGET" -p envshim --bin envshim >"$OUT/build-$v.log" 2>&1; then
            echo "   build failed (see $OUT/build-$v.log)" >&2
            exit 1
        fi
    ) || { failed+=("$v"); continue; }
    cp "$OUT/target-$v/$TARGET/release/envshim" "$OUT/envshim-$v"
    strip "$OUT/envshim-$v"
    BIN[$v]=$OUT/envshim-$v
done
cp "$OUT/Cargo.toml.orig" "$SRC/Cargo.toml"
rm -rf "$SRC/src" && cp -r "$ROOT/src" "$SRC/src"

# Start-up time, all variants in the same hyperfine runs.
args=(-n "direct no-op" "$OUT/noop")
for v in $VARIANTS; do
    [ -n "${BIN[$v]:-}" ] && args+=(-n "$v" "${BIN[$v]} run --manifest $M -- $OUT/noop")
done
echo "== hyperfine (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
rm -f "$OUT"/hf-*.json
for r in $(seq 1 "$ROUNDS"); do
    hyperfine -N --style none --runs "$RUNS" --warmup 30 --export-json "$OUT/hf-$r.json" "${args[@]}" >"$OUT/hf-$r.log" 2>&1
done

{
    echo "| variant | stripped bytes | vs shipped | instructions (check) | peak RSS (check) | page faults (run) | syscalls (start to exec) | median start-up (µs) | vs direct |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for v in $VARIANTS; do
        b=${BIN[$v]:-}
        if [ -z "$b" ]; then echo "| $v | build failed | | | | | | | |"; continue; fi
        ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$b" check --manifest "$M" 2>&1 | sed -n 's/.*refs: *//p' | tr -d ,)
        /usr/bin/time -f '%M' -o "$OUT/time.txt" "$b" check --manifest "$M"
        rss=$(tail -1 "$OUT/time.txt")
        /usr/bin/time -f '%R' -o "$OUT/time.txt" "$b" run --manifest "$M" -- "$OUT/noop"
        faults=$(tail -1 "$OUT/time.txt")
        strace -f -o "$OUT/strace-$v.txt" "$b" run --manifest "$M" -- "$OUT/noop"
        # System calls after envshim's own execve, up to and including the no-op's.
        calls=$(awk '/execve\(/ { n++; if (n == 2) { c++; exit } next } n == 1 && !/\+\+\+|---/ { c++ } END { print c }' "$OUT/strace-$v.txt")
        echo "$v $(stat -c %s "$b") $ir $rss $faults $calls"
    done
} | python3 -c '
import json, statistics, sys, glob
out, rounds = sys.argv[1], int(sys.argv[2])
times = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/hf-{r}.json"))["results"]:
        times.setdefault(res["command"], []).extend(res["times"])
med = {k: statistics.median(v) for k, v in times.items()}
base = med["direct no-op"]
shipped = None
for line in sys.stdin:
    f = line.split()
    if line.startswith("|"):
        print(line, end=""); continue
    name, size, ir, rss, faults, calls = f[0], int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5])
    shipped = shipped or size
    print(f"| {name} | {size:,} | {size / shipped:.3f} | {ir:,} | {rss} KiB | {faults} | {calls} | {med[name] * 1e6:.0f} | {med[name] / base:.2f}x |")
print(f"| direct no-op | | | | | | | {base * 1e6:.0f} | 1.00x |")
' "$OUT" "$ROUNDS" | tee "$OUT/variants.md"

if [ "${NO_BLOAT:-0}" != 1 ]; then
    command -v cargo-bloat >/dev/null || cargo install cargo-bloat
    (
        cd "$SRC"
        export CARGO_TARGET_DIR="$OUT/target-bloat" CARGO_PROFILE_RELEASE_STRIP=false
        nice cargo bloat --release --target "$TARGET" --bin envshim --crates -n 20 2>/dev/null >"$OUT/bloat-crates.txt"
        nice cargo bloat --release --target "$TARGET" --bin envshim -n 40 2>/dev/null >"$OUT/bloat-functions.txt"
    )
    echo
    cat "$OUT/bloat-crates.txt"
    echo
    cut -c1-160 "$OUT/bloat-functions.txt"
    echo
    echo "sections of the shipped binary (size -A):"
    size -A "${BIN[shipped]:-$OUT/target-bloat/$TARGET/release/envshim}" | awk 'NR > 2 && $2 > 1000'
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "bench/size.sh: FAILED: ${#failed[@]} variant(s) did not build: ${failed[*]} (logs: $OUT/build-VARIANT.log)" >&2
    exit 1
fi
