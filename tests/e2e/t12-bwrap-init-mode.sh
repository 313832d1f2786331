#!/usr/bin/env bash
# --init under bubblewrap: envshim stays PID 1 and supervises the program, which
# gets its own pid (parent 1); the program's exit code is envshim's.
source "$(dirname "$0")/lib.sh"
rootfs=$(new_rootfs init "$DIST/envshim-linux-amd64:envshim" "$WORK/bin/showenv-amd64:app")
set +e
bwrap_run "$rootfs" -e GREETING=hi -- /envshim run --init --env 'MSG=$(GREETING) there' -- /app >out 2>err
rc=$?
set -e
cat err >&2
! grep -q 'not available in this build' err || skip "this envshim build has no --init yet"
expect_rc 0 $rc "envshim --init"
expect_line out "ppid=1"
expect_no_line out '^pid=1$'
expect_line out "env:MSG=hi there"
set +e
bwrap_run "$rootfs" -e ENVSHIM_INIT=1 -- /envshim run -- /app exit 7 >out 2>err
rc=$?
set -e
expect_rc 7 $rc "ENVSHIM_INIT=1 with a program exiting 7"
