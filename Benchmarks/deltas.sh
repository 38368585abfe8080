#!/usr/bin/env bash
# Deltas across versions (CONTRACT §14, issue 21): what a version series takes stored, and what deltas cost
# to make and to read, each beside its reference measured in the same run.
#
#   Benchmarks/deltas.sh [--bin PATH] [--bench-bin PATH] [--rows stored,ingest,read] SERIES_DIR...
#
# Each SERIES_DIR holds the versions of one file, oldest first in `ls -v` order (for example the
# sqlite/ and inserts/ folders `Benchmarks/datasets.sh --small` makes, or source tarballs unpacked to tar).
# Rows:
#   stored  chunkcache with and without deltas (`chunkcache-bench dedup`), beside a `zstd -19 --long=27 --patch-from`
#           chain (the first version alone, each next one against the one before), casync (64K average
#           chunks) and borg (zstd,3): bytes stored after all versions.
#   ingest  `put` of the last version onto a store holding the one before, with deltas and with --no-deltas
#           (3 runs each, interleaved, page cache warm): seconds, MB/s and peak RSS.
#   read    warm 64 KiB fetches (`chunkcache-bench read-latency`) of the last version stored after the one before (its
#           new chunks deltas) and stored alone (plain), p50 of each; and `fetch --out` of the whole last
#           version from each store (5 runs each, interleaved, median).
# Needs a release build (default .build-bench/release/chunkcache, and chunkcache-bench beside --bin: swift build
# -c release --build-path .build-bench), zstd, casync and borg (apt-get install zstd casync borgbackup).
set -euo pipefail
export LC_ALL=C
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="$HERE/../.build-bench/release/chunkcache"
bench=""
rows="stored,ingest,read"
series=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) bin="$2"; shift ;;
        --bench-bin) bench="$2"; shift ;;
        --rows) rows="$2"; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) echo "deltas.sh: unknown option $1" >&2; exit 64 ;;
        *) series+=("$1") ;;
    esac
    shift
done
[ ${#series[@]} -gt 0 ] || { echo "deltas.sh: give at least one SERIES_DIR" >&2; exit 64; }
[ -x "$bin" ] || { echo "deltas.sh: no chunkcache at $bin; build it or give --bin" >&2; exit 1; }
[ -n "$bench" ] || bench="$(dirname "$bin")/chunkcache-bench"
[ -x "$bench" ] || { echo "deltas.sh: no chunkcache-bench at $bench; build it or give --bench-bin" >&2; exit 1; }
work="$(mktemp -d /tmp/deltas-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
has() { case ",$rows," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
bytes() { du -sb "$1" | cut -f1; }
mb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1e6 }'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# Seconds (to the millisecond: /usr/bin/time's are hundredths) and peak RSS (KiB) of a command, as "seconds kib".
timed() {
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/time" "$@" >/dev/null
    end=$(date +%s%N)
    echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", (b - a) / 1e9 }') $(cat "$work/time")"
}

for dir in "${series[@]}"; do
    mapfile -t files < <(ls -v "$dir" | sed "s|^|$dir/|" | while read -r f; do [ -f "$f" ] && echo "$f"; done)
    [ ${#files[@]} -ge 2 ] || { echo "deltas.sh: $dir holds fewer than two versions" >&2; exit 64; }
    name="$(basename "$dir")"
    last="${files[-1]}"
    before="${files[-2]}"
    logical=0; for f in "${files[@]}"; do logical=$((logical + $(stat -L -c %s "$f"))); done
    echo "== $name: ${#files[@]} versions, $(mb "$logical") MB"

    if has stored; then
        "$bench" dedup --json --scratch "$work" "${files[@]}" > "$work/dedup.json"
        with="$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["storedBytes"], t["storedBytesWithoutDeltas"], t["deltaChunks"])' "$work/dedup.json")"
        read -r stored plain deltachunks <<< "$with"
        chain=0; prev=""
        for f in "${files[@]}"; do
            # zstd's advice on long-distance matching goes to stderr on each file: not a figure.
            if [ -z "$prev" ]; then
                zstd -q -19 --long=27 -f "$f" -o "$work/z" 2>/dev/null
            else
                zstd -q -19 --long=27 --patch-from="$prev" -f "$f" -o "$work/z" 2>/dev/null
            fi
            chain=$((chain + $(stat -c %s "$work/z"))); prev="$f"
        done
        rm -rf "$work/ca"; mkdir -p "$work/ca"
        for i in "${!files[@]}"; do casync make --store="$work/ca/store" "$work/ca/v$i.caibx" "${files[$i]}" >/dev/null; done
        casync_bytes=$(bytes "$work/ca")
        rm -rf "$work/borg"
        export BORG_BASE_DIR="$work/borg-home" BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes BORG_RELOCATED_REPO_ACCESS_IS_OK=yes
        borg init -e none "$work/borg" >/dev/null
        for i in "${!files[@]}"; do
            real="$(readlink -f "${files[$i]}")"  # borg archives a symlink as a link
            (cd "$(dirname "$real")" && borg create --compression zstd,3 "$work/borg::v$i" "$(basename "$real")")
        done
        borg_bytes=$(bytes "$work/borg")
        echo "stored: deltas $(mb "$stored") MB ($deltachunks delta chunks), no deltas $(mb "$plain") MB, patch-from chain $(mb "$chain") MB, casync $(mb "$casync_bytes") MB, borg $(mb "$borg_bytes") MB"
        awk -v s="$stored" -v c="$chain" -v a="$casync_bytes" -v b="$borg_bytes" -v p="$plain" 'BEGIN {
            printf "ratios: deltas/chain %.2f, deltas/casync %.2f, deltas/borg %.2f, deltas/no-deltas %.2f\n", s/c, s/a, s/b, s/p }'
    fi

    if has ingest; then
        size=$(stat -L -c %s "$last")
        cat "$before" "$last" > /dev/null
        for mode in deltas no-deltas; do : > "$work/ingest-$mode"; done
        for run in 1 2 3; do
            for mode in deltas no-deltas; do
                S="$work/ingest-store"; rm -rf "$S"
                "$bin" init --store "$S" "--$mode" >/dev/null
                "$bin" put --store "$S" --domain d f "$before" --version a >/dev/null
                timed "$bin" put --store "$S" --domain d f "$last" --version b >> "$work/ingest-$mode"
            done
        done
        for mode in deltas no-deltas; do
            s=$(cut -d' ' -f1 "$work/ingest-$mode" | median); rss=$(cut -d' ' -f2 "$work/ingest-$mode" | sort -n | tail -1)
            echo "ingest ($mode): put of the last version ${s}s, $(awk -v b="$size" -v t="$s" 'BEGIN { printf "%.0f", b / t / 1e6 }') MB/s, peak RSS $((rss / 1024)) MiB"
            eval "ingest_${mode//-/_}=$s"
        done
        awk -v d="$ingest_deltas" -v p="$ingest_no_deltas" 'BEGIN { printf "ingest throughput with deltas / without: %.2f\n", p / d }'
    fi

    if has read; then
        "$bench" read-latency --json --scratch "$work" --previous "$before" "$last" > "$work/rl-delta.json"
        "$bench" read-latency --json --scratch "$work" "$last" > "$work/rl-plain.json"
        python3 - "$work/rl-delta.json" "$work/rl-plain.json" <<'EOF'
import json, sys
d, p = (json.load(open(f)) for f in sys.argv[1:3])
print("warm 64 KiB fetch p50: delta-heavy version %.1f us (%d delta chunks), plain %.1f us, ratio %.2f; raw floor %.1f us" % (
    d["engine"]["p50Micros"], d["deltaChunks"], p["engine"]["p50Micros"], d["engine"]["p50Micros"] / p["engine"]["p50Micros"],
    p["rawFloor"]["p50Micros"]))
EOF
        for mode in deltas no-deltas; do
            S="$work/read-$mode"; rm -rf "$S"
            "$bin" init --store "$S" "--$mode" >/dev/null
            "$bin" put --store "$S" --domain d f "$before" --version a >/dev/null
            "$bin" put --store "$S" --domain d f "$last" --version b >/dev/null
            : > "$work/fetch-$mode"
        done
        for run in 1 2 3 4 5; do
            for mode in deltas no-deltas; do
                rm -f "$work/out"
                timed "$bin" fetch --store "$work/read-$mode" --domain d f --version b --out "$work/out" >> "$work/fetch-$mode"
                cmp -s "$work/out" "$last" || { echo "deltas.sh: fetch of $last from the $mode store differs" >&2; exit 1; }
            done
        done
        fd=$(cut -d' ' -f1 "$work/fetch-deltas" | median); fp=$(cut -d' ' -f1 "$work/fetch-no-deltas" | median)
        awk -v d="$fd" -v p="$fp" 'BEGIN { printf "whole-file fetch --out of the last version: delta-heavy %.3fs, plain %.3fs, throughput ratio %.2f\n", d, p, p / d }'
    fi
done
