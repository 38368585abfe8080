import LMDBKit

// The table of items, `items`: (domain, first 16 bytes of SHA-256 of the identifier) → ``ItemRecord``. Items are
// written only as changes of their domain, which log and index them (``DomainChanges``).

extension TransactionReading where Self: ~Copyable {
    /// Item `id` of `domain`, or nil when the store has none; `key` is its key when the caller has it.
    /// - Throws: `corruptData` when its record fails its check.
    func itemRecord(_ id: String, domain: String, key: [UInt8]? = nil, _ dbs: Databases) throws -> ItemRecord? {
        try withValue(dbs.items, key: key ?? Keys.item(domain: domain, id: id)) {
            try ItemRecord(decoding: $0, name: RecordNames.item(id, domain: domain))
        }
    }
}
