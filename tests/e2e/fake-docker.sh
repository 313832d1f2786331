#!/usr/bin/env bash
# A stand-in for `docker run` (there is no Docker engine here) so that the example
# scripts run unchanged: runs an OCI-layout image (IMAGE = oci:DIR:TAG) under runc
# with Docker's semantics for --entrypoint (also drops the image's CMD), trailing
# args (replace CMD), --env/-e (adds to the image's Env) and --volume/-v SRC:DST[:ro].
# Supports `docker run` with those flags and --rm only.
set -euo pipefail
source "$(dirname "$(readlink -f "$0")")/lib.sh"
[ "${1:-}" = run ] || { echo "fake docker: only 'run' is supported" >&2; exit 125; }
shift
opts=() entry=
while [ $# -gt 0 ]; do
  case $1 in
    --rm) shift ;;
    -v | --volume) IFS=: read -r src dst mode <<<"$2"; opts+=(-m "$src:$dst:${mode:-rw}"); shift 2 ;;
    -e | --env) if [[ $2 == *=* ]]; then opts+=(-e "$2"); else opts+=(-e "$2=${!2-}"); fi; shift 2 ;;
    --entrypoint) entry=$2; shift 2 ;;
    -*) echo "fake docker: unsupported flag $1" >&2; exit 125 ;;
    *) break ;;
  esac
done
image=$1; shift
[[ $image == oci:* ]] || { echo "fake docker: IMAGE must be oci:DIR:TAG" >&2; exit 125; }
cfg=$(skopeo inspect --config "$image" | jq -c .config)
if [ -n "$entry" ]; then args=("$entry"); else mapfile -t args < <(jq -r '.Entrypoint // [] | .[]' <<<"$cfg"); fi
if [ $# -gt 0 ]; then args+=("$@")
elif [ -z "$entry" ]; then mapfile -t -O ${#args[@]} args < <(jq -r '.Cmd // [] | .[]' <<<"$cfg"); fi
b=$WORK/docker/$(sha256sum <<<"$image" | cut -c1-12)
[ -d "$b" ] || umoci unpack --image "${image#oci:}" "$b" >/dev/null
runc_run "docker-$RANDOM" "$b/rootfs" -c "$b/config.json" "${opts[@]}" -- "${args[@]}"
