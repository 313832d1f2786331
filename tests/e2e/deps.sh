#!/usr/bin/env bash
# Install what the e2e tests (tests/e2e/run.sh, tests/e2e/engines/run.sh) and
# musl-build.sh need. Idempotent; needs root (CI runs as root). Debian packages: runc,
# umoci, skopeo, bubblewrap, qemu-user-static, jq, binutils (readelf), file; the
# engines: docker.io (Docker 20.10: dockerd, containerd, /usr/bin/docker, tini as
# docker-init), podman (4.3) and catatonit (its --init), busybox-static (a stand-in
# busybox image); kubectl (with kustomize 5.5 embedded) and google-cloud-cli-kpt, from
# the Google Cloud CLI's apt repository where it is configured (the converter's tests in
# pipelines: kubectl-envshim/tests/pipelines.rs); the release (release/build.sh,
# tests/release.sh, e60): minisign, docker-registry (a registry on loopback), curl, and
# cargo-cyclonedx (crates.io, pinned: the SBOMs); PyPI: kubernetes-validate (brings
# PyYAML); strace (tests/cli.rs: install closes its copy before the rename); acl (setfacl and
# getfacl: tests/fmt_replace.rs, fmt keeps a file's POSIX ACL); rustup targets: the two musl targets (their std ships rust-lld's inputs);
# clippy (tests/all.sh runs it).
set -euo pipefail
need=()
# COMMAND:PACKAGE, or /PATH:PACKAGE where the command may also come from elsewhere
# (a newer docker CLI in /usr/local/bin is not Debian's; busybox may be the dynamic one)
for p in runc:runc umoci:umoci skopeo:skopeo bwrap:bubblewrap qemu-aarch64-static:qemu-user-static \
         jq:jq readelf:binutils file:file timeout:coreutils findmnt:util-linux pgrep:procps ip:iproute2 \
         /usr/bin/docker:docker.io /usr/sbin/dockerd:docker.io /usr/bin/docker-init:docker.io \
         /usr/bin/podman:podman /usr/bin/catatonit:catatonit /bin/busybox:busybox-static \
         kubectl:kubectl kpt:google-cloud-cli-kpt \
         minisign:minisign docker-registry:docker-registry curl:curl ss:iproute2 strace:strace setfacl:acl; do
  case ${p%%:*} in
    /*) [ -x "${p%%:*}" ] || need+=("${p#*:}") ;;
    *) command -v "${p%%:*}" >/dev/null || need+=("${p#*:}") ;;
  esac
done
dpkg-query -W -f '${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
mapfile -t need < <(printf "%s\n" "${need[@]}" | grep . | sort -u)
if [ ${#need[@]} -gt 0 ]; then
  echo "deps: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq -o DPkg::Lock::Timeout=300 --no-install-recommends "${need[@]}"
  # Debian's package starts a registry on :5000 (every interface) where systemd runs:
  # the tests start their own on loopback (e60), so the one just installed is stopped.
  if printf '%s\n' "${need[@]}" | grep -qx docker-registry && [ -d /run/systemd/system ]; then
    systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
  fi
fi
if ! python3 -c 'import kubernetes_validate, yaml' 2>/dev/null; then
  echo "deps: pip install kubernetes-validate"
  pip=(python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate)
  PIP_ROOT_USER_ACTION=ignore "${pip[@]}" || PIP_ROOT_USER_ACTION=ignore "${pip[@]}" --break-system-packages
fi

rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl
rustup component add clippy rustfmt
CYCLONEDX=0.5.9
if [ "$(cargo cyclonedx --version 2>/dev/null | awk '{print $2}')" != "$CYCLONEDX" ]; then
  echo "deps: cargo install cargo-cyclonedx $CYCLONEDX"
  # its own target directory, removed after: nothing of it in the checkout's target/
  t=$(mktemp -d); cargo install --quiet --locked --version "$CYCLONEDX" cargo-cyclonedx --target-dir "$t"; rm -rf "$t"
fi
echo "deps: ok ($(runc --version | head -1); umoci $(umoci --version | awk '{print $3}'); $(skopeo --version);" \
  "$(bwrap --version); $(qemu-aarch64-static --version | head -1); kubernetes-validate $(python3 -m kubernetes_validate --version);" \
  "docker $(/usr/bin/docker --version | awk '{print $3}' | tr -d ,); $(podman --version); $(minisign -v);" \
  "$(cargo cyclonedx --version); docker-registry $(docker-registry --version | awk '{print $3}');" \
  "kubectl $(kubectl version --client 2>/dev/null | awk '/^Kustomize/{print "kustomize " $3}'); kpt $(kpt version))"
