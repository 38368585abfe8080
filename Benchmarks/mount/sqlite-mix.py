#!/usr/bin/env python3
"""The SQLite database and query mix of Benchmarks/mount.sh.

    sqlite-mix.py make DB --megabytes M [--seed S]   a table t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT) of
                                                     random rows, an index on k, about M MB (made once)
    sqlite-mix.py run DB [--seed S]                  the query mix, read-only; prints its wall time in seconds
                                                     and a digest of the answers as JSON

The mix: 300 lookups by id, 100 by the indexed k, 20 range scans of ~100 rows by k, and a count over the
index. The database is opened immutable (no locks, no journal): every mount is read-only.
"""
import argparse, hashlib, json, os, random, sqlite3, time

ROW_BYTES = 176  # a row with its index entry, roughly (measured)


def make(path, megabytes, seed):
    rows = megabytes * 1_000_000 // ROW_BYTES
    rng = random.Random(seed)
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    db = sqlite3.connect(tmp)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT)")
    batch = 50_000
    for start in range(0, rows, batch):
        db.executemany(
            "INSERT INTO t VALUES (?, ?, ?)",
            ((i, rng.randrange(1 << 40), rng.randbytes(70).hex()) for i in range(start, min(rows, start + batch))),
        )
    db.execute("CREATE INDEX t_k ON t(k)")
    db.commit()
    db.close()
    os.rename(tmp, path)


def run(path, seed):
    rng = random.Random(seed)
    started = time.perf_counter()
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    rows = db.execute("SELECT max(id) FROM t").fetchone()[0] + 1
    digest = hashlib.sha256()
    for _ in range(300):
        digest.update(repr(db.execute("SELECT k, v FROM t WHERE id = ?", (rng.randrange(rows),)).fetchone()).encode())
    for _ in range(100):
        k = rng.randrange(1 << 40)
        digest.update(repr(db.execute("SELECT id FROM t WHERE k >= ? ORDER BY k LIMIT 1", (k,)).fetchone()).encode())
    width = (1 << 40) * 100 // rows
    for _ in range(20):
        k = rng.randrange(1 << 40)
        answer = db.execute("SELECT count(*), sum(length(v)) FROM t WHERE k BETWEEN ? AND ?", (k, k + width)).fetchone()
        digest.update(repr(answer).encode())
    digest.update(repr(db.execute("SELECT count(*) FROM t INDEXED BY t_k WHERE k >= 0").fetchone()).encode())
    db.close()
    print(json.dumps({"seconds": round(time.perf_counter() - started, 4), "digest": digest.hexdigest()[:16]}))


parser = argparse.ArgumentParser()
parser.add_argument("action", choices=["make", "run"])
parser.add_argument("db")
parser.add_argument("--megabytes", type=int, default=200)
parser.add_argument("--seed", type=int, default=20)
args = parser.parse_args()
make(args.db, args.megabytes, args.seed) if args.action == "make" else run(args.db, args.seed)
