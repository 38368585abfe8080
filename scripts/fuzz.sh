#!/usr/bin/env bash
# Fuzzes every decoder of outside bytes with libFuzzer (issue 10; Fuzz/README.md).
#
# Builds chunkcache-fuzz with -sanitize=fuzzer,address into .build-fuzz (the first build takes ~4 minutes on
# 2 cores), runs each target for SECONDS (default 120) from its saved corpus, merges the inputs that reached
# new code back into Fuzz/corpus/TARGET (kept minimal), and prints runs, corpus size, crashes and hangs.
# Exits 1 when any target crashed, hung or ran out of memory; the inputs are kept in Fuzz/findings/.
#
# usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-120}
shift || true
swift build --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING --product chunkcache-fuzz 2>&1 \
  | grep -v "Cannot export local symbol" | tail -3
bin=.build-fuzz/debug/chunkcache-fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <("$bin" --list 2>&1 | awk 'NR > 1 { print $1 }')
fi

# Swift's backtracer reads the stack in a way AddressSanitizer reports as an overflow of its own: the
# sanitizer's report names the frames instead.
export SWIFT_BACKTRACE=enable=no
work=$(mktemp -d /tmp/chunkcache-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
printf '%-18s %10s %8s %8s %8s %8s\n' target runs seconds corpus crashes hangs
for target in "${targets[@]}"; do
  dir=$work/$target
  mkdir -p "$dir/new" "$dir/artifacts" "$dir/tmp"
  corpus=Fuzz/corpus/$target
  mkdir -p "$corpus"
  # A page file is LMDB pages of 4 KiB: room for a store's first pages.
  max_len=4096
  [ "$target" = page-file ] && max_len=262144
  # Swift's runtime keeps caches LeakSanitizer cannot tell from leaks: leaks are not what is hunted here.
  TMPDIR=$dir/tmp "$bin" "$target" "$dir/new" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len="$max_len" -detect_leaks=0 -artifact_prefix="$dir/artifacts/" -print_final_stats=1 \
    >"$dir/log" 2>&1 </dev/null || true
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  elapsed=$(sed -n 's/.*Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log" | tail -1)
  # The corpus stays minimal: the fewest inputs that reach what the saved corpus and the new finds reach,
  # plus the seeds (seed-*) and the inputs of fixed bugs (regression-*), kept whatever they reach. libFuzzer
  # names an input by the SHA-1 of its bytes.
  mkdir -p "$dir/min"
  TMPDIR=$dir/tmp "$bin" "$target" -merge=1 -detect_leaks=0 -max_len="$max_len" "$dir/min" "$corpus" "$dir/new" >"$dir/merge.log" 2>&1 </dev/null || true
  if [ -n "$(ls "$dir/min")" ]; then
    keep=$(cd "$corpus" && { sha1sum seed-* regression-* 2>/dev/null || true; } | awk '{ print $1 }')
    find "$corpus" -type f ! -name 'seed-*' ! -name 'regression-*' -delete
    for input in "$dir/min"/*; do
      grep -qx "$(basename "$input")" <<<"$keep" || cp "$input" "$corpus/"
    done
  fi
  crashes=$(find "$dir/artifacts" -name 'crash-*' -o -name 'oom-*' -o -name 'leak-*' | wc -l)
  hangs=$(find "$dir/artifacts" -name 'timeout-*' -o -name 'slow-unit-*' | wc -l)
  printf '%-18s %10s %8s %8s %8s %8s\n' "$target" "${runs:-?}" "${elapsed:-?}" "$(ls "$corpus" | wc -l)" "$crashes" "$hangs"
  if [ "$crashes" -gt 0 ] || [ "$hangs" -gt 0 ] || [ -z "$runs" ]; then
    failed=1
    mkdir -p "Fuzz/findings/$target"
    cp "$dir"/artifacts/* "Fuzz/findings/$target/" 2>/dev/null || true
    cp "$dir/log" "Fuzz/findings/$target/log"
    grep -m 3 -E 'chunkcache-fuzz|ERROR|Fatal error|deadly signal' "$dir/log" | sed 's/^/    /' || true
  fi
done
exit $failed
