#!/usr/bin/env bash
# Runs chunkcache and its peers (casync, borg) on the same datasets, version after version, and prints
# one markdown table: ingest MB/s, store bytes after all versions, dedup ratio, full extract time of the
# last version, peak RSS. Every extract is compared with the original (cmp); a mismatch fails the run.
#
#   Benchmarks/peers.sh --cold [--reads N]    cold reads from an HTTP origin instead: chunkcache, rclone,
#                                             casync and curl, on loopback and 20 ms away (Benchmarks/peers/cold.sh)
#   Benchmarks/peers.sh [--small] [--datasets DIR] [--results DIR] [--tools "chunkcache casync borg"]
#                       [--series "toolchain sqlite inserts compressed"] [--chunk-size 64KiB]
#
# Datasets come from Benchmarks/datasets.sh (built there if missing), default
# /tmp/chunkcache-bench/datasets (datasets-small with --small). Results go to --results, default
# /tmp/chunkcache-bench/peers (peers-small with --small): table.md, results.json, raw.jsonl, and the
# scratch stores under work/ (removed after each measurement). chunkcache is $CHUNKCACHE_BIN, else
# built with `swift build -c release --product chunkcache --scratch-path .build-peers`.
# Inputs are read once before each tool's run so every tool starts from a warm page cache.
set -euo pipefail
export LC_ALL=C

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
if [ "${1:-}" = --cold ]; then shift; exec bash "$HERE/peers/cold.sh" "$@"; fi

small=0; datasets=""; results=""; tools="chunkcache casync borg"
ORDER="toolchain sqlite inserts compressed"; chunk_size=64KiB
while [ $# -gt 0 ]; do
    case "$1" in
        --small) small=1 ;;
        --datasets) datasets="$2"; shift ;;
        --results) results="$2"; shift ;;
        --tools) tools="$2"; shift ;;
        --series) ORDER="$2"; shift ;;
        --chunk-size) chunk_size="$2"; shift ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "peers.sh: unknown argument $1" >&2; exit 64 ;;
    esac
    shift
done
suffix=""; [ $small = 1 ] && suffix="-small"
[ -n "$datasets" ] || datasets=/tmp/chunkcache-bench/datasets$suffix
[ -n "$results" ] || results=/tmp/chunkcache-bench/peers$suffix

step() { echo "[$(date +%T)] $*" >&2; }
die() { echo "peers.sh: $*" >&2; exit 1; }

# ---- tools ------------------------------------------------------------------------------------------
missing=()
command -v casync >/dev/null || missing+=(casync)
command -v sqlite3 >/dev/null || missing+=(sqlite3)
command -v zstd >/dev/null || missing+=(zstd)
command -v python3 >/dev/null || missing+=(python3)
[ -x /usr/bin/time ] || missing+=(time)
case " $tools " in *" borg "*) command -v borg >/dev/null || missing+=(borgbackup) ;; esac
if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "${missing[@]}" >&2 || { apt-get update -q >&2 && apt-get install -y -q "${missing[@]}" >&2; } || true
fi
command -v casync >/dev/null || die "casync did not install"
if ! command -v borg >/dev/null; then
    step "borg did not install: skipped"; tools="${tools/borg/}"
fi

if [ -n "${CHUNKCACHE_BIN:-}" ]; then
    CC="$CHUNKCACHE_BIN"
else
    step "building chunkcache (release, scratch path .build-peers)"
    (cd "$ROOT" && swift build -c release --product chunkcache --scratch-path .build-peers >&2)
    CC="$ROOT/.build-peers/release/chunkcache"
fi
[ -x "$CC" ] || die "no chunkcache binary at $CC"

# ---- datasets -----------------------------------------------------------------------------------
if [ $small = 1 ]; then bash "$HERE/datasets.sh" --small "$datasets" >&2; else bash "$HERE/datasets.sh" "$datasets" >&2; fi

declare -A SERIES
SERIES[toolchain]="$datasets/toolchain.tar"
SERIES[sqlite]="$(echo "$datasets"/sqlite/v{1,2,3,4,5}.db)"
SERIES[inserts]="$(echo "$datasets"/inserts/v{1,2,3,4,5,6}.txt)"
SERIES[compressed]="$datasets/compressed.tar"

mkdir -p "$results"
raw="$results/raw.jsonl"; : > "$raw"
work="$results/work"

# run_timed LABEL CMD…: runs CMD under /usr/bin/time; adds the wall seconds to $secs and folds the
# peak RSS (KiB) into $rss. Output of CMD goes to $work/LABEL.log.
run_timed() {
    local label="$1"; shift
    local t0 t1 out="$work/$label.time"
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%e %M' -o "$out" "$@" > "$work/$label.log" 2>&1; then
        cat "$work/$label.log" >&2; die "$label failed: $*"
    fi
    t1=$(date +%s%N)
    last_secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f", (b - a) / 1e9}')
    local kb; kb=$(awk 'END {print $2}' "$out")
    [ "$kb" -gt "$rss" ] && rss=$kb
    return 0
}

warm() { cat "$@" > /dev/null; }

check_same() { # ORIGINAL EXTRACTED TOOL SERIES
    cmp "$1" "$2" >/dev/null 2>&1 || die "MISMATCH: $3 extract of $4 differs from $1 (kept $2)"
}

for series in $ORDER; do
    read -r -a files <<< "${SERIES[$series]}"
    n=${#files[@]}
    last="${files[$((n - 1))]}"
    logical=0; for f in "${files[@]}"; do logical=$((logical + $(stat -c %s "$f"))); done
    for tool in $tools; do
        rm -rf "$work"; mkdir -p "$work"
        warm "${files[@]}"
        step "$series × $tool: $n version(s), $logical bytes"
        ingest=0; rss=0; extra="{}"
        case "$tool" in
        chunkcache)
            S="$work/store"
            run_timed init "$CC" --store "$S" init --chunk-size "$chunk_size"
            rss=0
            i=0
            for f in "${files[@]}"; do
                i=$((i + 1))
                run_timed "put-v$i" "$CC" --store "$S" put --domain bench "$series" "$f" --version "v$i"
                ingest=$(awk -v a="$ingest" -v b="$last_secs" 'BEGIN {printf "%.6f", a + b}')
            done
            "$CC" --store "$S" --json stat > "$work/stat.json"
            store=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fileBytes"])' "$work/stat.json")
            du_store=$(du -sb "$S" | cut -f1)
            warm "$last"
            run_timed extract "$CC" --store "$S" fetch --domain bench "$series" --version "v$n" --out "$work/out"
            extract=$last_secs
            check_same "$last" "$work/out" chunkcache "$series"
            # the same fetch again, into a new file (the first may have done one-time work)
            run_timed extract2 "$CC" --store "$S" fetch --domain bench "$series" --version "v$n" --out "$work/out2"
            check_same "$last" "$work/out2" chunkcache "$series"
            extra=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(json.dumps({"chunkSize": sys.argv[4], "stat": s, "duBytes": int(sys.argv[2]), "secondExtractSeconds": float(sys.argv[3])}))' \
                "$work/stat.json" "$du_store" "$last_secs" "$chunk_size")
            ;;
        casync)
            S="$work/store.castr"
            i=0
            for f in "${files[@]}"; do
                i=$((i + 1))
                run_timed "make-v$i" casync make --store="$S" "$work/v$i.caibx" "$f"
                ingest=$(awk -v a="$ingest" -v b="$last_secs" 'BEGIN {printf "%.6f", a + b}')
            done
            store=$(du -sb "$S" | cut -f1)
            extra="{\"indexBytes\": $(cat "$work"/v*.caibx | wc -c)}"
            run_timed extract casync extract --store="$S" "$work/v$n.caibx" "$work/out"
            extract=$last_secs
            check_same "$last" "$work/out" casync "$series"
            ;;
        borg)
            R="$work/repo"
            export BORG_BASE_DIR="$work/borg-home" BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes \
                   BORG_RELOCATED_REPO_ACCESS_IS_OK=yes BORG_CHECK_I_KNOW_WHAT_I_AM_DOING=NO \
                   BORG_DELETE_I_KNOW_WHAT_I_AM_DOING=NO
            run_timed borg-init borg init -e none "$R"
            rss=0
            i=0
            for f in "${files[@]}"; do
                i=$((i + 1))
                # archive the file under its base name, from its directory
                run_timed "create-v$i" bash -c 'cd "$(dirname "$2")" && exec borg create --compression zstd,3 "$1" "$(basename "$2")"' \
                    _ "$R::v$i" "$f"
                ingest=$(awk -v a="$ingest" -v b="$last_secs" 'BEGIN {printf "%.6f", a + b}')
            done
            store=$(du -sb "$R" | cut -f1)
            extra="{\"cacheBytes\": $(du -sb "$BORG_BASE_DIR" | cut -f1)}"
            mkdir -p "$work/out.d"
            warm "$last"
            run_timed extract bash -c 'cd "$1" && exec borg extract "$2" "$3"' _ "$work/out.d" "$R::v$n" "$(basename "$last")"
            extract=$last_secs
            check_same "$last" "$work/out.d/$(basename "$last")" borg "$series"
            ;;
        *) die "unknown tool $tool" ;;
        esac
        python3 - "$series" "$tool" "$n" "$logical" "$ingest" "$store" "$extract" "$rss" "$extra" >> "$raw" <<'PY'
import json, sys
series, tool, n, logical, ingest, store, extract, rss, extra = sys.argv[1:]
print(json.dumps({"series": series, "tool": tool, "versions": int(n), "logicalBytes": int(logical),
                  "ingestSeconds": float(ingest), "storeBytes": int(store), "extractSeconds": float(extract),
                  "peakRSSKiB": int(rss), "extra": json.loads(extra)}))
PY
        step "  ingest ${ingest}s, store $store bytes, extract ${extract}s, peak RSS ${rss} KiB: extract verified"
        rm -rf "$work"
    done
done

python3 - "$raw" "$results" "$CC" "$datasets" <<'PY'
import json, os, platform, sys, time
raw, results, cc, datasets = sys.argv[1:]
rows = [json.loads(line) for line in open(raw)]
lines = ["| series | tool | versions | logical MB | ingest MB/s | store MB | dedup ratio | extract s (last) | peak RSS MiB |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    mbps = r["logicalBytes"] / 1e6 / r["ingestSeconds"] if r["ingestSeconds"] > 0 else float("nan")
    store = "%.1f" % (r["storeBytes"] / 1e6)
    if r["tool"] == "chunkcache":
        stored = r["extra"].get("stat", {}).get("storedBytes")
        if stored is not None:
            store += " (%.1f stored)" % (stored / 1e6)
    tool = r["tool"]
    if tool == "chunkcache" and r["extra"].get("chunkSize", "64KiB") != "64KiB":
        tool += " " + r["extra"]["chunkSize"]
    lines.append("| %s | %s | %d | %.1f | %.0f | %s | %.2f | %.2f | %.0f |" % (
        r["series"], tool, r["versions"], r["logicalBytes"] / 1e6, mbps, store,
        r["logicalBytes"] / r["storeBytes"], r["extractSeconds"], r["peakRSSKiB"] / 1024))
# The goal of issue 7: `fetch --out` writes each byte once, so its extract keeps up with casync's.
extract = {r["tool"]: r["extractSeconds"] for r in rows
           if r["series"] == "toolchain" and r["extra"].get("chunkSize", "64KiB") == "64KiB"}
if "chunkcache" in extract and "casync" in extract:
    cc, ca = extract["chunkcache"], extract["casync"]
    lines += ["", "Goal: chunkcache fetch --out extract of the toolchain tar %.2f s ≤ casync extract %.2f s: %s"
              % (cc, ca, "MET" if cc <= ca else "MISSED")]
table = "\n".join(lines) + "\n"
open(os.path.join(results, "table.md"), "w").write(table)
json.dump({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "host": platform.node(),
           "cpus": os.cpu_count(), "chunkcache": cc, "datasets": datasets, "rows": rows},
          open(os.path.join(results, "results.json"), "w"), indent=2)
sys.stdout.write(table)
PY
echo "saved $results/table.md and $results/results.json" >&2
