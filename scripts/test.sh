#!/usr/bin/env bash
# Runs every test: builds the package (tests, the CLI and the benchmarks, so none of them rots), then runs
# the unit and integration suites. The CLI tests run the built `chunkcache` and `chunkcache-bench` in subprocesses.
# Arguments go to `swift test` (e.g. `scripts/test.sh --filter StoreTests`).
#
# Without arguments the heavy suites run after the others: kill -9 at random moments, damaged stores and the
# 2,000-file import crash, then the soak (64 readers and a writer on both cores for a minute each) alone.
# Beside the other suites they would starve the timing checks of the cold path's fault tests on a 2-core
# machine, and the soak's readers would starve too.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
if (($#)); then
    swift test --skip-build "$@" 2>&1 | tee "$log" || status=$?
else
    heavy='CrashAtAnyPointTests|DamagedStoreTests|ImportCrashTests'
    swift test --skip-build --skip "$heavy|SoakTests" 2>&1 | tee "$log" || status=$?
    swift test --skip-build --filter "$heavy" 2>&1 | tee -a "$log" || status=$?
    swift test --skip-build --filter SoakTests 2>&1 | tee -a "$log" || status=$?
fi
# One plain closing line with the counts Swift Testing reported (it prints its own summaries above).
count="$(grep -Eo 'Test run with [0-9]+ tests?' "$log" | grep -Eo '[0-9]+' | awk '{ s += $1 } END { print s + 0 }')"
if ((status)); then
    echo "tests: $count run, some failed"
    exit "$status"
fi
echo "tests: $count passed, 0 failed"
