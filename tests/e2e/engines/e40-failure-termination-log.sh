#!/usr/bin/env bash
# The failure path in Docker and in Podman: the mode-1 image run as in production
# (read-only, user 65532, no capabilities) with a manifest at the default path whose
# fileKeyRef names a key the env file lacks. The engine reports exit 66; stderr is
# one `envshim: ` line naming the key and the file; the same line is in the
# bind-mounted /dev/termination-log (stale content replaced); /app never ran; and
# no value of the env file - each holds the sentinel - is printed anywhere.
source "$(dirname "$0")/lib.sh"
mkdir -p config manifest
cp "$E2E/data/secret.env" config/
cp "$E2E/data/manifest-missing-key.json" manifest/manifest.json
chmod -R a+rX config manifest
for engine in $ENGINES; do
  echo "  -- $engine"
  app_with_envshim $engine
  echo "stale message from an earlier run" >tlog
  chmod 0666 tlog # as the kubelet makes it, writable for any uid
  set +e
  $engine run --rm --read-only --user 65532 --cap-drop ALL --network none \
    -v "$PWD/config:/config:ro" -v "$PWD/manifest:/etc/envshim:ro" -v "$PWD/tlog:/dev/termination-log" \
    registry.example.com/app-with-envshim:1.0 >out 2>err
  rc=$?
  set -e
  sed 's/^/      stderr| /' err; sed 's/^/      termination-log| /' tlog
  expect_rc 66 $rc "$engine run, missing key"
  [ ! -s out ] || fail "the program ran (stdout: $(head -c 200 out))"
  ok "the program did not run"
  [ "$(wc -l <err)" = 1 ] && grep -q '^envshim: .*MISSING_KEY.*secret.env' err || fail "stderr is not one 'envshim: ' line naming MISSING_KEY and secret.env"
  ok "stderr: one 'envshim: ' line naming MISSING_KEY and secret.env"
  [ "$(cat tlog)" = "$(cat err)" ] || fail "the termination log does not hold exactly the message"
  ok "the termination log holds the message (stale content replaced)"
  expect_absent "$SENTINEL" out err tlog
done
