import Foundation
import LMDBKit
import Synchronization

/// Records `lastUsedDate` for fetches, and the chunks origin fetches read for the eviction policy (CONTRACT
/// <doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>, <doc:Contract#12-A-bounded-cache>), without a
/// write transaction per fetch.
///
/// A fetch whose item was marked used within ``granularity`` and that read no origin chunks costs one clock
/// read and a comparison. Others are noted in memory and written together, one transaction per flush,
/// ``delay`` after the first note, or when ``ChunkCache/flushUsage()`` asks; a crash loses at most the notes
/// not yet written (the policy's counts are advice: nothing else is lost).
final class UsageRecorder: Sendable {
    /// Uses closer than this to the recorded one are not recorded again: the date stays within a minute of
    /// the truth without a change record per read.
    static let granularity: Double = 60
    /// How long notes wait to be written with others.
    static let delay: Double = 1

    /// The most distinct chunks noted between flushes; reads beyond it are not counted (bounded memory).
    static let maxNotedChunks = 1 << 18

    private struct State {
        var pending = UsageNotes()
        var scheduled = false
    }

    private let state = Mutex(State())
    /// Off, fetches note nothing (a mount with `noatime`, or a benchmark's baseline).
    let enabled = Atomic<Bool>(true)
    /// Off once a flush found the hot tier off (`--hot-size 0`): fetches then note no chunks for it, until a
    /// later flush (of last-use dates) finds it on again.
    let hotTracking = Atomic<Bool>(true)

    /// Notes a use of `item` now, unless the store already records one within ``granularity``, the chunks
    /// the fetch read for the policy (`reads`, origin domains only), which are always noted, and the chunks it
    /// served (`served`, any domain) for the hot tier while it is on.
    func noteUse(
        of item: ItemIdentifier, recorded: Double?, reads: ChunkReads? = nil, served: ChunkReads? = nil, engine: Engine
    ) {
        let now = Date().timeIntervalSince1970
        let use = enabled.load(ordering: .relaxed) && (recorded.map { now - $0 >= Self.granularity } ?? true)
        let hot = served.flatMap { hotTracking.load(ordering: .relaxed) ? $0 : nil }
        guard use || reads != nil || hot != nil else { return }
        note(engine: engine) { pending in
            if use { pending.uses[item] = now }
            if let hot {
                for index in hot.chunks where pending.hotReads.count < Self.maxNotedChunks {
                    pending.hotReads.insert(PolicySlot(manifestID: hot.manifestID, index: index))
                }
            }
            if let reads {
                for index in reads.chunks
                where pending.reads.count < Self.maxNotedChunks
                    || pending.reads[PolicySlot(manifestID: reads.manifestID, index: index)] != nil
                {
                    pending.reads[PolicySlot(manifestID: reads.manifestID, index: index), default: 0] += 1
                }
            }
        }
    }

    /// Notes where a reader of `item` is, for the next process's read-ahead.
    func noteReadPosition(of item: ItemIdentifier, _ position: ReadAhead, engine: Engine) {
        note(engine: engine) { pending in
            guard pending.readPositions.count < ReadPositions.remembered || pending.readPositions[item] != nil else {
                return
            }
            pending.readPositions[item] = position
        }
    }

    /// Adds to the pending notes and schedules their flush unless one is scheduled.
    private func note(engine: Engine, _ add: (inout UsageNotes) -> Void) {
        let schedule = state.withLock { state -> Bool in
            add(&state.pending)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard schedule else { return }
        // A sleeping task holds no thread; the flush itself only queues a transaction on the store's writer.
        Task(priority: .utility) { [weak engine] in
            try? await Task.sleep(for: .seconds(Self.delay))
            guard let engine else { return }
            let notes = self.take()
            engine.store.writer.writeLater({ txn in try self.write(notes, in: &txn, engine: engine) }) { result in
                if case .failure(let error) = result {
                    engine.diagnostics.report("record when items and chunks were last used", error)
                }
            }
        }
    }

    /// The notes not yet written, which are now the caller's to write.
    func take() -> UsageNotes {
        state.withLock { state in
            defer {
                state.pending = UsageNotes()
                state.scheduled = false
            }
            return state.pending
        }
    }
}

extension UsageRecorder {
    /// Writes a flush: ``WriteTransaction/recordUsage(_:_:)``, then the hot tier's reads (``HotTier``).
    @available(*, noasync)
    func write(_ notes: UsageNotes, in txn: inout WriteTransaction, engine: Engine) throws {
        let store = engine.store
        try txn.recordUsage(notes, store.dbs)
        if !notes.hotReads.isEmpty {
            hotTracking.store(try HotTier.applyReads(notes.hotReads, in: &txn, engine: engine), ordering: .relaxed)
        } else if !hotTracking.load(ordering: .relaxed) {
            // Another process may have turned the tier back on (`init --hot-size`).
            let budget = try txn.hotBudget(store.dbs, maxSize: store.maxSize)
            hotTracking.store(budget > 0, ordering: .relaxed)
        }
    }
}

extension WriteTransaction {
    /// Writes a flush of ``UsageRecorder``: last-use dates, and chunk reads for the eviction policy.
    @available(*, noasync)
    mutating func recordUsage(_ notes: UsageNotes, _ dbs: Databases) throws {
        if !notes.uses.isEmpty { try recordUses(notes.uses, dbs) }
        if !notes.reads.isEmpty { try policyRecordReads(notes.reads, dbs) }
        if !notes.readPositions.isEmpty { try recordReadPositions(notes.readPositions, dbs) }
    }

    /// Sets the last-use dates noted, one domain version per domain, skipping items gone meanwhile.
    @available(*, noasync)
    mutating func recordUses(_ notes: [ItemIdentifier: Double], _ dbs: Databases) throws {
        for (domain, uses) in Dictionary(grouping: notes, by: \.key.domain) {
            guard try contains(dbs.domains, key: Keys.domain(domain)) else { continue }
            var changes = try beginChanges(to: domain, dbs)
            for (item, time) in uses {
                guard let before = try itemRecord(item.rawValue, domain: domain, dbs) else { continue }
                guard time - (before.lastUsedDate ?? -.infinity) >= UsageRecorder.granularity else { continue }
                var after = before
                after.lastUsedDate = time
                try commit(after, replacing: before, in: &changes, dbs)
            }
            if changes.count > 0 { try finish(changes, dbs) }
        }
    }

    /// Takes out of the working set the items whose only reason to be there was a use now older than
    /// ``RecentItems/window``: each such item is a change. Returns whether anything changed.
    @available(*, noasync)
    @discardableResult
    mutating func expireRecentItems(of domain: String, _ dbs: Databases) throws -> Bool {
        var changes = try beginChanges(to: domain, dbs)
        let cutoff = changes.now - RecentItems.window
        let domainKey = changes.key
        let prefix = ListingIndex.prefix(domain: domainKey, container: ListingIndex.recentTracker, sort: .lastUse)
        let from = prefix + ListingIndex.bigEndian(ListingIndex.sortable(changes.record.recentCheckedThrough))
        var stale: [ItemRecord] = []
        try scan(dbs.listing, prefix: prefix, from: from) { key, _ in
            guard
                let item = try withValue(
                    dbs.items, key: domainKey + Array(key.suffix(ListingIndex.hashLength)), ItemRecord.init(ifIntact:))
                    ?? nil,
                let used = item.lastUsedDate
            else { return true }
            guard used < cutoff else { return false }
            var after = item
            after.refreshWorkingSet(now: changes.now)
            if after.flags != item.flags { stale.append(item) }
            return true
        }
        for item in stale {
            var after = item
            after.refreshWorkingSet(now: changes.now)
            try commit(after, replacing: item, in: &changes, dbs)
        }
        if changes.count > 0 {
            changes.record.recentCheckedThrough = cutoff
            try finish(changes, dbs)
            return true
        }
        // Nothing left the working set: remember how far it was checked, without a new domain version.
        var record = try Records.domain(domain, in: self, dbs)
        record.recentCheckedThrough = cutoff
        try saveDomain(record, named: domain, dbs)
        return false
    }
}
