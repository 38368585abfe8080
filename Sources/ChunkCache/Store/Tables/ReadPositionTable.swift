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

    static func key(domain: String, id: String) -> [UInt8] { prefix + Keys.item(domain: domain, id: id) }

    /// The keys of every position of `domain`'s items.
    static func keys(ofDomain domain: String) -> [UInt8] { prefix + Keys.domain(domain) }
}

extension TransactionReading where Self: ~Copyable {
    /// The read-ahead state another process left for item `id` of `domain`, as `decode` reads it, if any (a
    /// damaged one, which `decode` refuses, is none).
    func readPosition<State>(
        ofItem id: String, domain: String, _ dbs: Databases, _ decode: (UnsafeRawBufferPointer) -> State?
    ) throws -> State? {
        try withValue(dbs.meta, key: ReadPositions.key(domain: domain, id: id), decode) ?? nil
    }
}

extension WriteTransaction {
    /// Keeps the read-ahead states noted (each item's domain, identifier and stored state), skipping domains
    /// removed meanwhile; past ``ReadPositions/remembered`` items every kept position is dropped first.
    @available(*, noasync)
    mutating func saveReadPositions(
        _ positions: some Sequence<(domain: String, id: String, stored: [UInt8])>, _ dbs: Databases
    ) throws {
        var count = try counter(dbs, ReadPositions.countKey)
        for (domain, id, stored) in positions {
            guard try contains(dbs.domains, key: Keys.domain(domain)) else { continue }
            let key = ReadPositions.key(domain: domain, id: id)
            if try !contains(dbs.meta, key: key) {
                if count >= ReadPositions.remembered {
                    try deleteAll(under: ReadPositions.prefix, in: dbs.meta)
                    count = 0
                }
                count += 1
            }
            try put(dbs.meta, key: key, value: stored)
        }
        try setCounter(dbs, ReadPositions.countKey, count)
    }
}
