#!/usr/bin/env bash
# The long form of the crash-at-any-point tests (issue 10): SIGKILL at 100 random moments of each of put
# (storing deltas), import, a cold fetch from nginx, evict, gc (re-encoding the deltas of the bases it
# removes), domain sync and the hot tier's re-encoding (700 kills), with a fresh random seed, each kill
# followed by the checks of Tests/ChunkCacheCommandsTests/CrashAtAnyPointTests.swift. CI runs the same tests
# with 5 kills per kind and a fixed seed.
#
#   scripts/crash-soak.sh                 # 100 kills per kind, a new seed (printed first and last)
#   scripts/crash-soak.sh 300 12345       # 300 kills per kind, replaying seed 12345
#
# Environment: CHUNKCACHE_CRASH_KILLS and CHUNKCACHE_CRASH_SEED, which the arguments override.
set -euo pipefail
cd "$(dirname "$0")/.."
kills="${1:-${CHUNKCACHE_CRASH_KILLS:-100}}"
seed="${2:-${CHUNKCACHE_CRASH_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}}"
echo "crash soak: CHUNKCACHE_CRASH_KILLS=$kills CHUNKCACHE_CRASH_SEED=$seed"
swift build --build-tests
status=0
CHUNKCACHE_CRASH_KILLS="$kills" CHUNKCACHE_CRASH_SEED="$seed" \
    swift test --skip-build --filter CrashAtAnyPointTests || status=$?
echo "crash soak: CHUNKCACHE_CRASH_KILLS=$kills CHUNKCACHE_CRASH_SEED=$seed: $([ "$status" -eq 0 ] && echo passed || echo "FAILED (replay: scripts/crash-soak.sh $kills $seed)")"
exit "$status"
