#!/usr/bin/env bash
# The goals of issue 29 (learned prefetch) in one run: two real programs started cold through `chunkcache
# mount` with and without a trace learned on another store, beside the same programs on local ext4 and
# through `rclone mount --vfs-cache-mode full`, all 20 ms away (Benchmarks/origin.sh: nginx on 127.0.0.1
# behind scripts/delay-proxy.py). Prints a markdown table (row, chunkcache, peers, ratio, goal, met/missed)
# with the commands and the date, ready for RESULTS.md, and saves it under
# $CHUNKCACHE_BENCH_DIR/prefetch-results/.
#
#   Benchmarks/prefetch.sh                 the issue's sizes (200 MB SQLite, 1 GiB random file), 3 runs: ~15-25 min
#   Benchmarks/prefetch.sh --quick         a 16 MB SQLite database, a 512 MiB random file, 1 run: a smoke run
#   Benchmarks/prefetch.sh --rows django,sqlite,random   only these groups (default: all)
#
# The workloads:
#   django  `PYTHONPATH=DIR/py python3 -c "import django; from django.db import models; from django.contrib.admin
#           import sites"`: Django 4.2 and its dependencies (asgiref, sqlparse), wheels fetched once by
#           `pip download` and unpacked into the origin's py/ (PYTHONDONTWRITEBYTECODE=1 everywhere: no .pyc
#           is written, and the local copy is checked to hold no __pycache__ before each run).
#   sqlite  Benchmarks/mount/sqlite-mix.py's query mix on its database (answers checked).
#   random  one random 4 KiB pread of the big random file, no trace: the GET requests nginx logged for it.
# Rows: each workload cold with a trace, and without one; bytes prefetched but never read ÷ bytes downloaded
# (with a trace); the random reader's GETs; the traces' size ÷ the bytes they describe.
#
# Method. Every figure: a fresh store (`domain add web --origin URL/json/ --pipeline-depth 32`, which makes
# the store as `init` does, then `domain sync web` on loopback and `domain set web --origin` the 20 ms URL:
# the same catalogue without 50 s of folder listings per store) or a fresh rclone cache, a fresh mount, then
# `sync; echo 3 > /proc/sys/vm/drop_caches`, then the workload's origin files read back into memory (nginx
# stands for a remote server; the client is cold). Local: a copy on this ext4 disk, caches dropped. "With a
# trace": store A is mounted, the workload runs once, A is unmounted and `trace export`ed; a fresh store B
# gets it by `trace import` before its mount is timed. Downloaded bytes: the body bytes nginx logged (its
# access log) from the mount to the unmount. Every figure is the median of RUNS runs, the kinds interleaved
# within each run. Times are bash's $EPOCHREALTIME around the command (sqlite: the mix's own wall time).
#
# Rows that need `chunkcache trace` print "n/a (no traces in this build)" when `chunkcache trace --help`
# fails; the other rows are measured all the same.
#
# Environment (sizes take IEC suffixes):
#   CHUNKCACHE_BIN              the chunkcache binary (default: built here in release, scratch path .build-bench)
#   CHUNKCACHE_BASELINE_BIN     optional: an earlier chunkcache, measured without a trace beside (the "no slower
#                               than today" half of the no-trace goal)
#   CHUNKCACHE_BENCH_DIR        where data, stores and results go (default /tmp/chunkcache-bench)
#   PREFETCH_BENCH_DJANGO       the pip requirement downloaded ('django>=4.2,<4.3')
#   PREFETCH_BENCH_SQLITE_MB    the SQLite database (200, about 202 MB made; --quick 16)
#   PREFETCH_BENCH_BIG_SIZE     the random file of the 4 KiB reader (1G; --quick 512M), above the mount's
#                               --fill-below (256 MiB), so opening it downloads only what is read
#   PREFETCH_BENCH_RUNS         runs per figure (3; --quick 1)
#   CC_CHUNK_SIZE               the chunk size of chunkcache's stores (default the store's, 64KiB); a store for
#                               databases takes their page size (4096 for SQLite's default)
# Needs root (drop_caches, /dev/fuse), nginx, rclone, fuse3, python3 with pip (for `pip download` only; nothing
# is installed), jq (scripts/install-deps.sh), and PyPI on the network the first time.
set -euo pipefail
export LC_ALL=C PYTHONDONTWRITEBYTECODE=1
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# A mount made in the shared mount namespace is copied into every namespace created while it is up (a build
# wrapper's, a container's); the copy keeps the FUSE connection, and the mount's process, alive after
# `fusermount3 -u` (seen here: a mount waited for another user's swift-build to end). The benchmark mounts in
# a private namespace of its own.
if [[ $(id -u) == 0 && -z ${PREFETCH_BENCH_UNSHARED:-} ]] && command -v unshare >/dev/null; then
    export PREFETCH_BENCH_UNSHARED=1
    exec unshare --mount --propagation private "$BASH" "$0" "$@"
fi

quick=0
all_rows="django,sqlite,random"
rows_wanted="$all_rows"
while (($#)); do
    case "$1" in
        --quick) quick=1 ;;
        --rows) rows_wanted="$2"; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "prefetch.sh: unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
    shift
done
wants() { [[ ",$rows_wanted," == *",$1,"* ]]; }
if ((quick)); then
    sqlite_mb=${PREFETCH_BENCH_SQLITE_MB:-16}; big_size=$(numfmt --from=iec "${PREFETCH_BENCH_BIG_SIZE:-512M}")
    runs=${PREFETCH_BENCH_RUNS:-1}
else
    sqlite_mb=${PREFETCH_BENCH_SQLITE_MB:-200}; big_size=$(numfmt --from=iec "${PREFETCH_BENCH_BIG_SIZE:-1G}")
    runs=${PREFETCH_BENCH_RUNS:-3}
fi
django_spec="${PREFETCH_BENCH_DJANGO:-django>=4.2,<4.3}"
django_code="import django; from django.db import models; from django.contrib.admin import sites"

[[ $(id -u) == 0 ]] || { echo "prefetch.sh: run as root (drop_caches, FUSE mounts)" >&2; exit 77; }
for tool in nginx rclone fusermount3 python3 jq numfmt; do
    command -v "$tool" >/dev/null || [[ $tool == nginx && -x /usr/sbin/nginx ]] \
        || { echo "prefetch.sh: needs $tool (scripts/install-deps.sh)" >&2; exit 69; }
done

base="${CHUNKCACHE_BENCH_DIR:-/tmp/chunkcache-bench}"
data="$base/prefetch-data"; ((quick)) && data+="-quick"    # kept across runs: made once per size
results_dir="$base/prefetch-results"
mkdir -p "$data/origin" "$results_dir"
work="$(mktemp -d "${TMPDIR:-/tmp}/prefetch-bench.XXXXXX")"
pids=()        # every process this script started in the background (servers, mounts)
# A mount may still be saving what it learned when unmounted: it gets a minute before it is killed.
UNMOUNT_WAIT=60
# step, median, timed, record/fig, the mounts (cc_store, mounted, unmount), mix, and cleanup.
source "$ROOT/Benchmarks/bench-lib.sh"
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ -n ${CHUNKCACHE_BIN:-} ]]; then CC="$CHUNKCACHE_BIN"; else
    step "building chunkcache (release, scratch path .build-bench)"
    (cd "$ROOT" && swift build -c release --product chunkcache --scratch-path .build-bench >&2)
    CC="$ROOT/.build-bench/release/chunkcache"
fi
BASE_CC="${CHUNKCACHE_BASELINE_BIN:-}"
"$CC" mount --help >/dev/null 2>&1 || { echo "prefetch.sh: $CC has no mount command" >&2; exit 69; }
has_trace=0
"$CC" trace --help >/dev/null 2>&1 && has_trace=1
NA="n/a (no traces in this build)"
((has_trace)) || step "this chunkcache has no trace command: its trace rows print \"$NA\""

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# After dropping caches, the origin's files go back into memory: nginx stands for a remote server.
warm_origin() { find "$@" -type f -exec cat {} + >/dev/null; }

# ---- the data: Django from PyPI, the SQLite database, the random file ---------------------------------------

source "$ROOT/Benchmarks/origin.sh"
py_dir="$data/origin/py"
db_file="$data/origin/db.sqlite"
big_file="$data/origin/big.bin"
# The wheels pip resolves for this python3 (Django and what it requires), unpacked side by side into py/.
# The requirement is noted beside the origin folder (inside it, the note would be an item of its own).
if wants django && [[ ! -d $py_dir || $(cat "$data/py.made" 2>/dev/null) != "$django_spec" ]]; then
    step "downloading $django_spec and its dependencies from PyPI (pip download)"
    rm -rf "$py_dir" "$py_dir.tmp" "$data/wheels" "$data/py.made"
    python3 -m pip --version >/dev/null 2>&1 || { echo "prefetch.sh: needs pip for python3 (scripts/install-deps.sh)" >&2; exit 69; }
    python3 -m pip download -q --only-binary=:all: --dest "$data/wheels" "$django_spec" >&2
    for wheel in "$data"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$py_dir.tmp/"; done
    find "$py_dir.tmp" -name __pycache__ -prune -exec rm -rf {} +
    mv "$py_dir.tmp" "$py_dir"
    echo "$django_spec" >"$data/py.made"
fi
if wants sqlite && [[ ! -f $db_file || ! -f $data/db-$sqlite_mb-MB.made ]]; then
    step "making the $sqlite_mb MB SQLite database"
    rm -f "$db_file" "$db_file".* "$data"/db-*-MB.made
    python3 "$HERE/mount/sqlite-mix.py" make "$db_file" --megabytes "$sqlite_mb"
    touch "$data/db-$sqlite_mb-MB.made"
fi
wants random && make_random "$big_file" "$big_size"
access_log="$work/access.log"
start_origin "$data/origin" "$work/origin-run" "$ROOT" "$access_log"
pids+=($ORIGIN_PIDS)
declare -A url=([loopback]="$ORIGIN_URL" [20ms]="$ORIGIN_URL_20MS")
step "origin: $ORIGIN_URL_20MS (20 ms in front of $ORIGIN_URL), data in $data"

# ---- what the origin served ---------------------------------------------------------------------------------

# log_mark, then log_since: the access log's lines from the mark on ("METHOD STATUS BYTES URI").
log_mark() { LOG_MARK=$(stat -c %s "$access_log" 2>/dev/null || echo 0); }
log_since() { tail -c +$((LOG_MARK + 1)) "$access_log" 2>/dev/null || true; }
downloaded_since() { log_since | awk '{ n += $3 } END { print n + 0 }'; }
# gets_since PATH: the GETs of the origin's PATH (chunkcache asks for /json/PATH, rclone for /PATH).
gets_since() { log_since | awk -v p="$1" '$1 == "GET" && ($4 == "/" p || $4 == "/json/" p) { n++ } END { print n + 0 }'; }

# ---- the kinds: local ext4, rclone, chunkcache without a trace, with one, an earlier chunkcache -------------

kinds() {
    echo local rclone cc
    ((has_trace)) && echo cctrace
    [[ -n $BASE_CC ]] && echo base
    return 0
}
# fresh_store STORE: a fresh store at the pipeline depth the issue measures at, its domain reading from the
# 20 ms origin. The catalogue is synced on loopback first: Django's tree has some 2,400 folders, a listing each,
# about 50 s at 20 ms per store, and no figure includes it; the listing is the same.
fresh_store() {
    cc_store "$1" loopback --pipeline-depth 32
    "$CC" --store "$1" domain set web --origin "${url[20ms]}json/" >/dev/null
}
stat_of() { "$CC" --store "$1" stat --json | jq -r "$2 // empty"; }

# learn WORKLOAD RUNNER: store A learns WORKLOAD's trace (mount, one run, unmount) and exports it to
# $work/trace-WORKLOAD; the trace's size and the bytes it describes are recorded (row 5).
learn() {
    local store="$work/store-a"
    fresh_store "$store"
    mounted cc 20ms "$store"
    "$2" "$MP" "learn-$1"
    unmount "$MP" "$MOUNT_PID"
    rm -f "$work/trace-$1"
    "$CC" --store "$store" trace export --domain web --out "$work/trace-$1" >/dev/null
    "$CC" --store "$store" trace ls --domain web --json >"$work/traces.json"
    record "trace-bytes-$1" "$(jq '[.traces[].bytes] | add // 0' "$work/traces.json")"
    record "trace-described-$1" "$(jq '[.traces[].describedBytes] | add // 0' "$work/traces.json")"
    record "trace-count-$1" "$(jq '.traces | length' "$work/traces.json")"
    rm -rf "$store"
}

# measure KIND WORKLOAD RUNNER ORIGIN_PATH LOCAL_COPY: one cold figure of WORKLOAD by KIND, recorded as
# WORKLOAD-KIND; for the mounts also the bytes downloaded, and for chunkcache the prefetch figures of stat.
measure() {
    local kind="$1" workload="$2" runner="$3" origin_path="$4" local_copy="$5" store="$work/store" CC="$CC"
    case "$kind" in
        local)
            [[ -z $(find "$local_copy" -name __pycache__ -print -quit) ]] \
                || { echo "prefetch.sh: the local copy gained a __pycache__" >&2; exit 1; }
            drop_caches
            "$runner" "$local_copy" "$workload-local"
            return ;;
        rclone) rm -rf "$work/rclone-cache"; store="$work/rclone-cache" ;;
        base) CC="$BASE_CC"; fresh_store "$store" ;;
        cc) fresh_store "$store" ;;
        cctrace)
            learn "$workload" "$runner"
            fresh_store "$store"
            "$CC" --store "$store" trace import --domain web "$work/trace-$workload" >/dev/null ;;
    esac
    log_mark
    if [[ $kind == rclone ]]; then mounted rclone 20ms "$store"; else mounted cc 20ms "$store"; fi
    drop_caches; warm_origin "$origin_path"
    "$runner" "$MP" "$workload-$kind"
    unmount "$MP" "$MOUNT_PID"
    local downloaded; downloaded="$(downloaded_since)"
    record "down-$workload-$kind" "$downloaded"
    record "gets-$workload-$kind" "$(log_since | awk '$1 == "GET" { n++ } END { print n + 0 }')"
    if [[ $kind == cc* && $has_trace == 1 ]]; then
        local prefetched hit
        prefetched="$(stat_of "$store" .prefetchedBytes)"; hit="$(stat_of "$store" .prefetchHitBytes)"
        record "prefetched-$workload-$kind" "${prefetched:-0}"
        record "hit-$workload-$kind" "${hit:-0}"
        record "traces-$workload-$kind" "$(stat_of "$store" .traces)"
        if ((downloaded > 0)); then
            record "waste-$workload-$kind" "$(calc "(${prefetched:-0} - ${hit:-0}) * 100 / $downloaded")"
        fi
    fi
    rm -rf "$store"
}

# ---- the workloads ------------------------------------------------------------------------------------------

# django_import DIR KEY: the import from DIR/py, timed (interpreter start included) and recorded as KEY;
# fails unless Django came from DIR.
django_import() {
    local from
    timed env PYTHONPATH="$1/py" python3 -c "$django_code; print(django.__file__)" >"$work/django.out"
    from="$(cat "$work/django.out")"
    [[ $from == "$1/py/django/__init__.py" ]] || { echo "prefetch.sh: Django came from $from, not $1/py" >&2; exit 1; }
    record "$2" "$ELAPSED"
}
# sqlite_mix DIR KEY: bench-lib's mix on DIR/db.sqlite (answers checked), recorded as KEY.
sqlite_mix() { mix "$1/db.sqlite" "$2"; }

django_rows() {
    local run kind
    step "a local ext4 copy of py/"
    mkdir -p "$work/local"; cp -a "$py_dir" "$work/local/py"
    cd "$work"    # not where a django package could be found first
    for ((run = 1; run <= runs; run++)); do
        for kind in $(kinds); do
            step "Django import, run $run, $kind"
            measure "$kind" django django_import "$py_dir" "$work/local"
        done
    done
    rm -rf "$work/local"
}
sqlite_rows() {
    local run kind
    sqlite_digest="$(python3 "$HERE/mount/sqlite-mix.py" run "$db_file" | jq -r .digest)"
    mkdir -p "$work/local"; cp "$db_file" "$work/local/db.sqlite"
    for ((run = 1; run <= runs; run++)); do
        for kind in $(kinds); do
            step "SQLite query mix, run $run, $kind"
            measure "$kind" sqlite sqlite_mix "$db_file" "$work/local"
        done
    done
    rm -rf "$work/local"
}

# One 4 KiB pread at a random aligned offset of the big file through a fresh mount (no trace), its bytes
# checked against the origin's; then the GETs of big.bin nginx logged, a second after the read (what the
# read set going counts too) and up to the unmount.
random_rows() {
    local run kind store
    for ((run = 1; run <= runs; run++)); do
        for kind in cc rclone; do
            step "one random 4 KiB pread, run $run, $kind"
            store="$work/store"
            if [[ $kind == cc ]]; then fresh_store "$store"; else rm -rf "$store"; fi
            log_mark
            mounted "$kind" 20ms "$store"
            drop_caches; warm_origin "$big_file"
            python3 - "$MP/big.bin" "$big_file" "$RANDOM" <<'PY'
import os, random, sys
mounted, origin, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
offset = random.Random(seed).randrange(os.path.getsize(origin) // 4096) * 4096
fd = os.open(mounted, os.O_RDONLY)
got = os.pread(fd, 4096, offset)
os.close(fd)
with open(origin, "rb") as f:
    f.seek(offset)
    if got != f.read(4096):
        sys.exit(f"prefetch.sh: the mount read other bytes at {offset}")
PY
            sleep 1
            unmount "$MP" "$MOUNT_PID"
            gets_since big.bin >>"$work/gets-$kind"
            record "gets-$kind" "$(tail -1 "$work/gets-$kind")"
            rm -rf "$store"
        done
    done
}

# ---- run ----------------------------------------------------------------------------------------------------

started=$SECONDS
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
# Each group runs in a subshell of its own: a failure leaves that group's rows empty, is named in the
# output, and the other groups still run.
run_group() {
    local pid
    ("$1") &
    pid=$!; pids+=("$pid")
    wait "$pid" || { step "$1 failed (exit $?): its rows stay empty"; failed+=("$1"); }
}
failed=()
wants django && run_group django_rows
wants sqlite && run_group sqlite_rows
wants random && run_group random_rows

# ---- the table ----------------------------------------------------------------------------------------------

# f KEY [DIGITS]: the median of KEY, rounded; "—" when not measured.
f() { local v; v="$(fig "$1")"; [[ -n $v ]] && printf "%.${2:-0}f" "$v" || echo "—"; }
mb() { local v; v="$(fig "$1")"; [[ -n $v ]] && printf "%.1f MB" "$(calc "$v / 1000000")" || echo "—"; }
# ratio A B: A/B to 2 decimals, or "—".
ratio() { local a b; a="$(fig "$1")"; b="$(fig "$2")"; [[ -n $a && -n $b ]] && awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "—" }' || echo "—"; }
# sum_of KEY...: the sum of the KEYs' medians (those measured).
sum_of() { local k v total=0; for k; do v="$(fig "$k")"; [[ -n $v ]] && total="$(calc "$total + $v")"; done; echo "$total"; }
# all_one FILE: met when every line of FILE (one count per run) is 1, "—" without a FILE.
all_one() { [[ -s $1 ]] || { echo "—"; return; }; grep -qvx 1 "$1" && echo missed || echo met; }
# verdict "EXPR" (awk, on r, r1, r2 … given as -v): met / missed; "—" when a figure is missing.
verdict() {
    local expr="$1"; shift
    local arg; for arg in "$@"; do [[ ${arg#*=} == "—" || -z ${arg#*=} ]] && { echo "—"; return; }; done
    awk "$@" "BEGIN { print ($expr) ? \"met\" : \"missed\" }"
}
traced() { ((has_trace)) && echo "$1" || echo "$NA"; }
row() { echo "| $1 | $2 | $3 | $4 | $5 | $6 |"; }
workload_title() { [[ $1 == django ]] && echo "Django import" || echo "SQLite query mix ($sqlite_mb MB database)"; }
workload_rows() {
    local w="$1" title r1 r2 r3 before=""
    title="$(workload_title "$w")"
    r1="$(ratio "$w-cctrace" "$w-local")"; r2="$(ratio "$w-cctrace" "$w-rclone")"
    row "$title, cold, with a trace learned on another store" "$(traced "$(f "$w-cctrace" 3) s")" \
        "local ext4 $(f "$w-local" 3) s; rclone mount $(f "$w-rclone" 3) s" "$(traced "×local $r1, ×rclone $r2")" \
        "≤ 1.5× local" "$( ((has_trace)) && verdict 'r1 <= 1.5' -v r1="$r1" || echo "$NA")"
    r1="$(ratio "$w-cc" "$w-rclone")"; r2="$(ratio "$w-cc" "$w-local")"
    if [[ -n $BASE_CC ]]; then
        r3="$(ratio "$w-cc" "$w-base")"; before="; the earlier chunkcache $(f "$w-base" 3) s"
    fi
    row "$title, cold, without a trace" "$(f "$w-cc" 3) s" \
        "rclone mount $(f "$w-rclone" 3) s; local ext4 $(f "$w-local" 3) s$before" \
        "×rclone $r1, ×local $r2${before:+, ×earlier $r3}" "≤ rclone (and no slower than before)" \
        "$(verdict 'r1 <= 1' -v r1="$r1")"
}
waste_row() {
    local w="$1" r1
    r1="$(f "waste-$w-cctrace" 1)"
    row "$(workload_title "$w"), with a trace: bytes prefetched but never read ÷ bytes downloaded" \
        "$(traced "$r1 % ($(mb "prefetched-$w-cctrace") prefetched, $(mb "hit-$w-cctrace") of them read; $(mb "down-$w-cctrace") downloaded)")" \
        "rclone mount $(mb "down-$w-rclone") (nginx's count: rclone's open-ended GETs, cut short, include what the proxy had buffered); chunkcache without a trace $(mb "down-$w-cc")" \
        "$(traced "$r1 %")" "≤ 20 %" "$( ((has_trace)) && verdict 'r1 <= 20' -v r1="$r1" || echo "$NA")"
}
# learned / learned_sizes: the workloads whose traces row 5 sums, and each one's trace beside what it describes.
learned() { if wants django && wants sqlite; then echo "Django and SQLite"; elif wants django; then echo Django; else echo SQLite; fi; }
learned_sizes() {
    local w sizes=()
    for w in django sqlite; do
        wants "$w" && sizes+=("$([[ $w == django ]] && echo Django || echo SQLite): $(f "trace-count-$w") traces of $(f "trace-bytes-$w") bytes for $(mb "trace-described-$w")")
    done
    local IFS=';'; echo "${sizes[*]}" | sed 's/;/; /g'
}
# requests_row WORKLOAD: where the time goes, in round trips: GETs and bytes downloaded by each mount.
requests_row() {
    local w="$1" kind parts=()
    for kind in rclone cc cctrace base; do
        [[ -n $(fig "gets-$w-$kind") ]] && parts+=("$kind $(f "gets-$w-$kind") GETs, $(mb "down-$w-$kind")")
    done
    local IFS=';'
    row "$(workload_title "$w"): origin requests and bytes per cold run (where the time goes; rclone's include folder listings)" \
        "$(echo "${parts[*]}" | sed 's/;/; /g')" "—" "—" "—" "—"
}
table() {
    local w r1 counts bytes described
    echo "| row | chunkcache | peer(s) | ratio | goal | met/missed |"
    echo "|---|---|---|---|---|---|"
    for w in django sqlite; do wants "$w" && workload_rows "$w"; done
    for w in django sqlite; do wants "$w" && waste_row "$w"; done
    for w in django sqlite; do wants "$w" && requests_row "$w"; done
    if wants random; then
        counts="$(paste -sd, "$work/gets-cc" 2>/dev/null | sed 's/,/, /g')"
        row "one random 4 KiB pread of the $((big_size >> 20)) MiB file, no trace: GETs nginx logged" \
            "$(f gets-cc) (each run: ${counts:-—})" "rclone mount $(f gets-rclone)" "—" "exactly 1, every run" \
            "$(all_one "$work/gets-cc")"
    fi
    bytes="$(sum_of trace-bytes-django trace-bytes-sqlite)"
    described="$(sum_of trace-described-django trace-described-sqlite)"
    r1="$(awk -v b="$bytes" -v d="$described" 'BEGIN { if (d > 0) printf "%.3f", b * 100 / d; else print "—" }')"
    row "traces in the store ÷ the bytes they describe (\`trace ls --json\` of the stores that learned $(learned))" \
        "$(traced "$r1 % ($(learned_sizes))")" \
        "—" "$(traced "$r1 %")" "≤ 1 %" "$( ((has_trace)) && verdict 'r1 <= 1' -v r1="$r1" || echo "$NA")"
}

stamp="$(date -u +%Y%m%d-%H%M%S)"
out="$results_dir/prefetch-$( ((quick)) && echo quick || echo full)-$stamp.md"
{
    echo "### Issue 29: cold starts through the mount with and without a learned trace ($(date -u '+%F %R UTC'))"
    echo
    echo "\`Benchmarks/prefetch.sh$( ((quick)) && echo " --quick")\`$([[ $rows_wanted != "$all_rows" ]] && echo " --rows $rows_wanted"):" \
        "$runs runs interleaved, medians; chunkcache $("$CC" --version 2>/dev/null | head -1 | grep . || echo "(no --version)") ($CC; tree at $(git -C "$ROOT" rev-parse --short HEAD))" \
        "$([[ -n $BASE_CC ]] && echo "beside an earlier one ($BASE_CC, $("$BASE_CC" --version 2>/dev/null | head -1))")," \
        "$(rclone version 2>/dev/null | head -1), $(python3 --version), nginx on 127.0.0.1 behind scripts/delay-proxy.py (20 ms);" \
        "$(nproc) cores, load before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg); took $(((SECONDS - started) / 60)) min $(((SECONDS - started) % 60)) s."
    echo "Django: \`PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=DIR/py python3 -c \"$django_code\"\` with" \
        "$(cd "$data/wheels" 2>/dev/null && ls -- *.whl | sed 's/-py3.*//' | paste -sd, | sed 's/,/, /g') (\`pip download '$django_spec'\`, unpacked);" \
        "SQLite: Benchmarks/mount/sqlite-mix.py's mix (300 lookups by id, 100 by an indexed column, 20 range scans, a count over the index) on $sqlite_mb MB."
    echo "chunkcache: $([[ -n ${CC_CHUNK_SIZE:-} ]] && echo "\`init --chunk-size $CC_CHUNK_SIZE\`, ")\`domain add web --origin URL/json/ --pipeline-depth 32\`, \`domain sync web\` (on loopback, then \`domain set web --origin\` the 20 ms URL), \`mount --domain web MP --foreground\`;" \
        "with a trace: the workload once through store A's mount, \`trace export --domain web --out F\`, then \`trace import --domain web F\` into a fresh store B before B's mount." \
        "rclone: \`rclone mount :http: MP --http-url URL --vfs-cache-mode full --cache-dir DIR --read-only\` (fresh cache)."
    ((has_trace)) || echo "This chunkcache has no \`trace\` command: its trace rows are n/a."
    echo
    echo "Cold: a fresh store (or rclone cache) and a fresh mount, \`sync; echo 3 > /proc/sys/vm/drop_caches\`, the origin's files" \
        "read back into memory (nginx stands for a remote server; the client is cold); local ext4: a copy, caches dropped." \
        "Downloaded: the body bytes nginx logged from the mount to the unmount; prefetched and read: \`stat --json\`'s" \
        "prefetchedBytes and prefetchHitBytes of store B. The mount runs with its defaults: a file opened while not cached" \
        "whole and at most --fill-below (256 MiB) is downloaded whole in the background, the SQLite database included;" \
        "the 4 KiB reader's $((big_size >> 20)) MiB file is above it."
    echo
    table
    if [[ -s $work/unmounts-killed ]]; then
        echo; echo "$(wc -l <"$work/unmounts-killed") mount(s) still running $UNMOUNT_WAIT s after \`fusermount3 -u\` were killed: their store may lack what they learned last."
    fi
    if ((${#failed[@]})); then echo; echo "FAILED (rows left empty; see the messages above the table): ${failed[*]}"; fi
} | tee "$out"
echo "== saved: $out" >&2
((${#failed[@]} == 0))
