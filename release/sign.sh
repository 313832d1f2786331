#!/usr/bin/env bash
# Signs a release that release/build.sh --unsigned wrote, and checks the signature:
#   bash release/sign.sh --dir DIR --key MINISIGN_SECRET_KEY --comment TEXT [--pub PUBLIC_KEY]
#
# It compiles and runs nothing of the release: sha256sum checks DIR's files against
# DIR/SHA256SUMS, minisign signs SHA256SUMS into SHA256SUMS.minisig with TEXT as the
# trusted comment (what a user reads after verifying: the version, commit and image),
# then verifies it with the public key (default release/minisign.pub). The release
# workflow runs it in a job of its own, the only one that gets the key, after the
# build job (which never sees it) has handed over its files.
# Needs: minisign, sha256sum.
set -euo pipefail
usage() { echo "usage: release/sign.sh --dir DIR --key MINISIGN_SECRET_KEY --comment TEXT [--pub PUBLIC_KEY]" >&2; exit 2; }
die() { echo "sign: ERROR: $*" >&2; exit 1; }
dir= key= comment= pub=
while [ $# -gt 0 ]; do
  case $1 in
    --dir|--key|--comment|--pub) [ $# -ge 2 ] && [ -n "$2" ] || usage
      case $1 in --dir) dir=$2 ;; --key) key=$2 ;; --comment) comment=$2 ;; --pub) pub=$2 ;; esac; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$dir" ] && [ -n "$key" ] && [ -n "$comment" ] || usage
[ -n "$pub" ] || pub=$(dirname "$0")/minisign.pub
command -v minisign >/dev/null || die "minisign not found (apt-get install minisign)"
[ -f "$dir/SHA256SUMS" ] || die "$dir/SHA256SUMS: no such file (release/build.sh --unsigned writes it)"
(cd "$dir" && sha256sum --quiet --strict -c SHA256SUMS) || die "$dir: the files do not match SHA256SUMS"
minisign -S -s "$key" -m "$dir/SHA256SUMS" -x "$dir/SHA256SUMS.minisig" -t "$comment" </dev/null >/dev/null \
  || die "minisign could not sign with --key"
minisign -Vqm "$dir/SHA256SUMS" -p "$pub" >/dev/null || die "the signature does not verify with $pub"
echo "sign: $dir/SHA256SUMS.minisig: $comment"
