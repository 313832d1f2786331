#!/usr/bin/env bash
# release/build.sh (README.md, Install) as the release workflow runs it, from a clean clone of
# HEAD: what it refuses (before building anything), every file it writes and what
# each must hold, the signature (and a tampered file failing it), the SBOMs against
# what cargo compiles, the krew manifest against its archives, the image layout
# against the binaries, the converter's default image; then the same commit built
# again in another directory, later, with another key: byte for byte the same.
#   bash tests/release.sh         (needs what tests/e2e/deps.sh installs)
# Env: KEEP=1 keeps the scratch directory. Prints the time of each build and the
# image index digest of both.
set -euo pipefail
source "$(dirname "$0")/e2e/lib.sh"
start=$(date +%s)
WORK=$(mktemp -d /tmp/envshim-release-test.XXXXXX)
cleanup() { if [ "${KEEP:-}" = 1 ]; then echo "release test: kept $WORK"; else rm -rf "$WORK"; fi; }
trap cleanup EXIT
cd "$WORK"

# A clean clone of what is committed (the checkout may have work in progress), the
# same commit for both builds whatever happens to the checkout meanwhile.
COMMIT=$(git -C "$ROOT" rev-parse HEAD)
clone() { git clone -q --no-hardlinks "$ROOT" "$1" && git -C "$1" checkout -q --detach "$COMMIT"; }
clone a

echo "== refused, before any build"
refused() { # WANT-IN-MESSAGE RELEASE-ARGS...
  local want=$1 rc=0; shift
  (cd a && timeout 60 bash release/build.sh "$@") >out 2>err || rc=$?
  [ $rc != 0 ] && grep -qF -- "$want" err || { cat err >&2; fail "release/build.sh $*: exit $rc, want a failure saying '$want'"; }
  [ ! -e "$WORK/refused/SHA256SUMS" ] || fail "release/build.sh $*: wrote a release"
  ok "release/build.sh $*: exit $rc, '$want'"
}
refused usage --image
refused usage --out "$WORK/refused" --bogus
for bad in envshim envshim/envshim docker.io/envshim:0.1.0 "ghcr.io/envshim/envshim@sha256:$(printf '%064d' 0)" GHCR.io/x; do
  refused "image repository '$bad'" --out "$WORK/refused" --image "$bad"
done
minisign -G -W -p other.pub -s other.key >/dev/null
refused "not the key of release/minisign.pub" --out "$WORK/refused" --key "$WORK/other.key"
echo "$SENTINEL" >secret.txt
refused "not an unencrypted minisign secret key" --out "$WORK/refused" --key "$WORK/secret.txt"
expect_absent "$SENTINEL" out err
refused usage --out "$WORK/refused" --unsigned --key "$WORK/other.key"
# A release build uses the pinned nightly or fails: never stable's other bytes.
rc=0; (cd a && RELEASE=1 NIGHTLY=none BINS=envshim DIST="$WORK/refused" timeout 60 ./musl-build.sh amd64) >out 2>err || rc=$?
[ $rc != 0 ] && grep -qF "a release builds with it or not at all" err && [ ! -e "$WORK/refused/envshim-linux-amd64" ] \
  || { cat err >&2; fail "RELEASE=1 musl-build.sh without its nightly: exit $rc"; }
ok "RELEASE=1 musl-build.sh without its nightly: exit $rc, nothing built"
mkdir full; touch full/x
refused "is not empty" --out "$WORK/full"
grep -q "^release: WARNING: no --image: the converter's default --shim-image is $(head -1 a/release/image)@sha256:<this build's digest>, which exists only once this build's oci/ is pushed there" err \
  || { cat err >&2; fail "no warning without --image"; }
refused "is not empty" --out "$WORK/full" --image registry.example.com/envshim/envshim
! grep -q "WARNING" err || fail "a warning with --image: $(cat err)"
ok "without --image, a warning that the default image's digest exists only once pushed; none with it"
echo "// work in progress" >>a/src/main.rs
refused "clean commit" --out "$WORK/refused"
git -C a checkout -q -- src/main.rs

echo "== build 1: $WORK/a"
t0=$(date +%s)
(cd a && bash release/build.sh --out "$WORK/r1" --image registry.example.com/envshim/envshim) >build1.log 2>&1 || { tail -40 build1.log >&2; fail "release/build.sh"; }
t1=$(( $(date +%s) - t0 ))
ok "release/build.sh --out r1: ${t1}s"
[ -z "$(git -C a status --porcelain --ignored | grep -v '^!! target/$')" ] || fail "the build left files in the clone: $(git -C a status --porcelain --ignored)"
ok "nothing left in the checkout but target/"

cd r1
files=(envshim-linux-amd64 envshim-linux-arm64 kubectl-envshim-linux-amd64 kubectl-envshim-linux-arm64
       kubectl-envshim-linux-amd64.tar.gz kubectl-envshim-linux-arm64.tar.gz envshim.krew.yaml
       envshim.cdx.json kubectl-envshim.cdx.json kubectl_complete-envshim SHA256SUMS SHA256SUMS.minisig envshim-throwaway.pub)
[ "$(find . -maxdepth 1 -type f -printf '%P\n' | sort)" = "$(printf '%s\n' "${files[@]}" | sort)" ] || fail "files: $(ls)"
ok "the files: ${files[*]} and oci/"
! grep -q WARNING ../build1.log || fail "build 1 (with --image) warned: $(grep WARNING ../build1.log)"
# Man pages and completions of both binaries; kubectl's plugin completion runs.
docs=(completions/envshim.bash completions/_envshim completions/envshim.fish completions/kubectl-envshim.bash
      completions/_kubectl-envshim completions/kubectl-envshim.fish man/envshim.1 man/envshim-run.1 man/envshim-check.1
      man/envshim-render.1 man/envshim-install.1 man/kubectl-envshim.1 man/kubectl-envshim-convert.1 man/kubectl-envshim-fmt.1
      man/kubectl-envshim-unconvert.1 man/kubectl-envshim-manifest.1 man/kubectl-envshim-krm.1)
[ "$(find completions man -type f | sort)" = "$(printf '%s\n' "${docs[@]}" | sort)" ] || fail "completions and man: $(find completions man -type f | xargs)"
[ -x kubectl_complete-envshim ] && [ "$(./kubectl_complete-envshim co)" = "$(printf 'convert\n:4')" ] || fail "kubectl_complete-envshim co: $(./kubectl_complete-envshim co)"
ok "completions/, man/: ${#docs[@]} files; kubectl_complete-envshim completes 'co' to convert"

# Signed checksums, as the README's Install section verifies them.
[ "$(cut -d' ' -f3 SHA256SUMS | sort | xargs)" = "$(printf '%s\n' "${files[@]}" "${docs[@]}" | grep -vE 'SHA256SUMS|\.pub$' | sort | xargs)" ] || fail "SHA256SUMS lists: $(cut -d' ' -f3 SHA256SUMS | xargs)"
sha256sum --quiet -c SHA256SUMS || fail "sha256sum -c SHA256SUMS"
minisign -Vm SHA256SUMS -p envshim-throwaway.pub >../verify.out || fail "minisign -Vm"
grep -q "Trusted comment: envshim $VERSION commit $(git -C ../a rev-parse HEAD) image registry.example.com/envshim/envshim@sha256:" ../verify.out || fail "trusted comment: $(cat ../verify.out)"
ok "sha256sum -c and minisign -Vm verify; the trusted comment names the version, commit and image"
# another checksum for the first file (its first digit changed), the rest as signed
awk 'BEGIN { OFS = "  " } NR == 1 { $1 = (substr($1, 1, 1) == "0" ? "1" : "0") substr($1, 2) } { print }' SHA256SUMS >../tampered
! cmp -s SHA256SUMS ../tampered || fail "tampering changed nothing"
cp SHA256SUMS.minisig ../tampered.minisig
! minisign -Vqm ../tampered -x ../tampered.minisig -p envshim-throwaway.pub 2>/dev/null || fail "a changed SHA256SUMS verifies"
! minisign -Vqm SHA256SUMS -p ../other.pub 2>/dev/null || fail "another key verifies the signature"
ok "a changed SHA256SUMS, or another public key, fails minisign -V"

# The binaries: static, the version, no path or host of the build machine in them
# (the host name when it is long enough to mean something in 400 KB of code).
host=$(hostname); [ ${#host} -ge 6 ] || host=$WORK
for f in {envshim,kubectl-envshim}-linux-{amd64,arm64}; do
  ! readelf -lW "$f" | grep -q INTERP && ! readelf -dW "$f" | grep -q NEEDED || fail "$f is not static"
  for leak in "$WORK" "$HOME/" "$host" "/root/" "/tmp/"; do
    ! grep -qaF -- "$leak" "$f" || fail "$f holds '$leak'"
  done
done
! grep -rqF -- "$WORK" . || fail "$(grep -rlF -- "$WORK" . | head -3) name the build's directory"
ok "4 static binaries; none holds the build's directory, \$HOME, /tmp/ or the host name; no file of the release names the directory"
[ "$(./envshim-linux-amd64 -V)" = "envshim $VERSION" ] && [ "$(qemu-aarch64-static ./envshim-linux-arm64 -V)" = "envshim $VERSION" ] || fail "envshim -V"
ok "envshim -V on amd64 and (qemu) arm64: envshim $VERSION"

# The image: an index tagged VERSION, linux/amd64 and linux/arm64, each /envshim the binary.
digest=$(jq -r --arg v "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' oci/index.json)
[[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || fail "no index tagged $VERSION"
[ "$(sha256sum "oci/blobs/sha256/${digest#sha256:}" | cut -d' ' -f1)" = "${digest#sha256:}" ] || fail "the index blob is not its digest"
idx=oci/blobs/sha256/${digest#sha256:}
[ "$(jq -r '[.manifests[].platform | .os + "/" + .architecture] | join(" ")' "$idx")" = "linux/amd64 linux/arm64" ] || fail "platforms: $(jq -c '[.manifests[].platform]' "$idx")"
for arch in amd64 arm64; do
  umoci unpack --image "oci:$VERSION-$arch" ../img-$arch >/dev/null
  cmp -s ../img-$arch/rootfs/envshim envshim-linux-$arch || fail "$arch image: /envshim is not envshim-linux-$arch"
  [ "$(find ../img-$arch/rootfs -mindepth 1 | wc -l)" = 1 ] || fail "$arch image holds more than /envshim"
  [ "$(jq -r '.process.args | join(" ")' ../img-$arch/config.json)" = "/envshim --help" ] || fail "$arch image: entrypoint"
done
ok "oci/ index $VERSION: linux/amd64 and linux/arm64, each only /envshim (the release binary), ENTRYPOINT /envshim"

# The converter's default image is that index, by digest; KUBECTL_ENVSHIM_SHIM_IMAGE and --shim-image win.
pod='kind: Pod
spec:
  volumes: [{name: c, emptyDir: {}}]
  containers: [{name: a, image: app, command: [/a], env: [{name: X, valueFrom: {fileKeyRef: {volumeName: c, path: a.env, key: X}}}]}]'
img() { sed -n 's/^ *image: //p' | grep -vx app; }
[ "$(env -u KUBECTL_ENVSHIM_SHIM_IMAGE ./kubectl-envshim-linux-amd64 convert <<<"$pod" | img)" = "registry.example.com/envshim/envshim@$digest" ] || fail "the converter's default image"
[ "$(KUBECTL_ENVSHIM_SHIM_IMAGE=r.example/x@sha256:1 ./kubectl-envshim-linux-amd64 convert <<<"$pod" | img)" = "r.example/x@sha256:1" ] || fail "KUBECTL_ENVSHIM_SHIM_IMAGE"
[ "$(qemu-aarch64-static ./kubectl-envshim-linux-arm64 convert --shim-image r.example/y:1 <<<"$pod" | img)" = "r.example/y:1" ] || fail "--shim-image (arm64)"
ok "the converter's default --shim-image: registry.example.com/envshim/envshim@$digest; the variable and the option win"

# krew: the manifest's sha256 are its archives'; each archive holds the binary and LICENSE.
python3 - "$VERSION" <<'PY' || fail "envshim.krew.yaml"
import hashlib, sys, tarfile, yaml
v = sys.argv[1]
m = yaml.safe_load(open("envshim.krew.yaml"))
assert m["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2" and m["kind"] == "Plugin", m
assert m["metadata"]["name"] == "envshim" and m["spec"]["version"] == "v" + v
assert m["spec"]["shortDescription"] and m["spec"]["homepage"].startswith("https://")
archs = []
for p in m["spec"]["platforms"]:
    arch = p["selector"]["matchLabels"]["arch"]; archs.append(arch)
    assert p["selector"]["matchLabels"]["os"] == "linux"
    name = f"kubectl-envshim-linux-{arch}.tar.gz"
    assert p["uri"].endswith(f"/releases/download/v{v}/{name}"), p["uri"]
    assert p["sha256"] == hashlib.sha256(open(name, "rb").read()).hexdigest(), arch
    assert p["bin"] == "kubectl-envshim" and {f["from"] for f in p["files"]} == {"kubectl-envshim", "LICENSE"}
    with tarfile.open(name) as t:
        assert sorted(t.getnames()) == ["LICENSE", "kubectl-envshim"], t.getnames()
        assert t.extractfile("kubectl-envshim").read() == open(f"kubectl-envshim-linux-{arch}", "rb").read()
        assert t.getmember("kubectl-envshim").mode & 0o111
assert archs == ["amd64", "arm64"], archs
PY
ok "envshim.krew.yaml: krew's Plugin, linux/amd64 and linux/arm64, each sha256 its archive's, each archive the converter and LICENSE"

# The SBOMs list every crate cargo compiles into each binary (normal dependencies,
# both musl targets), with its version and licence.
for crate in envshim kubectl-envshim; do
  want=$(cd ../a && for t in x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
           cargo tree --locked -q -p "$crate" -e normal --target "$t" --prefix none -f '{p}'; done \
         | awk '{print $1 "@" substr($2, 2)}' | sort -u)
  got=$(jq -r '[.metadata.component] + [.components[]?] | .[] | select(.type == "library" or .type == "application") | .name + "@" + .version' "$crate.cdx.json" | sort -u)
  missing=$(comm -23 <(echo "$want") <(echo "$got"))
  [ -z "$missing" ] || fail "$crate.cdx.json lacks: $(echo $missing)"
  nolicence=$(jq -r '.components[]? | select((.licenses // []) | length == 0) | .name' "$crate.cdx.json")
  [ -z "$nolicence" ] || fail "$crate.cdx.json: no licence for $(echo $nolicence)"
  [ "$(jq -r .bomFormat "$crate.cdx.json")" = CycloneDX ] || fail "$crate.cdx.json is not CycloneDX"
  ok "$crate.cdx.json: CycloneDX, all $(echo "$want" | wc -l) crates cargo compiles in, each with a version and a licence"
done
cd ..

echo "== build 2: another directory, later, another key"
clone elsewhere-b
sleep 2
t0=$(date +%s)
(cd elsewhere-b && bash release/build.sh --out "$WORK/r2" --image registry.example.com/envshim/envshim) >build2.log 2>&1 || { tail -40 build2.log >&2; fail "release/build.sh (2)"; }
t2=$(( $(date +%s) - t0 ))
ok "release/build.sh --out r2: ${t2}s"
digest2=$(jq -r --arg v "$VERSION" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' r2/oci/index.json)
cmp -s r1/SHA256SUMS r2/SHA256SUMS || { diff r1/SHA256SUMS r2/SHA256SUMS >&2; fail "SHA256SUMS differ"; }
for f in $(cut -d' ' -f3 r1/SHA256SUMS); do cmp -s "r1/$f" "r2/$f" || fail "$f differs"; done
diff -r r1/oci r2/oci >/dev/null || fail "oci/ differs"
[ "$digest" = "$digest2" ] || fail "image index digests: $digest, $digest2"
! cmp -s r1/envshim-throwaway.pub r2/envshim-throwaway.pub || fail "the same throwaway key twice"
ok "byte-identical: the 4 binaries, archives, SBOMs, krew manifest, completions, man pages, SHA256SUMS, oci/ (index $digest, both builds)"
echo "release test: build 1 ${t1}s, build 2 ${t2}s; image index digest 1: $digest; 2: $digest2; $(( $(date +%s) - start ))s in all"
