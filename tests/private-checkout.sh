#!/usr/bin/env bash
# The tests that drop privileges (they run envshim as uid 65534: every tests/*.rs
# that calls `.unprivileged()`, `.uid(` or `setuid(`), from a copy of this checkout in a private
# directory (mode 0700, as /root and many home directories are), where that user
# cannot reach the binary cargo builds. Part of tests/all.sh. Needs root: as
# another user those tests do not drop privileges and there is nothing to check.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "private-checkout: not root: the tests drop no privileges, nothing to check"; exit 0; }
dir=$(mktemp -d /tmp/envshim-private.XXXXXX) # mode 0700
trap 'rm -rf "$dir"' EXIT
[ "$(stat -c %a "$dir")" = 700 ] || { echo "private-checkout: $dir is not mode 0700" >&2; exit 1; }
# the working tree as it is (committed or not), without build outputs
git ls-files -z --cached --others --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null |
  tar -C "$dir" -xf -
cd "$dir"
mapfile -t suites < <(grep -lE 'unprivileged\(\)|\.uid\(|setuid\(' tests/*.rs | xargs -n1 basename | sed 's/\.rs$//')
[ ${#suites[@]} -gt 0 ] || { echo "private-checkout: no test drops privileges?" >&2; exit 1; }
echo "private-checkout: cargo test ${suites[*]} in $dir (mode 0700)"
cargo test --offline --quiet --no-fail-fast $(printf -- '--test %s ' "${suites[@]}")
