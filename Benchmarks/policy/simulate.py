#!/usr/bin/env python3
"""Replays access traces (trace.sh) at chunk granularity against eviction policies and prints miss ratios
at cache sizes of 5%, 10% and 25% of each trace's working set (its distinct chunks):

  LRU       least recently used
  S3-FIFO   Yang et al., "FIFO queues are all you need for cache eviction", SOSP 2023: a small FIFO (10%),
            a main FIFO (90%) with 2-bit frequencies and reinsertion, a ghost FIFO as large as the main one;
            an object leaves the small queue for the main one when it was read again while in it
  2Q        Johnson & Shasha, VLDB 1994 (full version): A1in FIFO 25%, A1out ghost 50%, Am LRU
  ARC       Megiddo & Modha, FAST 2003
  W-TinyLFU Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", ACM ToS 2017:
            a 1% LRU window, a segmented-LRU main cache (20% probation, 80% protected), and admission of the
            window's victim over the main cache's by a 4-bit count-min sketch of frequencies, halved every
            10 × size accesses
  OPT       Belady's optimum (evicts the chunk next used furthest in the future): the limit

Usage: simulate.py TRACEDIR [--chunk-size 65536]. The `mixed` trace is sqlite's with the scans (grep, tar)
cut in: after every 4,000 sqlite chunk reads, 4,000 of a scan's, until the scans are spent."""
import argparse, collections, heapq, os, sys

def load(path, shift):
    ids, seq = {}, []
    for line in open(path):
        name, offset, length = line.rstrip("\n").split("\t")
        offset, length = int(offset), int(length)
        for chunk in range(offset >> shift, ((offset + length - 1) >> shift) + 1):
            key = (name, chunk)
            seq.append(ids.setdefault(key, len(ids)))
    return seq, ids

def mixed(sqlite, scans, block=4000):
    out, s = [], 0
    scan_iters = [iter(x) for x in scans]
    which = 0
    while s < len(sqlite):
        out.extend(sqlite[s:s + block]); s += block
        for _ in range(len(scan_iters)):
            it = scan_iters[which % len(scan_iters)]; which += 1
            part = [x for _, x in zip(range(block), it)]
            if part:
                out.extend(part); break
    return out

def lru(seq, size):
    cache, misses = collections.OrderedDict(), 0
    for x in seq:
        if x in cache:
            cache.move_to_end(x)
        else:
            misses += 1
            cache[x] = True
            if len(cache) > size:
                cache.popitem(last=False)
    return misses

def s3fifo(seq, size, move_threshold=1):
    small_cap = max(1, size // 10)
    small, main, ghost = collections.deque(), collections.deque(), collections.OrderedDict()
    freq, where = {}, {}
    misses = 0
    def evict_main():
        while main:
            t = main.pop()
            if freq[t] > 0:
                freq[t] -= 1; main.appendleft(t)
            else:
                del where[t], freq[t]; return
    def evict_small():
        while small:
            t = small.pop()
            if freq[t] >= move_threshold:
                where[t] = "M"; main.appendleft(t)
                if len(main) > size - small_cap: evict_main()
            else:
                del where[t], freq[t]
                ghost[t] = True
                if len(ghost) > size - small_cap: ghost.popitem(last=False)
                return
    for x in seq:
        if x in where:
            freq[x] = min(freq[x] + 1, 3)
            continue
        misses += 1
        while len(small) + len(main) >= size:
            if len(small) >= small_cap or not main: evict_small()
            else: evict_main()
        freq[x] = 0
        if x in ghost:
            del ghost[x]; where[x] = "M"; main.appendleft(x)
        else:
            where[x] = "S"; small.appendleft(x)
    return misses

def two_q(seq, size):
    kin, kout = max(1, size // 4), max(1, size // 2)
    a1in, a1out, am = collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict()
    misses = 0
    def reclaim():
        if len(a1in) + len(am) < size: return
        if len(a1in) > kin or not am:
            y, _ = a1in.popitem(last=False)
            a1out[y] = True
            if len(a1out) > kout: a1out.popitem(last=False)
        else:
            am.popitem(last=False)
    for x in seq:
        if x in am:
            am.move_to_end(x)
        elif x in a1in:
            pass
        elif x in a1out:
            misses += 1; del a1out[x]; reclaim(); am[x] = True
        else:
            misses += 1; reclaim(); a1in[x] = True
    return misses

def arc(seq, c):
    t1, t2, b1, b2 = collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict()
    p, misses = 0, 0
    def replace(x):
        nonlocal p
        if t1 and (len(t1) > p or (x in b2 and len(t1) == p)):
            y, _ = t1.popitem(last=False); b1[y] = True
        else:
            y, _ = t2.popitem(last=False); b2[y] = True
    for x in seq:
        if x in t1:
            del t1[x]; t2[x] = True
        elif x in t2:
            t2.move_to_end(x)
        elif x in b1:
            misses += 1
            p = min(c, p + max(len(b2) // max(len(b1), 1), 1))
            replace(x); del b1[x]; t2[x] = True
        elif x in b2:
            misses += 1
            p = max(0, p - max(len(b1) // max(len(b2), 1), 1))
            replace(x); del b2[x]; t2[x] = True
        else:
            misses += 1
            if len(t1) + len(b1) == c:
                if len(t1) < c:
                    b1.popitem(last=False); replace(x)
                else:
                    t1.popitem(last=False)
            elif len(t1) + len(b1) < c and len(t1) + len(t2) + len(b1) + len(b2) >= c:
                if len(t1) + len(t2) + len(b1) + len(b2) == 2 * c:
                    b2.popitem(last=False)
                replace(x)
            t1[x] = True
    return misses

def w_tinylfu(seq, size):
    window_cap = max(1, size // 100)
    main_cap = max(1, size - window_cap)
    protected_cap = max(1, main_cap * 8 // 10)
    window, probation, protected = collections.OrderedDict(), collections.OrderedDict(), collections.OrderedDict()
    width = max(16, 1 << (4 * size - 1).bit_length())
    rows = [[0] * width for _ in range(4)]
    seeds = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)
    added, sample = 0, 10 * size
    def index(x, r): return ((x * seeds[r]) >> 7) & (width - 1)
    def increment(x):
        nonlocal added
        for r in range(4):
            i = index(x, r)
            if rows[r][i] < 15: rows[r][i] += 1
        added += 1
        if added >= sample:
            for row in rows:
                for i in range(width): row[i] >>= 1
            added = sample // 2
    def estimate(x): return min(rows[r][index(x, r)] for r in range(4))
    misses = 0
    for x in seq:
        increment(x)
        if x in window:
            window.move_to_end(x); continue
        if x in protected:
            protected.move_to_end(x); continue
        if x in probation:
            del probation[x]; protected[x] = True
            if len(protected) > protected_cap:
                y, _ = protected.popitem(last=False); probation[y] = True
            continue
        misses += 1
        window[x] = True
        if len(window) <= window_cap: continue
        candidate, _ = window.popitem(last=False)
        if len(probation) + len(protected) < main_cap:
            probation[candidate] = True; continue
        victim = next(iter(probation)) if probation else next(iter(protected))
        if estimate(candidate) > estimate(victim):
            if victim in probation: del probation[victim]
            else: del protected[victim]
            probation[candidate] = True
    return misses

def opt(seq, size):
    nxt, last = [0] * len(seq), {}
    for i in range(len(seq) - 1, -1, -1):
        nxt[i] = last.get(seq[i], len(seq) + i)
        last[seq[i]] = i
    cache, heap, misses = {}, [], 0
    for i, x in enumerate(seq):
        if x not in cache:
            misses += 1
            if len(cache) >= size:
                while True:
                    n, y = heapq.heappop(heap)
                    if cache.get(y) == -n:
                        del cache[y]; break
        cache[x] = nxt[i]
        heapq.heappush(heap, (-nxt[i], x))
    return misses

POLICIES = [("LRU", lru), ("S3-FIFO", s3fifo), ("S3-FIFO (freq>1)", lambda s, n: s3fifo(s, n, 2)), ("2Q", two_q), ("ARC", arc), ("W-TinyLFU", w_tinylfu), ("OPT", opt)]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tracedir")
    ap.add_argument("--chunk-size", type=int, default=65536)
    args = ap.parse_args()
    shift = args.chunk_size.bit_length() - 1
    traces = {}
    for name in ("sqlite", "grep", "tar"):
        path = os.path.join(args.tracedir, name + ".trace")
        if os.path.exists(path):
            traces[name], _ = load(path, shift)
    if "sqlite" in traces:
        # The scans' chunk ids must not collide with sqlite's: shift them past its range.
        base = max(traces["sqlite"]) + 1
        scans, offset = [], base
        for name in ("grep", "tar"):
            if name in traces:
                scans.append([x + offset for x in traces[name]]); offset += max(traces[name]) + 1
        traces["mixed"] = mixed(traces["sqlite"], scans)
    print(f"chunk size {args.chunk_size}; miss ratio (%), fewer is better; 'vs LRU' = the best policy's misses (OPT aside) / LRU's")
    print(f"{'trace':8} {'reads':>9} {'chunks':>8} {'cache':>6}  " + "  ".join(f"{n:>16}" for n, _ in POLICIES) + "   vs LRU")
    for name, seq in traces.items():
        distinct = len(set(seq))
        for percent in (5, 10, 25):
            size = max(2, distinct * percent // 100)
            results = {n: f(seq, size) for n, f in POLICIES}
            ratio = min(v for n, v in results.items() if n not in ("LRU", "OPT")) / max(results["LRU"], 1)
            print(f"{name:8} {len(seq):9} {distinct:8} {percent:5}%  " +
                  "  ".join(f"{100 * results[n] / len(seq):16.2f}" for n, _ in POLICIES) + f"   {ratio:.3f}")
        sys.stdout.flush()

if __name__ == "__main__":
    main()
