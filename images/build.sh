#!/usr/bin/env bash
# Daemonless build of the envshim image (the same image as images/Dockerfile:
# FROM scratch, only /envshim, ENTRYPOINT ["/envshim"]) from the static
# binaries in dist/, with umoci and skopeo. No Docker engine needed.
#
# Usage: images/build.sh            (run ./musl-build.sh first)
# Env:   DIST=dist  OUT=$DIST/images  SOURCE_DATE_EPOCH=<last commit time, or 0>
#        IMAGE_ARCHS="amd64 arm64"  (default: each architecture whose binary is in $DIST,
#        so `./musl-build.sh amd64` then `images/build.sh` makes an amd64-only index)
#
# Writes:
#   $OUT/oci/                           OCI image layout, tags:
#       VERSION-amd64, VERSION-arm64    one image per architecture
#       VERSION                         image index (multi-arch) of them
#   $OUT/envshim-VERSION-ARCH.docker.tar  `docker load -i` tarballs, each tagged only
#                                       envshim:VERSION-ARCH (so loading both cannot
#                                       clobber a tag; `docker tag` the host's one)
# Push the multi-arch image with: skopeo copy --all oci:$OUT/oci:VERSION docker://REGISTRY/envshim:VERSION
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
DIST=${DIST:-dist}
OUT=${OUT:-$DIST/images}
VERSION=$(sed -n 's/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
SOURCE=$(sed -n 's/^repository *= *"\(.*\)"/\1/p' Cargo.toml | head -1)
REVISION=$(git rev-parse --verify -q HEAD 2>/dev/null || echo unknown)
: "${SOURCE_DATE_EPOCH:=$(git log -1 --format=%ct 2>/dev/null || echo 0)}"
CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
OCI=$OUT/oci
[ -n "$VERSION" ] || { echo "images/build.sh: no version in Cargo.toml" >&2; exit 1; }
if [ -z "${IMAGE_ARCHS:-}" ]; then
  IMAGE_ARCHS=$(for a in amd64 arm64; do [ ! -x "$DIST/envshim-linux-$a" ] || echo $a; done | xargs)
  [ -n "$IMAGE_ARCHS" ] || { echo "images/build.sh: no $DIST/envshim-linux-{amd64,arm64}: run ./musl-build.sh" >&2; exit 1; }
fi

rm -rf "$OCI" "$OUT"/envshim-*.docker.tar "$OUT/stage"
mkdir -p "$OUT/stage"
umoci init --layout "$OCI"

labels=(
  "org.opencontainers.image.title=envshim"
  "org.opencontainers.image.description=A tiny static container entrypoint: env files, fileKeyRef, \$(VAR) expansion, then execve."
  "org.opencontainers.image.version=$VERSION"
  "org.opencontainers.image.source=$SOURCE"
  "org.opencontainers.image.revision=$REVISION"
  "org.opencontainers.image.licenses=Apache-2.0"
  "org.opencontainers.image.created=$CREATED"
)
cfg=() ann=()
for l in "${labels[@]}"; do cfg+=(--config.label "$l"); ann+=(--manifest.annotation "$l"); done

index_manifests=()
for arch in $IMAGE_ARCHS; do
  bin=$DIST/envshim-linux-$arch
  [ -x "$bin" ] || { echo "images/build.sh: $bin missing: run ./musl-build.sh" >&2; exit 1; }
  tag=$VERSION-$arch
  # unpack the empty image, add /envshim with a fixed mtime (reproducible layer), repack.
  # (not `umoci insert`: umoci 0.4.7 writes a truncated tar for a single file)
  rm -rf "$OUT/stage/bundle"
  umoci new --image "$OCI:$tag"
  umoci unpack --image "$OCI:$tag" "$OUT/stage/bundle"
  install -m 0755 "$bin" "$OUT/stage/bundle/rootfs/envshim"
  touch -d "@$SOURCE_DATE_EPOCH" "$OUT/stage/bundle/rootfs/envshim" "$OUT/stage/bundle/rootfs"
  umoci repack --image "$OCI:$tag" --history.created "$CREATED" \
    --history.created_by "COPY envshim-linux-$arch /envshim" "$OUT/stage/bundle"
  umoci config --image "$OCI:$tag" --no-history --created "$CREATED" \
    --os linux --architecture "$arch" \
    --config.entrypoint /envshim --config.cmd --help \
    "${cfg[@]}" "${ann[@]}"
  skopeo --insecure-policy copy --quiet "oci:$OCI:$tag" \
    "docker-archive:$OUT/envshim-$tag.docker.tar:envshim:$tag"
  desc=$(jq -c --arg t "$tag" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $t)' "$OCI/index.json")
  index_manifests+=("$(jq -c --arg a "$arch" 'del(.annotations) + {platform: {architecture: $a, os: "linux"}}' <<<"$desc")")
done
umoci gc --layout "$OCI"

# The multi-arch image index, tagged VERSION (umoci makes single-platform images only).
idx=$(printf '%s\n' "${index_manifests[@]}" | jq -cs --argjson a "$(printf '%s\n' "${labels[@]}" | jq -Rn '[inputs | capture("(?<key>[^=]*)=(?<value>.*)")] | from_entries')" \
  '{schemaVersion: 2, mediaType: "application/vnd.oci.image.index.v1+json", manifests: ., annotations: $a}')
digest=$(printf '%s' "$idx" | sha256sum | cut -d' ' -f1)
printf '%s' "$idx" >"$OCI/blobs/sha256/$digest"
jq --arg d "sha256:$digest" --argjson s "$(printf '%s' "$idx" | wc -c)" --arg t "$VERSION" \
  '.manifests += [{mediaType: "application/vnd.oci.image.index.v1+json", digest: $d, size: $s,
                   annotations: {"org.opencontainers.image.ref.name": $t}}]' \
  "$OCI/index.json" >"$OCI/index.json.tmp" && mv "$OCI/index.json.tmp" "$OCI/index.json"
rm -rf "$OUT/stage"

echo "images/build.sh: envshim $VERSION"
echo "  OCI layout: $OCI (tags: $(jq -r '[.manifests[].annotations["org.opencontainers.image.ref.name"]] | join(", ")' "$OCI/index.json"))"
for f in "$OUT"/envshim-*.docker.tar; do echo "  docker load -i $f   ($(stat -c %s "$f") bytes)"; done
