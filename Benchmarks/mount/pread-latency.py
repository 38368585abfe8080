#!/usr/bin/env python3
"""Random plain preads of one file, each timed: prints p50 and p99 in microseconds as JSON (Benchmarks/mount.sh).

    pread-latency.py FILE --reads N [--size 4096] [--seed S] [--check ORIGINAL]

The file is split into N equal slots and each read starts at a random SIZE-aligned offset inside its own slot,
the slots visited in a random order: no read lands on bytes an earlier one (or the kernel's or a peer's
read-ahead of a few MiB) brought in, so on a fresh mount every read is cold. With --check, every read's bytes
are compared with ORIGINAL's after the timing.
"""
import argparse, json, os, random, sys, time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("file")
    parser.add_argument("--reads", type=int, required=True)
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--check")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    fd = os.open(args.file, os.O_RDONLY)
    length = os.fstat(fd).st_size
    slot = length // args.reads
    if slot < args.size:
        sys.exit(f"pread-latency.py: {args.file} ({length} bytes) is too small for {args.reads} reads of {args.size}")
    slots = list(range(args.reads))
    rng.shuffle(slots)
    offsets = [s * slot + rng.randrange(0, (slot - args.size) // args.size + 1) * args.size for s in slots]
    times, reads = [], []
    for offset in offsets:
        start = time.perf_counter_ns()
        data = os.pread(fd, args.size, offset)
        times.append((time.perf_counter_ns() - start) / 1000)
        reads.append((offset, data))
    os.close(fd)
    if args.check:
        with open(args.check, "rb") as original:
            for offset, data in reads:
                original.seek(offset)
                if original.read(args.size) != data:
                    sys.exit(f"pread-latency.py: {args.file} gave other bytes at {offset} than {args.check}")
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    print(json.dumps({"p50": round(pick(0.5), 1), "p99": round(pick(0.99), 1), "reads": len(times)}))


main()
