#!/usr/bin/env bash
# Records the file reads of real programs on this machine as access traces for the eviction-policy study of
# CONTRACT §12 (simulate.py replays them against LRU, S3-FIFO, 2Q, ARC, W-TinyLFU, the engine's own policy
# and Belady's optimum):
#
#   sqlite.trace   sqlite3 running a query mix (point lookups by key, short range scans, a few aggregates
#                  over the whole table) on a ~200 MB database it builds once
#   grep.trace     grep -r over the Swift toolchain (its usr/: a one-off scan of every file)
#   tar.trace      tar t of a tar of the toolchain's lib/swift (one sequential pass)
#
# Each line of a trace: path<TAB>offset<TAB>length, one per read(2)/pread64(2) that returned bytes, from
# strace. Usage: Benchmarks/policy/trace.sh [OUTDIR] (default /tmp/chunkcache-bench/traces). ~3 minutes.
set -euo pipefail
out="${1:-/tmp/chunkcache-bench/traces}"
mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"  # the toolchain's usr/

db="$out/sqlite.db"
if [ ! -f "$db.complete" ]; then
    rm -f "$db"
    python3 - "$db" <<'PY'
import random, sqlite3, sys
random.seed(7)
c = sqlite3.connect(sys.argv[1])
c.execute("PRAGMA page_size=4096")
c.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)")
c.executemany("INSERT INTO t VALUES(?,?,?)", ((i, random.randrange(1 << 30), "x" * random.randrange(100, 300)) for i in range(800_000)))
c.execute("CREATE INDEX tk ON t(k)")
c.commit()
PY
    touch "$db.complete"
fi
python3 - "$out/queries.sql" <<'PY'
import random, sys
random.seed(11)
with open(sys.argv[1], "w") as f:
    f.write("PRAGMA cache_size=-2000;\n")  # a 2 MB page cache: most reads reach the file
    for round in range(40):
        for _ in range(400):  # point lookups, skewed: a hot tenth of the keys takes most of them
            i = random.randrange(80_000) if random.random() < 0.8 else random.randrange(800_000)
            f.write(f"SELECT v FROM t WHERE id={i};\n")
        for _ in range(20):  # short range scans through the index
            k = random.randrange(1 << 30)
            f.write(f"SELECT count(*) FROM t WHERE k BETWEEN {k} AND {k + (1 << 20)};\n")
        if round % 10 == 9:  # an occasional aggregate over the whole table: a scan
            f.write("SELECT sum(length(v)) FROM t;\n")
PY

record() {  # record NAME COMMAND…: strace the command's opens, reads and seeks into NAME.strace
    local name="$1"; shift
    strace -f -qq -e trace=openat,open,read,pread64,lseek,close -e signal=none -o "$out/$name.strace" "$@" > /dev/null 2>&1 || true
    python3 "$here/strace2trace.py" "$out/$name.strace" > "$out/$name.trace"
    rm -f "$out/$name.strace"
    echo "$name: $(wc -l < "$out/$name.trace") reads"
}

record sqlite sqlite3 "$db" ".read $out/queries.sql"
record grep grep -r -l "ChunkCacheNeverFindsThis" "$toolchain"
[ -f "$out/swiftlib.tar" ] || { tar cf "$out/swiftlib.tar.part" -C "$toolchain/lib" swift && mv "$out/swiftlib.tar.part" "$out/swiftlib.tar"; }
record tar tar tf "$out/swiftlib.tar"
