#!/usr/bin/env bash
# Install what the e2e tests (tests/e2e/run.sh) and musl-build.sh need. Idempotent;
# needs root (CI runs as root). Debian packages: runc, umoci, skopeo, bubblewrap,
# qemu-user-static, jq, binutils (readelf), file; PyPI: kubernetes-validate (brings
# PyYAML); rustup targets: the two musl targets (their std ships rust-lld's inputs).
set -euo pipefail
need=()
for p in runc:runc umoci:umoci skopeo:skopeo bwrap:bubblewrap qemu-aarch64-static:qemu-user-static \
         jq:jq readelf:binutils file:file timeout:coreutils; do
  command -v "${p%%:*}" >/dev/null || need+=("${p#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "deps: apt-get install ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! python3 -c 'import kubernetes_validate, yaml' 2>/dev/null; then
  echo "deps: pip install kubernetes-validate"
  pip=(python3 -m pip install --quiet --disable-pip-version-check kubernetes-validate)
  PIP_ROOT_USER_ACTION=ignore "${pip[@]}" || PIP_ROOT_USER_ACTION=ignore "${pip[@]}" --break-system-packages
fi

rustup target add x86_64-unknown-linux-musl aarch64-unknown-linux-musl
echo "deps: ok ($(runc --version | head -1); umoci $(umoci --version | awk '{print $3}'); $(skopeo --version);" \
  "$(bwrap --version); $(qemu-aarch64-static --version | head -1); kubernetes-validate $(python3 -m kubernetes_validate --version))"
