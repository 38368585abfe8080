#!/usr/bin/env bash
# Builds the benchmark datasets from real programs and files on this machine, deterministically:
# the same bytes on every run on the same machine (sorted file lists, fixed tar metadata, fixed seeds,
# SQL without randomblob/random). What already exists is kept.
#
#   Benchmarks/datasets.sh [--small] [DIR]
#
# DIR defaults to /tmp/chunkcache-bench/datasets (datasets-small with --small). --small makes each
# dataset about 1/20 of its size. Made under DIR:
#   toolchain.tar          ~1 GiB tar of the Swift toolchain's libraries (then binaries, then system libs)
#   sqlite/v1.db … v5.db   ~300 MB SQLite database; each version = the previous one + updates, inserts
#                          and deletes of ~2% of the rows, edited in place (no VACUUM)
#   inserts/v1.txt … v6.txt ~250 MB of concatenated text files; each version inserts 8 pieces of 1-4 KiB
#                          at seeded places (the bytes after them shift)
#   compressed/files/…     ~200 MB of already-compressed files found on the machine (.gz .xz .bz2 .zst
#                          .png .jpg .jar .zip), picked in a seeded order, at most 16 MiB each
#   compressed.tar         a tar of compressed/files
# Installing packages changes /usr/share/doc and /usr/include: install first (peers.sh installs what it
# needs before calling this script), then build.
set -euo pipefail
export LC_ALL=C

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
UTIL="$HERE/peers/dsutil.py"

small=0
dir=""
while [ $# -gt 0 ]; do
    case "$1" in
        --small) small=1 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        -*) echo "datasets.sh: unknown option $1" >&2; exit 64 ;;
        *) dir="$1" ;;
    esac
    shift
done
if [ -z "$dir" ]; then
    if [ $small = 1 ]; then dir=/tmp/chunkcache-bench/datasets-small; else dir=/tmp/chunkcache-bench/datasets; fi
fi
div=1; [ $small = 1 ] && div=20

need() { command -v "$1" >/dev/null 2>&1 || { echo "installing $2" >&2; DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >&2; }; }
need sqlite3 sqlite3
need python3 python3

mkdir -p "$dir"
marker="$dir/.size"
if [ -f "$marker" ] && [ "$(cat "$marker")" != "div=$div" ]; then
    echo "datasets.sh: $dir holds datasets of another size ($(cat "$marker")); use another DIR" >&2; exit 1
fi
echo "div=$div" > "$marker"

TAR=(tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu --no-recursion)
step() { echo "[$(date +%T)] $*" >&2; }

# ---- toolchain.tar ------------------------------------------------------------------------------
toolchain_target=$(( 1073741824 / div ))
if [ ! -f "$dir/toolchain.tar" ]; then
    step "toolchain.tar: $toolchain_target bytes of members"
    roots=()
    for r in /opt/swift/usr/lib /opt/swift/usr/bin /usr/lib/x86_64-linux-gnu; do [ -d "$r" ] && roots+=("$r"); done
    python3 "$UTIL" pick --target "$toolchain_target" "${roots[@]}" > "$dir/toolchain.list"
    # paths relative to / so the tar holds opt/swift/usr/lib/…
    sed -z 's|^/||' "$dir/toolchain.list" > "$dir/toolchain.list.rel"
    "${TAR[@]}" -C / --null -T "$dir/toolchain.list.rel" -cf "$dir/toolchain.tar.part"
    rm -f "$dir/toolchain.list" "$dir/toolchain.list.rel"
    mv "$dir/toolchain.tar.part" "$dir/toolchain.tar"
fi

# ---- sqlite/v1..v5.db ---------------------------------------------------------------------------
rows=$(( 300000 / div ))
# Row text for row X under SALT: two slices of a 16 MiB base of real text (the first 16 MiB of the
# machine's header and doc files, cut in 8192 pieces of 2 KiB held in a TEMP table, so not part of the
# database) chosen by a multiplicative hash, with the row id between them (~750 bytes on average). The
# base is larger than any compressor's window, so the rows compress like the text they come from.
body() { # $1 = row expression, $2 = salt expression
    local h="(($1) * 2654435761 + ($2) * 40503 + 12345) % 4294967296"
    echo "(SELECT CAST(substr(p, 1 + (($h) / 8192) % 1024, 100 + (($h) / 16) % 400) AS TEXT) FROM base WHERE k = ($h) % 8192) || printf(' row %d rev %d ', $1, $2) || (SELECT CAST(substr(p, 1 + (($h) / 7) % 1024, 200 + (($h) / 3) % 500) AS TEXT) FROM base WHERE k = (($h) / 65536) % 8192)"
}
base_sql() { echo ".read $dir/sqlite/base.sql"; }
mkdir -p "$dir/sqlite"
if [ ! -f "$dir/sqlite/base.sql" ]; then
    roots=()
    for r in /usr/include /usr/share/doc; do [ -d "$r" ] && roots+=("$r"); done
    python3 "$UTIL" concat "$dir/sqlite/base.txt" 16777216 "${roots[@]}"
    python3 "$UTIL" pieces "$dir/sqlite/base.txt" "$dir/sqlite/base.sql" 2048
    rm -f "$dir/sqlite/base.txt"
fi
if [ ! -f "$dir/sqlite/v1.db" ]; then
    step "sqlite/v1.db: $rows rows"
    rm -f "$dir/sqlite/v1.db.part"
    sqlite3 "$dir/sqlite/v1.db.part" >/dev/null <<SQL
PRAGMA page_size = 4096;
PRAGMA journal_mode = DELETE;
$(base_sql)
CREATE TABLE items(id INTEGER PRIMARY KEY, grp INTEGER NOT NULL, name TEXT NOT NULL, rev INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX items_grp ON items(grp, name);
BEGIN;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $rows)
INSERT INTO items SELECT x, (x * 7919) % 1000, printf('item-%07d-%08x', x, (x * 40503) % 4294967296), 1, $(body x 1) FROM c ORDER BY x;
COMMIT;
SQL
    mv "$dir/sqlite/v1.db.part" "$dir/sqlite/v1.db"
fi
for v in 2 3 4 5; do
    prev="$dir/sqlite/v$((v - 1)).db"; cur="$dir/sqlite/v$v.db"
    [ -f "$cur" ] && continue
    step "sqlite/v$v.db: ~1% rows updated, 0.25% deleted, 0.5% inserted"
    cp "$prev" "$cur.part"
    sqlite3 "$cur.part" >/dev/null <<SQL
PRAGMA journal_mode = DELETE;
$(base_sql)
BEGIN;
UPDATE items SET rev = $v, body = $(body items.id $v)
  WHERE ((id * 2246822519 + $v * 3266489917) % 4294967296) % 100 = 0;
DELETE FROM items WHERE ((id * 3266489917 + $v * 2246822519) % 4294967296) % 400 = 7;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $((rows / 200))),
     m(top) AS (SELECT max(id) FROM items)
INSERT INTO items SELECT top + x, ((top + x) * 7919) % 1000, printf('item-%07d-%08x', top + x, ((top + x) * 40503) % 4294967296), $v, $(body "top + x" $v)
  FROM c, m ORDER BY x;
COMMIT;
SQL
    mv "$cur.part" "$cur"
done

# ---- inserts/v1..v6.txt -------------------------------------------------------------------------
inserts_target=$(( 262144000 / div ))
mkdir -p "$dir/inserts"
if [ ! -f "$dir/inserts/v1.txt" ]; then
    step "inserts/v1.txt: $inserts_target bytes of text"
    roots=()
    for r in /usr/include /usr/share/doc /usr/share/perl /usr/share/vim /usr/lib/python3 /opt/swift/usr/share; do [ -d "$r" ] && roots+=("$r"); done
    python3 "$UTIL" concat "$dir/inserts/v1.txt" "$inserts_target" "${roots[@]}"
fi
for v in 2 3 4 5 6; do
    [ -f "$dir/inserts/v$v.txt" ] && continue
    step "inserts/v$v.txt: 8 insertions of 1-4 KiB"
    python3 "$UTIL" insert "$dir/inserts/v$((v - 1)).txt" "$dir/inserts/v$v.txt" "$((1000 + v))"
done

# ---- compressed/ and compressed.tar ------------------------------------------------------------
compressed_target=$(( 209715200 / div ))
if [ ! -f "$dir/compressed.tar" ]; then
    step "compressed/: $compressed_target bytes of already-compressed files"
    rm -rf "$dir/compressed"
    mkdir -p "$dir/compressed/files"
    python3 "$UTIL" pick --target "$compressed_target" --max-file $(( 16777216 / div )) --shuffle \
        --ext .gz,.xz,.bz2,.zst,.png,.jpg,.jar,.zip /usr /opt/swift > "$dir/compressed.list"
    # copy keeping the path below /: compressed/files/usr/share/doc/…
    (cd / && sed -z 's|^/||' "$dir/compressed.list" | xargs -0 cp --parents -t "$dir/compressed/files")
    rm -f "$dir/compressed.list"
    (cd "$dir/compressed/files" && find . -type f -print0 | sort -z | sed -z 's|^\./||') > "$dir/compressed.members"
    "${TAR[@]}" -C "$dir/compressed/files" --null -T "$dir/compressed.members" -cf "$dir/compressed.tar.part"
    rm -f "$dir/compressed.members"
    mv "$dir/compressed.tar.part" "$dir/compressed.tar"
fi

# ---- what is there ------------------------------------------------------------------------------
echo "datasets in $dir:"
for f in toolchain.tar sqlite/v1.db sqlite/v2.db sqlite/v3.db sqlite/v4.db sqlite/v5.db \
         inserts/v1.txt inserts/v2.txt inserts/v3.txt inserts/v4.txt inserts/v5.txt inserts/v6.txt compressed.tar; do
    printf '  %-18s %14d bytes  %8.1f MB\n' "$f" "$(stat -c %s "$dir/$f")" "$(stat -c %s "$dir/$f" | awk '{print $1 / 1e6}')"
done
printf '  %-18s %14d bytes in %d files\n' "compressed/files" \
    "$(find "$dir/compressed/files" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')" \
    "$(find "$dir/compressed/files" -type f | wc -l)"
