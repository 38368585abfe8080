# Sourced by Benchmarks/mount.sh and Benchmarks/cold.sh: measuring (median, calc, timed, record, fig), the
# FUSE mounts of chunkcache and rclone (cc_store, cc_mount, rclone_mount, unmount) and the clean-up on exit.
# The caller sets CC (the chunkcache binary), work (its scratch folder; mount points are $work/mnt-*), the
# array pids (every background process, killed on exit), and the associative array url (NET -> origin URL,
# Benchmarks/origin.sh's ORIGIN_URL and ORIGIN_URL_20MS).
BENCH_NAME="${0##*/}"

step() { echo "[$(date +%T)] $*" >&2; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print ""; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
calc() { awk "BEGIN { print $* }"; }
# Figures are collected as lines "KEY VALUE" in $work/figures; fig KEY gives the median of KEY's values.
record() { echo "$1 $2" >>"$work/figures"; }
fig() { awk -v k="$1" '$1 == k { print $2 }' "$work/figures" 2>/dev/null | median; }
# timed CMD...: runs CMD, sets ELAPSED (seconds).
timed() { local t0=$EPOCHREALTIME; "$@"; ELAPSED=$(calc "$EPOCHREALTIME - $t0"); }
mbps() { calc "$1 / $2 / 1000000"; }

# kill_tree PID: kills PID and every process below it, children first (a group's readers and mounts).
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
    kill -9 "$1" 2>/dev/null || true
}
# Kill what we started (servers, a running group with its readers and mounts), unmount whatever is still
# mounted below $work (a killed mount leaves its mount point to fusermount3 -u), remove the scratch: even on
# failure or interruption. Install with `trap cleanup EXIT`.
cleanup() {
    local mp pid
    exec 2>/dev/null    # not bash's "Killed" notices of the servers
    for pid in "${pids[@]}"; do kill_tree "$pid"; done
    wait 2>/dev/null || true
    for mp in "$work"/mnt-*; do
        [[ -d $mp ]] && { fusermount3 -u "$mp" 2>/dev/null || fusermount3 -uz "$mp" 2>/dev/null || true; }
    done
    rm -rf "$work"
}

# wait_mounted MP PID: until MP is a mount point (30 s), or fail if PID died.
wait_mounted() {
    local i
    for ((i = 0; i < 300; i++)); do
        mountpoint -q "$1" && return 0
        kill -0 "$2" 2>/dev/null || { echo "$BENCH_NAME: the mount of $1 exited; its log:" >&2; cat "$1.log" >&2; return 1; }
        sleep 0.1
    done
    echo "$BENCH_NAME: $1 not mounted after 30 s" >&2; return 1
}
# cc_store STORE NET [OPTION...]: a fresh store with the origin domain "web" synced (the catalogue the mount
# shows); OPTIONs go to `domain add` (e.g. --pipeline-depth 32). $CC_CHUNK_SIZE, when set, is the store's
# chunk size (`init --chunk-size`).
cc_store() {
    rm -rf "$1"
    [[ -z ${CC_CHUNK_SIZE:-} ]] || "$CC" --store "$1" init --chunk-size "$CC_CHUNK_SIZE" >/dev/null
    "$CC" --store "$1" domain add web --origin "${url[$2]}json/" "${@:3}" >/dev/null
    "$CC" --store "$1" domain sync web >/dev/null
}
# cc_mount STORE DOMAIN MP / rclone_mount NET CACHE MP: mount in the foreground of a background process,
# MOUNT_PID its id.
cc_mount() {
    mkdir -p "$3"
    "$CC" --store "$1" mount --domain "$2" "$3" --foreground >"$3.log" 2>&1 &
    MOUNT_PID=$!; pids+=("$MOUNT_PID")
    wait_mounted "$3" "$MOUNT_PID"
}
rclone_mount() {
    mkdir -p "$3"
    rclone mount :http: "$3" --http-url "${url[$1]}" --vfs-cache-mode full --cache-dir "$2" --read-only \
        >"$3.log" 2>&1 &
    MOUNT_PID=$!; pids+=("$MOUNT_PID")
    wait_mounted "$3" "$MOUNT_PID"
}
# unmount MP PID: fusermount3 -u and wait for the process ($UNMOUNT_WAIT s, default 10), else kill it, detach
# the mount point and note MP in $work/unmounts-killed.
unmount() {
    local i wait="${UNMOUNT_WAIT:-10}"
    fusermount3 -u "$1" 2>/dev/null || true
    for ((i = 0; i < wait * 10; i++)); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$2" 2>/dev/null; then
        echo "$BENCH_NAME: $1 still running $wait s after fusermount3 -u: killed" >&2
        echo "$1" >>"$work/unmounts-killed"
        kill -9 "$2" 2>/dev/null || true
        fusermount3 -uz "$1" 2>/dev/null || true
    fi
    wait "$2" 2>/dev/null || true
}
# mounted KIND NET STORE-OR-CACHE: mounts one of the two at $work/mnt-KIND (MP), MOUNT_PID its process.
mounted() {
    MP="$work/mnt-$1"
    case "$1" in
        cc) cc_mount "$3" web "$MP" ;;
        rclone) rclone_mount "$2" "$3" "$MP" ;;
    esac
}

# mix DB KEY: Benchmarks/mount/sqlite-mix.py's query mix on DB, its answers checked against $sqlite_digest
# (the mix on the original database), its seconds recorded as KEY.
mix() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/mount/sqlite-mix.py" run "$1" >"$work/mix"
    [[ $(jq -r .digest "$work/mix") == "$sqlite_digest" ]] || { echo "$BENCH_NAME: the query mix on $1 gave other answers" >&2; exit 1; }
    record "$2" "$(jq .seconds "$work/mix")"
}
