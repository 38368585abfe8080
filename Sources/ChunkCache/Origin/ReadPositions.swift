import LMDBKit

/// Where each item of an origin domain was last read, kept in `meta` so the next process continues the
/// sequence (``ReadAhead``). Advice, like the policy's counts: written with the last-use notes
/// (``UsageRecorder``), a crash may lose the newest, and at most ``remembered`` items are kept: past that
/// the positions start over, which only restarts a window.
enum ReadPositions {
    static let remembered: UInt64 = 4096
    static let prefix = Array("readAhead/".utf8)
    /// How many positions are kept.
    static let countKey = "readAheadItems"

    static func key(_ item: ItemIdentifier) -> [UInt8] { prefix + Keys.item(domain: item.domain, id: item.rawValue) }

    /// The keys of every position of `domain`'s items.
    static func keys(ofDomain domain: String) -> [UInt8] { prefix + Keys.domain(domain) }
}

extension TransactionReading where Self: ~Copyable {
    /// The read-ahead state another process left for `item`, if any (a damaged one is none).
    func readPosition(of item: ItemIdentifier, _ dbs: Databases) throws -> ReadAhead? {
        try withValue(dbs.meta, key: ReadPositions.key(item), ReadAhead.init(stored:)) ?? nil
    }
}

extension WriteTransaction {
    /// Keeps the read-ahead states noted, skipping domains removed meanwhile; past
    /// ``ReadPositions/remembered`` items every kept position is dropped first.
    @available(*, noasync)
    mutating func recordReadPositions(_ positions: [ItemIdentifier: ReadAhead], _ dbs: Databases) throws {
        var count = try counter(dbs, ReadPositions.countKey)
        for (item, state) in positions {
            guard try contains(dbs.domains, key: Keys.domain(item.domain)) else { continue }
            let key = ReadPositions.key(item)
            if try !contains(dbs.meta, key: key) {
                if count >= ReadPositions.remembered {
                    try deleteAll(under: ReadPositions.prefix, in: dbs.meta)
                    count = 0
                }
                count += 1
            }
            try put(dbs.meta, key: key, value: state.stored)
        }
        try setCounter(dbs, ReadPositions.countKey, count)
    }
}
