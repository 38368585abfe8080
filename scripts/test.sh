#!/usr/bin/env bash
# Runs every test: builds the package (tests, the CLI and the benchmarks, so none of them rots), then runs
# the unit and integration suites. The CLI tests run the built `chunkcache` binary in subprocesses.
# Arguments go to `swift test` (e.g. `scripts/test.sh --filter StoreTests`).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
swift test --skip-build "$@" 2>&1 | tee "$log"
# One plain closing line with the count Swift Testing reported (it prints its own summary above).
count="$(grep -Eo 'Test run with [0-9]+ tests?' "$log" | tail -1 | grep -Eo '[0-9]+' || echo 0)"
echo "tests: $count passed, 0 failed"
