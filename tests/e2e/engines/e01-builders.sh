#!/usr/bin/env bash
# The Dockerfiles build as written, offline, with every builder: Docker's legacy
# builder (DOCKER_BUILDKIT=0), BuildKit (DOCKER_BUILDKIT=1, no `# syntax` line so no
# frontend image is pulled) and podman build.
#  - images/Dockerfile: each build command of its header comment (and of
#    images/README.md, which must show the same), run as written
#    from the repository root; the image holds only /envshim, byte-identical to
#    dist/envshim-linux-ARCH, with the right architecture;
#  - .dockerignore: what each builder sends is exactly what it lets through;
#  - images/Dockerfile.from-source: each builder parses it and stops only at the
#    Rust image, which cannot be pulled here;
#  - examples/baked-in/Dockerfile: each builder makes the mode-1 image.
source "$(dirname "$0")/lib.sh"
df=$ROOT/images/Dockerfile

# image_file ENGINE IMAGE PATH OUT: copies PATH out of IMAGE (no container is started)
image_file() {
  local c
  c=$($1 create "$2" x 2>/dev/null)
  $1 cp "$c:$3" "$4"
  $1 rm "$c" >/dev/null
}

# engine_arch ENGINE IMAGE
engine_arch() { $1 image inspect --format '{{.Architecture}}' "$2"; }

n=0
for start in 'DOCKER_BUILDKIT=1 docker build -f' 'DOCKER_BUILDKIT=1 docker build --platform' \
             'DOCKER_BUILDKIT=0 docker build' 'podman build'; do
  cmd=$(doc_cmd "$df" "$start")
  [ "$(doc_cmd "$ROOT/images/README.md" "$start")" = "$cmd" ] || fail "images/README.md and images/Dockerfile differ: $start"
  engine=docker; [[ $start != podman* ]] || engine=podman
  tag=$(sed -n 's/.* -t \([^ ]*\) .*/\1/p' <<<"$cmd")
  arch=amd64; [[ $cmd != *arm64* ]] || arch=arm64
  (cd "$ROOT" && bash -c "$cmd") >build.log 2>&1 || { cat build.log >&2; fail "$cmd"; }
  [ "$(engine_arch $engine "$tag")" = $arch ] || fail "$tag: architecture $(engine_arch $engine "$tag"), want $arch"
  image_file $engine "$tag" /envshim envshim.out
  cmp -s envshim.out "$DIST/envshim-linux-$arch" || fail "$tag: /envshim is not dist/envshim-linux-$arch"
  $engine image inspect --format '{{json .Config.Labels}}' "$tag" | jq -e --arg v "$VERSION" \
    '.["org.opencontainers.image.version"] == $v' >/dev/null || fail "$tag: version label"
  ok "$cmd: $arch image, /envshim = dist/envshim-linux-$arch, version label $VERSION"
  n=$((n + 1))
done
[ $n = 4 ] || fail "ran $n of the 4 commands"
# a build without TARGETARCH fails instead of packaging some binary
if (cd "$ROOT" && DOCKER_BUILDKIT=0 docker build -q -f images/Dockerfile -t "$NAME-notarget" .) >build.log 2>&1; then
  fail "the legacy builder without TARGETARCH made an image"
fi
grep -q 'dist/envshim-linux-:' build.log || { cat build.log >&2; fail "no clear error without TARGETARCH"; }
ok "legacy builder without --build-arg TARGETARCH: fails naming dist/envshim-linux-"

# .dockerignore: COPY . of the repository root gets exactly the files it lets through
printf '%s\n' 'FROM scratch' 'COPY . /ctx/' >probe.Dockerfile
want=$(cd "$ROOT" && find dist/envshim-linux-amd64 dist/envshim-linux-arm64 Cargo.toml Cargo.lock build.rs musl-build.sh src benches tools kubectl-envshim \
  -type f | sort)
for b in docker/legacy docker/buildkit podman/podman; do
  engine=${b%/*}
  engine_build "$engine" "${b#*/}" -q -f "$PWD/probe.Dockerfile" -t "$NAME-probe-${b#*/}" "$ROOT" >build.log 2>&1 \
    || { cat build.log >&2; fail "$b: probe build"; }
  c=$($engine create "$NAME-probe-${b#*/}" x 2>/dev/null)
  got=$($engine export "$c" | tar -t | sed -n 's|^ctx/||p' | grep -v -e '/$' -e '^$' | sort)
  $engine rm "$c" >/dev/null
  [ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got") | head -20 >&2; fail "$b: the build context is not what .dockerignore lets through"; }
  ok "$b: the context holds only what .dockerignore lets through ($(wc -l <<<"$got") files; no target/, .git/, dist/images/)"
done

# images/Dockerfile.from-source: parsed by every builder; it stops at pulling the Rust image
for b in docker/legacy docker/buildkit podman/podman; do
  set +e
  (cd "$ROOT" && engine_build "${b%/*}" "${b#*/}" --build-arg TARGETARCH=amd64 --build-arg RUST_IMAGE=localhost:1/no-rust:here \
    -f images/Dockerfile.from-source -t "$NAME-from-source" .) >build.log 2>&1
  rc=$?
  set -e
  [ $rc != 0 ] && grep -q 'localhost:1' build.log && ! grep -qiE 'parse|unknown flag|syntax' build.log \
    || { cat build.log >&2; fail "$b: images/Dockerfile.from-source"; }
  ok "$b: images/Dockerfile.from-source parses; stops at pulling its base image"
done

# examples/baked-in/Dockerfile, with the envshim image and a distroless stand-in
mkdir -p tree/examples && cp -a "$ROOT/examples/baked-in" tree/examples/
install -m 0755 "$WORK/bin/showenv-amd64" tree/examples/baked-in/app
for e in $ENGINES; do load_envshim "$e"; done
for b in docker/legacy docker/buildkit podman/podman; do
  engine=${b%/*} tag=$NAME-baked-in:${b#*/}
  (cd tree && engine_build "$engine" "${b#*/}" -q -t "$tag" examples/baked-in) >build.log 2>&1 \
    || { cat build.log >&2; fail "$b: examples/baked-in/Dockerfile"; }
  cfg=$($engine image inspect --format '{{json .Config}}' "$tag")
  jq -e '.Entrypoint == ["/envshim", "run"] and .Cmd == ["/app", "--listen=:8080", "--db-host=$(DB_HOST)"]
         and (.User == "65532:65532" or .User == "65532")' <<<"$cfg" >/dev/null || fail "$b: image config $cfg"
  image_file "$engine" "$tag" /envshim envshim.out
  cmp -s envshim.out "$DIST/envshim-linux-amd64" || fail "$b: /envshim is not the release binary"
  image_file "$engine" "$tag" /app app.out
  [ -x app.out ] || fail "$b: /app is not executable"
  ok "$b: examples/baked-in/Dockerfile: ENTRYPOINT envshim run, CMD /app, user 65532, /envshim and /app"
done
