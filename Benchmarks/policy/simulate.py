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

  engine    the engine's own W-TinyLFU (EvictionPolicy.swift, SpaceBound.swift), replayed as the engine runs
            it: exact counts, lazy halving, ghosts, hits applied in flushes of 1,000 reads, eviction in
            batches from 90 % to 80 % of the cache (class Engine says how bytes map to chunks)
  engine-perinsert  the same evicting one victim per insertion when full (reads still flushed in batches)

Usage: simulate.py TRACEDIR [--chunk-size 65536] [--ablation]. The `mixed` trace is sqlite's with the scans
(grep, tar) cut in: after every 4,000 sqlite chunk reads, 4,000 of a scan's, until the scans are spent.
--ablation prints, instead of the policies, the engine with each of its differences from the classic W-TinyLFU
undone in turn, and two changes to it (ABLATION; the toggles are Engine's)."""
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

class Engine:
    """The engine's W-TinyLFU (Sources/ChunkCache/Bound/EvictionPolicy.swift and SpaceBound.swift), step
    by step, at chunk granularity. Each function below names the Swift function it mirrors; the constants are
    the engine's (`EvictionPolicy`, `SpaceBound`).

    Where the engine's bytes and pages become a count of chunks (the choices made here):
      - every chunk weighs 1: `storedBytes` is 1, the bound (`allowedBytes`) is `size` chunks, and "live bytes"
        are the resident chunks only (no B-tree pages, nothing but the policy's chunks in the store);
      - a miss is one download of one chunk (the engine downloads a read's missing chunks as one batch; the
        trace is replayed chunk by chunk). Before its transaction the writer's `makeRoom(for:)` evicts when
        resident + need passes 90 % of `size`, down to 80 % of `size` less the need, `need` being the one
        chunk (the engine adds 1/8 and 256 KiB of page overhead to the need; left out). The download is then
        admitted to the window (`policyAdmit`), and `afterCommit` evicts down to 80 % if 90 % is passed (it
        never is once makeRoom ran). `evict_before=False` evicts after the admission instead;
      - reads: a hit is noted (`UsageRecorder.noteUse`) and applied with the others of its flush
        (`policyRecordReads`) every `batch` chunk accesses of the trace (the engine flushes once a second;
        1,000 chunk reads a flush by default). A flush is a `[PolicySlot: UInt32]`, whose iteration order in
        Swift is a per-process hash order: here a seeded shuffle of the batch's distinct chunks. A chunk read
        by the fetch that downloaded it is not counted again (the fetch paths' `readsAreHits: !afterFill`;
        the blocking `read` path, which counts it, is `count_fill_reads=True`);
      - eviction transactions take at most `SpaceBound.victimsPerTransaction` (2,048) victims, each
        transaction recomputing the window's share and main's room as the engine does.

    Toggles, to take the differences from the classic W-TinyLFU (`w_tinylfu`) one at a time:
      per_insert      evict one victim per admission, when the cache is full (`size` resident), no water marks
      water           (high, low) marks as shares of `size`: (0.9, 0.8) in the engine
      batch           chunk accesses per flush of reads; 1 applies each hit at once
      sketch          frequencies from a 4-bit count-min sketch (the classic one) instead of exact counts
      ghosts          keep evicted chunks' counts (as many ghosts as tracked chunks)
      compete         with the window within its share, its oldest still competes with main's victim
      tie_keeps_window  in that competition a tie evicts main's victim (`<`); False: the window's chunk (`<=`)
    and two changes to the engine, to try:
      ghost_reads     a flush counts reads of chunks evicted since they were read: their ghosts' counts grow
                      (the engine skips ghosts, so a chunk evicted before its flush loses its reads)
      flush_first     the pending reads are applied before each eviction (the writer takes the recorder's
                      notes before choosing victims)
    """
    WINDOW, PROBATION, PROTECTED, GHOST = 1, 2, 3, 4
    window_percent, protected_percent, max_frequency, samples_per_chunk = 1, 80, 15, 10
    victims_per_transaction = 2048

    def __init__(self, size, per_insert=False, water=(0.9, 0.8), batch=1000, sketch=False, ghosts=True,
                 compete=True, tie_keeps_window=True, evict_before=True, count_fill_reads=False, ghost_reads=False,
                 flush_first=False, seed=1):
        self.size, self.per_insert, self.water, self.batch = size, per_insert, water, batch
        self.sketch, self.ghosts, self.compete, self.tie_keeps_window = sketch, ghosts, compete, tie_keeps_window
        self.evict_before, self.count_fill_reads = evict_before, count_fill_reads
        self.ghost_reads, self.flush_first, self.pending = ghost_reads, flush_first, {}
        import random
        self.rng = random.Random(seed)
        self.records = {}  # chunk -> [segment, frequency, generation]
        self.queues = {s: collections.OrderedDict() for s in (1, 2, 3, 4)}  # oldest first, as policyQueue
        self.generation = self.samples = 0
        if sketch:
            self.width = max(16, 1 << (4 * size - 1).bit_length())
            self.rows = [[0] * self.width for _ in range(4)]
            self.seeds = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)

    # -- frequencies: the record's, aged by generation (PolicyRecord.frequency(at:)), or the sketch's
    def freq(self, x):
        if self.sketch:
            return min(self.rows[r][((x * self.seeds[r]) >> 7) & (self.width - 1)] for r in range(4))
        _, f, g = self.records[x]
        h = self.generation - g
        return 0 if h >= 8 else f >> h

    def count(self, x, n, f):
        """Adds n reads to x's frequency f (already aged); returns the new record frequency."""
        if self.sketch:
            for r in range(4):
                i = ((x * self.seeds[r]) >> 7) & (self.width - 1)
                self.rows[r][i] = min(15, self.rows[r][i] + n)
            return 0
        return min(self.max_frequency, f + n)

    # -- the queues (policyLink / policyUnlink / policyMove / policyForget / policyOldest)
    def link(self, x, seg, f):
        self.records[x] = [seg, f, self.generation]
        self.queues[seg][x] = True

    def move(self, x, seg):
        rec = self.records[x]
        del self.queues[rec[0]][x]
        rec[0] = seg
        self.queues[seg][x] = True

    def forget(self, x):
        seg = self.records.pop(x)[0]
        del self.queues[seg][x]

    def oldest(self, seg):
        q = self.queues[seg]
        return next(iter(q)) if q else None

    def resident(self):
        return len(self.queues[1]) + len(self.queues[2]) + len(self.queues[3])

    # -- policyCountSamples: the reset, one generation (a halving of every count) per 10 × tracked samples
    def count_samples(self, reads):
        if reads <= 0: return
        self.samples += reads
        if self.samples >= max(64, self.resident()) * self.samples_per_chunk:
            self.samples = 0
            self.generation += 1
            if self.sketch:
                for row in self.rows:
                    for i in range(self.width): row[i] >>= 1

    # -- trimGhosts
    def trim_ghosts(self):
        limit = max(self.resident(), 64)
        ghosts = self.queues[4]
        while len(ghosts) > limit:
            self.forget(next(iter(ghosts)))

    # -- policyAdmit: a download enters the window, counted as one read; a ghost comes back with its count
    def admit(self, xs):
        for x in xs:
            f = 0
            if x in self.records:
                f = self.freq(x)
                self.forget(x)
            self.link(x, self.WINDOW, self.count(x, 1, f))
        self.count_samples(len(xs))
        self.trim_ghosts()

    # -- policyRecordReads: a flush of hits
    def record_reads(self, reads):
        total = 0
        items = list(reads.items())
        self.rng.shuffle(items)  # a Swift Dictionary's iteration order
        for x, n in items:
            total += n
            rec = self.records.get(x)
            if rec is None: continue
            if rec[0] == self.GHOST:
                if self.ghost_reads and not self.sketch:
                    rec[1], rec[2] = self.count(x, n, self.freq(x)), self.generation  # stays in place
                continue
            f = self.count(x, n, self.freq(x))
            seg = self.PROTECTED if rec[0] == self.PROBATION else rec[0]
            del self.queues[rec[0]][x]
            self.link(x, seg, f)
        self.count_samples(total)
        self.rebalance_protected()

    # -- rebalanceProtected
    def rebalance_protected(self):
        prot, prob = self.queues[3], self.queues[2]
        while len(prot) > max(1, (len(prob) + len(prot)) * self.protected_percent // 100) and prot:
            self.move(next(iter(prot)), self.PROBATION)

    # -- policyChooseVictims: evicts (makes ghosts of) up to `want` chunks, at most `limit`; returns how many
    def choose_victims(self, want, limit):
        if self.flush_first and self.pending:
            self.record_reads(self.pending); self.pending.clear()
        window, prob, prot = self.queues[1], self.queues[2], self.queues[3]
        tracked = self.resident()
        window_share = max(1, tracked * self.window_percent // 100)
        main_room = tracked - want - tracked * self.window_percent // 100
        chosen = 0
        while chosen < want and chosen < limit:
            if len(window) > window_share and window:
                cand = next(iter(window))
                victim = self.oldest(2) if prob else self.oldest(3)
                if len(prob) + len(prot) + 1 <= main_room or victim is None:
                    self.move(cand, self.PROBATION)  # main has room: admitted as is
                    continue
                if self.freq(cand) > self.freq(victim):
                    self.move(cand, self.PROBATION)  # admitted: main's victim goes
                    pick = victim
                else:
                    pick = cand
            else:
                victim = self.oldest(2) if prob else self.oldest(3)
                recent = self.oldest(1)
                if victim is not None and recent is not None and self.compete:
                    fr, fv = self.freq(recent), self.freq(victim)
                    pick = recent if (fr < fv if self.tie_keeps_window else fr <= fv) else victim
                else:
                    pick = victim if victim is not None else recent
            if pick is None: break
            if self.ghosts and not self.sketch:
                self.move(pick, self.GHOST)  # a ghost keeps the count, not the bytes
            else:
                self.forget(pick)
            chosen += 1
        self.trim_ghosts()
        return chosen

    # -- SpaceBound.evictToLowWater(below:): transactions of at most 2,048 victims down to the low mark
    def evict_to_low_water(self, extra=0):
        while True:
            target = int(self.water[1] * self.size) - extra
            live = self.resident()
            if live <= target: return
            if self.choose_victims(live - target, self.victims_per_transaction) == 0: return

    def run(self, seq):
        misses, pending = 0, self.pending
        high = self.water[0] * self.size
        for i, x in enumerate(seq):
            rec = self.records.get(x)
            if rec is not None and rec[0] != self.GHOST:
                pending[x] = pending.get(x, 0) + 1  # a hit: applied with the next flush
            else:
                misses += 1
                if self.per_insert:
                    if self.resident() + 1 > self.size: self.choose_victims(self.resident() + 1 - self.size, 1)
                    self.admit([x])
                else:
                    if self.evict_before and self.resident() + 1 > high: self.evict_to_low_water(1)  # makeRoom
                    self.admit([x])
                    if self.resident() > high: self.evict_to_low_water()  # afterCommit
                if self.count_fill_reads:
                    pending[x] = pending.get(x, 0) + 1
            if (i + 1) % self.batch == 0 and pending:
                self.record_reads(pending); pending.clear()
        return misses

def engine(seq, size, **options):
    return Engine(size, **options).run(seq)

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

POLICIES = [("LRU", lru), ("S3-FIFO", s3fifo), ("S3-FIFO (freq>1)", lambda s, n: s3fifo(s, n, 2)), ("2Q", two_q), ("ARC", arc), ("W-TinyLFU", w_tinylfu),
            ("engine", engine), ("engine-perinsert", lambda s, n: engine(s, n, per_insert=True)), ("OPT", opt)]

# --ablation: the engine with its differences from the classic W-TinyLFU taken away one at a time (Engine's toggles).
ABLATION = [
    ("engine", {}),
    ("reads at once", dict(batch=1)),
    ("marks 100/89 %", dict(water=(1.0, 0.889))),
    ("sketch", dict(sketch=True)),
    ("no ghosts", dict(ghosts=False)),
    ("no compete", dict(compete=False)),
    ("evict after", dict(evict_before=False)),
    ("fill reads", dict(count_fill_reads=True)),
    ("ghost reads", dict(ghost_reads=True)),
    ("flush first", dict(flush_first=True)),
    ("perinsert", dict(per_insert=True)),
    ("pi reads at once", dict(per_insert=True, batch=1)),
    ("pi sketch", dict(per_insert=True, sketch=True)),
    ("pi no ghosts", dict(per_insert=True, ghosts=False)),
    ("pi no compete", dict(per_insert=True, compete=False)),
    ("pi ghost reads", dict(per_insert=True, ghost_reads=True)),
    ("pi flush first", dict(per_insert=True, flush_first=True)),
    ("pi classic", dict(per_insert=True, batch=1, sketch=True, ghosts=False, compete=False)),
]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tracedir")
    ap.add_argument("--chunk-size", type=int, default=65536)
    ap.add_argument("--ablation", action="store_true", help="the engine's variants (ABLATION) instead of the policies")
    args = ap.parse_args()
    policies = POLICIES
    if args.ablation:
        policies = [("LRU", lru), ("W-TinyLFU", w_tinylfu)] + [(n, (lambda o: lambda s, k: engine(s, k, **o))(o)) for n, o in ABLATION]
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
    print(f"{'trace':8} {'reads':>9} {'chunks':>8} {'cache':>6}  " + "  ".join(f"{n:>16}" for n, _ in policies) + "   vs LRU")
    for name, seq in traces.items():
        distinct = len(set(seq))
        for percent in (5, 10, 25):
            size = max(2, distinct * percent // 100)
            results = {n: f(seq, size) for n, f in policies}
            ratio = min(v for n, v in results.items() if n not in ("LRU", "OPT")) / max(results["LRU"], 1)
            print(f"{name:8} {len(seq):9} {distinct:8} {percent:5}%  " +
                  "  ".join(f"{100 * results[n] / len(seq):16.2f}" for n, _ in policies) + f"   {ratio:.3f}")
        sys.stdout.flush()

if __name__ == "__main__":
    main()
