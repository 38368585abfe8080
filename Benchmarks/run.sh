#!/usr/bin/env bash
# Builds the benchmark suite in release and runs it: every engine figure beside its floors, measured in the
# same run (see Benchmarks/ChunkCacheBenchmarks/ChunkCacheBenchmarks.swift), then a summary of the ratios
# and of the performance goals.
#
#   Benchmarks/run.sh                      full run: text tables + summary, saved under the results directory
#   Benchmarks/run.sh --smoke              every benchmark once on a few MiB of data (CI: keeps the suite from rotting)
#   Benchmarks/run.sh --filter 'partial 64KiB.*'      only the benchmarks whose whole name matches the regex
#   Benchmarks/run.sh --format markdown    markdown tables instead of text (also summarized)
#   Benchmarks/run.sh --format jmh         JMH JSON written to the results directory (no tables, no summary)
#
# Options:
#   --smoke              CHUNKCACHE_BENCH_SMOKE=1: small data sets, one iteration each, data under <dir>/smoke
#   --filter REGEX       passed to `swift package benchmark --filter` (matches the whole benchmark name)
#   --format FORMAT      text (default), markdown, or any other `swift package benchmark --format`
#   --output DIR         where results go (default: <dir>/results)
#   --keep-stores        reuse the stores of an earlier run instead of ingesting afresh (data sets are always
#                        reused: they are built once from files on the machine)
#   --scratch-path DIR   SwiftPM scratch path (default: .build-bench, so a benchmark build never locks .build)
#
# Release only: in debug, package-benchmark 1.38.1 on Swift 6.3 preloads its malloc interposer on top of the
# copy linked into the benchmark, and every benchmark dies with SIGSEGV (malloc recursing between the two).
# A smoke run from a clean scratch path spends ~4-5 minutes building (2 cores), then ~30 s running.
#
# Environment: CHUNKCACHE_BENCH_DIR (default /tmp/chunkcache-bench) holds data/, stores/, work/, results/.
# Needs about 4 GiB free there for a full run (1 GiB data set, its store, frames, hand-off files).
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
filter=""
format="text"
output=""
keep_stores=0
configuration=release
scratch="${CHUNKCACHE_BENCH_SCRATCH:-.build-bench}"
while (($#)); do
    case "$1" in
        --smoke) smoke=1 ;;
        --filter) filter="$2"; shift ;;
        --format) format="$2"; shift ;;
        --output) output="$2"; shift ;;
        --keep-stores) keep_stores=1 ;;
        --scratch-path) scratch="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}"
root="$base"
if ((smoke)); then
    export CHUNKCACHE_BENCH_SMOKE=1
    root="$base/smoke"
else
    unset CHUNKCACHE_BENCH_SMOKE
fi
output="${output:-$root/results}"
mkdir -p "$output"

# A store written by an older engine must not serve this run's figures: ingest afresh unless told otherwise.
if ((!keep_stores)); then rm -rf "$root/stores" "$root/work"; fi

if ! command -v zstd >/dev/null; then
    echo "run.sh: the zstd command is needed for the 'zstd -3 -T0' reference (apt-get install zstd)" >&2
    exit 69
fi

load="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"
echo "== load average before the run: $load"
if awk -v l="${load%% *}" 'BEGIN { exit !(l > 0.5) }'; then
    echo "== warning: the machine is busy (load $load on $(nproc) cores): expect noisy figures, compare ratios only" >&2
fi

echo "== building ChunkCacheBenchmarks ($configuration, scratch path $scratch)"
swift build -c "$configuration" --scratch-path "$scratch" --product ChunkCacheBenchmarks

args=(--target ChunkCacheBenchmarks --no-progress --format "$format" --benchmark-build-configuration "$configuration")
[[ -n "$filter" ]] && args+=(--filter "$filter")
stamp="$(date +%Y%m%d-%H%M%S)"
mode=$([[ $smoke == 1 ]] && echo smoke || echo full)

echo "== running: swift package --scratch-path $scratch benchmark ${args[*]}"
case "$format" in
    text|markdown)
        extension=$([[ $format == text ]] && echo txt || echo md)
        log="$output/benchmarks-$mode-$stamp.$extension"
        swift package --scratch-path "$scratch" benchmark "${args[@]}" 2>&1 | tee "$log"
        ;;
    *)
        swift package --scratch-path "$scratch" --allow-writing-to-directory "$output" \
            benchmark "${args[@]}" --path "$output"
        echo "== results written to $output"
        exit 0
        ;;
esac

# Summary: pairs each engine row with the floors of its group ("<group>: <role>") and checks the goals.
# Reads the per-benchmark tables (text or markdown) just printed; wall clock is normalized to µs.
summary="$output/summary-$mode-$stamp.txt"
awk '
    function micros(label, value) {
        if (label ~ /\(ns\)/) return value / 1000
        if (label ~ /\(ms\)/) return value * 1000
        if (label ~ /\(s\)/) return value * 1000000
        return value + 0
    }
    /^### / { name = substr($0, 5); next }
    /^╒/ { if (plain != "") name = plain; next }
    /^(│|\| )/ {
        n = split($0, parts, /│|\|/)
        label = parts[2]
        if (label ~ /Metric/ || label ~ /^:?-+/) next
        # parts: 2 label, 3 p0, 4 p25, 5 p50, 6 p75, 7 p90, 8 p99, 9 p100, 10 samples
        p50 = parts[5]; p99 = parts[8]; p100 = parts[9]; gsub(/[ *]/, "", p50); gsub(/[ *]/, "", p99); gsub(/[ *]/, "", p100)
        if (!(name in seen)) { seen[name] = 1; order[++count] = name }
        if (label ~ /Time \(wall clock\)/) { wall50[name] = micros(label, p50); wall99[name] = micros(label, p99) }
        else if (label ~ /^ *MB\/s/) { mbps[name] = p50 + 0 }
        else if (label ~ /Memory \(resident peak\)/) { rss[name] = p100 + 0 }
        else if (label ~ /peak RssAnon/) { anon[name] = p100 + 0 }
        else if (label ~ /peak RssFile/) { mapped[name] = p100 + 0 }
        else if (label ~ /Malloc \(total\)/) { mallocs[name] = p50 + 0 }
        else if (label ~ /to completion/) { done50[name] = p50 + 0; done99[name] = p99 + 0 }
        next
    }
    /^[^ ═=│|╒╞├╘]/ { plain = $0; next }
    function group(n,    i) { i = index(n, ": "); return i ? substr(n, 1, i - 1) : n }
    function role(n,    i) { i = index(n, ": "); return i ? substr(n, i + 2) : n }
    function fmt(us) { return us >= 10000 ? sprintf("%9.1f ms", us / 1000) : sprintf("%9.0f µs", us) }
    END {
        if (count == 0) { print "no benchmark tables found"; exit 0 }
        # A completion-handler benchmark is judged by the time until its handler ran (its wall clock also
        # holds the wake-up of the waiting benchmark thread).
        for (n in done50) { wall50[n] = done50[n]; wall99[n] = done99[n] }
        for (k = 1; k <= count; k++) { n = order[k]; if (role(n) ~ /^engine/ && !(group(n) in engine)) engine[group(n)] = n }
        printf "%-58s %13s %13s %7s %7s %6s %6s %6s %6s\n", "benchmark", "p50", "p99", "p50 ×", "p99 ×", "MB/s", "RSS", "anon", "file"
        last = ""
        for (k = 1; k <= count; k++) {
            n = order[k]; g = group(n); e = engine[g]
            if (g != last) { print ""; last = g }
            r50 = ""; r99 = ""
            if (e != "" && e != n && wall50[n] > 0) {
                r50 = sprintf("%.2f", wall50[e] / wall50[n]); r99 = sprintf("%.2f", wall99[e] / wall99[n])
            }
            printf "%-58s %13s %13s %7s %7s %6s %6s %6s %6s\n", n, fmt(wall50[n]), fmt(wall99[n]), r50, r99, \
                (n in mbps) ? mbps[n] : "", (n in rss) ? rss[n] : "", (n in anon) ? anon[n] : "", (n in mapped) ? mapped[n] : ""
        }
        print ""
        print "p50 × and p99 ×: engine time / floor time (1.00 = at the floor); completion-handler rows: time until the handler ran."
        print "MB/s: p50. RSS, anon, file: the highest peak"
        print "of any iteration in MB (package-benchmark'"'"'s peak resident; RssAnon: heap and buffers; RssFile: mapped files,"
        print "LMDB'"'"'s map of data.mdb among them, clean shared page cache)."
        print ""
        print "Goals:" (smoke ? " (smoke run: one iteration on a few MiB, so these say nothing; run without --smoke)" : "")
        for (k = 1; k <= count; k++) {
            n = order[k]; g = group(n)
            if (g ~ /^partial 64KiB/ && role(n) == "engine fetch") {
                raw = g ": floor raw pread+pwrite"
                if (raw in wall50) printf "  %-34s p50 %s vs raw floor %s = %.2f× (goal ≤ 2×): %s\n", g, fmt(wall50[n]), fmt(wall50[raw]), \
                    wall50[n] / wall50[raw], (wall50[n] <= 2 * wall50[raw]) ? "MET" : "MISSED"
            }
            if (g ~ /^full/ && n == engine[g]) {
                d = g ": floor decode 1 thread"
                if (d in mbps) printf "  %-34s %d MB/s vs one-thread decode %d MB/s (goal: faster): %s\n", g, mbps[n], mbps[d], \
                    (mbps[n] > mbps[d]) ? "MET" : "MISSED"
            }
            if (g ~ /^ingest/ && n == engine[g]) {
                z = ""
                for (j = 1; j <= count; j++) if (group(order[j]) == g && role(order[j]) ~ /zstd -3 -T0/) z = order[j]
                printf "  %-34s peak RSS %d MB (RssAnon %d, RssFile %d) (goal < 256 MiB = 268 MB): %s\n", g, rss[n], anon[n], mapped[n], \
                    (rss[n] < 268.435456) ? "MET" : "MISSED"
                if (z != "") printf "  %-34s %d MB/s vs zstd -3 -T0 %d MB/s = %.2f (goal ≥ 0.5): %s\n", g, mbps[n], mbps[z], \
                    mbps[n] / mbps[z], (mbps[n] >= 0.5 * mbps[z]) ? "MET" : "MISSED"
            }
        }
    }
' smoke="$smoke" "$log" | tee "$summary"
echo "load average before: $load, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)" | tee -a "$summary"
echo
echo "== tables: $log"
echo "== summary: $summary"
