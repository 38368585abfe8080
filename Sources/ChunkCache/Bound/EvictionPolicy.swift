import Foundation
import LMDBKit

/// The eviction policy (<doc:Contract#12-A-bounded-cache>): W-TinyLFU at chunk granularity, kept in the store.
///
/// W-TinyLFU is Einziger, Friedman and Manes, "TinyLFU: A Highly Efficient Cache Admission Policy", ACM
/// Transactions on Storage 13(4), 2017 (the policy of Caffeine). New chunks enter a small LRU *window*
/// (1 % of the tracked chunks); the main part is a segmented LRU (*probation*, then *protected* for chunks
/// read again, 80 % of main). A chunk leaving the window is admitted to main only if it was read more often
/// than main's next victim, so a one-off scan passes through the window without flushing what is read again.
/// `Benchmarks/policy` replays traces of real programs against it, LRU, S3-FIFO, 2Q, ARC and the optimum:
/// it is the one never above LRU there (`Benchmarks/RESULTS.md`).
///
/// How it is kept: a record per tracked chunk (``PolicyRecord``, keyed by ``PolicySlot``) and a queue per
/// segment ordered by a clock (`policyQueue`), both in LMDB, changed only by the writer: downloads enter in
/// their own transaction, reads are batched per process (``UsageRecorder``) and applied one transaction per
/// flush. Frequencies are exact per chunk rather than the paper's count-min sketch (the store already holds a
/// record per chunk, so exact counts cost nothing more), capped at 15 as the paper's 4-bit counters are, and
/// aged by the paper's reset: halved every 10 × (tracked chunks) reads, applied lazily by generation. Chunks
/// evicted stay as *ghosts* (their count, no bytes), as many as there are tracked chunks, so a chunk that
/// comes back is admitted on its history. Losing the policy's records loses nothing else: a chunk without
/// one is simply not chosen by the policy (``WriteTransaction/evictUntracked(bytes:_:)`` takes those last).
enum EvictionPolicy {
    /// The window's share of the tracked chunks, in percent (the paper's 1 %).
    static let windowPercent: UInt64 = 1
    /// The protected segment's share of main, in percent (the paper's 80 %).
    static let protectedPercent: UInt64 = 80
    /// Frequencies saturate here (the paper's 4-bit counters).
    static let maxFrequency: UInt8 = 15
    /// Reads between two halvings, per tracked chunk (the paper's sample size W = 10 × C).
    static let samplesPerChunk: UInt64 = 10
}

/// One victim the policy chose, and what evicting it frees.
struct PolicyVictim {
    let slot: PolicySlot
    let record: PolicyRecord
}

extension WriteTransaction {
    /// Takes newly downloaded chunks into the window, each counted as one read; a ghost comes back with its
    /// remembered frequency.
    @available(*, noasync)
    mutating func policyAdmit(_ admission: PolicyAdmission, manifestID: UInt64, _ dbs: Databases) throws {
        let generation = UInt32(truncatingIfNeeded: try counter(dbs, PolicyMeta.generation))
        for chunk in admission.chunks {
            let slot = PolicySlot(manifestID: manifestID, index: chunk.index)
            var frequency: UInt8 = 0
            if let old = try policyRecord(slot, dbs) {
                frequency = old.frequency(at: generation)
                try policyUnlink(slot, old, dbs)
            }
            let record = PolicyRecord(
                segment: .window, position: 0, frequency: min(EvictionPolicy.maxFrequency, frequency + 1),
                generation: generation,
                storedBytes: chunk.storedBytes, itemKey: admission.itemKey)
            try policyLink(slot, record, dbs)
        }
        try policyCountSamples(UInt64(admission.chunks.count), dbs)
        try trimGhosts(dbs)
    }

    /// Applies reads of tracked chunks (a batch of one process's, ``UsageRecorder``): each read chunk's
    /// frequency grows, it moves to the recent end of its segment, and a chunk read in probation moves to
    /// protected (demoting protected's oldest to probation when protected is over its share).
    @available(*, noasync)
    mutating func policyRecordReads(_ reads: [PolicySlot: UInt32], _ dbs: Databases) throws {
        let generation = UInt32(truncatingIfNeeded: try counter(dbs, PolicyMeta.generation))
        var total: UInt64 = 0
        for (slot, count) in reads {
            total += UInt64(count)
            guard var record = try policyRecord(slot, dbs), record.segment != .ghost else { continue }
            try policyUnlink(slot, record, dbs)
            let aged = Int(record.frequency(at: generation)) + Int(count)
            record.frequency = UInt8(min(Int(EvictionPolicy.maxFrequency), aged))
            record.generation = generation
            if record.segment == .probation { record.segment = .protected }
            try policyLink(slot, record, dbs)
        }
        try addToCounter(dbs, PolicyMeta.hits, Int64(total))
        try policyCountSamples(total, dbs)
        try rebalanceProtected(dbs)
    }

    /// Chooses victims until their stored bytes reach `bytes` or nothing tracked is left, W-TinyLFU's way.
    ///
    /// Chunks past the window's share leave it oldest first. While main has room for what stays after this
    /// eviction, they join probation; once it is full, each competes with main's next victim (probation's
    /// oldest, else protected's) on frequency and the loser goes (a tie evicts the newcomer). With the window
    /// within its share, its oldest still competes with main's victim, and goes only when strictly rarer:
    /// eviction here runs in batches, not one victim per insertion as in the paper, and a batch may free more
    /// than came in since the last; a tie keeps the window's chunks. Pinned items' chunks are forgotten, never
    /// chosen; chunks `protection` covers are spared while anything else can go.
    @available(*, noasync)
    mutating func policyChooseVictims(bytes: Int64, limit: Int, sparing protection: PolicyProtection, _ dbs: Databases)
        throws -> [PolicyVictim]
    {
        let generation = UInt32(truncatingIfNeeded: try counter(dbs, PolicyMeta.generation))
        let residents: [PolicySegment] = [.window, .probation, .protected]
        let tracked = try residents.reduce(Int64(0)) { $0 + Int64(try counter(dbs, $1.bytesCounterName)) }
        let count = try residents.reduce(UInt64(0)) { $0 + (try counter(dbs, $1.counterName)) }
        let windowShare = max(1, count * EvictionPolicy.windowPercent / 100)
        // What main may hold once this eviction is done: the rest, less the window's share.
        let mainRoom = tracked - bytes - tracked * Int64(EvictionPolicy.windowPercent) / 100
        var victims: [PolicyVictim] = []
        var chosen: Int64 = 0
        var pinnedItems: [[UInt8]: Bool] = [:]
        var spared: UInt64 = 0
        while chosen < bytes && victims.count < limit {
            var pick: (PolicySlot, PolicyRecord)?
            if try counter(dbs, PolicySegment.window.counterName) > windowShare,
                let candidate = try policyOldest(.window, dbs)
            {
                let main = Int64(
                    try counter(dbs, PolicySegment.probation.bytesCounterName)
                        + counter(dbs, PolicySegment.protected.bytesCounterName))
                let victim = try policyOldest(.probation, dbs) ?? policyOldest(.protected, dbs)
                if main + Int64(candidate.1.storedBytes) <= mainRoom || victim == nil {
                    try policyMove(candidate.0, candidate.1, to: .probation, dbs)  // main has room: admitted as is
                    continue
                }
                if let victim, candidate.1.frequency(at: generation) > victim.1.frequency(at: generation) {
                    try policyMove(candidate.0, candidate.1, to: .probation, dbs)  // admitted: main's victim goes
                    pick = victim
                } else {
                    pick = candidate
                }
            } else {
                // Within its share, the window still competes: freeing more than came in since the last
                // eviction takes the rarer of its oldest and main's victim, so a scan never pushes out what
                // is read again.
                let victim = try policyOldest(.probation, dbs) ?? policyOldest(.protected, dbs)
                let recent = try policyOldest(.window, dbs)
                if let victim, let recent {
                    pick = recent.1.frequency(at: generation) < victim.1.frequency(at: generation) ? recent : victim
                } else {
                    pick = victim ?? recent
                }
            }
            guard let (slot, record) = pick else { break }
            if protection.covers(slot) {
                // Spared: to the recent end of its segment (from the window, into probation), once each at most.
                spared += 1
                guard spared <= count else { break }
                try policyMove(slot, record, to: record.segment == .window ? .probation : record.segment, dbs)
                continue
            }
            if pinnedItems[record.itemKey] == nil {
                let item = try withValue(dbs.items, key: record.itemKey, ItemRecord.init(ifIntact:)) ?? nil
                pinnedItems[record.itemKey] = item?.flags.contains(.pinned) ?? false
            }
            if pinnedItems[record.itemKey] == true {
                try policyForget(slot, record, dbs)
                continue
            }
            try policyMove(slot, record, to: .ghost, dbs)  // a ghost keeps the count, not the bytes
            victims.append(PolicyVictim(slot: slot, record: record))
            chosen += Int64(record.storedBytes)
        }
        try trimGhosts(dbs)
        return victims
    }

    /// Takes the stored chunks and fills of a manifest (an unpinned item's) into probation, as if just admitted
    /// to main.
    @available(*, noasync)
    mutating func policyAdopt(manifest manifestID: UInt64, itemKey: [UInt8], _ dbs: Databases) throws {
        var chunks: [(Int64, UInt32)] = []
        try scan(dbs.manifests, prefix: Keys.manifest(manifestID)) { key, value in
            guard let (_, page) = Keys.parseManifestPage(key), let entries = ManifestPage.entries(ofStored: value)
            else { return true }
            for slot in 0..<(entries.count / ManifestPage.entrySize) {
                let index = page * ManifestPage.entriesPerPage + Int64(slot)
                switch try ManifestPage.entry(in: entries, at: slot) {
                case .stored(let digest):
                    chunks.append((index, try intactChunkRef(digest, dbs)?.storedLength ?? 0))
                case .filled:
                    // A fill is evicted as a stored chunk is (its raw bytes are what it takes).
                    let record = try withValue(dbs.fills, key: FillKeys.fill(manifestID, index), FillKeys.parseRecord)
                    chunks.append((index, UInt32(record??.length ?? 0)))
                case .zero, .absent:
                    continue
                }
            }
            return true
        }
        let generation = UInt32(truncatingIfNeeded: try counter(dbs, PolicyMeta.generation))
        for (index, stored) in chunks {
            let slot = PolicySlot(manifestID: manifestID, index: index)
            if let old = try policyRecord(slot, dbs) { try policyUnlink(slot, old, dbs) }
            try policyLink(
                slot,
                PolicyRecord(
                    segment: .probation, position: 0, frequency: 1, generation: generation,
                    storedBytes: stored, itemKey: itemKey), dbs)
        }
    }

    /// Moves protected's oldest chunks to probation while protected is over its share of main.
    @available(*, noasync)
    private mutating func rebalanceProtected(_ dbs: Databases) throws {
        while true {
            let protected = try counter(dbs, PolicySegment.protected.counterName)
            let main = try counter(dbs, PolicySegment.probation.counterName) + protected
            guard protected > max(1, main * EvictionPolicy.protectedPercent / 100),
                let (slot, record) = try policyOldest(.protected, dbs)
            else { return }
            try policyMove(slot, record, to: .probation, dbs)
        }
    }

    /// Keeps at most as many ghosts as tracked chunks, dropping the oldest.
    @available(*, noasync)
    private mutating func trimGhosts(_ dbs: Databases) throws {
        let tracked = try PolicySegment.allCases.filter { $0 != .ghost }.reduce(UInt64(0)) {
            $0 + (try counter(dbs, $1.counterName))
        }
        while try counter(dbs, PolicySegment.ghost.counterName) > max(tracked, 64),
            let (slot, record) = try policyOldest(.ghost, dbs)
        {
            try policyForget(slot, record, dbs)
        }
    }

    /// Counts reads towards the next halving (the paper's reset), which moves the generation on.
    @available(*, noasync)
    private mutating func policyCountSamples(_ reads: UInt64, _ dbs: Databases) throws {
        guard reads > 0 else { return }
        let tracked = try PolicySegment.allCases.filter { $0 != .ghost }.reduce(UInt64(0)) {
            $0 + (try counter(dbs, $1.counterName))
        }
        let samples = try counter(dbs, PolicyMeta.samples) + reads
        if samples >= max(64, tracked) * EvictionPolicy.samplesPerChunk {
            try setCounter(dbs, PolicyMeta.samples, 0)
            try addToCounter(dbs, PolicyMeta.generation, 1)
        } else {
            try setCounter(dbs, PolicyMeta.samples, samples)
        }
    }
}
