import LMDBKit

// The read-ahead states of origin items, as ``ReadPositions`` keeps them in `meta`.

extension TransactionReading where Self: ~Copyable {
    /// The read-ahead state another process left for `item`, if any (a damaged one is none).
    func readPosition(of item: ItemIdentifier, _ dbs: Databases) throws -> ReadAhead? {
        try readPosition(ofItem: item.rawValue, domain: item.domain, dbs, ReadAhead.init(stored:))
    }
}

extension WriteTransaction {
    /// Keeps the read-ahead states noted, skipping domains removed meanwhile; past
    /// ``ReadPositions/remembered`` items every kept position is dropped first.
    @available(*, noasync)
    mutating func recordReadPositions(_ positions: [ItemIdentifier: ReadAhead], _ dbs: Databases) throws {
        try saveReadPositions(positions.lazy.map { ($0.key.domain, $0.key.rawValue, $0.value.stored) }, dbs)
    }
}
