#!/usr/bin/env bash
# The README's two verify-and-install blocks (Install), run as a user pastes them
# (`bash -s`: no -e of ours) against a local release signed with a throwaway key:
# curl copies from it, `install` and `kubectl` are stand-ins that record their call.
# Each block must install a good release, and stop before installing when the
# signature fails, a file does not match SHA256SUMS, or the signature is valid but
# names another version (an older release). Needs minisign (tests/e2e/deps.sh).
#   bash tests/readme-verify.sh
set -euo pipefail
source "$(dirname "$0")/e2e/lib.sh"
command -v minisign >/dev/null || fail "minisign not found (bash tests/e2e/deps.sh installs it)"
WORK=$(mktemp -d /tmp/envshim-readme-verify.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# The blocks: the fenced sh block after each marker naming this script.
python3 - "$ROOT/README.md" "$WORK" <<'EOF'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
n = 0
for i, line in enumerate(lines):
    if "docs-test: covered tests/readme-verify.sh" in line:
        assert lines[i + 1].startswith("```sh"), lines[i + 1]
        end = lines.index("```", i + 2)
        n += 1
        open(f"{sys.argv[2]}/block{n}.sh", "w").write("\n".join(lines[i + 2:end]) + "\n")
assert n == 2, f"{n} blocks marked for tests/readme-verify.sh, want 2"
EOF
version=$(sed -n 's/^  version=\([^ ]*\) .*/\1/p' "$WORK/block1.sh")
readme_key=$(sed -n 's/^  version=[^ ]* key=\(.*\)/\1/p' "$WORK/block1.sh")
[ -n "$version" ] && [ "$readme_key" = "$(sed -n 2p "$ROOT/release/minisign.pub")" ] \
  || fail "block 1: no version= and key= line naming release/minisign.pub's key"

# Stand-ins on PATH: curl serves $RELEASE, install and kubectl record their call.
mkdir "$WORK/bin"
cat >"$WORK/bin/curl" <<'EOF'
#!/bin/sh
for a in "$@"; do case $a in http*) cp "$RELEASE/${a##*/}" . || exit 22 ;; esac; done
EOF
printf '#!/bin/sh\necho "$(basename "$0") $*" >>"$CALLS"\n' >"$WORK/bin/install"
cp "$WORK/bin/install" "$WORK/bin/kubectl"
chmod +x "$WORK/bin"/*
minisign -G -W -p "$WORK/k.pub" -s "$WORK/k.key" >/dev/null
minisign -G -W -p "$WORK/other.pub" -s "$WORK/other.key" >/dev/null

release() { # DIR SIGNED-VERSION KEY: a release of made-up files, signed
  mkdir -p "$1"
  for f in envshim-linux-amd64 kubectl-envshim-linux-amd64 envshim.krew.yaml; do echo "$f $SENTINEL" >"$1/$f"; done
  (cd "$1" && sha256sum envshim-linux-amd64 kubectl-envshim-linux-amd64 envshim.krew.yaml >SHA256SUMS)
  minisign -S -s "$3" -m "$1/SHA256SUMS" -t "envshim $2 commit 0123abc image ghcr.io/envshim/envshim@sha256:0" </dev/null >/dev/null
}
release "$WORK/good" "$version" "$WORK/k.key"
release "$WORK/older" "0.0.1" "$WORK/k.key"
release "$WORK/forged" "$version" "$WORK/other.key"
release "$WORK/tampered" "$version" "$WORK/k.key"
echo "tampered $SENTINEL" >"$WORK/tampered/envshim-linux-amd64"
echo "tampered $SENTINEL" >"$WORK/tampered/envshim.krew.yaml"
# After signing: the sums no longer match the signature.
release "$WORK/resummed" "$version" "$WORK/k.key"
echo "tampered" >"$WORK/resummed/envshim-linux-amd64"; echo "tampered" >"$WORK/resummed/envshim.krew.yaml"
(cd "$WORK/resummed" && sha256sum envshim-linux-amd64 kubectl-envshim-linux-amd64 envshim.krew.yaml >SHA256SUMS)

paste() { # BLOCK RELEASE: runs the block as pasted into bash; prints what it installed
  local d=$WORK/run-$1-$2; mkdir "$d"
  sed "s|$readme_key|$(sed -n 2p "$WORK/k.pub")|" "$WORK/$1.sh" >"$d/pasted.sh"
  (cd "$d" && PATH="$WORK/bin:$PATH" RELEASE="$WORK/$2" CALLS="$d/calls" bash -s <pasted.sh >out 2>err) || true
  cat "$d/calls" 2>/dev/null || true
}
for block in block1 block2; do
  want=$([ $block = block1 ] && echo "install -m 0755 envshim-linux-amd64 /usr/local/bin/envshim" || echo "kubectl krew install --manifest=envshim.krew.yaml")
  got=$(paste $block good); [ "$got" = "$want" ] || fail "$block, a good release: want '$want', got '$got'"
  grep -qxF "signed: envshim $version commit 0123abc image ghcr.io/envshim/envshim@sha256:0" "$WORK/run-$block-good/out" || fail "$block: the trusted comment is not shown"
  ok "$block: a good release is installed, its trusted comment shown"
  for bad in forged resummed tampered older; do
    [ -z "$(paste $block $bad)" ] || fail "$block, $bad release: installed: $(cat "$WORK/run-$block-$bad/calls")"
    ok "$block: a $bad release stops the block before installing"
  done
  grep -qF "not envshim $version: envshim 0.0.1" "$WORK/run-$block-older/err" || fail "$block: an older release is not named"
done
