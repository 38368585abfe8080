import Crypto
import LMDBKit

/// The orders pages list a container in, as keys of the `listing` database with empty values.
///
/// A key is `domain ‖ container hash (8) ‖ sort ‖ position`, where the position is the sort key then the
/// item's 16-byte identifier hash (the tail of its ``Keys/item(domain:id:)``), so equal names or dates still
/// sort one way, and a page token needs only the last position it returned. Every item has entries under the
/// container listing it and, while it is in the working set, under the working set; an item with a last-use
/// date also has one under ``recentTracker``, oldest first, so the items that stop being recent are found
/// without a scan of the domain.
enum ListingIndex {
    enum Sort: UInt8, Sendable {
        case name = 0x6E  // "n": filename bytes, ascending
        case date = 0x64  // "d": content modification date, newest first
        case lastUse = 0x75  // "u": last-use date, oldest first (``recentTracker`` only)
    }

    /// The pseudo-container of the last-use order.
    static let recentTracker = "\u{1}recent"
    /// Sort keys hold at most this many bytes of a name, so a page token stays within 500 bytes
    /// (<doc:FileProviderRules#F1>).
    static let nameKeyLength = 200
    static let hashLength = 16

    /// The key prefix of one container's entries in one order.
    static func prefix(domain: [UInt8], container: String, sort: Sort) -> [UInt8] {
        var key = domain
        key += containerHash(container)
        key.append(sort.rawValue)
        return key
    }

    static func containerHash(_ container: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(container.utf8)).prefix(8))
    }

    /// The position of an entry: its sort key, then the item hash.
    static func position(sort: Sort, of placement: Placement, itemHash: some Collection<UInt8>) -> [UInt8] {
        var key: [UInt8]
        switch sort {
        case .name:
            key = Array(placement.filename.utf8.prefix(nameKeyLength))
            key.append(0)  // ends the name: "ab" sorts before "abc" whatever the hash
        case .date:
            key = bigEndian(~sortable(placement.modificationDate))
        case .lastUse:
            key = bigEndian(sortable(placement.lastUsedDate ?? 0))
        }
        return key + itemHash
    }

    /// The item hash at the end of a position.
    static func itemHash(ofPosition position: some Collection<UInt8>) -> [UInt8] { Array(position.suffix(hashLength)) }

    /// Every key of an item placed so.
    static func keys(domain: [UInt8], itemHash: [UInt8], placement: Placement?) -> Set<[UInt8]> {
        guard let placement else { return [] }
        var keys: Set<[UInt8]> = []
        var containers = [placement.container]
        if placement.inWorkingSet { containers.append(Item.workingSetContainer) }
        for container in containers {
            for sort in [Sort.name, .date] {
                keys.insert(
                    prefix(domain: domain, container: container, sort: sort)
                        + position(sort: sort, of: placement, itemHash: itemHash))
            }
        }
        if placement.lastUsedDate != nil {
            keys.insert(
                prefix(domain: domain, container: recentTracker, sort: .lastUse)
                    + position(sort: .lastUse, of: placement, itemHash: itemHash))
        }
        return keys
    }

    /// A double as a UInt64 that sorts as the doubles do.
    static func sortable(_ value: Double) -> UInt64 {
        let bits = value.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }
}

extension WriteTransaction {
    /// Moves an item's `listing` entries from where it was to where it is (nil: absent).
    @available(*, noasync)
    mutating func reindex(
        domain: [UInt8], itemHash: [UInt8], from before: Placement?, to after: Placement?, _ dbs: Databases
    ) throws {
        guard before != after else { return }
        let old = ListingIndex.keys(domain: domain, itemHash: itemHash, placement: before)
        let new = ListingIndex.keys(domain: domain, itemHash: itemHash, placement: after)
        for key in old.subtracting(new) { _ = try delete(dbs.listing, key: key) }
        for key in new.subtracting(old) { try put(dbs.listing, key: key, value: []) }
    }
}

extension WriteTransaction {
    /// Gives every item its listing entries: for a store made before the change log, once, on open.
    @available(*, noasync)
    mutating func indexCatalogue(_ dbs: Databases) throws {
        var entries: [(domain: [UInt8], hash: [UInt8], placement: Placement)] = []
        try scan(dbs.items, prefix: []) { key, value in
            guard key.count > ListingIndex.hashLength else { return true }
            let record = try ItemRecord(decoding: value, name: RecordNames.item(key: key, in: self, dbs))
            entries.append(
                (
                    Array(key.dropLast(ListingIndex.hashLength)), Array(key.suffix(ListingIndex.hashLength)),
                    record.placement
                ))
            return true
        }
        for entry in entries {
            try reindex(domain: entry.domain, itemHash: entry.hash, from: nil, to: entry.placement, dbs)
        }
    }
}

extension TransactionReading where Self: ~Copyable {
    /// The items `container` lists under `filename`: found by the name order's prefix, checked against the
    /// records (a name cut at ``ListingIndex/nameKeyLength`` bytes, or an 8-byte container hash, could match
    /// another). Names are not unique: a put or a sync may repeat one.
    func items(named filename: String, in container: String, domain: String, _ dbs: Databases) throws -> [ItemRecord] {
        let domainKey = Keys.domain(domain)
        let prefix =
            ListingIndex.prefix(domain: domainKey, container: container, sort: .name)
            + Array(filename.utf8.prefix(ListingIndex.nameKeyLength)) + [0]
        var found: [ItemRecord] = []
        try scan(dbs.listing, prefix: prefix) { key, _ in
            guard key.count == prefix.count + ListingIndex.hashLength,
                let item = try withValue(
                    dbs.items, key: domainKey + Array(key.suffix(ListingIndex.hashLength)),
                    {
                        try ItemRecord(decoding: $0, name: "an item of \(RecordNames.domain(domain))")
                    })
            else { return true }
            if item.filename == filename && item.placement.container == container { found.append(item) }
            return true
        }
        return found
    }
}
