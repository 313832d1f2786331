#!/usr/bin/env bash
# Every test envshim has: installs what they need (apt packages, rustup
# targets, cargo-fuzz), then runs the unit and integration tests, the
# end-to-end tests in real runtimes, and a short fuzz smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/e2e/deps.sh
cargo test --all-targets
bash tests/e2e/run.sh
bash fuzz/smoke.sh
