#!/usr/bin/env bash
# A short fuzz run of every target (CI): replays the seeds and every past
# finding (fuzz/regressions/), then fuzzes each target for FUZZ_SECONDS
# (default 30), one job each, two targets at a time, niced. Installs the nightly toolchain and
# cargo-fuzz when missing. Fails on any crash or broken invariant.
#
#   bash fuzz/smoke.sh               # every target, 30 s each
#   FUZZ_SECONDS=600 bash fuzz/smoke.sh expand
set -euo pipefail
cd "$(dirname "$0")"

seconds="${FUZZ_SECONDS:-30}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(envfile expand manifest fmt)

if ! cargo +nightly --version >/dev/null 2>&1; then
  echo "fuzz smoke: installing the nightly toolchain (cargo-fuzz needs it)"
  rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz smoke: installing cargo-fuzz"
  cargo install --locked cargo-fuzz
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Built once for every target, then run two at a time (one core each: each
# target gets its FUZZ_SECONDS of a core, in half the wall time on two cores).
nice -n 10 cargo +nightly fuzz build --debug-assertions >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; exit 1; }

fuzz() { # TARGET: runs it; its log in $work/TARGET.log, its findings in $work/TARGET-found/
  local t=$1 input=$1
  # fmt reads env files: it starts from the env-file target's seeds and dictionary.
  [ "$t" != fmt ] || input=envfile
  mkdir -p "$work/$t" "$work/$t-found" "regressions/$t"
  echo "fuzz smoke: $t for ${seconds}s (seeds: $(ls "seeds/$input" | wc -l), regressions: $(ls "regressions/$t" | wc -l))"
  # New inputs go to the temporary first corpus directory; the committed ones stay as they are.
  # Debug assertions on: integer overflow is a finding too.
  nice -n 10 cargo +nightly fuzz run --debug-assertions "$t" "$work/$t" "seeds/$input" "regressions/$t" -- \
    -dict="$input.dict" -max_len=8192 -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/$t-found/" >"$work/$t.log" 2>&1
}

failed=0
for ((i = 0; i < ${#targets[@]}; i += 2)); do
  pair=("${targets[@]:i:2}") pids=()
  for t in "${pair[@]}"; do fuzz "$t" & pids+=($!); done
  for k in "${!pair[@]}"; do
    t=${pair[k]}
    if wait "${pids[k]}"; then
      runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")"
      echo "fuzz smoke: $t ok, ${runs:-?} runs"
    else
      tail -n 40 "$work/$t.log" >&2
      mkdir -p artifacts/"$t"
      cp "$work/$t-found"/* artifacts/"$t"/ 2>/dev/null || true
      echo "fuzz smoke: $t FAILED (inputs kept in fuzz/artifacts/$t/)" >&2
      failed=$((failed + 1))
    fi
  done
done
[ "$failed" = 0 ] || { echo "fuzz: $((${#targets[@]} - failed)) passed, $failed failed" >&2; exit 1; }
echo "fuzz: ${#targets[@]} passed, 0 failed"
