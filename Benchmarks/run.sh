#!/usr/bin/env bash
# Builds the benchmark suite in release and runs it: every engine figure beside its floors, measured in the
# same run (see Benchmarks/ChunkCacheBenchmarks/ChunkCacheBenchmarks.swift), then a summary of the ratios
# and of the performance goals of issue 3.
#
#   Benchmarks/run.sh                      full run: text tables + summary, saved under the results directory
#   Benchmarks/run.sh --smoke              every benchmark on a few MiB of data, then the malloc-count check
#                                          (CI: keeps the suite from rotting; no timing thresholds)
#   Benchmarks/run.sh --update-thresholds  records the malloc counts the smoke check compares against
#   Benchmarks/run.sh --filter 'store .*'  only the benchmarks whose whole name, tags left out, matches the
#                                          regex (package-benchmark 1.38.1 filters runs on the name without
#                                          its tags: 'partial: engine fetch' runs that role for every combination)
#   Benchmarks/run.sh --format markdown    markdown tables instead of text (also summarized)
#   Benchmarks/run.sh --format jmh         JMH JSON written to the results directory (no tables, no summary)
#
# Options:
#   --smoke              CHUNKCACHE_BENCH_SMOKE=1: small data sets and stores, a few iterations each, all in a
#                        temporary directory removed at the end (only --output, if given, is kept); then
#                        `benchmark thresholds check` of the engine's partial fetches on mallocCountTotal only
#   --update-thresholds  a smoke-sized `benchmark thresholds update` of the engine's partial fetches, mallocs
#                        only, into Benchmarks/Thresholds (run it after a change that adds or removes mallocs)
#   --filter REGEX       passed to `swift package benchmark --filter` (matches the whole name without tags)
#   --format FORMAT      text (default), markdown, or any other `swift package benchmark --format`
#   --output DIR         where results go (default: <dir>/results)
#   --keep-stores        reuse the stores of an earlier run instead of ingesting afresh (data sets are always
#                        reused: they are built once from files on the machine)
#   --rebuild-scale-stores  build the 0.1/1/10 GiB stores again (otherwise kept across runs: the 10 GiB one
#                        takes several minutes; a store that no longer opens or serves its probes is rebuilt)
#   --no-xfs             skip the XFS reflink loop mount (made only when root and mkfs.xfs is there)
#   --summarize LOG      only print the summary of the tables in LOG (a text or markdown log of an earlier run)
#   --scratch-path DIR   SwiftPM scratch path (default: .build-bench, so a benchmark build never locks .build)
#
# Release only: in debug, package-benchmark 1.38.1 on Swift 6.3 preloads its malloc interposer on top of the
# copy linked into the benchmark, and every benchmark dies with SIGSEGV (malloc recursing between the two).
# A smoke run from a clean scratch path spends ~4-5 minutes building (2 cores), then ~2 minutes running.
#
# Environment: CHUNKCACHE_BENCH_DIR (default /tmp/chunkcache-bench) holds data/, stores/, work/, results/.
# A full run needs about 20 GiB free there the first time (the 10 GiB-of-data store, ~7 GiB on disk, built
# from 1 GiB filler parts; the 1 GiB data set, its store, frames, hand-off files) and ~8-10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

smoke=0
filter=""
format="text"
output=""
keep_stores=0
summarize=""
rebuild_scale=0
update_thresholds=0
xfs=1
configuration=release
scratch="${CHUNKCACHE_BENCH_SCRATCH:-.build-bench}"
while (($#)); do
    case "$1" in
        --smoke) smoke=1 ;;
        --filter) filter="$2"; shift ;;
        --format) format="$2"; shift ;;
        --output) output="$2"; output_given=1; shift ;;
        --keep-stores) keep_stores=1 ;;
        --rebuild-scale-stores) rebuild_scale=1 ;;
        --update-thresholds) update_thresholds=1; smoke=1 ;;
        --no-xfs) xfs=0 ;;
        --summarize) summarize="$2"; shift ;;
        --scratch-path) scratch="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done

# The summary of a log of tables (text or markdown): the partial-fetch matrix (each combination beside its
# floors, from the tags in the names), then every other group ("<group>: <role>") with each row's ratio to the
# group's reference row, then the goals. Wall clock is normalized to µs. Arguments: LOG SMOKE(0|1).
summary_of() {
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
        else if (label ~ /store data.mdb MB/) { storemb[name] = p100 + 0 }
        else if (label ~ /page faults \(minor\)/) { faults[name] = p50 + 0 }
        next
    }
    /^[^ ═=│|╒╞├╘]/ { plain = $0; next }

    # Names: "<group>: <role>", partial fetches "partial: <role> (align: A, chunk: C, data: D, range: R)".
    function untagged(n) { return match(n, / \((align|chunk|data|range): [^()]*\)$/) ? substr(n, 1, RSTART - 1) : n }
    function tag(n, key,    rest) {
        if (!match(n, "[(, ]" key ": [^,)]*")) return ""
        rest = substr(n, RSTART + 1, RLENGTH - 1); sub(/^[a-z]+: /, "", rest); return rest
    }
    function group(n,    i) { n = untagged(n); i = index(n, ": "); return i ? substr(n, 1, i - 1) : n }
    function role(n,    i) { n = untagged(n); i = index(n, ": "); return i ? substr(n, i + 2) : n }
    function fmt(us) { return us == "" ? "" : us >= 10000 ? sprintf("%8.1f ms", us / 1000) : sprintf("%8.0f µs", us) }
    function ratio(a, b) { return (a > 0 && b > 0) ? sprintf("%.2f", a / b) : "" }
    function verdict(ok) { return ok ? "MET" : "MISSED" }
    function bytes(label,    v) { v = label + 0; return label ~ /GiB/ ? v * 1073741824 : label ~ /MiB/ ? v * 1048576 : label ~ /KiB/ ? v * 1024 : v }
    END {
        if (count == 0) { print "no benchmark tables found"; exit 0 }
        # A completion-handler benchmark is judged by the time until its handler ran (its wall clock also
        # holds the wake-up of the waiting benchmark thread).
        for (n in done50) { wall50[n] = done50[n]; wall99[n] = done99[n] }

        # The partial-fetch matrix.
        for (k = 1; k <= count; k++) {
            n = order[k]
            if (group(n) != "partial") continue
            key = tag(n, "range") "|" tag(n, "data") "|" tag(n, "chunk") "|" tag(n, "align")
            P[key, role(n)] = n
            if (tag(n, "chunk") == "") requested[tag(n, "range") "|" tag(n, "data")] = n
            else if (!(key in haveKey)) { haveKey[key] = 1 }
        }
        split("4KiB 64KiB 1MiB", ranges, " "); split("text random", datas, " ")
        split("16KiB 64KiB 256KiB", chunks, " "); split("4KiB 1MiB", aligns, " ")
        printed = 0
        for (a = 1; a <= 3; a++) for (b = 1; b <= 2; b++) for (c = 1; c <= 3; c++) for (d = 1; d <= 2; d++) {
            key = ranges[a] "|" datas[b] "|" chunks[c] "|" aligns[d]
            if (!(key in haveKey)) continue
            if (!printed) {
                print "Warm partial fetch (p50 / p99; ×: engine time / floor time, 1.00 = at the floor)"
                printf "%-6s %-6s %-6s %-5s │ %11s %11s %7s %6s │ %11s %6s │ %11s %6s │ %11s %11s %6s %6s │ %11s\n", "range", "data", "chunk", "align", \
                    "engine p50", "p99", "mallocs", "faults", "raw p50", "×raw", "retr. p50", "×retr", "decode p50", "p99", "×dec", "×dec99", "handler p50"
                printed = 1
            }
            if (d == 1 && c == 1) print ""
            e = P[key, "engine fetch"]; r = requested[ranges[a] "|" datas[b]]; t = P[key, "floor raw pread+pwrite, retrieved range"]
            z = P[key, "floor decode zstd-3"]; h = P[key, "engine fetch, completion handler"]
            printf "%-6s %-6s %-6s %-5s │ %11s %11s %7s %6s │ %11s %6s │ %11s %6s │ %11s %11s %6s %6s │ %11s\n", ranges[a], datas[b], chunks[c], aligns[d], \
                fmt(wall50[e]), fmt(wall99[e]), mallocs[e], faults[e], fmt(wall50[r]), ratio(wall50[e], wall50[r]), fmt(wall50[t]), ratio(wall50[e], wall50[t]), \
                fmt(wall50[z]), fmt(wall99[z]), ratio(wall50[e], wall50[z]), ratio(wall99[e], wall99[z]), (h != "") ? fmt(wall50[h]) : ""
        }
        if (printed) {
            print ""
            print "raw: temp file + ftruncate + pread + pwrite + close + unlink of the requested bytes; retr.: the same of the range the"
            print "engine retrieves (rounded out to max(alignment, chunk)); decode: retr. plus one-thread zstd of its chunks. handler: the"
            print "completion-handler API, until the handler ran. mallocs, faults: p50 per fetch (faults: minor page faults of the process)."
            print ""
        }

        # Every other group.
        # The reference row of a group: its first engine row, or the hand-off of a hand-off-versus-clone group.
        for (k = 1; k <= count; k++) { n = order[k]; if (role(n) ~ /^engine/ && !(group(n) in engine)) engine[group(n)] = n }
        for (k = 1; k <= count; k++) { n = order[k]; if (role(n) == "engine hand-off") engine[group(n)] = n }
        printf "%-60s %11s %11s %7s %7s %6s %6s %6s %6s\n", "benchmark", "p50", "p99", "p50 ×", "p99 ×", "MB/s", "RSS", "anon", "file"
        last = ""
        for (k = 1; k <= count; k++) {
            n = order[k]; g = group(n); e = engine[g]
            if (g == "partial") continue
            if (g != last) { print ""; last = g }
            r50 = ""; r99 = ""
            if (e != "" && e != n && wall50[n] > 0) { r50 = ratio(wall50[e], wall50[n]); r99 = ratio(wall99[e], wall99[n]) }
            printf "%-60s %11s %11s %7s %7s %6s %6s %6s %6s\n", n, fmt(wall50[n]), fmt(wall99[n]), r50, r99, \
                (n in mbps) ? mbps[n] : "", (n in rss) ? rss[n] : "", (n in anon) ? anon[n] : "", (n in mapped) ? mapped[n] : ""
        }
        print ""
        print "p50 × and p99 ×: the group'"'"'s first engine row / this row (for a floor: 1.00 = at the floor; for a clone: hand-off"
        print "time / clone time). MB/s: p50. RSS, anon, file: the highest peak of any iteration in MB (package-benchmark'"'"'s peak"
        print "resident; RssAnon: heap and buffers; RssFile: mapped files, LMDB'"'"'s map of data.mdb among them, clean page cache)."
        print ""

        # The goals of issue 3 (ingest against casync and the SQLite series are the peers script'"'"'s).
        print "Goals:" (smoke ? " (smoke run: a few iterations on a few MiB, so these say nothing; run without --smoke)" : "")
        k64 = "64KiB|text|64KiB|4KiB"
        e = P[k64, "engine fetch"]; z = P[k64, "floor decode zstd-3"]
        if (e != "" && z != "") {
            printf "  %-44s p50 %s vs decode floor %s = %.2f× (goal ≤ 1.2×): %s\n", "64KiB text fetch", fmt(wall50[e]), fmt(wall50[z]), \
                wall50[e] / wall50[z], verdict(wall50[e] <= 1.2 * wall50[z])
            printf "  %-44s p99 %s vs decode floor p99 %s = %.2f× (goal ≤ 2×): %s\n", "64KiB text fetch", fmt(wall99[e]), fmt(wall99[z]), \
                wall99[e] / wall99[z], verdict(wall99[e] <= 2 * wall99[z])
        }
        e = P["64KiB|random|64KiB|4KiB", "engine fetch"]; r = requested["64KiB|random"]; t = P["64KiB|random|64KiB|4KiB", "floor raw pread+pwrite, retrieved range"]
        if (e != "" && r != "") {
            printf "  %-44s p50 %s vs raw floor %s = %.2f× (goal ≤ 1.5×): %s", "64KiB random (stored raw) fetch", fmt(wall50[e]), fmt(wall50[r]), \
                wall50[e] / wall50[r], verdict(wall50[e] <= 1.5 * wall50[r])
            if (t != "") printf " (vs the retrieved range %s: %.2f×)", fmt(wall50[t]), wall50[e] / wall50[t]
            print ""
        }
        e = P["1MiB|text|64KiB|4KiB", "engine fetch"]; z = P["1MiB|text|64KiB|4KiB", "floor decode zstd-3"]
        if (e != "" && z != "") printf "  %-44s p50 %s vs one-thread decode floor %s: %.2f× faster (goal ≥ 1.6×): %s\n", "1MiB text fetch", \
            fmt(wall50[e]), fmt(wall50[z]), wall50[z] / wall50[e], verdict(wall50[z] >= 1.6 * wall50[e])
        for (k = 1; k <= count; k++) {
            n = order[k]; g = group(n)
            if (g ~ /^full/ && n == engine[g]) {
                d = g ": floor decode 1 thread"; c = g ": floor copy_file_range"
                if (d in mbps) printf "  %-44s %d MB/s vs one-thread decode %d MB/s = %.2f× (goal ≥ 1.5×): %s\n", g, mbps[n], mbps[d], \
                    mbps[n] / mbps[d], verdict(mbps[n] >= 1.5 * mbps[d])
                if (c in mbps) printf "  %-44s %d MB/s vs copy_file_range %d MB/s = %.2f× (goal ≥ 0.5×): %s\n", g, mbps[n], mbps[c], \
                    mbps[n] / mbps[c], verdict(mbps[n] >= 0.5 * mbps[c])
            }
            if (g ~ /^ingest/ && n == engine[g]) {
                z = ""
                for (j = 1; j <= count; j++) if (group(order[j]) == g && role(order[j]) ~ /zstd -3 -T0/) z = order[j]
                printf "  %-44s peak RSS %d MB (RssAnon %d, RssFile %d) (goal ≤ 256 MiB = 268 MB): %s\n", g, rss[n], anon[n], mapped[n], \
                    verdict(rss[n] <= 268.435456)
                if (z != "") printf "  %-44s %d MB/s vs zstd -3 -T0 %d MB/s = %.2f× (core-engine goal ≥ 0.5×): %s\n", g, mbps[n], mbps[z], \
                    mbps[n] / mbps[z], verdict(mbps[n] >= 0.5 * mbps[z])
            }
            if (g ~ /^store / && role(n) ~ /^engine fetch/) {
                probe = role(n); size = substr(g, 7)
                if (!(probe in lo50) || wall50[n] < lo50[probe]) { lo50[probe] = wall50[n]; loSize[probe] = size }
                if (!(probe in hi50) || wall50[n] > hi50[probe]) { hi50[probe] = wall50[n]; hiSize[probe] = size }
                if (!(probe in lo99) || wall99[n] < lo99[probe]) lo99[probe] = wall99[n]
                if (!(probe in hi99) || wall99[n] > hi99[probe]) hi99[probe] = wall99[n]
                # Listed by store size (insertion sort: mawk has no asort).
                m = ++nsizes[probe]; sizeBytes[probe, m] = bytes(size)
                sizeText[probe, m] = sprintf(" %s:%s /%s, %d faults, data.mdb %d MB;", size, fmt(wall50[n]), fmt(wall99[n]), faults[n], storemb[n])
                for (j = m; j > 1 && sizeBytes[probe, j - 1] > sizeBytes[probe, j]; j--) {
                    t = sizeBytes[probe, j]; sizeBytes[probe, j] = sizeBytes[probe, j - 1]; sizeBytes[probe, j - 1] = t
                    t = sizeText[probe, j]; sizeText[probe, j] = sizeText[probe, j - 1]; sizeText[probe, j - 1] = t
                }
            }
        }
        for (probe in nsizes) if (nsizes[probe] > 1) {
            line = ""; for (j = 1; j <= nsizes[probe]; j++) line = line sizeText[probe, j]
            printf "  %-44s p50/p99 by store size:%s\n", "store size, " probe, line
            printf "  %-44s p50 slowest/fastest %.2f× (%s vs %s; goal ≤ 1.2×): %s; p99 %.2f×\n", "store size, " probe, hi50[probe] / lo50[probe], \
                hiSize[probe], loSize[probe], verdict(hi50[probe] <= 1.2 * lo50[probe]), hi99[probe] / lo99[probe]
        }
    }
    ' smoke="$2" "$1"
}

if [[ -n "$summarize" ]]; then
    summary_of "$summarize" "$([[ $summarize == *-smoke-* ]] && echo 1 || echo 0)"
    exit 0
fi

thresholds_dir="$PWD/Benchmarks/Thresholds"
# The engine's partial fetches: the benchmarks with malloc-count thresholds.
threshold_filter='partial: engine fetch.*'

cleanup=()
on_exit() {
    local i
    for ((i = ${#cleanup[@]} - 1; i >= 0; i--)); do eval "${cleanup[$i]}" || true; done
}
trap on_exit EXIT

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}"
if ((smoke)); then
    # Everything of a smoke run lives in a fresh temporary directory, removed at the end.
    base="$(mktemp -d "${TMPDIR:-/tmp}/chunkcache-smoke.XXXXXX")"
    cleanup+=("rm -rf '$base'")
    export CHUNKCACHE_BENCH_DIR="$base" CHUNKCACHE_BENCH_SMOKE=1
    root="$base/smoke"
else
    unset CHUNKCACHE_BENCH_SMOKE
    root="$base"
fi
output="${output:-$root/results}"
mkdir -p "$output"

# A store written by an older engine must not serve this run's figures: ingest afresh unless told otherwise.
# The scale stores stay (they take minutes to build) unless --rebuild-scale-stores.
if ((!keep_stores)); then
    rm -rf "$root/work"
    if [[ -d "$root/stores" ]]; then
        find "$root/stores" -mindepth 1 -maxdepth 1 ! -name 'scale-*' -exec rm -rf {} +
    fi
fi
if ((rebuild_scale)); then rm -rf "$root"/stores/scale-*; fi
if compgen -G "$root/stores/scale-*.ready" >/dev/null; then
    echo "== reusing scale stores: $(cd "$root/stores" && for m in scale-*.ready; do printf '%s (%s) ' "${m%.ready}" "$(date -r "$m" '+%F %R')"; done)"
fi

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

if ((update_thresholds)); then
    echo "== recording malloc-count thresholds (smoke-sized, mallocCountTotal only) into $thresholds_dir"
    rm -rf "$thresholds_dir"
    mkdir -p "$thresholds_dir"
    swift package --scratch-path "$scratch" --allow-writing-to-directory "$thresholds_dir" benchmark thresholds update \
        --target ChunkCacheBenchmarks --filter "$threshold_filter" --metric mallocCountTotal --no-progress \
        --benchmark-build-configuration "$configuration" --path "$thresholds_dir"
    # Keep mallocCountTotal only: a custom metric a benchmark records would otherwise become a timing threshold.
    # package-benchmark 1.38.1 writes "<target>.<name>.p90.json" with the name's spaces turned into "_" but
    # reads it back under the name as it is: name the files as they are read (no name here has a "_").
    for file in "$thresholds_dir"/*.json; do
        name="$(basename "$file")"
        jq '{mallocCountTotal}' "$file" >"$thresholds_dir/${name//_/ }.tmp"
        rm "$file"
        mv "$thresholds_dir/${name//_/ }.tmp" "$thresholds_dir/${name//_/ }"
    done
    echo "== $(ls "$thresholds_dir" | wc -l) threshold files written"
    exit 0
fi

# The hand-off and clone benchmarks also run on XFS with reflink when we can make one: as root, an image file
# on a loop device, unmounted and deleted at the end.
if ((xfs)) && [[ $(id -u) == 0 ]] && command -v mkfs.xfs >/dev/null; then
    xfs_image="$root/xfs.img"
    xfs_mount="$root/xfs"
    umount "$xfs_mount" 2>/dev/null || true
    rm -f "$xfs_image"
    mkdir -p "$xfs_mount"
    if truncate -s 2G "$xfs_image" && mkfs.xfs -q -f -m reflink=1 "$xfs_image" && mount -o loop "$xfs_image" "$xfs_mount"; then
        cleanup+=("umount '$xfs_mount'; rm -f '$xfs_image'; rmdir '$xfs_mount'")
        export CHUNKCACHE_BENCH_XFS="$xfs_mount"
        echo "== XFS (reflink=1) loop mount at $xfs_mount"
    else
        echo "== no XFS loop mount (mkfs.xfs or mount -o loop failed): skipping the XFS hand-off and clone benchmarks" >&2
        rm -f "$xfs_image"
    fi
else
    unset CHUNKCACHE_BENCH_XFS
    echo "== no XFS loop mount (needs root and mkfs.xfs, or --no-xfs given): hand-off and clone on $(df --output=fstype "$root" | tail -1) only"
fi

# The cold benchmarks read from an origin: nginx on 127.0.0.1 serving random files made once (256 MiB read
# in order, 1 GiB whole, 600 small items for first fetches; a few MiB in a smoke run), and the same 20 ms
# away through scripts/delay-proxy.py. Both stop when the run ends.
source Benchmarks/origin.sh
if command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; then
    if ((smoke)); then sequential=$((8 << 20)); full=$((16 << 20)); items=8; else sequential=$((256 << 20)); full=$((1 << 30)); items=600; fi
    mkdir -p "$root/origin/items"
    make_random "$root/origin/random.bin" "$sequential"
    make_random "$root/origin/full.bin" "$full"
    for ((i = 0; i < items; i++)); do make_random "$root/origin/items/$i.bin" $((256 << 10)); done
    start_origin "$root/origin" "$root/origin-run" "$PWD"
    cleanup+=("kill -9 $ORIGIN_PIDS")
    export CHUNKCACHE_BENCH_ORIGIN="$ORIGIN_URL" CHUNKCACHE_BENCH_ORIGIN_20MS="$ORIGIN_URL_20MS" CHUNKCACHE_BENCH_ORIGIN_DIR="$root/origin"
    echo "== origin: nginx at $ORIGIN_URL, 20 ms away at $ORIGIN_URL_20MS (files in $root/origin)"
else
    echo "== no nginx (apt-get install nginx-light): the cold benchmarks are left out" >&2
fi

args=(--target ChunkCacheBenchmarks --no-progress --format "$format" --benchmark-build-configuration "$configuration")
[[ -n "$filter" ]] && args+=(--filter "$filter")
stamp="$(date +%Y%m%d-%H%M%S)"
mode=$([[ $smoke == 1 ]] && echo smoke || echo full)
started=$SECONDS

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
ran=$((SECONDS - started))

summary="$output/summary-$mode-$stamp.txt"
summary_of "$log" "$smoke" | tee "$summary"
echo "benchmarks ran for $((ran / 60)) min $((ran % 60)) s; load average before: $load, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)" | tee -a "$summary"

# The partial-fetch goals once more, interleaved: `chunkcache-bench read-latency` fetches each range by the
# engine and both floors in turn (rotating who goes first), so the VM's slow phases (fresh page cache that the
# host must back again, cold pages DAMON reclaimed) hit all three alike. Its floors write the requested bytes
# only, so these ratios are the stricter ones. Full runs that ran the partial benchmarks only.
if ((!smoke)) && [[ -z "$filter" || "partial: engine fetch" =~ $filter ]]; then
    swift build -c "$configuration" --scratch-path "$scratch" --product chunkcache-bench >/dev/null
    bench="$scratch/$configuration/chunkcache-bench"
    {
        echo
        echo "Interleaved (chunkcache-bench read-latency, 3000 ranges each; floors write the requested bytes):"
        for case in "text 64KiB p50 decodeFloor 1.2" "text 64KiB p99 decodeFloor 2" "random 64KiB p50 rawFloor 1.5" "text 1MiB p50 decodeFloor 0.625"; do
            read -r data range pct floor goal <<<"$case"
            file="$root/data/$data-67108864.dat"
            [[ -f $file ]] || continue
            json="$("$bench" --json read-latency "$file" --range-size "$range" --iterations 3000 --scratch "$root")"
            jq -r --arg name "$range $data" --arg pct "$pct" --arg floor "$floor" --argjson goal "$goal" '
                (.engine[$pct + "Micros"]) as $e | (.[$floor][$pct + "Micros"]) as $f | ($e / $f) as $r |
                if $goal < 1 then
                    "  \($name) fetch \($pct)  \($e | floor) µs vs one-thread \($floor | sub("Floor"; " floor")) \($f | floor) µs: \((1 / $r) * 100 | round / 100)× faster (goal ≥ \(1 / $goal)×): \(if $r <= $goal then "MET" else "MISSED" end)"
                else
                    "  \($name) fetch \($pct)  \($e | floor) µs vs \($floor | sub("Floor"; " floor")) \($f | floor) µs = \($r * 100 | round / 100)× (goal ≤ \($goal)×): \(if $r <= $goal then "MET" else "MISSED" end)"
                end' <<<"$json"
        done
    } | tee -a "$summary"
fi

# The smoke run checks the malloc counts of the engine's partial fetches against Benchmarks/Thresholds (p90
# of a few iterations each, within ±BenchSettings.mallocTolerance, or ±sharedWorkMallocTolerance for
# fetches that may use a helper thread); never timings.
if ((smoke)) && [[ -z "$filter" ]]; then
    echo
    echo "== checking malloc counts against $thresholds_dir"
    status=0
    swift package --scratch-path "$scratch" benchmark thresholds check --target ChunkCacheBenchmarks \
        --filter "$threshold_filter" --metric mallocCountTotal --no-progress \
        --benchmark-build-configuration "$configuration" --path "$thresholds_dir" || status=$?
    case $status in
        0) echo "== malloc counts: as recorded" ;;
        4) echo "== malloc counts: fewer than recorded (not a failure; record them with Benchmarks/run.sh --update-thresholds)" ;;
        *) echo "== malloc counts: MORE than recorded, or no thresholds (exit $status); if intended, Benchmarks/run.sh --update-thresholds" >&2
           exit 1 ;;
    esac
fi
echo
if ((!smoke)) || [[ -n "${output_given:-}" ]]; then
    echo "== tables: $log"
    echo "== summary: $summary"
fi
