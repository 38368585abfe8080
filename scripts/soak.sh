#!/usr/bin/env bash
# The long form of the soak tests (issue 10): 64 readers (24 threads, 32 tasks, 8 CLI processes), one writer
# and eviction in a 40 MiB store over 80 MiB of origin files, every byte checked, first against nginx, then
# against an origin failing 5 % of requests; then processes opening the store beside readers and a writer of
# new items, for half as long. CI runs the same tests for 60 s each (the openers' 30 s).
#
#   scripts/soak.sh          # 600 s each (20 minutes in all)
#   scripts/soak.sh 120      # 120 s each
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-${CHUNKCACHE_SOAK_SECONDS:-600}}"
swift build --build-tests
CHUNKCACHE_SOAK_SECONDS="$seconds" swift test --skip-build --filter SoakTests
