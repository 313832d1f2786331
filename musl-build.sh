#!/usr/bin/env bash
# Build fully static, stripped release binaries of envshim and of its kubectl plugin:
#   dist/envshim-linux-amd64           (x86_64-unknown-linux-musl, linked with rust-lld)
#   dist/envshim-linux-arm64           (aarch64-unknown-linux-musl, linked with rust-lld)
#   dist/kubectl-envshim-linux-amd64   (the converter, `kubectl envshim convert`)
#   dist/kubectl-envshim-linux-arm64
#   dist/SHA256SUMS
#   dist/completions/{envshim.bash,_envshim,envshim.fish}, dist/man/envshim*.1
#   dist/completions/{kubectl-envshim.bash,_kubectl-envshim,kubectl-envshim.fish},
#     dist/man/kubectl-envshim*.1
#     (generated from the command lines' definitions, src/cli.rs and
#     kubectl-envshim/src/cli.rs, by
#     `cargo run --example cli-docs`: not in the binaries; CLI_DOCS=0 skips them)
# Each binary is built by its own `cargo build -p CRATE`: a workspace build
# unifies the features of shared dependencies across the crates it selects,
# and the shim must not take any from the converter's.
# Usage: ./musl-build.sh [amd64] [arm64]     (default: both; Docker TARGETARCH names)
# Env:   DIST=dir (default dist), CARGO (default cargo), CLI_DOCS=0,
#        BINS="envshim kubectl-envshim" (the default; release/build.sh builds one, then the other),
#        ENVSHIM_BUILD_COMMIT (what --version names when there is no git checkout)
# Needs: rustup + cargo, readelf (binutils), sha256sum; `file` is used when present.
# Fails loudly if a binary has an ELF interpreter or needs a shared library.
# If `rustup target add` fails for amd64, falls back to a static glibc build
# (x86_64-unknown-linux-gnu with +crt-static) and says so.
#
# Release binaries are built with a PINNED nightly ($NIGHTLY, with rust-src):
# `-Z build-std=std,panic_abort` and `-C panic=immediate-abort` rebuild std
# without the panic-message and backtrace machinery (about half the
# binary's size: see docs/performance.md). Only these binaries: the crate builds and tests on
# stable. If the nightly, its rust-src or the target's rust-std cannot be
# installed, the arch is built with stable as before, with a message.
# NIGHTLY=none builds everything with stable.
# RELEASE=1 (release/build.sh): no fallback. The pinned nightly, its rust-src and
# the musl target are installed or the build fails, so a release never ships other
# bytes than the ones tests/release.sh reproduces.
set -euo pipefail
cd "$(dirname "$0")"
DIST=${DIST:-dist}
CARGO=${CARGO:-cargo}
NIGHTLY=${NIGHTLY:-nightly-2026-05-06}
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(amd64 arm64)

die() { echo "musl-build: ERROR: $*" >&2; exit 1; }
warn() { echo "musl-build: WARNING: $*" >&2; }

have_target() { # TRIPLE: installed, or installable now?
  rustup target list --installed 2>/dev/null | grep -qx "$1" && return 0
  echo "musl-build: rustup target add $1"
  rustup target add "$1"
}

# Paths in panic locations: make them independent of this machine.
remap="--remap-path-prefix=$PWD=/envshim --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"

# A static executable at a fixed address, not a static PIE: nothing for the
# start-up code to relocate, and no relocated page to copy (measured on the
# workload of docs/performance.md: fewer instructions, page faults and bytes;
# docs/performance-history.md). The kernel's ASLR still places the stack, heap and mmaps.
nopie=" -C relocation-model=static"

check_static() { # FILE
  local f=$1 hdr dyn
  hdr=$(readelf -lW "$f") || die "$f: not an ELF file"
  dyn=$(readelf -dW "$f")
  if grep -q 'INTERP' <<<"$hdr"; then die "$f is NOT static: it has an ELF interpreter (${HAVE_FILE:+$(file -b "$f")})"; fi
  if grep -q '(NEEDED)' <<<"$dyn"; then die "$f is NOT static: it needs shared libraries: $(grep NEEDED <<<"$dyn" | tr -s ' ')"; fi
  if readelf -SW "$f" | grep -q ' \.symtab '; then die "$f is not stripped"; fi
  echo "musl-build: $f: static ELF, no interpreter, no NEEDED, stripped${HAVE_FILE:+ ($(file -b "$f"))}"
}

# The pinned nightly with rust-src and TRIPLE's std (for musl's crt objects and libc.a).
have_nightly() { # TRIPLE
  [ "$NIGHTLY" != none ] || return 1
  if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1 \
     || ! rustup component list --installed --toolchain "$NIGHTLY" 2>/dev/null | grep -q '^rust-src'; then
    echo "musl-build: rustup toolchain install $NIGHTLY --profile minimal --component rust-src"
    rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src || return 1
  fi
  rustup target list --installed --toolchain "$NIGHTLY" 2>/dev/null | grep -qx "$1" && return 0
  echo "musl-build: rustup target add --toolchain $NIGHTLY $1"
  rustup target add --toolchain "$NIGHTLY" "$1"
}

HAVE_FILE=$(command -v file || true)
mkdir -p "$DIST"
for arch in "${archs[@]}"; do
  case $arch in
    amd64) triple=x86_64-unknown-linux-musl ;;
    arm64) triple=aarch64-unknown-linux-musl ;;
    *) die "unknown arch '$arch' (want amd64 or arm64)" ;;
  esac
  T=$(tr 'a-z-' 'A-Z_' <<<"$triple")
  toolchain=() zflags=() nightly_flags=
  if have_nightly "$triple"; then
    toolchain=("+$NIGHTLY")
    # std's features: optimize_for_size alone (its smaller integer formatting and
    # sorts; the default, panic-unwind, has no use where panics abort at once):
    # -1.7 KB, +0.25% instructions of `run` (docs/performance.md, binary size).
    zflags=(-Z build-std=std,panic_abort -Z build-std-features=optimize_for_size)
    # No unwind tables either: with immediate-abort nothing ever unwinds, and
    # .eh_frame was a tenth of the binary (docs/performance-history.md, binary size).
    nightly_flags=" -Zunstable-options -Cpanic=immediate-abort -Cforce-unwind-tables=no"
    # Each crate's own copy of the generic functions it uses, compiled at its
    # opt-level: rustc shares them by default at "s" and "z", so envshim used
    # clap_builder's copies, built at "z", where LLVM moves every 640-byte Arg
    # and 712-byte Command with a byte-at-a-time `rep movsb`. Fewer
    # instructions at every start for a few hundred bytes more
    # (docs/performance.md, `--watch`).
    nightly_flags="$nightly_flags -Zshare-generics=n"
    # Inlining by request: LLVM inlines a call only where it costs nothing
    # (a function with one caller, a body smaller than the call), or where the
    # callee asks with #[inline] (std's small methods do; so do envshim's hot
    # helpers, listed in src/lib.rs), up to a cost of 50 instead of the 75
    # that opt-level "s" gives every call. Where a call is made once per start,
    # its copy was bytes for nothing. -28 KB against "s" with the hint given no
    # weight (75/75); instructions of `run` unchanged once the hot helpers ask
    # (docs/performance.md, binary size).
    nightly_flags="$nightly_flags -Cllvm-args=-inline-threshold=0 -Cllvm-args=-inlinehint-threshold=50"
    # `derive(Debug)` prints the type's name only: no message prints a derived
    # Debug (a message's `{:?}` of a str or a number is unchanged). -1.3 KB.
    nightly_flags="$nightly_flags -Zfmt-debug=shallow"
    # The rare paths (install, render, check's report, --init, --watch, --listen,
    # the messages of failures) built for size: `#[cfg_attr(envshim_size,
    # optimize(size))]` on each (minsize, as at opt-level "z"); the start-up path
    # stays at "s". -8.3 KB, instructions of `run` unchanged (src/lib.rs).
    nightly_flags="$nightly_flags --cfg envshim_size"
  elif [ "${RELEASE:-}" = 1 ]; then
    die "RELEASE=1: $NIGHTLY with rust-src and $triple cannot be installed (NIGHTLY=$NIGHTLY); a release builds with it or not at all"
  elif [ "$NIGHTLY" != none ]; then
    warn "$NIGHTLY (with rust-src and $triple) cannot be installed: building $arch with stable, about 380 KB larger"
  fi
  if [ ${#toolchain[@]} -gt 0 ]; then
    export "CARGO_TARGET_${T}_RUSTFLAGS=$remap$nopie$nightly_flags"
  elif ! have_target "$triple"; then
    if [ "$arch" = amd64 ]; then
      warn "rustup target add $triple FAILED; falling back to a static glibc build (x86_64-unknown-linux-gnu, +crt-static)"
      triple=x86_64-unknown-linux-gnu
      T=X86_64_UNKNOWN_LINUX_GNU
      export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static $remap"
    else
      die "rustup target add $triple FAILED: cannot build the $arch binary without its standard library"
    fi
  else
    export "CARGO_TARGET_${T}_RUSTFLAGS=$remap$nopie"
  fi
  # rust-lld (shipped with rustup's toolchain) links both musl targets: it needs no
  # C cross toolchain, and it lays the file out without padding each segment to a
  # page (GNU ld's -z separate-code): the amd64 binary is smaller, with fewer
  # page faults at start-up (docs/performance.md, binary size). The glibc
  # fallback is linked by cc.
  # --icf=all: identical functions kept once (docs/performance.md, binary size). Rust gives
  # no two functions distinct addresses by contract; --icf=safe, which keeps those
  # whose address is taken, merges nothing here (rustc's LTO object lists none).
  # -z keep-text-section-prefix: the functions LLVM marks unlikely (#[cold] ones:
  # panics, errors, the rare paths) go to .text.unlikely, after the rest, so the
  # code a start runs spans fewer pages (fewer page faults: docs/performance.md).
  case $triple in
    *-musl) rf=CARGO_TARGET_${T}_RUSTFLAGS
            export "CARGO_TARGET_${T}_LINKER=rust-lld" "$rf=${!rf} -C link-arg=--icf=all -C link-arg=-zkeep-text-section-prefix" ;;
  esac
  # Its own target directory: std built from source must not mix with stable's artifacts.
  tdir=${CARGO_TARGET_DIR:-target}${toolchain:+/nightly}
  echo "musl-build: cargo ${toolchain[*]} build --release --locked --target $triple ${zflags[*]}${nightly_flags:+ (RUSTFLAGS +$nightly_flags)}"
  for bin in ${BINS:-envshim kubectl-envshim}; do
    CARGO_TARGET_DIR=$tdir "$CARGO" "${toolchain[@]}" build --release --locked --target "$triple" "${zflags[@]}" -p "$bin" --bin "$bin"
    out="$DIST/$bin-linux-$arch"
    cp "$tdir/$triple/release/$bin" "$out.tmp"
    chmod 0755 "$out.tmp"
    check_static "$out.tmp"
    mv "$out.tmp" "$out"
  done
done

# Completions and man pages: built for this host with the toolchain the crate's
# tests use (a dev-only example, so the shim's dependencies and bytes are unchanged).
if [ "${CLI_DOCS:-1}" != 0 ]; then
  echo "musl-build: cargo run --example cli-docs -- $DIST"
  "$CARGO" run --quiet --locked --example cli-docs -- "$DIST"
fi

(cd "$DIST" && sha256sum *envshim-linux-* >SHA256SUMS)
echo "musl-build: sizes:"
for f in "$DIST"/*envshim-linux-*; do
  printf '  %-28s %8d bytes (%s KiB)\n' "$f" "$(stat -c %s "$f")" "$(( $(stat -c %s "$f") / 1024 ))"
done
echo "musl-build: $DIST/SHA256SUMS:"; sed 's/^/  /' "$DIST/SHA256SUMS"
