#!/usr/bin/env python3
"""Writes the seed inputs of every fuzz target into Fuzz/corpus/TARGET/seed-*.

Text decoders get hand-written examples (valid, edge and invalid); the store's decoders get real bytes:
a small store is built with the `chunkcache` CLI, and its records, manifest pages and chunks are read back
with `mdb_dump` (seals stripped: the targets seal what they are given), its data.mdb is the page-file seed,
and its anchors and page tokens are the sync-tokens seeds.

usage: Fuzz/make-seeds.py PATH/TO/chunkcache
"""
import base64
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
SEAL = 8  # XXH3-64 after every record value


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def text_seeds():
    for i, s in enumerate(["4096", "64KiB", "1MiB", "10GiB", "0", "7T", "1kb", " 12 ", "9223372036854775807",
                           "9223372036854775807K", "0:4096", "1MiB:64KiB", "5:", ":5", "-1", "1:2:3", "12x"]):
        write("byte-size-range", str(i), s)
    for i, s in enumerate(["90", "90s", "30m", "1h", "2d", "0", "1.5h", "1e308d", "nan", "inf", "-1s", "0.000001s", "", "s"]):
        write("duration", str(i), s)
    for i, line in enumerate([["--version"], ["--store", "s", "--json", "--version"], ["--store", "--version", "--version"],
                              ["put", "--domain", "P", "FILE", "--version", "v1"], ["fetch", "--domain", "P", "--version", "v9"],
                              ["--json", "--version", "stat"], ["stat", "--version"], ["--version", "--help"],
                              ["--tmp-grace", "0", "put", "--domain", "P", "ITEM", "FILE", "--version", "--json"], []]):
        write("version-fast-path", str(i), "\0".join(line))  # a command line, its arguments separated by NUL
    for i, s in enumerate(["bytes 0-99/100", "bytes */100", "bytes 99-99/100", "bytes 0-0/0", "bytes 5-4/10",
                           "bytes 0-100/100", " bytes 1-2/3 ", "bytes -1-2/3", "bytes 0-9223372036854775806/9223372036854775807"]):
        write("content-range", str(i), s)
    for i, s in enumerate(["0", "5", " 120 ", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999999999999", "1.5"]):
        write("retry-after", str(i), s)
    for i, s in enumerate([
        'ETag: "5f1a-1000"\nLast-Modified: Wed, 25 Nov 2026 02:27:53 GMT\nContent-Range: bytes 0-4095/4096',
        'ETag: W/"weak"\nLast-Modified: Wed, 25 Nov 2026 02:27:53 GMT',
        "x-amz-version-id: 3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY\nETag: \"d41d8cd98f00b204e9800998ecf8427e\"",
        "x-amz-version-id: null\nETag: ",
        "Retry-After: 3\nContent-Range: bytes */100",
        "",
    ]):
        write("response-headers", str(i), s)
    listing = [{"name": "a.bin", "type": "file", "mtime": "Wed, 25 Nov 2026 02:27:53 GMT", "size": 4096},
               {"name": "sub", "type": "directory", "mtime": "Wed, 25 Nov 2026 02:27:53 GMT"},
               {"name": "x y%.txt", "type": "file", "mtime": "Thu, 01 Jan 1970 00:00:00 GMT", "size": 0}]
    for i, s in enumerate([json.dumps(listing), "[]", "{}", "not json",
                           '[{"name":".","type":"directory"},{"name":"n","type":"file","size":-5}]',
                           '[{"name":"h","type":"file","size":1e30},{"name":7,"type":"file"}]']):
        write("nginx-listing", str(i), s)
    s3 = ('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><Prefix></Prefix><KeyCount>2</KeyCount>'
          '<IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>'
          '<Contents><Key>a/b.bin</Key><LastModified>2026-11-25T02:27:53.000Z</LastModified><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>4096</Size></Contents>'
          '<Contents><Key>c &amp; d</Key><LastModified>2026-11-25T02:27:53Z</LastModified><ETag>"x"</ETag><Size>0</Size></Contents></ListBucketResult>')
    for i, s in enumerate([s3, "<Error><Code>NoSuchKey</Code><Message>x</Message></Error>", "<Contents><Key>k</Key><Size>-1</Size></Contents>",
                           "<Contents><Key>", "<IsTruncated>true</IsTruncated>"]):
        write("s3-listing", str(i), s)
    for i, s in enumerate(["Authorization: Bearer abc", "X-Token:v", "Host: x", "Bad Name: v", "A: b\r\nC: d", "NoColon", ": v", "A: \t"]):
        write("origin-header", str(i), s)


def dump(store, db):
    """The (key, value) pairs of database `db`, as bytes."""
    out = subprocess.run(["mdb_dump", "-s", db, store], check=True, capture_output=True, text=True).stdout
    lines = out.split("HEADER=END\n", 1)[1].splitlines()
    pairs = []
    for k, v in zip(lines[0::2], lines[1::2]):
        if k == "DATA=END":
            break
        pairs.append((bytes.fromhex(k.strip()), bytes.fromhex(v.strip())))
    return pairs


def store_seeds(cli):
    work = tempfile.mkdtemp(prefix="chunkcache-seeds-")
    store = os.path.join(work, "store")
    run = lambda *args: subprocess.run([cli, *args, "--store", store], check=True, capture_output=True, text=True).stdout
    try:
        run("init", "--chunk-size", "4KiB", "--min-free", "0")
        rng = random.Random(7)
        files = {"text.txt": b"chunkcache seed " * 700, "random.bin": bytes(rng.getrandbits(8) for _ in range(9000)),
                 "zeros.bin": bytes(8192) + b"tail"}
        for name, data in files.items():
            path = os.path.join(work, name)
            with open(path, "wb") as f:
                f.write(data)
            run("put", "--domain", "local", name, path)
        for i in range(2):  # read in two processes (two usage flushes): text.txt's chunks become hot (§14)
            run("fetch", "--domain", "local", "text.txt", "--out", os.path.join(work, "fetched-%d" % i))
        run("domain", "add", "web", "--origin", "http://127.0.0.1:9/", "--header", "X-Seed: hidden")
        run("mark", "--domain", "local", "text.txt", "--favorite", "1", "--tag", "0a1b")
        anchor = json.loads(run("anchor", "--domain", "local", "--json"))
        listing = json.loads(run("ls", "--domain", "local", "--page-size", "1", "--json"))
        for i, token in enumerate(t for t in [anchor.get("anchor"), anchor.get("syncAnchor"), listing.get("nextPage"), listing.get("syncAnchor")] if t):
            write("sync-tokens", "cli-%d" % i, token)
            body = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))[:-SEAL]
            write("sync-tokens", "body-%d" % i, body)  # the target seals it: the fields behind the seal
        data = os.path.join(store, "data.mdb")
        for db in ["domains", "items", "versions", "refs", "changes", "pending", "policy"]:
            for i, (_, value) in enumerate(dump(store, db)[:4]):
                write("records", "%s-%d" % (db, i), value[:-SEAL])
        for i, (key, _) in enumerate(dump(store, "versions")[:2]):
            write("records", "versions-key-%d" % i, key)
        for i, (_, value) in enumerate(dump(store, "manifests")[:4]):
            write("manifest-page", str(i), value[:-SEAL])
        for tag in range(1, 6):  # stored, zero, absent, absent of unknown digest, and an unknown tag
            write("manifest-page", "tag-%d" % tag, bytes([tag]) + bytes(range(32)))
        refs = {key: value for key, value in dump(store, "refs")}
        for i, (key, value) in enumerate(dump(store, "chunks")[:6]):
            raw = int.from_bytes(refs[key][:-SEAL][8:12], "little") if key in refs else 4096
            write("stored-chunk", str(i), raw.to_bytes(3, "big") + value)
        hot = [(key, value) for key, value in dump(store, "chunks") if value[0] == 3]
        for i, (key, value) in enumerate(hot[:3]):
            raw = int.from_bytes(refs[key][:-SEAL][8:12], "little")
            write("stored-chunk", "hot-%d" % i, raw.to_bytes(3, "big") + value)
            if i == 0:  # one payload byte flipped: it fails its XXH3
                damaged = bytearray(value)
                damaged[16 + 50] ^= 1
                write("stored-chunk", "hot-damaged", raw.to_bytes(3, "big") + bytes(damaged))
        for i, (key, value) in enumerate(p for p in dump(store, "hot") if p[0][0] == 1):
            write("records", "hot-%d" % i, value[:-SEAL])
        with open(data, "rb") as f:
            write("page-file", "store", f.read())
    finally:
        shutil.rmtree(work)


def delta_seeds():
    """delta-frame and rolling-match: [length of the first part, 2 bytes little-endian] + base + frame (or earlier
    version + new chunk). Delta frames come from `zstd --patch-from`, which compresses against raw base bytes as
    ZstdKit's delta frames do, with the content checksum on."""
    rng = random.Random(21)
    work = tempfile.mkdtemp(prefix="chunkcache-delta-seeds.")
    try:
        def patch(base, chunk, level):
            paths = [os.path.join(work, n) for n in ("base", "chunk")]
            for path, data in zip(paths, [base, chunk]):
                with open(path, "wb") as f:
                    f.write(data)
            return subprocess.run(["zstd", "-q", "-c", "-%d" % level, "--patch-from=" + paths[0], paths[1]],
                                  check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout

        def seed(target, name, first, second):
            write(target, name, len(first).to_bytes(2, "little") + first + second)

        text = b"".join(rng.choice([b"chunk ", b"cache ", b"delta ", b"base ", b"version\n"]) for _ in range(4000))
        noise = bytes(rng.getrandbits(8) for _ in range(12000))
        for i, (base, level) in enumerate([(text[:8000], 3), (noise[:6000], 3), (text[2000:10000], 19)]):
            chunk = bytearray(base[300:4300])
            chunk[1000] ^= 0x5A
            frame = patch(base, bytes(chunk), level)
            seed("delta-frame", "patch-%d" % i, base, frame)
            seed("delta-frame", "patch-%d-truncated" % i, base, frame[:-5])
            seed("delta-frame", "patch-%d-other-base" % i, base[::-1], frame)
        plain = subprocess.run(["zstd", "-q", "-c", "-3"], input=text[:3000], check=True, stdout=subprocess.PIPE)
        seed("delta-frame", "empty-base", b"", plain.stdout)
        seed("delta-frame", "junk", noise[:100], noise[100:400])

        seed("rolling-match", "insertion", noise[:4096], noise[1000:1200] + b"inserted" + noise[1200:3000])
        seed("rolling-match", "same-offset", noise[:4096], noise[:2048])
        seed("rolling-match", "text", text[:6000], text[500:4500])
        seed("rolling-match", "fresh", noise[:4096], noise[6000:8000])
        seed("rolling-match", "zeros", bytes(4096), bytes(1024))
        seed("rolling-match", "tiny", noise[:50], noise[:40])
    finally:
        shutil.rmtree(work)


def nginx_multipart(item, ranges, boundary="00000000000000000001", content_type="application/octet-stream"):
    """nginx's answer to a Range of several ranges, byte for byte (checked against nginx 1.22): a CRLF, then per
    part a delimiter line, Content-Type, Content-Range and a blank line before its bytes; the close delimiter."""
    body = b""
    for first, last in ranges:
        body += (f"\r\n--{boundary}\r\nContent-Type: {content_type}\r\nContent-Range: bytes {first}-{last}/{len(item)}"
                 "\r\n\r\n").encode() + item[first:last + 1]
    return body + f"\r\n--{boundary}--\r\n".encode()


def multipart_seeds():
    """multipart/byteranges answers: the first line is the Content-Type, the next byte draws the sizes of the
    pieces the body is fed in, the rest is the body."""
    rng = random.Random(29)
    item = bytes(rng.randrange(256) for _ in range(5000))

    def seed(name, body, boundary="00000000000000000001", pieces=255, content_type=None):
        content_type = content_type or f"multipart/byteranges; boundary={boundary}"
        write("multipart-byteranges", name, content_type.encode() + b"\n" + bytes([pieces]) + body)

    three = nginx_multipart(item, [(0, 9), (100, 355), (4990, 4999)])
    seed("nginx-3", three)
    seed("nginx-3-bytewise", three, pieces=0)
    seed("nginx-7", nginx_multipart(item, [(0, 0), (2, 2), (4, 4), (6, 6), (8, 8), (10, 10), (4000, 4095)],
                                         "00000000000000000002"), "00000000000000000002", pieces=6)
    seed("nginx-overlap", nginx_multipart(item, [(4998, 4999), (4997, 4999), (10, 19)], "00000000000000000003"),
         "00000000000000000003", pieces=16)
    seed("quoted-preamble", b"preamble\r\n--b \t\r\nContent-Range: bytes 1-3/4\r\n\r\nabc\r\n--b--epilogue", "b",
         content_type='Multipart/ByteRanges; charset=x; boundary="b"', pieces=2)
    seed("cut-short", three[:-40], pieces=30)
    seed("runs-on", b"\r\n--b\r\nContent-Range: bytes 0-1/5\r\n\r\nabc\r\n--b--", "b", pieces=3)
    seed("two-sizes", b"--b\r\nContent-Range: bytes 0-1/5\r\n\r\nab\r\n--b\r\nContent-Range: bytes 3-3/6\r\n\r\nc", "b")
    seed("no-boundary", b"\r\n--b--", content_type="multipart/byteranges")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    text_seeds()
    multipart_seeds()
    delta_seeds()
    store_seeds(sys.argv[1])
    for target in sorted(os.listdir(CORPUS)):
        print(target, len(os.listdir(os.path.join(CORPUS, target))))
