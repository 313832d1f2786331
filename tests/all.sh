#!/usr/bin/env bash
# Every test envshim has (and its kubectl plugin): installs what they need (apt packages - Docker and Podman
# included -, rustup targets, cargo-fuzz), checks the formatting, runs the end-to-end tests in
# real runtimes (runc, bwrap, qemu; they build the shipped static binaries, dist/), then the unit
# and integration tests (the shipped binary's size among them), clippy (no warning allowed),
# the privilege-dropping tests again from a private (mode 0700) copy of the checkout,
# the black-box suite again against the shipped static binary, the same deployment
# modes in real container engines (a private dockerd and podman, stopped at the end;
# the image pulled by digest from a registry on loopback), a release built twice,
# a short fuzz smoke run, and every command block of the docs (tests/docs.py; after
# the fuzz smoke run, whose build the documented fuzz command reuses).
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage timed (`stage`), the times listed on stderr at the end, a failed stage last: where CI's time goes.
times=()
stage() {
  local t=$SECONDS rc=0 line
  "$@" || rc=$?
  line=$(printf '%5d s  %s' $((SECONDS - t)) "$*")
  [ "$rc" = 0 ] || line+="  (failed: exit $rc)"
  times+=("$line")
  return "$rc"
}
trap 'printf "all.sh: %s\n" "${times[@]}" "$(printf "%5d s  in all" "$SECONDS")" >&2' EXIT

stage bash tests/e2e/deps.sh
# Formatting first (seconds, no build): rustfmt.toml's style, the fuzz crate (a workspace of its own) too.
stage cargo fmt --all --check
stage cargo fmt --manifest-path fuzz/Cargo.toml --all --check
# The end-to-end tests in real runtimes first: they build dist/ (musl-build.sh), which
# the size test of the shipped binary (tests/shipped.rs, ignored by the quick tier) reads.
stage bash tests/e2e/run.sh
# --include-ignored: the tests the quick tier (`cargo test --workspace`) leaves out,
# `#[ignore = "needs root"]` or `"needs kubectl"`; here they run, and fail if they cannot.
stage cargo test --all-targets -- --include-ignored  # envshim, built with exactly its own features
stage cargo test -p kubectl-envshim --all-targets -- --include-ignored  # the converter (a second crate of the workspace)
stage cargo clippy --workspace --all-targets -- -D warnings  # the [lints] of Cargo.toml and clippy's defaults
stage bash tests/private-checkout.sh
# The black-box suite again, against what ships (tests/e2e/run.sh built
# dist/ with musl-build.sh if it was missing or older than the sources).
stage env ENVSHIM_TEST_BIN="$PWD/dist/envshim-linux-amd64" cargo test -p envshim --test tests -- --include-ignored
stage bash tests/e2e/engines/run.sh  # e60: the image pushed to a registry on loopback, pulled by digest
stage bash tests/release.sh  # release/build.sh twice: what it writes, and byte for byte the same
stage python3 tests/release-workflow.py  # the release workflow: the key never where code compiles; pinned Debian packages only
stage bash tests/readme-verify.sh  # the README's verify-and-install blocks stop before installing a release that fails a check
stage bash fuzz/smoke.sh
stage env DOCS_STRICT=1 python3 tests/docs.py
