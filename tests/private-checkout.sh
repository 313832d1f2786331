#!/usr/bin/env bash
# The tests that drop privileges (they run envshim as uid 65534: every module of
# tests/tests.rs, tests/*.rs or tests/*/*.rs, that calls `.unprivileged()`,
# `.uid(` or `setuid(`), from a copy of this checkout in a private
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
root=$PWD
cd "$dir"
# each file's module path in the one test binary: tests/a.rs is a::, tests/a/b.rs is a::b::
mapfile -t modules < <(grep -lE 'unprivileged\(\)|\.uid\(|setuid\(' tests/*.rs tests/*/*.rs |
  grep -v '^tests/common/' | sed -e 's|^tests/||' -e 's|\.rs$||' -e 's|/|::|g' -e 's|$|::|')
[ ${#modules[@]} -gt 0 ] || { echo "private-checkout: no test drops privileges?" >&2; exit 1; }
# The dependencies as the checkout's own build compiled them, linked (not copied)
# into the private target directory, so that cargo compiles only envshim's own
# crates (the compile of the dependencies was most of this stage's time). Their
# outputs are left out of the links, and the fingerprints copied: what cargo
# writes here is never written through a link into the checkout's target/.
if [ -d "$root/target/debug/deps" ]; then
  mkdir -p target/debug
  cp -al "$root/target/debug/deps" "$root/target/debug/build" target/debug/
  cp -a "$root/target/debug/.fingerprint" target/debug/
  rm -rf target/debug/deps/*envshim* target/debug/build/*envshim*
fi
echo "private-checkout: cargo test ${modules[*]} in $dir (mode 0700)"
cargo test --offline --quiet --no-fail-fast -p envshim --test tests -- --include-ignored "${modules[@]}"
