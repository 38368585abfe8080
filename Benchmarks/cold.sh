#!/usr/bin/env bash
# Issue 27's goals in one run, each beside its floors: chunkcache's cold path (`fetch --out`, settling, the
# mount's `cat`/`sha256sum`, the SQLite mix, cold 4 KiB preads, the first byte, the mount's peak RSS) against
# `curl`, `rclone` and one Range GET, from nginx on 127.0.0.1 on loopback and 20 ms away (Benchmarks/origin.sh,
# scripts/delay-proxy.py), random and text data. Prints a markdown table (row, chunkcache, floors, ratio,
# goal, met/missed) with the machine's own floors (SHA-256, zstd -3, the disk's synced writes) and the load,
# ready for RESULTS.md, and saves it under $CHUNKCACHE_BENCH_DIR/cold-results/.
#
# How to run it: as root (FUSE mounts), on a machine as quiet as you can get (note the load it prints).
#   CHUNKCACHE_BIN=/tmp/bin/chunkcache Benchmarks/cold.sh     every row: 1 GiB, 3 runs, both networks (11-15 min
#                                                               on 2 cores, plus ~1 min making the data once)
#   Benchmarks/cold.sh --size 256M --runs 1                    a smoke of every row (2-3 min); figures say little
#   Benchmarks/cold.sh --only fetch,settle --net loopback      some rows only
# Copy the binary somewhere of your own first: a build under your feet changes what is measured. Without
# CHUNKCACHE_BIN the script builds a release binary into .build-peers. The data (a random file, a tar of
# /usr/share and /usr/lib cut to --size, the SQLite database, the sparse big file) is made once and kept under
# $CHUNKCACHE_BENCH_DIR/cold-data (default /tmp/chunkcache-bench).
#
# Options:
#   --size SIZE      the random and the text file (IEC suffixes: 1G, 256M; default 1G)
#   --runs N         runs of each figure, the tools interleaved in each run (A, B, C, then again); medians (3)
#   --net NET        loopback, 20ms or both (default both); `ttfb` is at 20 ms and `rss` on loopback always
#   --only ROWS      some of fetch,settle,mount,sqlite,pread,ttfb,rss,floors (or their numbers 1-7, 8 for
#                    floors), comma-separated (default: all)
#   --reads N        cold 4 KiB preads (and GETs) per run (default 100)
#   --sqlite-mb M    the SQLite database of the mix (default 200)
#   --big SIZE       the sparse file of ttfb and rss (default 10G): truncated to size, 64 MiB random at its start
#
# Rows, each run with a fresh store (`domain add` + `domain sync`, untimed), fresh mount, fresh rclone cache:
#   1 fetch   `fetch --out` of the whole file: MB/s and peak RSS (/usr/bin/time -f %M), against `curl -o FILE`
#             and `rclone copyto` (:http: remote) into a file on the same disk. Each output is removed first.
#   2 settle  after the loopback fetch of row 1, on its store: `chunkcache settle` (when the binary has it) timed,
#             the store's storedBytes (`stat --json`) before and after, against `put` of the same file (page
#             cache warm) into a fresh store: time and storedBytes.
#   3 mount   `cat FILE > /dev/null` and `sha256sum FILE` through `chunkcache mount` and through `rclone mount
#             --vfs-cache-mode full`, against `curl -o FILE`. MB/s.
#   4 sqlite  Benchmarks/mount/sqlite-mix.py through either mount: cold (fresh store, fresh mount) and warm (the
#             same store, a fresh mount). Seconds.
#   5 pread   Benchmarks/mount/pread-latency.py: --reads random 4 KiB preads through a fresh mount, p50,
#             against 4 KiB Range GETs of the same offsets on one kept-alive connection: by curl (--next, its
#             time_total; the verdict's floor, as issue 27's "today") and bare requests on a Python socket
#             (Benchmarks/mount/wire-probes.py). No process start, no connect in either.
#   6 ttfb    at 20 ms: open and read the first 4 KiB of the big file through a fresh mount, against one round
#             trip (a 1-byte Range GET on a fresh connection through the proxy), both timed in Python.
#   7 rss     on loopback: `cat` of the big file through a fresh mount, piped to `cmp` against the original;
#             the mount process's VmHWM (/proc/PID/status) before unmounting. The highest of the runs.
#   8 floors  `openssl speed -evp sha256` at 16 KiB, `zstd -b3` on the text file, `dd conv=fdatasync` of
#             min(SIZE, 1 GiB): the disk's synced write speed caps any path that flushes each download.
# Every byte read is compared with the original (cmp, sha256, or the probes' own checks): a difference stops
# the script with a message naming the tool. Needs nginx, curl, rclone, fuse3, python3, zstd, jq, openssl,
# /usr/bin/time (scripts/install-deps.sh).
set -euo pipefail
export LC_ALL=C
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

bytes() { numfmt --from=iec "$1"; }
size=$(bytes 1G); runs=3; nets="loopback 20ms"; only="fetch,settle,mount,sqlite,pread,ttfb,rss,floors"
reads=100; sqlite_mb=200; big_size=$(bytes 10G)
while (($#)); do
    case "$1" in
        --size) size=$(bytes "$2"); shift ;;
        --runs) runs="$2"; shift ;;
        --net) case "$2" in both) nets="loopback 20ms" ;; loopback|20ms) nets="$2" ;;
                   *) echo "cold.sh: --net is loopback, 20ms or both" >&2; exit 64 ;; esac; shift ;;
        --only) only="$2"; shift ;;
        --reads) reads="$2"; shift ;;
        --sqlite-mb) sqlite_mb="$2"; shift ;;
        --big) big_size=$(bytes "$2"); shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "cold.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done
row_names=(fetch settle mount sqlite pread ttfb rss floors)
wanted=","
for r in ${only//,/ }; do
    [[ $r =~ ^[1-8]$ ]] && r="${row_names[r - 1]}"
    [[ " ${row_names[*]} " == *" $r "* ]] || { echo "cold.sh: unknown row $r (rows: ${row_names[*]})" >&2; exit 64; }
    wanted+="$r,"
done
wants() { [[ $wanted == *",$1,"* ]]; }

[[ $(id -u) == 0 ]] || { echo "cold.sh: run as root (FUSE mounts)" >&2; exit 77; }
for tool in nginx curl rclone fusermount3 python3 zstd jq openssl numfmt cmp; do
    command -v "$tool" >/dev/null || [[ $tool == nginx && -x /usr/sbin/nginx ]] \
        || { echo "cold.sh: needs $tool (scripts/install-deps.sh)" >&2; exit 69; }
done
[[ -x /usr/bin/time ]] || { echo "cold.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 69; }

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}"
data="$base/cold-data"        # kept across runs: each file made once per size
results_dir="$base/cold-results"
mkdir -p "$data/origin" "$results_dir"
work="$(mktemp -d "${TMPDIR:-/tmp}/cold-bench.XXXXXX")"
pids=()        # every process this script started in the background (servers, mounts)
# step, median, timed, record/fig, the mounts (cc_store, mounted, unmount), mix, and cleanup.
source "$ROOT/Benchmarks/bench-lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${CHUNKCACHE_BIN:-} ]]; then CC="$CHUNKCACHE_BIN"; else
    step "building chunkcache (release, scratch path .build-peers)"
    (cd "$ROOT" && swift build -c release --product chunkcache --scratch-path .build-peers >&2)
    CC="$ROOT/.build-peers/release/chunkcache"
fi
"$CC" mount --help >/dev/null 2>&1 || { echo "cold.sh: $CC has no mount command" >&2; exit 69; }
has_settle=0
"$CC" settle --help >/dev/null 2>&1 && has_settle=1

# ---- the data and the origin --------------------------------------------------------------------------------

source "$ROOT/Benchmarks/origin.sh"
mib() { echo "$(($1 >> 20)) MiB"; }
tag="$((size >> 20))M"
random_name="random-$tag.bin"; text_name="text-$tag.tar"
declare -A original=([random]="$data/origin/$random_name" [text]="$data/origin/$text_name")
declare -A name=([random]="$random_name" [text]="$text_name")
db_name="db-${sqlite_mb}MB.sqlite"; big_name="big-$((big_size >> 20))M.bin"
make_random "${original[random]}" "$size"
if [[ ! -f ${original[text]} ]]; then
    step "making the text file: a tar of /usr/share and /usr/lib cut to $(mib "$size")"
    { tar -cf - /usr/share /usr/lib 2>/dev/null || true; } | head -c "$size" >"$work/text"
    [[ $(stat -c %s "$work/text") == "$size" ]] || { echo "cold.sh: /usr/share and /usr/lib hold less than $(mib "$size")" >&2; exit 1; }
    mv "$work/text" "${original[text]}"
fi
if wants sqlite && [[ ! -f $data/origin/$db_name ]]; then
    step "making the $sqlite_mb MB SQLite database"
    python3 "$HERE/mount/sqlite-mix.py" make "$work/db" --megabytes "$sqlite_mb"
    mv "$work/db" "$data/origin/$db_name"
fi
if { wants ttfb || wants rss; } && [[ ! -f $data/origin/$big_name ]]; then
    step "making the sparse $(mib "$big_size") file (64 MiB random at its start)"
    head -c $((64 << 20)) /dev/urandom >"$work/big"
    truncate -s "$big_size" "$work/big"
    mv "$work/big" "$data/origin/$big_name"
fi
# The servers' messages (the proxy's asyncio notices when a mount drops its connections) go to a log of their own.
stamp="$(date -u +%Y%m%d-%H%M%S)"
origin_log="$results_dir/cold-$stamp-origin.log"
start_origin "$data/origin" "$work/origin-run" "$ROOT" 2>"$origin_log"
pids+=($ORIGIN_PIDS)
declare -A url=([loopback]="$ORIGIN_URL" [20ms]="$ORIGIN_URL_20MS")
step "origin: $ORIGIN_URL (20 ms: $ORIGIN_URL_20MS), data in $data"
# The load at the start of each row: the machine is shared, and the figures mean little under load.
loads=()
note_load() { loads+=("$1 $(cut -d' ' -f1-3 /proc/loadavg)"); }

# same OUT ORIGINAL WHAT: fail loudly unless OUT holds ORIGINAL's bytes.
same() { cmp -s "$1" "$2" || { echo "cold.sh: $3 gave other bytes than $2" >&2; exit 1; }; }
stored_bytes() { "$CC" --store "$1" stat --json | jq .storedBytes; }

# ---- 1 and 2: fetch --out beside curl -o and rclone copyto; settling beside put ----------------------------

# fetch_one TOOL NET KIND: one timed download of the KIND file into $work/out (removed first), checked.
fetch_one() {
    local tool="$1" net="$2" kind="$3" src="${url[$2]}${name[$3]}"
    rm -f "$work/out"
    case "$tool" in
        cc) cc_store "$work/store" "$net"
            timed /usr/bin/time -f %M -o "$work/rss" "$CC" --store "$work/store" fetch --domain web "${name[$kind]}" --out "$work/out" >/dev/null ;;
        curl) timed /usr/bin/time -f %M -o "$work/rss" curl -s -f -o "$work/out" "$src" ;;
        rclone) timed /usr/bin/time -f %M -o "$work/rss" rclone copyto --http-url "${url[$net]}" ":http:${name[$kind]}" "$work/out" 2>/dev/null ;;
    esac
    same "$work/out" "${original[$kind]}" "$tool ($net, $kind)"
    rm -f "$work/out"
    record "fetch-$tool-$net-$kind" "$(mbps "$size" "$ELAPSED")"
    record "fetchrss-$tool-$net-$kind" "$(calc "$(tail -1 "$work/rss") / 1024")"
}
# settle_after KIND: on the store row 1's loopback fetch left, the stored bytes, then `settle` timed.
settle_after() {
    record "unsettled-bytes-$1" "$(stored_bytes "$work/store")"
    if ((has_settle)); then
        timed "$CC" --store "$work/store" settle >/dev/null
        record "settle-s-$1" "$ELAPSED"
        record "settled-bytes-$1" "$(stored_bytes "$work/store")"
    fi
}
put_floor() {
    rm -rf "$work/put-store"; cat "${original[$1]}" >/dev/null
    timed "$CC" --store "$work/put-store" put --domain floor "${name[$1]}" "${original[$1]}" >/dev/null
    record "put-s-$1" "$ELAPSED"
    record "put-bytes-$1" "$(stored_bytes "$work/put-store")"
    rm -rf "$work/put-store"
}
fetch_rows() {
    local run net kind tool tools="cc"
    wants fetch && tools="cc curl rclone"
    for ((run = 1; run <= runs; run++)); do
        for net in $nets; do
            wants fetch || [[ $net == loopback ]] || continue
            for kind in random text; do
                step "fetch --out, run $run, $net, $kind"
                for tool in $tools; do
                    fetch_one "$tool" "$net" "$kind"
                    [[ $tool == cc && $net == loopback ]] && wants settle && settle_after "$kind"
                    [[ $tool == cc ]] && rm -rf "$work/store"
                done
            done
        done
        if wants settle; then
            # settling needs row 1's loopback store; with --net 20ms the loop above did not run it.
            [[ " $nets " == *" loopback "* ]] || for kind in random text; do fetch_one cc loopback "$kind"; settle_after "$kind"; done
            for kind in random text; do step "put, run $run, $kind"; put_floor "$kind"; done
        fi
    done
    rm -rf "$work/store"
}

# ---- 3: cat and sha256sum through the mounts, beside curl -o ----------------------------------------------

mount_rows() {
    local run net kind tool how
    local -A sha=([random]="$(sha256sum "${original[random]}" | cut -d' ' -f1)" [text]="$(sha256sum "${original[text]}" | cut -d' ' -f1)")
    for ((run = 1; run <= runs; run++)); do
        for net in $nets; do
            for kind in random text; do
                step "mount cat / sha256sum, run $run, $net, $kind"
                for tool in cc-cat cc-sha rclone-cat rclone-sha curl; do
                    how="${tool#*-}"
                    case "$tool" in
                        cc-*) cc_store "$work/store" "$net"; mounted cc "$net" "$work/store" ;;
                        rclone-*) rm -rf "$work/rclone-cache"; mounted rclone "$net" "$work/rclone-cache" ;;
                    esac
                    case "$how" in
                        cat) timed cat "$MP/${name[$kind]}" >/dev/null
                             same "$MP/${name[$kind]}" "${original[$kind]}" "$tool ($net, $kind)" ;;
                        sha) timed sha256sum "$MP/${name[$kind]}" >"$work/sha"
                             [[ $(cut -d' ' -f1 "$work/sha") == "${sha[$kind]}" ]] \
                                 || { echo "cold.sh: $tool ($net, $kind) read other bytes" >&2; exit 1; } ;;
                        curl) rm -f "$work/out"; timed curl -s -f -o "$work/out" "${url[$net]}${name[$kind]}"
                              same "$work/out" "${original[$kind]}" "curl ($net, $kind)"; rm -f "$work/out" ;;
                    esac
                    [[ $tool == curl ]] || unmount "$MP" "$MOUNT_PID"
                    record "mount-$tool-$net-$kind" "$(mbps "$size" "$ELAPSED")"
                    rm -rf "$work/store" "$work/rclone-cache"
                done
            done
        done
    done
}

# ---- 4: the SQLite mix, cold and warm ------------------------------------------------------------------------

sqlite_rows() {
    local run net kind store
    sqlite_digest="$(python3 "$HERE/mount/sqlite-mix.py" run "$data/origin/$db_name" | jq -r .digest)"
    for ((run = 1; run <= runs; run++)); do
        for net in $nets; do
            step "SQLite mix, run $run, $net"
            for kind in cc rclone; do
                store="$work/store-$kind"; rm -rf "$store"
                [[ $kind == cc ]] && cc_store "$store" "$net"
                mounted "$kind" "$net" "$store"
                mix "$MP/$db_name" "sql-cold-$kind-$net"
                unmount "$MP" "$MOUNT_PID"
                mounted "$kind" "$net" "$store"
                mix "$MP/$db_name" "sql-warm-$kind-$net"
                unmount "$MP" "$MOUNT_PID"
                rm -rf "$store"
            done
        done
    done
}

# ---- 5: cold random 4 KiB preads, beside 4 KiB Range GETs -----------------------------------------------------

# curl_gets NET SEED: the GETs wire-probes.py made, by curl on one kept-alive connection (--next), each GET's
# time_total; a first GET (of the last 4 KiB) that connects is left out. The bytes are checked.
curl_gets() {
    local args=() offset
    for offset in $(($size - 4096)) $(python3 "$HERE/mount/wire-probes.py" offsets "${url[$1]}$random_name" \
            --original "${original[random]}" --reads "$reads" --seed "$2"); do
        ((${#args[@]})) && args+=(--next)
        args+=(-s -f -r "$offset-$((offset + 4095))" -o "$work/get-$offset" -w '%{time_total}\n' "${url[$1]}$random_name")
    done
    curl "${args[@]}" >"$work/curl-times"
    for offset in $(python3 "$HERE/mount/wire-probes.py" offsets "${url[$1]}$random_name" \
            --original "${original[random]}" --reads "$reads" --seed "$2"); do
        cmp -s "$work/get-$offset" <(tail -c +$((offset + 1)) "${original[random]}" | head -c 4096) \
            || { echo "cold.sh: curl's GET at $offset ($1) gave other bytes" >&2; exit 1; }
    done
    rm -f "$work"/get-*
    record "pread-curl-$1" "$(tail -n +2 "$work/curl-times" | awk '{ print $1 * 1000000 }' | median)"
}
pread_rows() {
    local run net kind seed
    for ((run = 1; run <= runs; run++)); do
        for net in $nets; do
            step "cold 4 KiB preads, run $run, $net"
            seed=$RANDOM
            for kind in cc rclone; do
                rm -rf "$work/store"
                [[ $kind == cc ]] && cc_store "$work/store" "$net"
                mounted "$kind" "$net" "$work/store"
                python3 "$HERE/mount/pread-latency.py" "$MP/$random_name" --reads "$reads" --seed "$seed" \
                    --check "${original[random]}" >"$work/lat"
                record "pread-$kind-$net" "$(jq .p50 "$work/lat")"
                unmount "$MP" "$MOUNT_PID"
            done
            python3 "$HERE/mount/wire-probes.py" gets "${url[$net]}$random_name" --original "${original[random]}" \
                --reads "$reads" --seed "$seed" >"$work/lat"
            record "pread-socket-$net" "$(jq .p50 "$work/lat")"
            curl_gets "$net" "$seed"
        done
    done
    rm -rf "$work/store"
}

# ---- 6: the first 4 KiB of a cold big file at 20 ms, beside one round trip -----------------------------------

ttfb_rows() {
    local run kind
    for ((run = 1; run <= runs; run++)); do
        step "first 4 KiB of the $(mib "$big_size") file at 20 ms, run $run"
        for kind in cc rclone; do
            rm -rf "$work/store"
            [[ $kind == cc ]] && cc_store "$work/store" 20ms
            mounted "$kind" 20ms "$work/store"
            python3 "$HERE/mount/wire-probes.py" first-read "$MP/$big_name" --original "$data/origin/$big_name" >"$work/first"
            record "ttfb-$kind" "$(jq .ms "$work/first")"
            unmount "$MP" "$MOUNT_PID"
        done
        python3 "$HERE/mount/wire-probes.py" round-trip "${url[20ms]}$big_name" --original "$data/origin/$big_name" >"$work/first"
        record ttfb-trip "$(jq .ms "$work/first")"
    done
    rm -rf "$work/store"
}

# ---- 7: the mount's peak RSS streaming the big file ----------------------------------------------------------

rss_rows() {
    local run t0
    for ((run = 1; run <= runs; run++)); do
        step "peak RSS of the mount streaming the $(mib "$big_size") file, run $run"
        cc_store "$work/store" loopback
        mounted cc loopback "$work/store"
        t0=$EPOCHREALTIME
        cat "$MP/$big_name" | cmp - "$data/origin/$big_name" \
            || { echo "cold.sh: the mount streamed other bytes than $big_name" >&2; exit 1; }
        record rss-mbps "$(mbps "$big_size" "$(calc "$EPOCHREALTIME - $t0")")"
        record rss-mib "$(awk '/^VmHWM/ { print $2 / 1024 }' "/proc/$MOUNT_PID/status")"
        unmount "$MP" "$MOUNT_PID"
        rm -rf "$work/store"
    done
}

# ---- 8: the machine's floors ---------------------------------------------------------------------------------

floor_rows() {
    local dd_mib=$((size >> 20 < 1024 ? size >> 20 : 1024))
    step "floors: openssl sha256, zstd -b3, dd conv=fdatasync"
    openssl speed -evp sha256 -bytes 16384 -seconds 3 2>/dev/null | awk 'END { print $NF + 0 }' >"$work/sha-speed"
    record floor-sha "$(calc "$(cat "$work/sha-speed") / 1000")"
    # zstd -b prints "3#name : in -> out (xR), C MB/s, D MB/s" (with \r progress before it).
    zstd -b3 -e3 -i3 "${original[text]}" 2>&1 | tr '\r' '\n' | grep 'MB/s' | tail -1 >"$work/zstd-b"
    record floor-zstd "$(sed -E 's/.*, *([0-9.]+) MB\/s, *[0-9.]+ MB\/s.*/\1/' "$work/zstd-b")"
    record floor-zstd-ratio "$(sed -E 's/.*\(x? *([0-9.]+)\).*/\1/' "$work/zstd-b")"
    timed dd if=/dev/zero of="$work/dd" bs=1M count="$dd_mib" conv=fdatasync status=none
    record floor-dd "$(mbps $((dd_mib << 20)) "$ELAPSED")"
    rm -f "$work/dd"
}

# ---- run -----------------------------------------------------------------------------------------------------

started=$SECONDS
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
# Each group runs in a subshell: a failure leaves its rows empty, is named, and the others still run.
failed=()
run_group() {
    local pid
    note_load "$1"
    ("$1") &
    pid=$!; pids+=("$pid")
    wait "$pid" || { step "$1 failed (exit $?): its rows stay empty"; failed+=("$1"); }
}
{ wants fetch || wants settle; } && run_group fetch_rows
wants mount && run_group mount_rows
wants sqlite && run_group sqlite_rows
wants pread && run_group pread_rows
wants ttfb && run_group ttfb_rows
wants rss && run_group rss_rows
wants floors && run_group floor_rows

# ---- the table ----------------------------------------------------------------------------------------------

# f KEY [DIGITS]: the median of KEY, rounded; "—" when not measured.
f() { local v; v="$(fig "$1")"; [[ -n $v ]] && printf "%.${2:-0}f" "$v" || echo "—"; }
# ratio A B: A/B to 2 decimals, or "—".
ratio() { local a b; a="$(fig "$1")"; b="$(fig "$2")"; [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "—" }' || echo "—"; }
# verdict "EXPR" -v r1=… …: met / missed; "—" when a figure is missing.
verdict() {
    local expr="$1" arg; shift
    for arg in "$@"; do [[ ${arg#*=} == "—" || -z ${arg#*=} ]] && { echo "—"; return; }; done
    awk "$@" "BEGIN { print ($expr) ? \"met\" : \"missed\" }"
}
row() { echo "| $1 | $2 | $3 | $4 | $5 | $6 |"; }
put_rate() { local t; t="$(fig "put-s-$1")"; [[ -n $t ]] && mbps "$size" "$t" | xargs printf '%.0f' || echo "—"; }
highest() { awk -v k="$1" '$1 == k { n++; if ($2 > m) m = $2 } END { if (n) printf "%.0f", m; else print "—" }' "$work/figures" 2>/dev/null; }
table() {
    local net kind r1 r2 how a
    echo "| row | chunkcache | floor(s) | ratio | goal | met/missed |"
    echo "|---|---|---|---|---|---|"
    if wants fetch; then
        for net in $nets; do
            for kind in random text; do
                r1="$(ratio "fetch-cc-$net-$kind" "fetch-curl-$net-$kind")"; r2="$(ratio "fetch-cc-$net-$kind" "fetch-rclone-$net-$kind")"
                row "1 \`fetch --out\` of $(mib "$size"), $kind, $net (peak RSS)" \
                    "$(f "fetch-cc-$net-$kind") MB/s ($(f "fetchrss-cc-$net-$kind") MiB)" \
                    "\`curl -o\` $(f "fetch-curl-$net-$kind") MB/s ($(f "fetchrss-curl-$net-$kind") MiB); \`rclone copyto\` $(f "fetch-rclone-$net-$kind") MB/s ($(f "fetchrss-rclone-$net-$kind") MiB)" \
                    "×curl $r1, ×rclone $r2" "≥ 0.8× curl, ≥ 1.0× rclone" "$(verdict 'r1 >= 0.8 && r2 >= 1' -v r1="$r1" -v r2="$r2")"
            done
        done
    fi
    if wants settle; then
        for kind in random text; do
            if ((has_settle)); then
                r1="$(ratio "settled-bytes-$kind" "put-bytes-$kind")"; r2="$(ratio "settle-s-$kind" "put-s-$kind")"
                row "2 settling after the loopback \`fetch --out\`, $kind: stored bytes (before settling), time" \
                    "$(f "settled-bytes-$kind") B ($(f "unsettled-bytes-$kind") B), $(f "settle-s-$kind" 2) s" \
                    "\`put\` $(f "put-bytes-$kind") B, $(f "put-s-$kind" 2) s ($(put_rate "$kind") MB/s)" \
                    "bytes ×$r1, time ×$r2" "bytes ≤ 1.02×, time ≤ 1.5×" "$(verdict 'r1 <= 1.02 && r1 >= 0.98 && r2 <= 1.5' -v r1="$r1" -v r2="$r2")"
            else
                r1="$(ratio "unsettled-bytes-$kind" "put-bytes-$kind")"
                row "2 settling after the loopback \`fetch --out\`, $kind" \
                    "n/a (no settle command); stored after the fetch $(f "unsettled-bytes-$kind") B" \
                    "\`put\` $(f "put-bytes-$kind") B, $(f "put-s-$kind" 2) s ($(put_rate "$kind") MB/s)" \
                    "fetch's bytes ×$r1 put's" "bytes ≤ 1.02×, time ≤ 1.5×" "n/a"
            fi
        done
    fi
    if wants mount; then
        for net in $nets; do
            for kind in random text; do
                for how in cat sha; do
                    r1="$(ratio "mount-cc-$how-$net-$kind" "mount-rclone-$how-$net-$kind")"; r2="$(ratio "mount-cc-$how-$net-$kind" "mount-curl-$net-$kind")"
                    row "3 mount \`${how/sha/sha256sum}\` of $(mib "$size"), $kind, $net" "$(f "mount-cc-$how-$net-$kind") MB/s" \
                        "rclone mount $(f "mount-rclone-$how-$net-$kind") MB/s; \`curl -o\` $(f "mount-curl-$net-$kind") MB/s" \
                        "×rclone $r1, ×curl $r2" "≥ 1.5× rclone, ≥ 0.8× curl" "$(verdict 'r1 >= 1.5 && r2 >= 0.8' -v r1="$r1" -v r2="$r2")"
                done
            done
        done
    fi
    if wants sqlite; then
        for net in $nets; do
            for how in cold warm; do
                r1="$(ratio "sql-$how-cc-$net" "sql-$how-rclone-$net")"
                row "4 SQLite mix, $sqlite_mb MB database, $how, $net" "$(f "sql-$how-cc-$net" 3) s" \
                    "rclone mount $(f "sql-$how-rclone-$net" 3) s" "×rclone $r1" "≤ 1.0× rclone" "$(verdict 'r1 <= 1' -v r1="$r1")"
            done
        done
    fi
    if wants pread; then
        for net in $nets; do
            r1="$(ratio "pread-cc-$net" "pread-curl-$net")"
            a=3; [[ $net == 20ms ]] && a=1.1
            row "5 cold random 4 KiB pread, p50 of $reads a run, $net" "$(f "pread-cc-$net") µs" \
                "one 4 KiB Range GET on a kept-alive connection: curl $(f "pread-curl-$net") µs, a bare socket $(f "pread-socket-$net") µs; rclone mount $(f "pread-rclone-$net") µs" \
                "×curl GET $r1, ×socket GET $(ratio "pread-cc-$net" "pread-socket-$net"), ×rclone $(ratio "pread-cc-$net" "pread-rclone-$net")" \
                "≤ $a× GET" "$(verdict "r1 <= $a" -v r1="$r1")"
        done
    fi
    if wants ttfb; then
        r1="$(ratio ttfb-cc ttfb-trip)"
        row "6 first 4 KiB of a cold $(mib "$big_size") file at 20 ms (open + pread)" "$(f ttfb-cc 1) ms" \
            "one round trip (1-byte GET, fresh connection) $(f ttfb-trip 1) ms; rclone mount $(f ttfb-rclone 1) ms" \
            "×trip $r1" "≤ 1.3× one round trip" "$(verdict 'r1 <= 1.3' -v r1="$r1")"
    fi
    if wants rss; then
        a="$(highest rss-mib)"
        row "7 mount's peak RSS (VmHWM) streaming the $(mib "$big_size") file, loopback (highest of $runs)" \
            "$a MiB ($(f rss-mbps) MB/s)" "—" "—" "≤ 256 MiB" "$(verdict 'a <= 256' -v a="$a")"
    fi
    if wants floors; then
        row "8 floors of the machine" "—" \
            "SHA-256 (openssl, 16 KiB) $(f floor-sha) MB/s one core; zstd -3 on the text $(f floor-zstd) MB/s one core (×$(fig floor-zstd-ratio)); \`dd conv=fdatasync\` $(f floor-dd) MB/s" \
            "—" "—" "—"
    fi
}

out="$results_dir/cold-$stamp.md"
{
    echo "### Issue 27: the cold path beside its floors ($(date -u '+%F %R UTC'))"
    echo
    echo "\`Benchmarks/cold.sh --size $(numfmt --to=iec "$size") --runs $runs --net ${nets/ /,} --only ${wanted:1:-1}\`:" \
        "chunkcache $("$CC" --version 2>/dev/null | head -1) ($CC; tree at $(git -C "$ROOT" rev-parse --short HEAD))," \
        "$(rclone version 2>/dev/null | head -1), curl $(curl --version | head -1 | cut -d' ' -f2), nginx on 127.0.0.1, 20 ms via scripts/delay-proxy.py;" \
        "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, SHA extensions: $(grep -q sha_ni /proc/cpuinfo && echo yes || echo no);" \
        "load before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg); took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s."
    echo "Load (1, 5, 15 min) as each row began: $(printf '%s; ' "${loads[@]}" | sed 's/_rows//g; s/; $//')."
    echo
    table
    if ((${#failed[@]})); then echo; echo "FAILED (rows left empty; see the messages above the table): ${failed[*]}"; fi
} | tee "$out"
echo "== saved: $out (the servers' messages: $origin_log)" >&2
((${#failed[@]} == 0))
