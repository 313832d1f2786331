#!/usr/bin/env bash
# The daemonless images: FROM-scratch content, config, labels, docker-load tarballs,
# the multi-arch index; and the Dockerfiles' shape.
source "$(dirname "$0")/lib.sh"
SOURCE=$(sed -n 's/^repository *= *"\(.*\)"/\1/p' "$ROOT/Cargo.toml")
for arch in amd64 arm64; do
  ref=oci:$OCI_IMAGES:$VERSION-$arch
  cfg=$(skopeo inspect --config "$ref")
  [ "$(jq -r '.architecture + "/" + .os' <<<"$cfg")" = "$arch/linux" ] || fail "$ref: platform"
  [ "$(jq -c '.config.Entrypoint' <<<"$cfg")" = '["/envshim"]' ] || fail "$ref: Entrypoint"
  jq -e --arg v "$VERSION" --arg s "$SOURCE" '.config.Labels
     | .["org.opencontainers.image.version"] == $v and .["org.opencontainers.image.source"] == $s
       and .["org.opencontainers.image.licenses"] == "Apache-2.0"' <<<"$cfg" >/dev/null || fail "$ref: OCI labels"
  ok "$ref: $arch/linux, ENTRYPOINT /envshim, labels version/source/licenses"
  # exactly one layer, holding exactly /envshim, byte-identical to dist/
  [ "$(skopeo inspect "$ref" | jq '.Layers | length')" = 1 ] || fail "$ref: not one layer"
  only_files "$WORK/img-$arch/rootfs" envshim
  cmp -s "$WORK/img-$arch/rootfs/envshim" "$DIST/envshim-linux-$arch" || fail "$ref: /envshim differs from dist"
  ok "/envshim is dist/envshim-linux-$arch"
  # the docker-archive tarball: what `docker load` reads
  tarball=$DIST/images/envshim-$VERSION-$arch.docker.tar
  m=$(tar -xOf "$tarball" manifest.json)
  # only the per-arch tag: a shared envshim:VERSION would be clobbered by the last load
  jq -e --arg t "envshim:$VERSION-$arch" 'length == 1 and (.[0].RepoTags | map(sub("^docker.io/library/"; ""))) == [$t]' <<<"$m" >/dev/null \
    || fail "$tarball: RepoTags $(jq -c '.[0].RepoTags' <<<"$m"), want only envshim:$VERSION-$arch"
  tar -xOf "$tarball" "$(jq -r '.[0].Layers[0]' <<<"$m")" | tar -t | grep -qx envshim || fail "$tarball: layer"
  [ "$(tar -xOf "$tarball" "$(jq -r '.[0].Config' <<<"$m")" | jq -r .architecture)" = "$arch" ] || fail "$tarball: config arch"
  ok "$tarball: docker load-able, tagged only envshim:$VERSION-$arch"
done
idx=$(skopeo inspect --raw "oci:$OCI_IMAGES:$VERSION")
[ "$(jq -c '[.manifests[].platform.architecture]' <<<"$idx")" = '["amd64","arm64"]' ] || fail "index platforms"
ok "oci:$VERSION is a multi-arch index of amd64 and arm64"
# the Dockerfiles (built by every builder in tests/e2e/engines/e01-builders.sh): the
# envshim image ends FROM scratch with only /envshim; the example uses it
for df in "$ROOT/images/Dockerfile" "$ROOT/images/Dockerfile.from-source"; do
  [ "$(grep '^FROM' "$df" | tail -1 | awk '{print $2}')" = scratch ] || fail "$df: last stage is not FROM scratch"
  awk '/^FROM scratch/{s=1} s && /^(COPY|ADD|RUN)/' "$df" | grep -c . | grep -qx 1 || fail "$df: final stage adds more than one thing"
  awk '/^FROM scratch/{s=1} s && /^COPY/' "$df" | grep -q ' /envshim$' || fail "$df: final stage does not COPY /envshim"
  ok "$df: final stage FROM scratch, one COPY to /envshim"
  grep -qx "ARG VERSION=$VERSION" "$df" || fail "$df: ARG VERSION is not $VERSION (Cargo.toml)"
  ok "$df: ARG VERSION=$VERSION, as in Cargo.toml"
done
f=$ROOT/examples/baked-in/Dockerfile
grep -q '^COPY --from=envshim /envshim /envshim' "$f" || fail "$f: no COPY --from=envshim"
grep -q '^ENTRYPOINT \["/envshim", "run"' "$f" || fail "$f: ENTRYPOINT is not envshim run"
grep -q '^FROM gcr.io/distroless/' "$f" || fail "$f: not on a distroless base"
ok "examples/baked-in/Dockerfile: distroless, envshim ENTRYPOINT"
# what only one builder knows: a `# syntax` line (BuildKit pulls a frontend image),
# COPY/ADD --chmod (BuildKit only), FROM --platform=$BUILDPLATFORM (legacy cannot parse it)
for f in "$ROOT/images/Dockerfile" "$ROOT/images/Dockerfile.from-source" "$ROOT/examples/baked-in/Dockerfile"; do
  ! grep -qiE '^# *syntax=|^(COPY|ADD) .*--chmod|^FROM --platform' "$f" || fail "$f: a line only one builder knows"
done
ok "no # syntax, --chmod or FROM --platform in the Dockerfiles"
# One architecture built (`./musl-build.sh amd64`): images/build.sh makes an index of it alone.
mkdir -p one
cp "$DIST/envshim-linux-amd64" one/
DIST=$PWD/one OUT=$PWD/one/images "$ROOT/images/build.sh" >/dev/null || fail "images/build.sh with only the amd64 binary"
d=$(jq -r --arg v "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' one/images/oci/index.json)
[ "$(jq -r '[.manifests[].platform.architecture] | join(" ")' "one/images/oci/blobs/sha256/${d#sha256:}")" = amd64 ] || fail "the one-arch index"
[ "$(jq -r '[.manifests[].annotations["org.opencontainers.image.ref.name"]] | join(" ")' one/images/oci/index.json)" = "$VERSION-amd64 $VERSION" ] || fail "the one-arch tags"
[ "$(ls one/images)" = "envshim-$VERSION-amd64.docker.tar
oci" ] || fail "one-arch outputs: $(ls one/images)"
ok "images/build.sh with only dist/envshim-linux-amd64: tags $VERSION-amd64 and $VERSION (an index of amd64 alone), one tarball"
