#!/usr/bin/env bash
# A failure inside the container: a fileKeyRef to a key the env file lacks.
# runc, with /dev/termination-log bind-mounted as the kubelet does (envshim's
# default): exit 66 (docs/reference.md §7), one `envshim: ` line on stderr naming the key and
# the file, the same message in the termination log (stale content replaced),
# the program never started, and no secret value from the env file anywhere.
# Then, under bwrap: --termination-log to a file that does not exist yet, and a
# malformed line holding a secret (exit 65, file and line named, line not shown).
source "$(dirname "$0")/lib.sh"
d=$E2E/data
kubelet_volume "$WORK/vol" secret.env="$d/secret.env" broken.env="$d/broken.env"
mkdir -p "$WORK/m" && cp "$d"/manifest-*.json "$WORK/m/"
echo "stale message from an earlier run" >"$WORK/termination-log"
chmod 0666 "$WORK/termination-log" # as the kubelet makes it, writable for any uid
rootfs=$(image_rootfs fail amd64 "$WORK/bin/showenv-amd64:app")
set +e
runc_run fail "$rootfs" -u 65532 -m "$WORK/vol:/config:ro" -m "$WORK/m:/etc/envshim:ro" \
  -m "$WORK/termination-log:/dev/termination-log:rw" \
  -- /envshim run --manifest /etc/envshim/manifest-missing-key.json -- /app >out 2>err
rc=$?
set -e
sed 's/^/      stderr| /' err; sed 's/^/      termination-log| /' "$WORK/termination-log"
expect_rc 66 $rc "missing key"
[ ! -s out ] || fail "the program ran (stdout: $(head -c 200 out))"
ok "the program did not run"
[ "$(wc -l <err)" = 1 ] && grep -q '^envshim: ' err || fail "stderr is not one 'envshim: ' line"
grep -q MISSING_KEY err && grep -q secret.env err || fail "the message does not name the key and the file"
ok "stderr: one 'envshim: ' line naming MISSING_KEY and secret.env"
grep -qF "$(cat err)" "$WORK/termination-log" || fail "the termination log does not hold the message"
! grep -q stale "$WORK/termination-log" || fail "the termination log was not truncated"
ok "termination log holds the message (stale content replaced)"
expect_absent "$SENTINEL" out err "$WORK/termination-log"

mkdir -p "$WORK/logs"; rm -f "$WORK/logs/termination-log"
rootfs=$(new_rootfs fail2 "$DIST/envshim-linux-amd64:envshim" "$WORK/bin/showenv-amd64:app")
set +e
bwrap_run "$rootfs" -m "$WORK/vol:/config:ro" -m "$WORK/m:/etc/envshim:ro" -m "$WORK/logs:/logs:rw" \
  -- /envshim run --manifest /etc/envshim/manifest-bad-file.json --termination-log /logs/termination-log -- /app >out 2>err
rc=$?
set -e
sed 's/^/      stderr| /' err
expect_rc 65 $rc "unparsable env file"
[ ! -s out ] || fail "the program ran"
grep -q '^envshim: .*broken.env.*2' err || fail "the message does not name the file and line 2"
ok "stderr names broken.env and line 2"
[ -s "$WORK/logs/termination-log" ] || fail "--termination-log file not created"
ok "--termination-log file created"
expect_absent "$SENTINEL" out err "$WORK/logs/termination-log"
