import Foundation
import LMDBKit

/// The changes one transaction makes to one domain: one domain-version bump, and one log record per item
/// changed. Every change to items goes through ``WriteTransaction/beginChanges(to:create:_:)``,
/// ``WriteTransaction/commit(_:replacing:in:_:)`` and ``WriteTransaction/finish(_:_:)``.
struct DomainChanges {
    let name: String
    let key: [UInt8]
    var record: DomainRecord
    /// The version this transaction publishes.
    let version: DomainVersion
    let now: Double
    /// Records appended so far.
    var count: UInt32 = 0

    var versionBytes: [UInt8] { Array(String(version.rawValue).utf8) }
}

extension WriteTransaction {
    /// Bumps the domain's version for a change; with `create`, a missing domain is created.
    @available(*, noasync)
    mutating func beginChanges(to name: String, create: Bool = false, _ dbs: Databases) throws -> DomainChanges {
        var record = try domainForChange(name, create: create, dbs)
        record.version += 1
        return DomainChanges(
            name: name, key: Keys.domain(name), record: record, version: DomainVersion(rawValue: record.version),
            now: Date().timeIntervalSince1970)
    }

    /// Writes an item as it is after a change (`nil`: deleted), moves its listing entries and logs the change.
    /// The item's metadata version becomes the new domain version (<doc:FileProviderRules#D4>) and its working-set
    /// membership is recomputed. Returns the item as written.
    @available(*, noasync)
    @discardableResult
    mutating func commit(
        _ after: ItemRecord?, replacing before: ItemRecord?, in changes: inout DomainChanges, _ dbs: Databases
    ) throws -> ItemRecord? {
        guard let identifier = after?.identifier ?? before?.identifier else { return nil }
        let itemHash = Keys.itemHash(identifier)
        let itemKey = changes.key + itemHash
        var written = after
        if var item = written {
            item.metadataVersion = changes.versionBytes
            item.refreshWorkingSet(now: changes.now)
            try put(dbs.items, key: itemKey, value: item.encoded())
            written = item
        } else {
            _ = try delete(dbs.items, key: itemKey)
        }
        try reindex(domain: changes.key, itemHash: itemHash, from: before?.placement, to: written?.placement, dbs)
        let record = ChangeRecord(identifier: identifier, before: before?.placement, time: changes.now)
        try put(
            dbs.changes, key: Keys.change(domain: changes.key, version: changes.version.rawValue, index: changes.count),
            value: record.encoded())
        changes.count += 1
        return written
    }

    /// Saves the domain with its new version and compacts what the log keeps beyond its history. Once the
    /// transaction commits, the writer wakes the waiters (``ChangeSignal``): every bump is signalled
    /// (<doc:FileProviderRules#E2>).
    @available(*, noasync)
    mutating func finish(_ changes: DomainChanges, _ dbs: Databases) throws {
        dbs.changeMarks.mark()
        var record = changes.record
        record.retainedChanges += UInt64(changes.count)
        try compactChanges(&record, domainKey: changes.key, before: changes.version.rawValue, now: changes.now, dbs)
        try saveDomain(record, named: changes.name, dbs)
    }

    /// Drops the oldest versions' records while the log holds more than its history allows, whole versions
    /// at a time (an anchor inside a version stays valid or expires with all of it), never the version
    /// being written, and at most ``compactionStep`` records per transaction so no change waits long.
    @available(*, noasync)
    private mutating func compactChanges(
        _ record: inout DomainRecord, domainKey: [UInt8], before current: UInt64, now: Double, _ dbs: Databases
    ) throws {
        var budget = Self.compactionStep
        while budget > 0 {
            var oldest: (version: UInt64, time: Double)?
            try scan(dbs.changes, prefix: domainKey) { key, value in
                guard let position = Keys.parseChange(key, domainLength: domainKey.count) else { return false }
                oldest = (position.version, ChangeRecord(ifIntact: value)?.time ?? 0)
                return false
            }
            guard let oldest, oldest.version < current,
                record.retainedChanges > record.history.changes || oldest.time < now - record.history.seconds
            else { return }
            var keys: [[UInt8]] = []
            try scan(dbs.changes, prefix: domainKey + ListingIndex.bigEndian(oldest.version)) { key, _ in
                keys.append(Array(key))
                return true
            }
            for key in keys { _ = try delete(dbs.changes, key: key) }
            record.retainedChanges -= min(record.retainedChanges, UInt64(keys.count))
            record.compactedThrough = oldest.version
            budget -= keys.count
        }
    }

    static var compactionStep: Int { 100_000 }
}
