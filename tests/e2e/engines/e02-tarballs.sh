#!/usr/bin/env bash
# The images of images/build.sh in the engines: the two docker-load tarballs carry
# only their own tag (envshim:VERSION-amd64, -arm64), so loading both, in either
# order, leaves each tag on its own architecture and no envshim:VERSION to be
# clobbered; the documented ways to get envshim:VERSION for the host (docker load +
# docker tag; skopeo from the multi-arch OCI layout for podman) give a runnable image.
source "$(dirname "$0")/lib.sh"
readme=$ROOT/images/README.md
for engine in $ENGINES; do
  for order in "amd64 arm64" "arm64 amd64"; do
    $engine rmi -f "envshim:$VERSION" "envshim:$VERSION-amd64" "envshim:$VERSION-arm64" >/dev/null 2>&1 || true
    for arch in $order; do $engine load -q -i "$DIST/images/envshim-$VERSION-$arch.docker.tar" >/dev/null; done
    for arch in amd64 arm64; do
      [ "$($engine image inspect --format '{{.Architecture}}' "envshim:$VERSION-$arch")" = $arch ] \
        || fail "$engine, loaded $order: envshim:$VERSION-$arch is not $arch"
    done
    ! $engine image inspect "envshim:$VERSION" >/dev/null 2>&1 || fail "$engine, loaded $order: envshim:$VERSION exists"
    out=$($engine run --rm --network none "envshim:$VERSION-amd64" -V)
    [ "$out" = "envshim $VERSION" ] || fail "$engine: envshim:$VERSION-amd64 --version: $out"
    ok "$engine load $order: each tag on its own architecture, no envshim:$VERSION, the host's runs"
  done
done

# the documented ways (images/README.md), exactly as written
doc_tree
docker rmi -f "envshim:$VERSION" >/dev/null 2>&1 || true
run_doc "$readme" "docker load -i dist/images/envshim-$VERSION-amd64" "docker tag envshim:$VERSION-amd64" "docker run --rm envshim:$VERSION"
expect_line out "envshim $VERSION"
expect_only_docker_warnings err
# loading the other architecture afterwards changes nothing
docker load -q -i "$DIST/images/envshim-$VERSION-arm64.docker.tar" >/dev/null
[ "$(docker run --rm --network none "envshim:$VERSION" -V)" = "envshim $VERSION" ] || fail "envshim:$VERSION after loading arm64"
ok "docker: envshim:$VERSION still runs after loading the arm64 tarball"

podman rmi -f "envshim:$VERSION" >/dev/null 2>&1 || true
: >out; : >err
run_doc "$readme" "skopeo copy oci:dist/images/oci:$VERSION containers-storage" "podman run --rm envshim:$VERSION"
expect_line out "envshim $VERSION"
[ "$(podman image inspect --format '{{.Architecture}}' "envshim:$VERSION")" = amd64 ] || fail "podman: envshim:$VERSION is not amd64"
ok "podman: envshim:$VERSION from the multi-arch index is the host's (amd64)"
