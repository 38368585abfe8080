import LMDBKit

/// A chunk's reference count and sizes.
package struct ChunkRef: StoreRecord {
    /// Manifest entries (published or pending) that name the chunk.
    var count: UInt64
    var rawLength: UInt32
    var storedLength: UInt32

    package static let remedy = "run `chunkcache verify --repair` to drop the chunk"

    package func write(to w: inout ByteWriter) {
        w.append(count)
        w.append(rawLength)
        w.append(storedLength)
    }
}

extension ChunkRef {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        count = try r.read()
        rawLength = try r.read()
        storedLength = try r.read()
    }
}

extension TransactionReading where Self: ~Copyable {
    /// The reference of chunk `digest`; nil when it has none or the record fails its check.
    func intactChunkRef(_ digest: ChunkDigest, _ dbs: Databases) throws -> ChunkRef? {
        try digest.withUnsafeBytes { key in try withValue(dbs.refs, key: key, ChunkRef.init(ifIntact:)) } ?? nil
    }
}
