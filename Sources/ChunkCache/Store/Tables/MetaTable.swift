import LMDBKit

/// Names of the counters and settings in `meta`.
enum MetaKey {
    static let format = "format"
    static let chunkShift = "chunkShift"
    static let maxSize = "maxSize"
    static let nextManifestID = "nextManifestID"
    static let logicalBytes = "logicalBytes"
    static let uniqueBytes = "uniqueBytes"
    static let storedBytes = "storedBytes"
    /// 8 random bytes naming this store in anchors and page tokens, set when it is first opened.
    static let storeID = "storeID"
    /// 1 once every item has its ``ListingIndex`` entries (stores made before the change log have none).
    static let catalogueFormat = "catalogueFormat"
    /// The free space eviction keeps on the store's filesystem, in bytes, once set (`init --min-free`).
    static let minFree = "minFree"
    /// Evictions run: its commit after an eviction makes the pages freed reusable at once.
    static let evictionRuns = "evictionRuns"
    /// 1 when puts and imports store no deltas (`init --no-deltas`); unset or 0: they do.
    static let deltasOff = "deltasOff"
    /// Chunks stored as deltas (<doc:Contract#14-Chunk-encodings>).
    static let deltaChunks = "deltaChunks"
    /// What the delta chunks would take stored plain, less what they take.
    static let deltaSavedBytes = "deltaSavedBytes"
    /// The bytes the fill files take (``FillFiles``): counted toward the bound beside `data.mdb`'s pages.
    static let fillBytes = "fillBytes"
    /// Fills the settler dropped because their bytes did not hash to what the manifest knew
    /// (<doc:Contract#10-Origins-the-cold-path>).
    static let settleMismatches = "settleMismatches"
}

extension TransactionReading where Self: ~Copyable {
    /// A counter or setting in `meta`, 0 when unset.
    func counter(_ dbs: Databases, _ name: String) throws -> UInt64 {
        try withValue(dbs.meta, key: Keys.meta(name)) { raw in
            raw.count == 8 ? raw.loadUnaligned(as: UInt64.self).littleEndian : 0
        } ?? 0
    }
}

extension WriteTransaction {
    @available(*, noasync)
    mutating func setCounter(_ dbs: Databases, _ name: String, _ value: UInt64) throws {
        var w = ByteWriter(capacity: 8)
        w.append(value)
        try put(dbs.meta, key: Keys.meta(name), value: w.bytes)
    }

    /// Adds `delta` (which may be negative) to a counter in `meta`.
    @available(*, noasync)
    mutating func addToCounter(_ dbs: Databases, _ name: String, _ delta: Int64) throws {
        guard delta != 0 else { return }
        let current = Int64(bitPattern: try counter(dbs, name))
        try setCounter(dbs, name, UInt64(bitPattern: max(0, current + delta)))
    }
}
