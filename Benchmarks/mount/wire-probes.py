#!/usr/bin/env python3
"""The wire's floors and the first read of Benchmarks/cold.sh, timed inside one Python process as
pread-latency.py times its preads. A GET is a bare HTTP/1.1 request on a socket (TCP_NODELAY) and a read of
the answer by its Content-Length: no HTTP library's parsing, so the figure is the wire's and nginx's.

    wire-probes.py gets URL --original FILE --reads N [--size 4096] [--seed S]
        N Range GETs of SIZE bytes on one kept-alive connection, placed as pread-latency.py places its preads
        (one in each 1/N of the file, SIZE-aligned, in random order); a first GET that makes the connection
        is left out. Prints p50 and p99 in microseconds as JSON.
    wire-probes.py offsets URL --original FILE --reads N [--size 4096] [--seed S]
        Prints the offsets `gets` would read, one a line (for curl --next).
    wire-probes.py round-trip URL --original FILE
        One 1-byte Range GET on a fresh connection: connect, request, the byte. Prints milliseconds as JSON.
    wire-probes.py first-read PATH --original FILE [--size 4096]
        Opens PATH and reads its first SIZE bytes. Prints milliseconds (the open included) as JSON.

Every answer is compared with the same bytes of FILE (the origin's copy); a difference exits non-zero.
"""
import argparse, json, os, random, socket, sys, time
from urllib.parse import urlsplit


def expected(original, offset, size):
    with open(original, "rb") as f:
        f.seek(offset)
        return f.read(size)


def check(data, original, offset, what):
    if data != expected(original, offset, len(data)) or not data:
        sys.exit(f"wire-probes.py: {what} gave other bytes at {offset} than {original}")


class Connection:
    """One HTTP/1.1 connection, kept alive, that sends bare Range GETs."""

    def __init__(self, url):
        self.host, self.port = url.hostname, url.port or 80
        self.socket = socket.create_connection((self.host, self.port))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""

    def get(self, path, offset, size):
        request = f"GET {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nRange: bytes={offset}-{offset + size - 1}\r\n\r\n"
        self.socket.sendall(request.encode())
        while b"\r\n\r\n" not in self.pending:
            self.pending += self.receive()
        head, _, rest = self.pending.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        if lines[0].split(" ")[1] != "206":
            sys.exit(f"wire-probes.py: GET {path} bytes {offset}+{size}: {lines[0]}")
        length = next(int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:"))
        while len(rest) < length:
            rest += self.receive()
        body, self.pending = rest[:length], rest[length:]
        return body

    def receive(self):
        data = self.socket.recv(1 << 20)
        if not data:
            sys.exit(f"wire-probes.py: {self.host}:{self.port} closed the connection")
        return data

    def close(self):
        self.socket.close()


def placed_offsets(args):
    length = os.path.getsize(args.original)
    slot = length // args.reads
    rng = random.Random(args.seed)
    slots = list(range(args.reads))
    rng.shuffle(slots)
    return [s * slot + rng.randrange(0, (slot - args.size) // args.size + 1) * args.size for s in slots]


def offsets(args):
    print("\n".join(str(offset) for offset in placed_offsets(args)))


def gets(args):
    url = urlsplit(args.url)
    connection = Connection(url)
    connection.get(url.path, os.path.getsize(args.original) - args.size, args.size)
    times, answers = [], []
    for offset in placed_offsets(args):
        start = time.perf_counter_ns()
        body = connection.get(url.path, offset, args.size)
        times.append((time.perf_counter_ns() - start) / 1000)
        answers.append((offset, body))
    connection.close()
    for offset, body in answers:
        check(body, args.original, offset, f"GET {args.url}")
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(json.dumps({"p50": round(pick(0.5), 1), "p99": round(pick(0.99), 1), "reads": len(times)}))


def round_trip(args):
    url = urlsplit(args.url)
    start = time.perf_counter_ns()
    connection = Connection(url)
    body = connection.get(url.path, 0, 1)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    connection.close()
    check(body, args.original, 0, f"GET {args.url}")
    print(json.dumps({"ms": round(elapsed, 3)}))


def first_read(args):
    start = time.perf_counter_ns()
    fd = os.open(args.url, os.O_RDONLY)
    data = os.pread(fd, args.size, 0)
    elapsed = (time.perf_counter_ns() - start) / 1e6
    os.close(fd)
    check(data, args.original, 0, args.url)
    print(json.dumps({"ms": round(elapsed, 3)}))


parser = argparse.ArgumentParser()
parser.add_argument("action", choices=["gets", "offsets", "round-trip", "first-read"])
parser.add_argument("url", help="the item's URL (gets, round-trip) or the file's path (first-read)")
parser.add_argument("--original", required=True)
parser.add_argument("--reads", type=int, default=100)
parser.add_argument("--size", type=int, default=4096)
parser.add_argument("--seed", type=int, default=20)
args = parser.parse_args()
{"gets": gets, "offsets": offsets, "round-trip": round_trip, "first-read": first_read}[args.action](args)
