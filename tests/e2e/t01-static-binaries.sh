#!/usr/bin/env bash
# The release binaries are static, stripped, checksummed, and run on their architecture.
source "$(dirname "$0")/lib.sh"
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"
ok "SHA256SUMS matches"
for f in "$DIST"/{envshim,kubectl-envshim}-linux-{amd64,arm64}; do
  grep -q " ${f##*/}\$" "$DIST/SHA256SUMS" || fail "$f is not in SHA256SUMS"
  ! readelf -lW "$f" | grep -q INTERP || fail "$f has an ELF interpreter"
  ! readelf -dW "$f" | grep -q NEEDED || fail "$f needs shared libraries"
  ! readelf -SW "$f" | grep -q ' \.symtab ' || fail "$f is not stripped"
  ok "$f: static, stripped, $(stat -c %s "$f") bytes"
done
for bin in envshim kubectl-envshim; do
  readelf -hW "$DIST/$bin-linux-amd64" | grep -q 'Advanced Micro Devices X86-64' || fail "amd64 $bin is not x86-64"
  readelf -hW "$DIST/$bin-linux-arm64" | grep -q 'AArch64' || fail "arm64 $bin is not AArch64"
done
ok "machine types"
v_amd64=$("$DIST/envshim-linux-amd64" --version)
v_arm64=$(qemu-aarch64-static "$DIST/envshim-linux-arm64" --version)
[ "$(head -1 <<<"$v_amd64")" = "envshim $VERSION" ] || fail "amd64 --version: $v_amd64"
[ "$(head -1 <<<"$v_arm64")" = "envshim $VERSION" ] || fail "arm64 --version: $v_arm64"
grep -qx 'target: x86_64-unknown-linux-[a-z]*' <<<"$v_amd64" || fail "amd64 --version target: $v_amd64"
grep -qx 'target: aarch64-unknown-linux-musl' <<<"$v_arm64" || fail "arm64 --version target: $v_arm64"
[ "$("$DIST/envshim-linux-amd64" -V)" = "envshim $VERSION" ] || fail "amd64 -V"
ok "--version is 'envshim $VERSION' then commit, target and rustc on both"
# The completions and man pages generated beside them (not in the binaries).
for f in completions/envshim.bash completions/_envshim completions/envshim.fish man/envshim.1 man/envshim-run.1; do
  [ -s "$DIST/$f" ] || fail "$DIST/$f is missing"
done
ok "completions and man pages in $DIST"
[ "$("$DIST/kubectl-envshim-linux-amd64" --version)" = "kubectl-envshim $VERSION" ] || fail "kubectl-envshim amd64 --version"
[ "$(qemu-aarch64-static "$DIST/kubectl-envshim-linux-arm64" --version)" = "kubectl-envshim $VERSION" ] || fail "kubectl-envshim arm64 --version"
ok "--version is 'kubectl-envshim $VERSION' on both"
