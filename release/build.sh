#!/usr/bin/env bash
# Builds a release of envshim (README.md, Install) from a clean checkout, into an empty DIR:
#   bash release/build.sh --out DIR [--image REPO] [--key MINISIGN_SECRET_KEY | --unsigned]
#
#   envshim-linux-{amd64,arm64}            the shim, static (musl-build.sh)
#   kubectl-envshim-linux-{amd64,arm64}    the converter, static; its default --shim-image
#                                          is REPO@sha256:DIGEST of the image below
#   kubectl-envshim-linux-{amd64,arm64}.tar.gz   the converter and LICENSE, for krew
#   envshim.krew.yaml                      krew's plugin manifest (sha256 per platform)
#   envshim.cdx.json, kubectl-envshim.cdx.json   SBOMs (CycloneDX JSON, cargo-cyclonedx,
#                                          from Cargo.lock): every crate compiled into each
#   oci/                                   the multi-arch image (linux/amd64 + arm64) as an
#                                          OCI layout, tag VERSION (images/build.sh)
#   kubectl_complete-envshim               kubectl's completion of `kubectl envshim` (1.26+; on PATH)
#   completions/, man/                     shell completions and man pages of both binaries
#   SHA256SUMS, SHA256SUMS.minisig         every file above but oci/, signed with minisign
#                                          (release/sign.sh; no .minisig with --unsigned)
#   *.pub                                  only without --key: the throwaway key's public key
#
# REPO: --image, else the one line of release/image (the forge's registry), with a
# warning, at the start and the end: that digest exists there only once pushed.
# --key: an unencrypted minisign secret key (the forge's secret); it must be the one
# whose public key is committed as release/minisign.pub, or nothing is built. Without
# --key, a throwaway key pair signs, and its public key is left in DIR. --unsigned: no
# signature and no key: the release workflow's build job, which never holds the key
# (cargo runs every dependency's build script), leaves signing to release/sign.sh in a
# job of its own.
# Reproducible: SOURCE_DATE_EPOCH is the commit's time; the same commit built in
# another directory at another time gives the same bytes (tests/release.sh checks).
# Needs: what musl-build.sh and images/build.sh need, cargo-cyclonedx, and minisign
# unless --unsigned (tests/e2e/deps.sh installs them all; the release workflow, only
# these). musl-build.sh runs in release mode: the pinned nightly or nothing.
set -euo pipefail
usage() { echo "usage: release/build.sh --out DIR [--image REPO] [--key MINISIGN_SECRET_KEY | --unsigned]" >&2; exit 2; }
die() { echo "release: ERROR: $*" >&2; exit 1; }
out= image= key= unsigned=
while [ $# -gt 0 ]; do
  case $1 in
    --unsigned) unsigned=1; shift ;;
    --out|--image|--key) [ $# -ge 2 ] && [ -n "$2" ] || usage
      case $1 in --out) out=$2 ;; --image) image=$2 ;; --key) key=$2 ;; esac; shift 2 ;;
    *) usage ;;
  esac
done
[ -n "$out" ] || usage
[ -z "$unsigned" ] || [ -z "$key" ] || usage
[ -z "$key" ] || key=$(realpath -e -- "$key") || die "--key: no such file"
mkdir -p -- "$out"
out=$(cd -- "$out" && pwd)
cd "$(dirname "$0")/.."
# Without --image the converter names the project's repository, by the digest this
# build makes: a digest that exists there only once this build's oci/ is pushed.
unpushed=
if [ -z "$image" ]; then
  image=$(head -1 release/image)
  unpushed="release: WARNING: no --image: the converter's default --shim-image is $image@sha256:<this build's digest>, which exists only once this build's oci/ is pushed there (skopeo copy --all oci:$out/oci:VERSION docker://$image:VERSION); until then every pod it converts fails to pull its initContainer's image. Give --image REPO for a repository you push to."
  echo "$unpushed" >&2
fi
[ -z "$(ls -A "$out")" ] || die "--out $out is not empty"
# A fully qualified repository, never a short name a node would resolve on its own:
# a registry host (with a dot or a port, or localhost), a path, no tag, no digest.
[[ $image =~ ^(([a-z0-9-]+\.)+[a-z0-9-]+(:[0-9]+)?|[a-z0-9-]+:[0-9]+|localhost(:[0-9]+)?)(/[a-z0-9]+([._-][a-z0-9]+)*)+$ ]] \
  || die "image repository '$image': want REGISTRY-HOST/PATH (a host with a dot or a port; no tag, no digest)"
# What is released is a commit: nothing modified, nothing untracked.
[ -z "$(git status --porcelain)" ] || die "the checkout has changes or untracked files: a release is built from a clean commit"
for c in $([ -n "$unsigned" ] || echo minisign) cargo-cyclonedx jq umoci skopeo; do command -v "$c" >/dev/null || die "$c not found (bash tests/e2e/deps.sh installs it)"; done

started=$(date +%s)
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
SOURCE=$(sed -n 's/^repository *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
COMMIT=$(git rev-parse HEAD)
export SOURCE_DATE_EPOCH; SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
export TZ=UTC LC_ALL=C
work=$(mktemp -d /tmp/envshim-release.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The key first: a wrong key fails here, before half an hour of building.
if [ -n "$unsigned" ]; then
  echo "release: --unsigned: SHA256SUMS is left for release/sign.sh"
elif [ -n "$key" ]; then
  minisign -R -s "$key" -p "$work/key.pub" </dev/null >/dev/null || die "--key: not an unencrypted minisign secret key"
  [ "$(sed -n 2p "$work/key.pub")" = "$(sed -n 2p release/minisign.pub)" ] \
    || die "--key is not the key of release/minisign.pub (the public key users verify with)"
else
  key=$work/throwaway.key
  minisign -G -W -p "$out/envshim-throwaway.pub" -s "$key" >/dev/null
  echo "release: no --key: signing with a throwaway key; its public key is $out/envshim-throwaway.pub"
fi

echo "release: envshim $VERSION, commit $COMMIT, SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
bin=$work/bin
RELEASE=1 CLI_DOCS=0 BINS=envshim DIST=$bin ./musl-build.sh amd64 arm64
DIST=$bin OUT=$work/images IMAGE_ARCHS="amd64 arm64" images/build.sh
mv "$work/images/oci" "$out/oci"
digest=$(jq -r --arg t "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $t) | .digest' "$out/oci/index.json")
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "no image index tagged $VERSION in $out/oci"
ref=$image@$digest
# The converter names that image by default (kubectl-envshim/src/main.rs reads it at compile time).
KUBECTL_ENVSHIM_RELEASE_IMAGE=$ref RELEASE=1 CLI_DOCS=0 BINS=kubectl-envshim DIST=$bin ./musl-build.sh amd64 arm64
if [ "$(uname -m)" = x86_64 ]; then
  got=$(printf 'kind: Pod\nspec:\n  volumes: [{name: c, emptyDir: {}}]\n  containers: [{name: a, image: app, command: [/a], env: [{name: X, valueFrom: {fileKeyRef: {volumeName: c, path: a.env, key: X}}}]}]\n' \
    | env -u KUBECTL_ENVSHIM_SHIM_IMAGE "$bin/kubectl-envshim-linux-amd64" convert | sed -n 's/^ *image: //p' | grep -vx app || true)
  [ "$got" = "$ref" ] || die "the converter's default image is '$got', not $ref"
fi
for b in {envshim,kubectl-envshim}-linux-{amd64,arm64}; do install -m 0755 "$bin/$b" "$out/$b"; done
# Man pages and shell completions (tools/cli-docs.rs, from the command lines'
# definitions), and kubectl's plugin completion, an executable for PATH.
cargo run --quiet --locked --example cli-docs -- "$work/cli" >/dev/null
mv "$work/cli/completions/kubectl_complete-envshim" "$out/kubectl_complete-envshim"
cp -r "$work/cli/completions" "$work/cli/man" "$out/"
chmod 0644 "$out"/completions/* "$out"/man/*

# krew installs from an archive: the binary and the licence, files in a fixed order,
# owner, mode and time, and gzip without a name or time.
for arch in amd64 arm64; do
  s=$work/krew-$arch; mkdir -p "$s"
  install -m 0755 "$bin/kubectl-envshim-linux-$arch" "$s/kubectl-envshim"
  install -m 0644 LICENSE "$s/LICENSE"
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner --format=ustar \
    -C "$s" -cf - LICENSE kubectl-envshim | gzip -9n >"$out/kubectl-envshim-linux-$arch.tar.gz"
done
{
  cat <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: envshim
spec:
  version: v$VERSION
  homepage: $SOURCE
  shortDescription: Convert fileKeyRef workloads to run envshim on any cluster
  description: |
    kubectl envshim convert reads workloads written with native env[].valueFrom.fileKeyRef
    and wires them to run envshim (a static container entrypoint) on clusters without it.
    Its default envshim image is $ref.
  platforms:
EOF
  for arch in amd64 arm64; do
    cat <<EOF
  - selector:
      matchLabels:
        os: linux
        arch: $arch
    uri: $SOURCE/releases/download/v$VERSION/kubectl-envshim-linux-$arch.tar.gz
    sha256: $(sha256sum "$out/kubectl-envshim-linux-$arch.tar.gz" | cut -d' ' -f1)
    bin: kubectl-envshim
    files:
    - from: kubectl-envshim
      to: .
    - from: LICENSE
      to: .
EOF
  done
} >"$out/envshim.krew.yaml"

# SBOMs: what cargo compiles into each binary (no dev- or build-dependencies), from
# Cargo.lock, one per crate of the workspace (the musl targets have the same
# dependencies: tests/release.sh checks both). cargo-cyclonedx names the checkout's
# path in its references and a random serial number: the path becomes /envshim (as
# in the binaries) and the serial a UUID of the commit, so the files are reproducible.
serial=$(printf 'envshim %s %s' "$VERSION" "$COMMIT" | sha256sum | sed -E 's/^(.{8})(.{4}).(.{3}).(.{3})(.{12}).*/\1-\2-5\3-8\4-\5/')
cargo cyclonedx --quiet --format json --spec-version 1.5 --no-build-deps \
  --target x86_64-unknown-linux-musl --override-filename envshim-sbom >/dev/null
for crate in envshim kubectl-envshim; do
  f=$([ $crate = envshim ] && echo . || echo kubectl-envshim)/envshim-sbom.json
  jq --arg from "path+file://$PWD" --arg s "urn:uuid:$serial" \
    'walk(if type == "string" then (. / $from | join("path+file:///envshim")) else . end) | .serialNumber = $s' "$f" >"$out/$crate.cdx.json"
  rm -f "$f"
done
[ -z "$(git status --porcelain)" ] || die "the build left files in the checkout: $(git status --porcelain | head -3)"

(cd "$out" && sha256sum -- *-linux-* envshim.krew.yaml ./*.cdx.json kubectl_complete-envshim completions/* man/* | sed 's,  \./,  ,' >SHA256SUMS)
if [ -n "$unsigned" ]; then
  (cd "$out" && sha256sum --quiet --strict -c SHA256SUMS) || die "the release does not match its SHA256SUMS"
else
  if [ "$key" = "$work/throwaway.key" ]; then pub=$out/envshim-throwaway.pub; else pub=release/minisign.pub; fi
  bash release/sign.sh --dir "$out" --key "$key" --pub "$pub" --comment "envshim $VERSION commit $COMMIT image $ref" >/dev/null \
    || die "the release does not verify"
fi

echo "release: envshim $VERSION in $out ($(( $(date +%s) - started ))s)"
echo "  image: $ref (oci:$out/oci:$VERSION)"
sed 's/^/  /' "$out/SHA256SUMS"
[ -z "$unpushed" ] || echo "$unpushed" >&2
