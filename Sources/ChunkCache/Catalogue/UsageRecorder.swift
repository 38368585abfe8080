import Dispatch
import Foundation
import LMDBKit
import Synchronization

/// Records `lastUsedDate` for fetches without a write transaction per fetch (CONTRACT §11).
///
/// A fetch whose item was marked used within ``granularity`` costs one clock read and a comparison. Others
/// are noted in memory and written together, one transaction per flush, ``delay`` after the first note, or
/// when ``ChunkCache/flushUsage()`` asks; a crash loses at most the notes not yet written.
final class UsageRecorder: Sendable {
    /// Uses closer than this to the recorded one are not recorded again: the date stays within a minute of
    /// the truth without a change record per read.
    static let granularity: Double = 60
    /// How long notes wait to be written with others.
    static let delay: Double = 1

    private struct State {
        var pending: [ItemIdentifier: Double] = [:]
        var scheduled = false
    }

    private let state = Mutex(State())
    /// Off, fetches note nothing (a mount with `noatime`, or a benchmark's baseline).
    let enabled = Atomic<Bool>(true)

    /// Notes a use of `item` now, unless the store already records one within ``granularity``.
    func noteUse(of item: ItemIdentifier, recorded: Double?, store: Store) {
        guard enabled.load(ordering: .relaxed) else { return }
        let now = Date().timeIntervalSince1970
        if let recorded, now - recorded < Self.granularity { return }
        let schedule = state.withLock { state -> Bool in
            state.pending[item] = now
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard schedule else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + Self.delay) { [weak store] in
            guard let store else { return }
            let notes = self.take()
            store.writer.writeLater({ txn in try txn.recordUses(notes, store.dbs) }) { result in
                if case .failure(let error) = result { Diagnostics.report("record when items were last used", error) }
            }
        }
    }

    /// The notes not yet written, which are now the caller's to write.
    func take() -> [ItemIdentifier: Double] {
        state.withLock { state in
            defer {
                state.pending = [:]
                state.scheduled = false
            }
            return state.pending
        }
    }
}

extension WriteTransaction {
    /// Sets the last-use dates noted, one domain version per domain, skipping items gone meanwhile.
    @available(*, noasync)
    mutating func recordUses(_ notes: [ItemIdentifier: Double], _ dbs: Databases) throws {
        for (domain, uses) in Dictionary(grouping: notes, by: \.key.domain) {
            guard try get(dbs.domains, key: Keys.domain(domain)) != nil else { continue }
            var changes = try beginChanges(to: domain, dbs)
            for (item, time) in uses {
                guard let raw = try get(dbs.items, key: Keys.item(domain: domain, id: item.rawValue)) else { continue }
                let before = try ItemRecord(decoding: raw, name: RecordNames.item(item.rawValue, domain: domain))
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
            guard let raw = try get(dbs.items, key: domainKey + Array(key.suffix(ListingIndex.hashLength))),
                  let item = ItemRecord(ifIntact: raw), let used = item.lastUsedDate else { return true }
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
        var record = try Catalog.domain(domain, in: self, dbs)
        record.recentCheckedThrough = cutoff
        try put(dbs.domains, key: domainKey, value: record.encoded())
        return false
    }
}
