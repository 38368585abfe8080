#!/usr/bin/env bash
# Issue 10's churn measurement: `chunkcache-bench churn` against nginx on 127.0.0.1. A store bounded by
# `init --max-size` (no --min-free) is filled cycle after cycle with 1.25 × its bound of new bytes from the
# origin (each cycle's files are written into nginx's root by the command, the previous cycle's removed), while
# warm 64 KiB fetches of a pinned item are timed; the goals: data.mdb ≤ 1.1 × the bound, the last cycle's put
# throughput ≥ 0.9 × the first's, warm fetch p99 during eviction ≤ 2 × quiet.
#
#   Benchmarks/churn.sh                 the issue's parameters: a 2 GiB bound, 20 cycles (~6 min on 2 vCPUs; ~5 GiB free
#                                       needed under the work directory: 2.5 GiB of origin files and the store)
#   Benchmarks/churn.sh --smoke         a 64 MiB bound, 3 cycles (~10 s once built)
#   Benchmarks/churn.sh [--smoke] [--json] [-- EXTRA…]   --json: the one JSON object; EXTRA goes to `chunkcache-bench churn`
#                                       (e.g. -- --cycles 10 --parallel 2)
#
# Environment: CHUNKCACHE_BENCH_DIR (default /tmp/chunkcache-bench) holds work/churn-* for the run, removed at
# the end. The release chunkcache-bench is built first (a no-op when up to date).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

smoke=0
json=()
extra=()
while (($#)); do
    case "$1" in
        --smoke) smoke=1 ;;
        --json) json=(--json) ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "churn.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

if ((smoke)); then params=(--bound 64MiB --cycles 3 --quiet-samples 300); else params=(--bound 2GiB --cycles 20); fi

swift build -c release --product chunkcache-bench >&2
bench="$(swift build -c release --show-bin-path)/chunkcache-bench"

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}/work"
mkdir -p "$base"
work="$(mktemp -d "$base/churn-XXXXXX")"
mkdir -p "$work/origin" "$work/scratch"
ORIGIN_PIDS=""
cleanup() {
    for pid in $ORIGIN_PIDS; do kill "$pid" 2>/dev/null || true; done
    for pid in $ORIGIN_PIDS; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# shellcheck source=Benchmarks/origin.sh
source "$repo/Benchmarks/origin.sh"
start_origin "$work/origin" "$work/nginx" "$repo" >&2

echo "chunkcache-bench ${json[*]} churn --origin $ORIGIN_URL --origin-dir $work/origin --scratch $work/scratch ${params[*]} ${extra[*]}" >&2
"$bench" "${json[@]}" churn --origin "$ORIGIN_URL" --origin-dir "$work/origin" --scratch "$work/scratch" \
    "${params[@]}" "${extra[@]}"
