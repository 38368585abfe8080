#!/usr/bin/env bash
# The goals of issue 20 side by side in one run: `chunkcache mount` beside `rclone mount --vfs-cache-mode full`
# of the same nginx, `curl`, `chunkcache fetch` and the local disk, on loopback and 20 ms away
# (Benchmarks/origin.sh: nginx on 127.0.0.1 behind scripts/delay-proxy.py). Prints a markdown table (row,
# chunkcache, peers, floor, ratio, goal, met/missed) with the commands and the date, ready for RESULTS.md,
# and saves it under $CHUNKCACHE_BENCH_DIR/mount-results/.
#
#   Benchmarks/mount.sh            the issue's sizes (1 GiB, 100,000 items, 200 MB SQLite, 10 GiB): ~25-40 min
#   Benchmarks/mount.sh --quick    small sizes, a smoke run of every row (~3-5 min); its figures say little
#   Benchmarks/mount.sh --rows seq,random,warm,ls,sqlite,ttfb,rss,cli   only these groups (default: all)
#
# Rows whose chunkcache figure needs `chunkcache mount` print "n/a (no mount in this build)" when
# `chunkcache mount --help` fails; their peers are measured all the same.
#
# Method. Cold: a fresh store (domain add + domain sync) or a fresh rclone cache, a fresh mount, then
# `sync; echo 3 > /proc/sys/vm/drop_caches`; the origin's file is read once more afterwards so nginx serves it
# from memory, as a remote origin would (the cold side is the client, not the origin's disk). Warm: the store
# (or rclone's cache) filled by a whole read, a fresh mount, caches dropped. Every timed figure is the median
# of RUNS runs, the tools interleaved within each run. Times are bash's $EPOCHREALTIME around the command.
#
# Environment (sizes take IEC suffixes, e.g. 1G, 64M):
#   CHUNKCACHE_BIN          the chunkcache binary (default: built here in release, scratch path .build-bench)
#   CHUNKCACHE_BENCH_BIN    the chunkcache-bench binary (default: the one beside CHUNKCACHE_BIN, or built here)
#   CHUNKCACHE_BENCH_DIR    where data, stores and results go (default /tmp/chunkcache-bench)
#   MOUNT_BENCH_SEQ_SIZE    the random file read whole and at random (1G; --quick 64M)
#   MOUNT_BENCH_READS       random preads per run (100; --quick 20)
#   MOUNT_BENCH_TREE_ITEMS  items of the tree listed by ls -lR (100000; --quick 2000)
#   MOUNT_BENCH_SQLITE_MB   the SQLite database (200; --quick 16)
#   MOUNT_BENCH_BIG_SIZE    the file of the first-byte and RSS rows (10G; --quick 512M), a 64 MiB random
#                           pattern repeated (so it takes its size on the origin's disk, and little in a
#                           deduplicating store)
#   MOUNT_BENCH_RUNS        runs per timed figure (3)
#   MOUNT_BENCH_CLI_RUNS    runs of each CLI-start figure (20)
# Needs root (drop_caches, /dev/fuse), nginx, curl, rclone, fuse3, python3, zstd, sqlite3 (install-deps.sh).
set -euo pipefail
export LC_ALL=C
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"

quick=0
rows_wanted="seq,random,warm,ls,sqlite,ttfb,rss,cli"
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --rows) rows_wanted="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "mount.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done
wants() { [[ ",$rows_wanted," == *",$1,"* ]]; }
bytes() { numfmt --from=iec "$1"; }
if ((quick)); then
    seq_size=$(bytes "${MOUNT_BENCH_SEQ_SIZE:-64M}"); reads=${MOUNT_BENCH_READS:-20}
    tree_items=${MOUNT_BENCH_TREE_ITEMS:-2000}; sqlite_mb=${MOUNT_BENCH_SQLITE_MB:-16}
    big_size=$(bytes "${MOUNT_BENCH_BIG_SIZE:-512M}")
else
    seq_size=$(bytes "${MOUNT_BENCH_SEQ_SIZE:-1G}"); reads=${MOUNT_BENCH_READS:-100}
    tree_items=${MOUNT_BENCH_TREE_ITEMS:-100000}; sqlite_mb=${MOUNT_BENCH_SQLITE_MB:-200}
    big_size=$(bytes "${MOUNT_BENCH_BIG_SIZE:-10G}")
fi
runs=${MOUNT_BENCH_RUNS:-3}
cli_runs=${MOUNT_BENCH_CLI_RUNS:-20}
pattern_size=$((64 << 20))
((big_size % pattern_size == 0)) || { echo "mount.sh: MOUNT_BENCH_BIG_SIZE must be a multiple of 64 MiB" >&2; exit 64; }

[[ $(id -u) == 0 ]] || { echo "mount.sh: run as root (drop_caches, FUSE mounts)" >&2; exit 77; }
for tool in nginx curl rclone fusermount3 python3 zstd sqlite3 jq numfmt; do
    command -v "$tool" >/dev/null || [[ $tool == nginx && -x /usr/sbin/nginx ]] \
        || { echo "mount.sh: needs $tool (scripts/install-deps.sh)" >&2; exit 69; }
done

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}"
data="$base/mount-data"; ((quick)) && data+="-quick"    # kept across runs: made once per size
results_dir="$base/mount-results"
mkdir -p "$data/origin" "$results_dir"
work="$(mktemp -d "${TMPDIR:-/tmp}/mount-bench.XXXXXX")"
pids=()        # every process this script started in the background (servers, mounts)
# step, median, timed, record/fig, the mounts (cc_store, mounted, unmount), mix, and cleanup.
source "$ROOT/Benchmarks/bench-lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${CHUNKCACHE_BIN:-} ]]; then CC="$CHUNKCACHE_BIN"; else
    step "building chunkcache and chunkcache-bench (release, scratch path .build-bench)"
    (cd "$ROOT" && swift build -c release --product chunkcache --scratch-path .build-bench >&2)
    (cd "$ROOT" && swift build -c release --product chunkcache-bench --scratch-path .build-bench >&2)
    CC="$ROOT/.build-bench/release/chunkcache"
fi
BENCH="${CHUNKCACHE_BENCH_BIN:-$(dirname "$CC")/chunkcache-bench}"
! wants warm || [[ -x $BENCH ]] \
    || { echo "mount.sh: no chunkcache-bench at $BENCH (the warm rows); set CHUNKCACHE_BENCH_BIN" >&2; exit 69; }
has_mount=0
"$CC" mount --help >/dev/null 2>&1 && has_mount=1
NA="n/a (no mount in this build)"
((has_mount)) || step "this chunkcache has no mount command: its mount rows print \"$NA\""

# ---- measuring ----------------------------------------------------------------------------------------------

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# After dropping caches, the origin's file goes back into memory: nginx stands for a remote server.
warm_origin() { cat "$@" >/dev/null; }

# ---- the origin and the data --------------------------------------------------------------------------------

source "$ROOT/Benchmarks/origin.sh"
seq_file="$data/origin/seq.bin"
big_file="$data/origin/big.bin"
db_file="$data/origin/db.sqlite"
tree_dir="$data/tree"
make_random "$seq_file" "$seq_size"
if wants ttfb || wants rss; then
    if [[ ! -f $big_file || $(stat -c %s "$big_file") != "$big_size" ]]; then
        step "making the $((big_size >> 20)) MiB file (a 64 MiB random pattern repeated)"
        head -c "$pattern_size" /dev/urandom >"$work/pattern"
        for ((i = 0; i < big_size / pattern_size; i++)); do cat "$work/pattern"; done >"$big_file.tmp"
        mv "$big_file.tmp" "$big_file"
    fi
fi
# The database's size is noted beside the origin folder (inside it, the note would be an item of its own).
if wants sqlite && [[ ! -f $db_file || ! -f $data/db-$sqlite_mb-MB.made ]]; then
    step "making the $sqlite_mb MB SQLite database"
    rm -f "$db_file" "$db_file".* "$data"/db-*-MB.made
    python3 "$HERE/mount/sqlite-mix.py" make "$db_file" --megabytes "$sqlite_mb"
    touch "$data/db-$sqlite_mb-MB.made"
fi
start_origin "$data/origin" "$work/origin-run" "$ROOT"
pids+=($ORIGIN_PIDS)
declare -A url=([loopback]="$ORIGIN_URL" [20ms]="$ORIGIN_URL_20MS")
step "origin: $ORIGIN_URL (20 ms: $ORIGIN_URL_20MS), data in $data"

# ---- mounts (Benchmarks/bench-lib.sh mounts them) ------------------------------------------------------------

mount_kinds() { if ((has_mount)); then echo "cc rclone"; else echo rclone; fi; }

sha_of() { sha256sum "$1" | cut -d' ' -f1; }
seq_sha="$(sha_of "$seq_file")"
check_sha() { [[ $1 == "$seq_sha" ]] || { echo "mount.sh: $2 read other bytes (sha256 $1)" >&2; exit 1; }; }

# ---- cold sequential read and fetch --out -------------------------------------------------------------------

cold_sequential() {
    local run net tool kind sha
    for ((run = 1; run <= runs; run++)); do
        for net in loopback 20ms; do
            step "cold sequential, run $run, $net"
            for tool in cc-cat cc-sha rclone-cat rclone-sha curl fetch; do
                kind="${tool%%-*}"
                [[ $kind == cc ]] && ((!has_mount)) && continue
                case "$kind" in
                    cc|fetch) cc_store "$work/store" "$net" ;;
                    rclone) rm -rf "$work/rclone-cache" ;;
                esac
                [[ $kind == cc ]] && mounted cc "$net" "$work/store"
                [[ $kind == rclone ]] && mounted rclone "$net" "$work/rclone-cache"
                drop_caches; warm_origin "$seq_file"
                case "$tool" in
                    *-cat) timed cat "$MP/seq.bin" >/dev/null ;;
                    *-sha) timed sha256sum "$MP/seq.bin" >"$work/sha"; check_sha "$(cut -d' ' -f1 "$work/sha")" "$tool" ;;
                    curl) timed curl -s -f -o "$work/out" "${url[$net]}seq.bin" ;;
                    fetch) timed "$CC" --store "$work/store" fetch --domain web seq.bin --out "$work/out" >/dev/null ;;
                esac
                [[ $tool == curl || $tool == fetch ]] && { check_sha "$(sha_of "$work/out")" "$tool"; rm -f "$work/out"; }
                [[ $kind == cc || $kind == rclone ]] && unmount "$MP" "$MOUNT_PID"
                record "seq-$tool-$net" "$(mbps "$seq_size" "$ELAPSED")"
            done
        done
        # The store's own floor: the same bytes hashed, compressed and committed by `put` from the page cache,
        # no network. A cold read that stores what it reads cannot outrun it.
        step "ingest floor (put), run $run"
        rm -rf "$work/put-store"; cat "$seq_file" >/dev/null
        timed "$CC" --store "$work/put-store" put --domain floor seq.bin "$seq_file" >/dev/null
        record "seq-put" "$(mbps "$seq_size" "$ELAPSED")"
        rm -rf "$work/put-store"
    done
    rm -rf "$work/store" "$work/rclone-cache"
}

# ---- cold random 4 KiB preads, and 64 KiB Range GETs by curl ------------------------------------------------

# curl_ranges NET KEY: READS 64 KiB Range GETs of never-read ranges on one kept-alive connection (one curl,
# --next), each GET's time_total in µs (the first, which also connects, is left out); and READS/4 of them each
# a curl command of its own (process start and connect included).
curl_ranges() {
    local args=() offset i t0 times=()
    for offset in $(python3 -c "import random; r = random.Random($RANDOM); n = $reads + 1; s = $seq_size // n
print(' '.join(str(i * s + r.randrange(0, (s - 65536) // 4096) * 4096) for i in range(n)))"); do
        ((${#args[@]})) && args+=(--next)
        args+=(-s -f -r "$offset-$((offset + 65535))" -o /dev/null -w '%{time_total}\n' "${url[$1]}seq.bin")
    done
    record "$2-get" "$(curl "${args[@]}" | tail -n +2 | awk '{ print $1 * 1000000 }' | median)"
    for ((i = 0; i < reads / 4 + 1; i++)); do
        offset=$(((RANDOM * 32768 + RANDOM) % (seq_size / 65536 - 1) * 65536))
        t0=$EPOCHREALTIME
        curl -s -f -r "$offset-$((offset + 65535))" -o /dev/null "${url[$1]}seq.bin"
        times+=("$(calc "($EPOCHREALTIME - $t0) * 1000000")")
    done
    record "$2-curlcmd" "$(printf '%s\n' "${times[@]}" | median)"
}
# preads FILE KEY: READS random 4 KiB preads (Benchmarks/mount/pread-latency.py), p50 and p99 recorded.
preads() {
    python3 "$HERE/mount/pread-latency.py" "$1" --reads "$reads" --seed "$RANDOM" --check "$seq_file" >"$work/lat"
    record "$2-p50" "$(jq .p50 "$work/lat")"
    record "$2-p99" "$(jq .p99 "$work/lat")"
}

cold_random() {
    local run net kind
    for ((run = 1; run <= runs; run++)); do
        for net in loopback 20ms; do
            step "cold random 4 KiB preads, run $run, $net"
            for kind in $(mount_kinds); do
                if [[ $kind == cc ]]; then cc_store "$work/store" "$net"; mounted cc "$net" "$work/store"
                else rm -rf "$work/rclone-cache"; mounted rclone "$net" "$work/rclone-cache"; fi
                drop_caches; warm_origin "$seq_file"
                preads "$MP/seq.bin" "rand-$kind-$net"
                unmount "$MP" "$MOUNT_PID"
            done
            curl_ranges "$net" "rand-curl-$net"
        done
    done
    rm -rf "$work/store" "$work/rclone-cache"
}

# ---- warm: store warm, mount fresh, caches dropped ----------------------------------------------------------

warm() {
    local run kind store
    step "warm: filling a store and rclone's cache with the whole file"
    cc_store "$work/warm-store" loopback
    path="$("$CC" --store "$work/warm-store" fetch --domain web seq.bin | head -1)"; rm -f "$path"
    rm -rf "$work/warm-rclone"; mounted rclone loopback "$work/warm-rclone"
    cat "$MP/seq.bin" >/dev/null; unmount "$MP" "$MOUNT_PID"
    # The one-thread decode floor: the file as one zstd -3 frame (random bytes: stored blocks), decoded by
    # zstd -d (one thread) from a cold page cache, as the mount reads its store.
    zstd -q -3 --single-thread -f "$seq_file" -o "$work/seq.zst"
    for ((run = 1; run <= runs; run++)); do
        step "warm, run $run"
        for kind in $(mount_kinds); do
            store="$work/warm-store"; [[ $kind == rclone ]] && store="$work/warm-rclone"
            mounted "$kind" loopback "$store"; drop_caches
            preads "$MP/seq.bin" "warmrand-$kind"
            unmount "$MP" "$MOUNT_PID"
            # The same with the store (or rclone's cache file) in the page cache, as the library floor below
            # runs: a fresh mount, so the kernel holds none of the mounted file's pages.
            find "$store" -type f -exec cat {} + >/dev/null 2>&1 || true
            mounted "$kind" loopback "$store"
            preads "$MP/seq.bin" "warmrandpc-$kind"
            unmount "$MP" "$MOUNT_PID"
            mounted "$kind" loopback "$store"; drop_caches
            timed cat "$MP/seq.bin" >/dev/null; record "warmseq-$kind" "$(mbps "$seq_size" "$ELAPSED")"
            timed cat "$MP/seq.bin" >/dev/null; record "again-$kind" "$(mbps "$seq_size" "$ELAPSED")"
            unmount "$MP" "$MOUNT_PID"
        done
        drop_caches
        timed zstd -q -d -c "$work/seq.zst" >/dev/null; record "warmseq-floor" "$(mbps "$seq_size" "$ELAPSED")"
        cat "$seq_file" >/dev/null
        timed cat "$seq_file" >/dev/null; record "again-floor" "$(mbps "$seq_size" "$ELAPSED")"
    done
    # No command reads a range into a caller's buffer (the library's read(into:)): the nearest figure is the
    # engine's warm 4 KiB partial fetch into a hand-off file, `chunkcache-bench read-latency` (it writes a temp file too,
    # so read(into:) is at most this).
    step "warm: chunkcache-bench read-latency, 4 KiB ranges"
    "$BENCH" --json read-latency "$seq_file" --range-size 4096 --iterations 2000 --scratch "$work" >"$work/rl.json"
    record warmrand-floor "$(jq .engine.p50Micros "$work/rl.json")"
    record warmrand-decode "$(jq .decodeFloor.p50Micros "$work/rl.json")"
    rm -rf "$work/warm-store" "$work/warm-rclone" "$work/seq.zst"
}

# ---- ls -lR of a tree of TREE_ITEMS items -------------------------------------------------------------------

tree_listing() {
    local run
    if [[ ! -f $tree_dir.$tree_items ]]; then
        step "making a tree of $tree_items items"
        rm -rf "$tree_dir" "$tree_dir".*
        # Folders of 1,000 items (999 files and the folder itself), files of 1-64 bytes.
        python3 - "$tree_dir" "$tree_items" <<'PY'
import os, random, sys
root, items = sys.argv[1], int(sys.argv[2])
r = random.Random(20); made = 0; folder = 0
while made < items:
    path = os.path.join(root, f"d{folder:04}"); os.makedirs(path); made += 1; folder += 1
    for i in range(min(999, items - made)):
        with open(os.path.join(path, f"f{i:03}.txt"), "wb") as f: f.write(os.urandom(r.randrange(1, 65)))
        made += 1
PY
        touch "$tree_dir.$tree_items"
    fi
    if ((has_mount)); then
        step "importing the tree into a local domain"
        rm -rf "$work/tree-store"
        timed "$CC" --store "$work/tree-store" import "$tree_dir" --domain tree --copy >/dev/null
        record ls-import "$ELAPSED"
    fi
    ls -lR "$tree_dir" >"$work/ls-local"
    for ((run = 1; run <= runs; run++)); do
        step "ls -lR, run $run"
        if ((has_mount)); then
            MP="$work/mnt-cc"; cc_mount "$work/tree-store" tree "$MP"; drop_caches
            timed ls -lR "$MP" >"$work/ls-cc"; record ls-cold-cc "$ELAPSED"
            timed ls -lR "$MP" >/dev/null; record ls-warm-cc "$ELAPSED"
            [[ $(grep -c '^-' "$work/ls-cc") == $(grep -c '^-' "$work/ls-local") ]] \
                || { echo "mount.sh: ls -lR of the mount lists other files than the tree's" >&2; exit 1; }
            unmount "$MP" "$MOUNT_PID"
        fi
        drop_caches
        timed ls -lR "$tree_dir" >/dev/null; record ls-cold-local "$ELAPSED"
        timed ls -lR "$tree_dir" >/dev/null; record ls-warm-local "$ELAPSED"
    done
    rm -rf "$work/tree-store"
}

# ---- the SQLite query mix -----------------------------------------------------------------------------------

sqlite_rows() {
    local run net kind store
    sqlite_digest="$(python3 "$HERE/mount/sqlite-mix.py" run "$db_file" | jq -r .digest)"
    for ((run = 1; run <= runs; run++)); do
        for net in loopback 20ms; do
            step "SQLite query mix, run $run, $net"
            for kind in $(mount_kinds); do
                store="$work/store"; [[ $kind == rclone ]] && store="$work/rclone-cache"
                if [[ $kind == cc ]]; then cc_store "$store" "$net"; else rm -rf "$store"; fi
                mounted "$kind" "$net" "$store"; drop_caches; warm_origin "$db_file"
                mix "$MP/db.sqlite" "sql-cold-$kind-$net"
                unmount "$MP" "$MOUNT_PID"
                mounted "$kind" "$net" "$store"; drop_caches
                mix "$MP/db.sqlite" "sql-warm-$kind-$net"
                unmount "$MP" "$MOUNT_PID"
            done
            if [[ $net == loopback ]]; then
                cp "$db_file" "$work/local.sqlite"; drop_caches
                mix "$work/local.sqlite" sql-cold-local
                mix "$work/local.sqlite" sql-warm-local
                rm -f "$work/local.sqlite"
            fi
        done
    done
    rm -rf "$work/store" "$work/rclone-cache"
}

# ---- time to first byte at 20 ms, and the mount's peak RSS while reading the big file ----------------------

ttfb() {
    local run kind store
    for ((run = 1; run <= runs; run++)); do
        step "first byte of the $((big_size >> 20)) MiB file at 20 ms, run $run"
        for kind in $(mount_kinds); do
            store="$work/store"; [[ $kind == rclone ]] && store="$work/rclone-cache"
            if [[ $kind == cc ]]; then cc_store "$store" 20ms; else rm -rf "$store"; fi
            mounted "$kind" 20ms "$store"; drop_caches
            timed head -c 1 "$MP/big.bin" >"$work/first"
            cmp -s "$work/first" <(head -c 1 "$big_file") || { echo "mount.sh: $kind gave another first byte" >&2; exit 1; }
            record "ttfb-$kind" "$(calc "$ELAPSED * 1000")"
            unmount "$MP" "$MOUNT_PID"
        done
        # One round trip: a fresh connection to the proxy is local, so its first byte is 20 ms of delay plus
        # nginx's answer.
        record ttfb-floor "$(curl -s -f -r 0-0 -o /dev/null -w '%{time_starttransfer}' "${url[20ms]}big.bin" | awk '{ print $1 * 1000 }')"
    done
    rm -rf "$work/store" "$work/rclone-cache"
}
rss() {
    local kind store
    for kind in $(mount_kinds); do
        step "peak RSS of the $kind mount reading the $((big_size >> 20)) MiB file"
        store="$work/store"; [[ $kind == rclone ]] && store="$work/rclone-cache"
        if [[ $kind == cc ]]; then cc_store "$store" loopback; else rm -rf "$store"; fi
        mounted "$kind" loopback "$store"
        timed cat "$MP/big.bin" >/dev/null
        record "rss-$kind" "$(awk '/^VmHWM/ { print $2 / 1024 }' "/proc/$MOUNT_PID/status")"
        record "rss-mbps-$kind" "$(mbps "$big_size" "$ELAPSED")"
        unmount "$MP" "$MOUNT_PID"
        rm -rf "$store"
    done
}

# ---- CLI start ----------------------------------------------------------------------------------------------

cli() {
    local i path
    if [[ -x $ROOT/Benchmarks/cli-start.sh ]]; then
        step "CLI start: Benchmarks/cli-start.sh"
        "$ROOT/Benchmarks/cli-start.sh" --bin "$CC" >"$work/cli-start.out" 2>"$work/cli-start.err" \
            || echo "(cli-start.sh failed: $(tail -1 "$work/cli-start.err"))" >>"$work/cli-start.out"
        return
    fi
    step "CLI start: medians of $cli_runs"
    head -c $((1 << 20)) /dev/urandom >"$work/item"
    "$CC" --store "$work/cli-store" put --domain local item "$work/item" >/dev/null
    path="$("$CC" --store "$work/cli-store" fetch --domain local item --range 0:65536 | head -1)"; rm -f "$path"
    for ((i = 0; i < cli_runs; i++)); do
        timed /bin/true; record cli-true "$(calc "$ELAPSED * 1000")"
        timed "$CC" "${start_args[@]}" >/dev/null; record cli-version "$(calc "$ELAPSED * 1000")"
        timed "$CC" --store "$work/cli-store" fetch --domain local item --range 0:65536 >"$work/path"
        record cli-fetch "$(calc "$ELAPSED * 1000")"
        rm -f "$(head -1 "$work/path")"
        timed curl -s -f -r 0-65535 -o /dev/null "${ORIGIN_URL}seq.bin"; record cli-curl "$(calc "$ELAPSED * 1000")"
    done
    rm -rf "$work/cli-store" "$work/item"
}

# ---- run ----------------------------------------------------------------------------------------------------

started=$SECONDS
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
# Each group runs in a subshell of its own: a failure (a mount that does not come up, bytes that differ) leaves
# that group's rows empty, is named in the output, and the other groups still run.
run_group() {
    local pid
    ("$1") &
    pid=$!; pids+=("$pid")
    wait "$pid" || { step "$1 failed (exit $?): its rows stay empty"; failed+=("$1"); }
}
failed=()
# A build without --version: `--help` stands in (it prints more, so it is an upper bound).
start_args=(--version); "$CC" --version >/dev/null 2>&1 || start_args=(--help)
wants seq && run_group cold_sequential
wants random && run_group cold_random
wants warm && run_group warm
wants ls && run_group tree_listing
wants sqlite && run_group sqlite_rows
wants ttfb && run_group ttfb
wants rss && run_group rss
wants cli && run_group cli

# ---- the table ----------------------------------------------------------------------------------------------

# f KEY [DIGITS]: the median of KEY, rounded; "—" when not measured.
f() { local v; v="$(fig "$1")"; [[ -n $v ]] && printf "%.${2:-0}f" "$v" || echo "—"; }
# ratio A B: A/B to 2 decimals, or "—".
ratio() { local a b; a="$(fig "$1")"; b="$(fig "$2")"; [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "—" }' || echo "—"; }
# verdict "EXPR" (awk, on r, r1, r2 … given as -v): met / missed; "—" when a ratio is missing.
verdict() {
    local expr="$1"; shift
    local arg; for arg in "$@"; do [[ ${arg#*=} == "—" ]] && { echo "—"; return; }; done
    awk "$@" "BEGIN { print ($expr) ? \"met\" : \"missed\" }"
}
cc_or_na() { ((has_mount)) && echo "$1" || echo "$NA"; }
row() { echo "| $1 | $2 | $3 | $4 | $5 | $6 | $7 |"; }
mib() { echo "$(($1 >> 20)) MiB"; }
table() {
    local net a b r1 r2 r3
    echo "| row | chunkcache | peer(s) | floor | ratio | goal | met/missed |"
    echo "|---|---|---|---|---|---|---|"
    if wants seq; then
        for net in loopback 20ms; do
            for how in cat sha; do
                r1="$(ratio "seq-cc-$how-$net" "seq-rclone-$how-$net")"; r2="$(ratio "seq-cc-$how-$net" "seq-curl-$net")"
                row "cold sequential $(mib "$seq_size"), \`${how/sha/sha256sum}\` through the mount, $net" \
                    "$(cc_or_na "$(f "seq-cc-$how-$net") MB/s")" "rclone mount $(f "seq-rclone-$how-$net") MB/s" \
                    "curl -o $(f "seq-curl-$net") MB/s" "$(cc_or_na "×rclone $r1, ×curl $r2")" "≥ rclone, ≥ 0.8× curl -o" \
                    "$( ((has_mount)) && verdict 'r1 >= 1 && r2 >= 0.8' -v r1="$r1" -v r2="$r2" || echo "$NA")"
            done
            r1="$(ratio "seq-fetch-$net" "seq-curl-$net")"
            row "cold \`fetch --out\` of the $(mib "$seq_size") file, $net" "$(f "seq-fetch-$net") MB/s" "—" \
                "curl -o $(f "seq-curl-$net") MB/s" "$r1" "≥ 0.8× curl -o" "$(verdict 'r1 >= 0.8' -v r1="$r1")"
        done
        r1="$(ratio "seq-fetch-loopback" "seq-put")"; r2="$(ratio "seq-cc-cat-loopback" "seq-put")"
        row "the store's ingest floor: \`put\` of the same $(mib "$seq_size") from the page cache (hash, compress, commit; no network)" \
            "$(f "seq-put") MB/s" "—" "—" "cold \`fetch --out\` ×$r1, mount \`cat\` ×$(cc_or_na "$r2") (loopback)" \
            "what a cold read that stores what it reads can reach" "—"
    fi
    if wants random; then
        for net in loopback 20ms; do
            r1="$(ratio "rand-cc-$net-p50" "rand-curl-$net-get")"; r2="$(ratio "rand-cc-$net-p50" "rand-rclone-$net-p50")"
            r3="$(ratio "rand-cc-$net-p50" "rand-curl-$net-curlcmd")"
            row "cold random 4 KiB pread of the $(mib "$seq_size") file, p50 (p99), $net" \
                "$(cc_or_na "$(f "rand-cc-$net-p50") µs ($(f "rand-cc-$net-p99") µs)")" \
                "rclone mount $(f "rand-rclone-$net-p50") µs ($(f "rand-rclone-$net-p99") µs); a \`curl -r\` command $(f "rand-curl-$net-curlcmd") µs" \
                "one 64 KiB Range GET (curl, kept-alive connection) $(f "rand-curl-$net-get") µs" \
                "$(cc_or_na "×GET $r1, ×rclone $r2 (×curl command $r3)")" "≤ 1.3× the GET, ≤ 0.5× rclone" \
                "$( ((has_mount)) && verdict 'r1 <= 1.3 && r2 <= 0.5' -v r1="$r1" -v r2="$r2" || echo "$NA")"
        done
    fi
    if wants warm; then
        r1="$(ratio warmseq-cc warmseq-floor)"
        row "warm sequential (store warm, mount fresh, caches dropped)" "$(cc_or_na "$(f warmseq-cc) MB/s")" \
            "rclone mount (cache warm) $(f warmseq-rclone) MB/s" "one-thread decode (\`zstd -d\` of a zstd -3 frame, cold page cache) $(f warmseq-floor) MB/s" \
            "$(cc_or_na "$r1")" "≥ 0.8× decode floor" "$( ((has_mount)) && verdict 'r1 >= 0.8' -v r1="$r1" || echo "$NA")"
        r1="$(ratio warmrand-cc-p50 warmrand-floor)"
        row "warm random 4 KiB pread, p50 (p99)" "$(cc_or_na "$(f warmrand-cc-p50) µs ($(f warmrand-cc-p99) µs)")" \
            "rclone mount (cache warm) $(f warmrand-rclone-p50) µs ($(f warmrand-rclone-p99) µs)" \
            "library 4 KiB partial fetch $(f warmrand-floor 1) µs (decode floor $(f warmrand-decode 1) µs; no CLI exposes read(into:))" \
            "$(cc_or_na "$r1")" "≤ 2× read(into:)" "$( ((has_mount)) && verdict 'r1 <= 2' -v r1="$r1" || echo "$NA")"
        r1="$(ratio warmrandpc-cc-p50 warmrand-floor)"
        row "warm random 4 KiB pread, store in the page cache (mount fresh), p50 (p99)" \
            "$(cc_or_na "$(f warmrandpc-cc-p50) µs ($(f warmrandpc-cc-p99) µs)")" \
            "rclone mount (cache file in the page cache) $(f warmrandpc-rclone-p50) µs ($(f warmrandpc-rclone-p99) µs)" \
            "library 4 KiB partial fetch $(f warmrand-floor 1) µs (the same conditions)" \
            "$(cc_or_na "$r1")" "≤ 2× read(into:)" "$( ((has_mount)) && verdict 'r1 <= 2' -v r1="$r1" || echo "$NA")"
        r1="$(ratio again-cc again-floor)"
        row "second sequential read while mounted" "$(cc_or_na "$(f again-cc) MB/s")" "rclone mount $(f again-rclone) MB/s" \
            "local file from the page cache $(f again-floor) MB/s" "$(cc_or_na "$r1")" "≥ 0.9× page cache" \
            "$( ((has_mount)) && verdict 'r1 >= 0.9' -v r1="$r1" || echo "$NA")"
    fi
    if wants ls; then
        for phase in cold warm; do
            r1="$(ratio "ls-$phase-cc" "ls-$phase-local")"
            row "\`ls -lR\` of $tree_items items, $([[ $phase == cold ]] && echo "mount fresh, caches dropped" || echo "again (kernel caches warm)")" \
                "$(cc_or_na "$(f "ls-$phase-cc" 3) s")" "—" "local ext4 $(f "ls-$phase-local" 3) s" "$(cc_or_na "$r1")" "≤ 2× local" \
                "$( ((has_mount)) && verdict 'r1 <= 2' -v r1="$r1" || echo "$NA")"
        done
    fi
    if wants sqlite; then
        for phase in cold warm; do
            for net in loopback 20ms; do
                r1="$(ratio "sql-$phase-cc-$net" "sql-$phase-rclone-$net")"; r2="$(ratio "sql-$phase-cc-$net" "sql-$phase-local")"
                row "SQLite query mix, $sqlite_mb MB database, $phase, $net" "$(cc_or_na "$(f "sql-$phase-cc-$net" 3) s")" \
                    "rclone mount $(f "sql-$phase-rclone-$net" 3) s" \
                    "local copy $(f "sql-$phase-local" 3) s ($([[ $phase == cold ]] && echo "caches dropped" || echo "page cache"))" \
                    "$(cc_or_na "×rclone $r1, ×local $r2")" "beside rclone and local" "—"
            done
        done
    fi
    if wants ttfb; then
        r1="$(ratio ttfb-cc ttfb-floor)"
        row "first byte of a cold $(mib "$big_size") file at 20 ms (\`head -c 1\`)" "$(cc_or_na "$(f ttfb-cc 1) ms")" \
            "rclone mount $(f ttfb-rclone 1) ms" "one round trip (curl's first byte) $(f ttfb-floor 1) ms" "$(cc_or_na "$r1")" \
            "one round trip (≤ 1.5×: no second trip)" "$( ((has_mount)) && verdict 'r1 <= 1.5' -v r1="$r1" || echo "$NA")"
    fi
    if wants rss; then
        a="$(f rss-cc)"
        row "mount process peak RSS (VmHWM) reading the $(mib "$big_size") file" "$(cc_or_na "$a MiB ($(f rss-mbps-cc) MB/s)")" \
            "rclone mount $(f rss-rclone) MiB ($(f rss-mbps-rclone) MB/s)" "—" "—" "≤ 256 MiB" \
            "$( ((has_mount)) && verdict 'a <= 256' -v a="$a" || echo "$NA")"
    fi
    if wants cli; then
        if [[ -f $work/cli-start.out ]]; then
            row "\`chunkcache --version\`, warm 64 KiB \`fetch\`" "see Benchmarks/cli-start.sh below" "—" "—" "—" "≤ 4 ms, ≤ 6 ms" "—"
        else
            r1="$(ratio cli-version cli-true)"
            a="$(fig cli-version)"; b="$(fig cli-fetch)"
            row "\`chunkcache ${start_args[*]}\`, median of $cli_runs$([[ ${start_args[*]} == --help ]] && echo " (no --version in this build)")" "$(f cli-version 1) ms" "—" "\`/bin/true\` $(f cli-true 1) ms" "$r1" "≤ 4 ms" \
                "$(verdict 'a <= 4' -v a="${a:-—}")"
            row "warm 64 KiB \`fetch --range\` command, median of $cli_runs" "$(f cli-fetch 1) ms" "\`curl -r\` of 64 KiB on loopback $(f cli-curl 1) ms" \
                "\`/bin/true\` $(f cli-true 1) ms" "$(ratio cli-fetch cli-curl) × curl" "≤ 6 ms" "$(verdict 'b <= 6' -v b="${b:-—}")"
        fi
    fi
}

stamp="$(date -u +%Y%m%d-%H%M%S)"
out="$results_dir/mount-$( ((quick)) && echo quick || echo full)-$stamp.md"
{
    echo "### Issue 20: the mount beside its peers ($(date -u '+%F %R UTC'))"
    echo
    echo "\`Benchmarks/mount.sh$( ((quick)) && echo " --quick")\`$([[ $rows_wanted != seq,random,warm,ls,sqlite,ttfb,rss,cli ]] && echo " --rows $rows_wanted"):" \
        "$runs runs interleaved, medians; chunkcache $("$CC" --version 2>/dev/null | head -1 | grep . || echo "(no --version)") ($CC; tree at $(git -C "$ROOT" rev-parse --short HEAD))," \
        "$(rclone version 2>/dev/null | head -1), curl $(curl --version | head -1 | cut -d' ' -f2), nginx on 127.0.0.1, 20 ms via scripts/delay-proxy.py;" \
        "$(nproc) cores, load before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg); took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s."
    echo "rclone: \`rclone mount :http: MP --http-url URL --vfs-cache-mode full --cache-dir DIR --read-only\`;" \
        "chunkcache: \`domain add web --origin URL/json/\`, \`domain sync web\`, \`mount --domain web MP --foreground\`."
    ((has_mount)) || echo "This chunkcache has no \`mount\` command: its mount rows are n/a."
    echo
    echo "Cold: a fresh store (or rclone cache) and a fresh mount, then \`echo 3 > /proc/sys/vm/drop_caches\`, then the" \
        "origin's file read back into memory (nginx stands for a remote server; the client is cold). Warm: store or cache" \
        "filled by a whole read, a fresh mount, caches dropped. Random preads: $reads per run, each 4 KiB-aligned in its own" \
        "1/$reads of the file, slots in random order (Benchmarks/mount/pread-latency.py), bytes checked. The GET floor:" \
        "curl's time_total of 64 KiB Range GETs on one kept-alive connection (\`curl --next\`); a \`curl -r\` command" \
        "(process start and connect included) beside it. SQLite: Benchmarks/mount/sqlite-mix.py (300 lookups by id, 100 by" \
        "an indexed column, 20 range scans, a count over the index; opened immutable), answers checked."
    echo
    table
    if [[ -f $work/cli-start.out ]]; then echo; echo "Benchmarks/cli-start.sh:"; echo; cat "$work/cli-start.out"; fi
    if ((${#failed[@]})); then echo; echo "FAILED (rows left empty; see the messages above the table): ${failed[*]}"; fi
    if [[ -n $(fig ls-import) ]]; then echo; echo "Importing the $tree_items-item tree: $(f ls-import 1) s."; fi
} | tee "$out"
echo "== saved: $out" >&2
((${#failed[@]} == 0))
