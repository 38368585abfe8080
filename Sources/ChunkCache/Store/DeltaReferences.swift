import LMDBKit
import ZstdKit

/// The links between delta chunks and their bases, inside one write transaction (CONTRACT §14).
///
/// A delta names its bases in its header; `bases` holds the reverse, one key per (base, delta), so that the
/// deltas of a base are found before the base is deleted. A base is deleted only with its last manifest
/// reference, and only after each of its deltas was re-encoded plain, in the same transaction: a delta is never
/// left unreadable, and a crash keeps the old encoding until the new one commits.
extension WriteTransaction {
    /// Stores a new delta chunk with one reference, and links it to its bases.
    @available(*, noasync)
    mutating func insertDelta(
        _ digest: ChunkDigest, encoded: UnsafeRawBufferPointer, rawLength: Int, layout: DeltaLayout, _ dbs: Databases
    ) throws {
        try insertChunk(digest, encoded: encoded, rawLength: rawLength, dbs)
        for base in layout.bases { try put(dbs.bases, key: Self.baseKey(base.digest, digest), value: []) }
        try addToCounter(dbs, MetaKey.deltaChunks, 1)
        try addToCounter(
            dbs, MetaKey.deltaSavedBytes, Int64(layout.plainLength - encoded.count + ChunkCodec.headerSize))
    }

    /// Undoes what ``insertDelta(_:encoded:rawLength:layout:_:)`` added for a delta whose value is `stored`,
    /// before that value is deleted or replaced.
    @available(*, noasync)
    mutating func unlinkDelta(_ digest: ChunkDigest, stored: UnsafeRawBufferPointer, _ dbs: Databases) throws {
        guard let layout = DeltaLayout(parsing: stored) else { return }
        for base in layout.bases { try delete(dbs.bases, key: Self.baseKey(base.digest, digest)) }
        try addToCounter(dbs, MetaKey.deltaChunks, -1)
        try addToCounter(
            dbs, MetaKey.deltaSavedBytes, -Int64(layout.plainLength - stored.count + ChunkCodec.headerSize))
    }

    /// The deltas made against `base`.
    func deltas(of base: ChunkDigest, _ dbs: Databases) throws -> [ChunkDigest] {
        var found: [ChunkDigest] = []
        try scan(dbs.bases, prefix: base.bytes) { key, _ in
            if key.count == 2 * ChunkDigest.byteCount {
                found.append(ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: key[ChunkDigest.byteCount...])))
            }
            return true
        }
        return found
    }

    /// Re-encodes every delta made against `base` as a plain chunk, so that `base` can be deleted. Returns how
    /// many were re-encoded.
    ///
    /// Runs in the transaction that deletes the base (an `rm`, a release by eviction or gc): each delta costs a
    /// decode and a compression at the store's default level.
    @available(*, noasync)
    @discardableResult
    mutating func detachDeltas(from base: ChunkDigest, _ dbs: Databases) throws -> Int {
        let dependents = try deltas(of: base, dbs)
        guard !dependents.isEmpty else { return 0 }
        let coder = PlainReencoder()
        for delta in dependents {
            // The link may outlive a delta a repair dropped: then there is nothing to re-encode.
            guard let ref = try intactChunkRef(delta, dbs),
                let plain = try delta.withUnsafeBytes({ key in
                    try withValue(dbs.chunks, key: key) { stored in
                        try coder.plainEncoding(of: stored, rawCount: Int(ref.rawLength), digest: delta, in: self, dbs)
                    }
                }) ?? nil
            else {
                try delete(dbs.bases, key: Self.baseKey(base, delta))
                continue
            }
            try replaceEncoding(of: delta, with: plain, ref: ref, dbs)
        }
        return dependents.count
    }

    /// Writes a new encoding of the same bytes for chunk `digest`, keeping its counters exact and dropping the
    /// links of the old one when it was a delta.
    @available(*, noasync)
    mutating func replaceEncoding(of digest: ChunkDigest, with encoded: [UInt8], ref: ChunkRef, _ dbs: Databases)
        throws
    {
        try digest.withUnsafeBytes { key in
            if let old = try withValue(dbs.chunks, key: key, { Array($0) }) {
                try old.withUnsafeBytes { try unlinkDelta(digest, stored: $0, dbs) }
            }
            var updated = ref
            updated.storedLength = UInt32(encoded.count - ChunkCodec.headerSize)
            try addToCounter(dbs, MetaKey.storedBytes, Int64(updated.storedLength) - Int64(ref.storedLength))
            try encoded.withUnsafeBytes { try put(dbs.chunks, key: key, value: $0) }
            try updated.encoded().withUnsafeBytes { try put(dbs.refs, key: key, value: $0) }
        }
    }

    /// Drops every link of a chunk a repair deletes: as a delta, and as a base (its deltas failed to decode
    /// with it, so they are deleted by the same repair).
    @available(*, noasync)
    mutating func forgetDeltaLinks(of digest: ChunkDigest, _ dbs: Databases) throws {
        for delta in try deltas(of: digest, dbs) { try delete(dbs.bases, key: Self.baseKey(digest, delta)) }
        if let stored = try digest.withUnsafeBytes({ try unsafeValue(dbs.chunks, key: $0) }) {
            try unlinkDelta(digest, stored: stored, dbs)
        }
    }

    /// The key of a (base, delta) link.
    static func baseKey(_ base: ChunkDigest, _ delta: ChunkDigest) -> [UInt8] { base.bytes + delta.bytes }
}

extension TransactionReading where Self: ~Copyable {
    /// Whether chunk `digest` can be a base: stored, and not itself a delta (depth 1).
    func isPlainChunk(_ digest: ChunkDigest, _ dbs: Databases) throws -> Bool {
        guard let stored = try digest.withUnsafeBytes({ try unsafeValue(dbs.chunks, key: $0) }) else { return false }
        return stored.count >= ChunkCodec.headerSize && !ChunkCodec.isDelta(stored)
    }
}

/// Decodes a chunk and encodes it plain: the re-encoding of a delta whose base goes. Made only when a base with
/// deltas is deleted, so a store without deltas never pays for its buffers.
final class PlainReencoder {
    private let decompressor = Decompressor()
    private let compressor = Compressor(level: StoreSettings.standard.compressionLevel)
    private var raw: [UInt8] = []
    private var bases: [UInt8] = []

    /// The plain encoding of the chunk stored as `stored`, decoded with its bases from `txn`.
    /// - Throws: `corruptData` when it does not decode (a damaged delta or base), which fails the transaction:
    ///   the store stays as it was and `verify --repair` drops the damage.
    func plainEncoding<T: TransactionReading & ~Copyable>(
        of stored: UnsafeRawBufferPointer, rawCount: Int, digest: ChunkDigest, in txn: borrowing T, _ dbs: Databases
    ) throws -> [UInt8] {
        if raw.count < rawCount { raw = [UInt8](repeating: 0, count: rawCount) }
        let baseBytes = DeltaLayout(parsing: stored)?.bases.reduce(0) { $0 + $1.rawLength } ?? 0
        if bases.count < baseBytes { bases = [UInt8](repeating: 0, count: baseBytes) }
        return try raw.withUnsafeMutableBytes { rawBuffer in
            try bases.withUnsafeMutableBytes { baseBuffer in
                let bytes = try ChunkCodec.decode(
                    stored, rawCount: rawCount, decompressor: decompressor, buffer: rawBuffer, digest: digest,
                    bases: SnapshotBases(txn, dbs, scratch: { baseBuffer }))
                var encoded = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: rawCount))
                let length = try encoded.withUnsafeMutableBytes {
                    try ChunkCodec.encode(bytes, compressor: compressor, into: $0)
                }
                encoded.removeLast(encoded.count - length)
                return encoded
            }
        }
    }
}
