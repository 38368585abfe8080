#!/usr/bin/env bash
# Cold reads from an HTTP origin by chunkcache and its peers, one table (issue 8): nginx on 127.0.0.1, on
# loopback and 20 ms away (scripts/delay-proxy.py), the same 256 MiB random file for every tool.
#
#   Benchmarks/peers.sh --cold [--reads N]
#
# - 64 KiB reads: N random never-read ranges, each a command: `chunkcache fetch --range` (fresh store, one
#   item), `rclone cat --offset --count` (an :http: remote), and `curl -r` as the floor. Median per read.
# - whole file: `chunkcache fetch` (cold, whole file), `rclone cat`, `casync extract` from an HTTP chunk
#   store made by `casync make` and served by the same nginx, and `curl -o` as the floor. MB/s.
# Every output is compared with the original. Needs rclone and casync (apt-get install rclone casync): a
# missing one is left out with a message.
set -euo pipefail
export LC_ALL=C
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
reads=30
while [ $# -gt 0 ]; do
    case "$1" in
        --reads) reads="$2"; shift ;;
        *) echo "cold.sh: unknown argument $1" >&2; exit 64 ;;
    esac
    shift
done
base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}/cold-peers"
mkdir -p "$base/origin"
work="$(mktemp -d "${TMPDIR:-/tmp}/cold-peers.XXXXXX")"
pids=""
trap 'kill -9 $pids 2>/dev/null; rm -rf "$work"' EXIT
step() { echo "[$(date +%T)] $*" >&2; }

if [ -n "${CHUNKCACHE_BIN:-}" ]; then CC="$CHUNKCACHE_BIN"; else
    step "building chunkcache (release, scratch path .build-peers)"
    (cd "$ROOT" && swift build -c release --product chunkcache --scratch-path .build-peers >&2)
    CC="$ROOT/.build-peers/release/chunkcache"
fi
tools="chunkcache curl"
command -v rclone >/dev/null && tools="$tools rclone" || step "no rclone (apt-get install rclone): left out"
command -v casync >/dev/null && tools="$tools casync" || step "no casync (apt-get install casync): left out"

source "$ROOT/Benchmarks/origin.sh"
size=$((256 << 20))
make_random "$base/origin/random.bin" "$size"
if [[ $tools == *casync* && ! -f "$base/origin/random.caibx" ]]; then
    step "casync make (the HTTP chunk store the extract reads)"
    rm -rf "$base/origin/random.castr"
    casync make --store="$base/origin/random.castr" "$base/origin/random.caibx" "$base/origin/random.bin" >/dev/null
fi
start_origin "$base/origin" "$work/run" "$ROOT"
pids="$ORIGIN_PIDS"

now() { date +%s.%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
check() { cmp -s "$1" "$2" || { echo "cold.sh: $3 returned other bytes" >&2; exit 1; }; }
offsets="$(python3 -c "import random; r = random.Random(8); print(' '.join(str(2 * 65536 * i) for i in r.sample(range(1, $size // 131072), $reads)))")"

rows=()
for net in loopback 20ms; do
    url="$ORIGIN_URL"; [ "$net" = 20ms ] && url="$ORIGIN_URL_20MS"
    for tool in $tools; do
        [ "$tool" = casync ] && continue
        store="$work/store-$tool-$net"
        rm -rf "$store"
        [ "$tool" = chunkcache ] && "$CC" --store "$store" domain add web --origin "$url" >/dev/null
        times=""
        for off in $offsets; do
            out="$work/read"
            t0=$(now)
            case "$tool" in
                chunkcache) path="$("$CC" --store "$store" fetch --domain web random.bin --range "$off:65536" | head -1)"
                            dd if="$path" of="$out" bs=65536 skip=$((off / 65536)) count=1 status=none; rm -f "$path" ;;
                curl) curl -s -f -r "$off-$((off + 65535))" -o "$out" "${url}random.bin" ;;
                rclone) rclone cat --http-url "$url" ":http:random.bin" --offset "$off" --count 65536 >"$out" 2>/dev/null ;;
            esac
            t1=$(now)
            dd if="$base/origin/random.bin" of="$work/expected" bs=65536 skip=$((off / 65536)) count=1 status=none
            check "$out" "$work/expected" "$tool 64 KiB at $off"
            times="$times $(echo "($t1 - $t0) * 1000" | bc -l)"
        done
        rows+=("| $net | 64 KiB random read, a command each | $tool | $(echo $times | tr ' ' '\n' | median | xargs printf '%.1f') ms |")
    done
    for tool in $tools; do
        out="$work/whole"
        rm -f "$out"; store="$work/whole-store-$tool"; rm -rf "$store"
        [ "$tool" = chunkcache ] && "$CC" --store "$store" domain add web --origin "$url" >/dev/null
        t0=$(now)
        case "$tool" in
            chunkcache) "$CC" --store "$store" fetch --domain web random.bin --out "$out" >/dev/null ;;
            curl) curl -s -f -o "$out" "${url}random.bin" ;;
            rclone) rclone cat --http-url "$url" ":http:random.bin" >"$out" 2>/dev/null ;;
            casync) casync extract --store="${url}random.castr" "${url}random.caibx" "$out" >/dev/null 2>&1 ;;
        esac
        t1=$(now)
        check "$out" "$base/origin/random.bin" "$tool whole file"
        rm -rf "$store"
        rows+=("| $net | whole 256 MiB file, cold | $tool | $(echo "$size / ($t1 - $t0) / 1000000" | bc -l | xargs printf '%.0f') MB/s |")
    done
done
echo "| network | read | tool | median time / throughput |"
echo "|---|---|---|---|"
printf '%s\n' "${rows[@]}"
