#!/usr/bin/env bash
# Issue 20's fast CLI start: the median wall time of 20 runs (after 2 unmeasured ones) of `chunkcache --version`
# and of a warm 64 KiB `chunkcache fetch --range` of a stored item (a hand-off file, as a provider would ask),
# with the release binary; beside them `/bin/true` and a Swift hello world linked dynamically with Foundation
# and with -static-stdlib, for what any process and any Swift process cost here. Prints a markdown table with
# each figure's ratio to its goal (--version ≤ 4 ms, warm fetch ≤ 6 ms).
#
#   Benchmarks/cli-start.sh               build the release CLI (a no-op when up to date) and measure (~1 min once built)
#   Benchmarks/cli-start.sh --runs N      N measured runs per command instead of 20
#   Benchmarks/cli-start.sh --bin PATH    measure this chunkcache binary instead (no build)
#
# Works in a scratch directory under mktemp (store, item, hello worlds), removed at the end. Runs are timed by
# python3 around posix_spawn and waitpid, stdout to /dev/null, so the shell's own fork is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=20
cli=""
while (($#)); do
    case "$1" in
        --runs) runs="$2"; shift ;;
        --bin) cli="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "cli-start.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

if [[ -z $cli ]]; then
    swift build -c release --product chunkcache >&2
    cli="$(swift build -c release --show-bin-path)/chunkcache"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/chunkcache-cli-start-XXXXXX")"
trap 'rm -rf "$work"' EXIT
store="$work/store"

# A 1 MiB item, and one fetch of the range first, so every measured fetch is warm.
head -c 1048576 /dev/urandom >"$work/item"
"$cli" --store "$store" put --domain bench item "$work/item" >/dev/null
fetch=("$cli" --store "$store" fetch --domain bench item --range 262144:65536)
"${fetch[@]}" >/dev/null

# Swift hello worlds, when swiftc is here (a few seconds to compile).
hello=()
if command -v swiftc >/dev/null; then
    printf 'import Foundation\nprint("hello \\(Date().timeIntervalSince1970 > 0)")\n' >"$work/hello.swift"
    if swiftc -O "$work/hello.swift" -o "$work/hello-dynamic" 2>/dev/null \
        && swiftc -O -static-stdlib "$work/hello.swift" -o "$work/hello-static" 2>/dev/null; then
        hello=("$work/hello-dynamic" "$work/hello-static")
    fi
fi

# Prints "MEDIAN_MS" for `runs` runs of the command in the arguments; fails if a run fails.
median_ms() {
    python3 - "$runs" "$@" <<'EOF'
import os, statistics, sys, time
runs, argv = int(sys.argv[1]), sys.argv[2:]
null = os.open(os.devnull, os.O_WRONLY)
times = []
for index in range(runs + 2):
    start = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, null, 1)])
    _, status = os.waitpid(pid, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"cli-start.sh: {' '.join(argv)} failed (status {status})")
    if index >= 2:
        times.append(elapsed)
print(f"{statistics.median(times):.2f}")
EOF
}

# One table row: name, goal in ms (or "-"), then the command.
row() {
    local name="$1" goal="$2"
    shift 2
    local ms
    ms="$(median_ms "$@")"
    if [[ $goal == - ]]; then
        echo "| $name | $ms | | | |"
    else
        awk -v name="$name" -v ms="$ms" -v goal="$goal" 'BEGIN {
            printf "| %s | %s | ≤ %s | %.2f× | %s |\n", name, ms, goal, ms / goal, (ms <= goal ? "met" : "missed") }'
    fi
}

echo "chunkcache: $cli ($(du -h "$cli" | cut -f1), $(ldd "$cli" 2>/dev/null | grep -c '=>' || true) shared libraries); medians of $runs runs"
echo
echo "| command | median ms | goal | ratio to goal | |"
echo "|---|---|---|---|---|"
row "chunkcache --version" 4 "$cli" --version
row "chunkcache fetch (warm, 64 KiB)" 6 "${fetch[@]}"
row "/bin/true" - /bin/true
if ((${#hello[@]})); then
    row "Swift hello world (Foundation, dynamic)" - "${hello[0]}"
    row "Swift hello world (Foundation, -static-stdlib)" - "${hello[1]}"
fi
