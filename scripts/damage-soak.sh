#!/usr/bin/env bash
# The long form of the damaged-store tests (issue 10): 100 copies of a real store, each damaged at a random
# offset of data.mdb (a byte flipped in a B-tree page, a byte flipped anywhere, or a 4 KiB page zeroed), with
# a fresh random seed; on each the real binary runs verify, stat, fetches and recover --to, and the counts
# (crashes of the calling process, wrong bytes, verify-child crashes detected, …) are printed. CI runs the same
# test with 20 copies and a fixed seed (Tests/ChunkCacheCommandsTests/DamagedStoreTests.swift).
#
#   scripts/damage-soak.sh                # 100 copies, a new seed (printed first and last)
#   scripts/damage-soak.sh 300 12345      # 300 copies, replaying seed 12345
#
# Environment: CHUNKCACHE_DAMAGE_SEEDS and CHUNKCACHE_DAMAGE_SEED, which the arguments override.
set -euo pipefail
cd "$(dirname "$0")/.."
copies="${1:-${CHUNKCACHE_DAMAGE_SEEDS:-100}}"
seed="${2:-${CHUNKCACHE_DAMAGE_SEED:-$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')}}"
echo "damage soak: CHUNKCACHE_DAMAGE_SEEDS=$copies CHUNKCACHE_DAMAGE_SEED=$seed"
swift build --build-tests
status=0
CHUNKCACHE_DAMAGE_SEEDS="$copies" CHUNKCACHE_DAMAGE_SEED="$seed" \
    swift test --skip-build --filter 'DamagedStoreTests/damagedCopies' || status=$?
echo "damage soak: CHUNKCACHE_DAMAGE_SEEDS=$copies CHUNKCACHE_DAMAGE_SEED=$seed: $([ "$status" -eq 0 ] && echo passed || echo "FAILED (replay: scripts/damage-soak.sh $copies $seed)")"
exit "$status"
