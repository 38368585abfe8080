#!/usr/bin/env bash
# Runs every test: builds the package (tests, the CLI and the benchmarks, so none of them rots), then runs
# the unit and integration suites. The CLI tests run the built `chunkcache` binary in subprocesses.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests
swift test --skip-build "$@"
