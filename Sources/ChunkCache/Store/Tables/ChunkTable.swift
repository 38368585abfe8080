import LMDBKit

// The table of chunks, `chunks` (digest → header and payload), with their references in `refs` (``ChunkRef``).

/// Reference counting of chunks, inside one write transaction.
extension WriteTransaction {
    /// Counts one more reference to `digest` when the store has it, returning false when it does not.
    @available(*, noasync)
    mutating func retainChunk(_ digest: ChunkDigest, _ dbs: Databases) throws -> Bool {
        try digest.withUnsafeBytes { key in
            let stored = try withValue(dbs.refs, key: key) {
                try ChunkRef(decoding: $0, name: RecordNames.chunkReference(digest))
            }
            guard var ref = stored else { return false }
            ref.count += 1
            try ref.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
            return true
        }
    }

    /// Stores a new chunk with one reference. `encoded` is the header and payload from ``ChunkCodec``.
    @available(*, noasync)
    mutating func insertChunk(_ digest: ChunkDigest, encoded: UnsafeRawBufferPointer, rawLength: Int, _ dbs: Databases)
        throws
    {
        try digest.withUnsafeBytes { key in
            try put(dbs.chunks, key: key, value: encoded)
            let ref = ChunkRef(
                count: 1, rawLength: UInt32(rawLength), storedLength: UInt32(encoded.count - ChunkCodec.headerSize))
            try ref.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
        }
        try addToCounter(dbs, MetaKey.uniqueBytes, Int64(rawLength))
        try addToCounter(dbs, MetaKey.storedBytes, Int64(encoded.count - ChunkCodec.headerSize))
    }

    /// Drops one reference to `digest`, deleting the chunk with its last reference. Returns the stored bytes
    /// freed: the chunk's, when that was its last reference, else 0.
    @available(*, noasync)
    @discardableResult
    mutating func releaseChunk(_ digest: ChunkDigest, _ dbs: Databases) throws -> Int64 {
        try digest.withUnsafeBytes { key in
            guard
                var ref = try withValue(
                    dbs.refs, key: key,
                    {
                        try ChunkRef(decoding: $0, name: RecordNames.chunkReference(digest))
                    })
            else { return 0 }  // already dropped by a repair
            if ref.count > 1 {
                ref.count -= 1
                try ref.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
                return 0
            }
            // Its deltas first, while its bytes are here to decode them against (CONTRACT §14).
            try detachDeltas(from: digest, dbs)
            if let stored = try unsafeValue(dbs.chunks, key: key) { try unlinkDelta(digest, stored: stored, dbs) }
            try delete(dbs.refs, key: key)
            try delete(dbs.chunks, key: key)
            try hotForget(digest, dbs)
            try addToCounter(dbs, MetaKey.uniqueBytes, -Int64(ref.rawLength))
            try addToCounter(dbs, MetaKey.storedBytes, -Int64(ref.storedLength))
            return Int64(ref.storedLength)
        }
    }

    /// Writes a new encoding of the same bytes for chunk `digest`, keeping its counters exact and dropping the
    /// links of the old one when it was a delta (the caller links a new delta).
    @available(*, noasync)
    mutating func replaceEncoding(of digest: ChunkDigest, with encoded: [UInt8], ref: ChunkRef, _ dbs: Databases)
        throws
    {
        try digest.withUnsafeBytes { key in
            if let old = try withValue(dbs.chunks, key: key, { Array($0) }) {
                try old.withUnsafeBytes { try unlinkDelta(digest, stored: $0, dbs) }
            }
            try hotForget(digest, dbs)  // the new encoding is not the hot tier's
            var updated = ref
            updated.storedLength = UInt32(encoded.count - ChunkCodec.headerSize)
            try addToCounter(dbs, MetaKey.storedBytes, Int64(updated.storedLength) - Int64(ref.storedLength))
            try encoded.withUnsafeBytes { try put(dbs.chunks, key: key, value: $0) }
            try updated.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
        }
    }

    /// Sets a chunk's stored length in its reference and `storedBytes` with it.
    @available(*, noasync)
    mutating func setStoredLength(
        of digest: ChunkDigest, _ ref: inout ChunkRef, _ length: UInt32, _ dbs: Databases
    ) throws {
        try addToCounter(dbs, MetaKey.storedBytes, Int64(length) - Int64(ref.storedLength))
        ref.storedLength = length
        try digest.withUnsafeBytes { key in try ref.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
        }
    }
}

extension TransactionReading where Self: ~Copyable {
    /// The encoding chunk `digest` is stored in; nil when it is not stored or its header is not one.
    func storedEncoding(of digest: ChunkDigest, _ dbs: Databases) throws -> ChunkCodec.Encoding? {
        try digest.withUnsafeBytes { key in try withValue(dbs.chunks, key: key, ChunkCodec.encoding(of:)) } ?? nil
    }

    /// Whether chunk `digest` can be a base: stored, and not itself a delta (depth 1).
    func isPlainChunk(_ digest: ChunkDigest, _ dbs: Databases) throws -> Bool {
        guard let stored = try digest.withUnsafeBytes({ try unsafeValue(dbs.chunks, key: $0) }) else { return false }
        return stored.count >= ChunkCodec.headerSize && !ChunkCodec.isDelta(stored)
    }
}
