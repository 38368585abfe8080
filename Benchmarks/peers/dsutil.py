#!/usr/bin/env python3
"""Deterministic helpers for Benchmarks/datasets.sh (no randomness outside fixed seeds).

  dsutil.py pick --target N [--max-file N] [--ext .gz,.xz] [--shuffle] ROOT...
      print a NUL-separated list of regular files (symlinks skipped) under the roots, in byte order of
      their paths (or, with --shuffle, in order of the SHA-256 of the path), taking each file whose
      size still fits under the target until the target is reached.
  dsutil.py concat OUT TARGET ROOT...
      concatenate the text files (no NUL byte in their first 64 KiB) under the roots, in byte order of
      their paths, each behind a '==> path <==' line, until TARGET bytes.
  dsutil.py pieces IN OUT PIECE
      write SQL that loads IN as a TEMP table base(k, p) of PIECE-byte blobs.
  dsutil.py insert IN OUT SEED [--places N]
      copy IN to OUT with N (default 8) insertions of 1-4 KiB of generated text at offsets drawn from
      random.Random(SEED): every byte after the first insertion shifts.
"""
import hashlib
import os
import random
import stat
import sys

def walk(roots):
    out = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in filenames:
                path = os.path.join(dirpath, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out.append((path, st.st_size))
    return out

def pick(args):
    target, max_file, exts, shuffle, roots = None, None, None, False, []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--target": target = int(args[i + 1]); i += 2
        elif a == "--max-file": max_file = int(args[i + 1]); i += 2
        elif a == "--ext": exts = tuple(args[i + 1].split(",")); i += 2
        elif a == "--shuffle": shuffle = True; i += 1
        else: roots.append(a); i += 1
    files = []
    for root in roots:  # roots in the order given, files sorted inside each root
        part = [(p, s) for p, s in walk([root]) if s > 0]
        if exts: part = [(p, s) for p, s in part if p.endswith(exts)]
        if max_file: part = [(p, s) for p, s in part if s <= max_file]
        part.sort(key=lambda t: t[0].encode())
        files.extend(part)
    if shuffle:
        files.sort(key=lambda t: hashlib.sha256(t[0].encode()).digest())
    total = 0
    out = sys.stdout.buffer
    for path, size in files:
        if total >= target: break
        if total + size > target: continue
        total += size
        out.write(path.encode() + b"\0")

def concat(out_path, target, roots):
    files = sorted(walk(roots), key=lambda t: t[0].encode())
    total = 0
    skip = (".gz", ".xz", ".bz2", ".zst", ".png", ".jpg", ".pyc", ".so", ".a", ".o", ".mo")
    with open(out_path + ".part", "wb") as out:
        for path, size in files:
            if total >= target: break
            if size == 0 or path.endswith(skip): continue
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if b"\0" in data[:65536]: continue
            piece = b"==> " + path.encode() + b" <==\n" + data + b"\n"
            if total + len(piece) > target: piece = piece[: target - total]
            out.write(piece)
            total += len(piece)
    os.rename(out_path + ".part", out_path)

WORDS = ("cache chunk store fetch range version domain item manifest digest index page block stream "
         "latency floor decode encode compress ratio commit write read merge split align offset length "
         "buffer thread core memory disk file path error retry value key table record insert update "
         "delete select where order group limit").split()

def insert(src, dst, seed, places):
    rng = random.Random(seed)
    size = os.path.getsize(src)
    offsets = sorted(rng.randrange(size) for _ in range(places))
    with open(src, "rb") as f, open(dst + ".part", "wb") as out:
        pos = 0
        for off in offsets:
            while pos < off:
                buf = f.read(min(1 << 20, off - pos))
                out.write(buf)
                pos += len(buf)
            n = rng.randint(1024, 4096)
            text = []
            length = 0
            while length < n:
                line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) + "\n"
                text.append(line)
                length += len(line)
            out.write("".join(text).encode()[:n])
        while True:
            buf = f.read(1 << 20)
            if not buf: break
            out.write(buf)
    os.rename(dst + ".part", dst)

def pieces(src, dst, piece):
    """SQL that fills TEMP table base(k, p) with the file cut in PIECE-byte blobs."""
    with open(src, "rb") as f, open(dst + ".part", "w") as out:
        out.write("CREATE TEMP TABLE base(k INTEGER PRIMARY KEY, p BLOB NOT NULL);\nBEGIN;\n")
        k = 0
        while True:
            buf = f.read(piece)
            if not buf: break
            out.write("INSERT INTO base VALUES(%d, X'%s');\n" % (k, buf.hex()))
            k += 1
        out.write("COMMIT;\n")
    os.rename(dst + ".part", dst)

def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "pick": pick(args)
    elif cmd == "concat": concat(args[0], int(args[1]), args[2:])
    elif cmd == "pieces": pieces(args[0], args[1], int(args[2]))
    elif cmd == "insert":
        places = 8
        if "--places" in args:
            i = args.index("--places"); places = int(args[i + 1]); del args[i:i + 2]
        insert(args[0], args[1], int(args[2]), places)
    else: sys.exit("unknown command " + cmd)

if __name__ == "__main__":
    main()
