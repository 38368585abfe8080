import LMDBKit

/// The links between delta chunks and their bases, inside one write transaction (<doc:Contract#14-Chunk-encodings>).
///
/// A delta names its bases in its header; `bases` holds the reverse, one key per (base, delta), so that the
/// deltas of a base are found before the base is deleted. A base is deleted only with its last manifest
/// reference, and only after each of its deltas was re-encoded, in the same transaction: a delta is never left
/// unreadable, and a crash keeps the old encodings until the new ones commit.
extension WriteTransaction {
    /// Stores a new delta chunk with one reference, and links it to its bases.
    @available(*, noasync)
    mutating func insertDelta(
        _ digest: ChunkDigest, encoded: UnsafeRawBufferPointer, rawLength: Int, layout: DeltaLayout, _ dbs: Databases
    ) throws {
        try insertChunk(digest, encoded: encoded, rawLength: rawLength, dbs)
        try linkDelta(digest, layout: layout, storedCount: encoded.count, dbs)
    }

    /// Links a delta to its bases and counts it.
    @available(*, noasync)
    private mutating func linkDelta(_ digest: ChunkDigest, layout: DeltaLayout, storedCount: Int, _ dbs: Databases)
        throws
    {
        for base in layout.bases { try put(dbs.bases, key: Self.baseKey(base.digest, digest), value: []) }
        try addToCounter(dbs, MetaKey.deltaChunks, 1)
        try addToCounter(dbs, MetaKey.deltaSavedBytes, Int64(layout.plainLength - storedCount + ChunkCodec.headerSize))
    }

    /// Undoes what ``insertDelta(_:encoded:rawLength:layout:_:)`` added for a delta whose value is `stored`,
    /// before that value is deleted or replaced.
    @available(*, noasync)
    mutating func unlinkDelta(_ digest: ChunkDigest, stored: UnsafeRawBufferPointer, _ dbs: Databases) throws {
        guard let layout = DeltaLayout(parsing: stored) else { return }
        try unlinkDelta(digest, layout: layout, storedCount: stored.count, dbs)
    }

    /// Undoes what ``insertDelta(_:encoded:rawLength:layout:_:)`` added for a delta of `layout`, stored in
    /// `storedCount` bytes.
    @available(*, noasync)
    mutating func unlinkDelta(_ digest: ChunkDigest, layout: DeltaLayout, storedCount: Int, _ dbs: Databases) throws {
        for base in layout.bases { try delete(dbs.bases, key: Self.baseKey(base.digest, digest)) }
        try addToCounter(dbs, MetaKey.deltaChunks, -1)
        try addToCounter(
            dbs, MetaKey.deltaSavedBytes, -Int64(layout.plainLength - storedCount + ChunkCodec.headerSize))
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

    /// Re-encodes every delta made against `base`, so that `base` can be deleted; returns how many.
    ///
    /// The deltas of one base hold much the same bytes (the same place in successive versions), so the first of
    /// them (the most referenced) is stored plain and becomes the others' base in place of `base`, beside their
    /// other base when they had one: deleting old versions keeps the newer ones' savings. A delta that no longer
    /// pays against its new base is stored plain. Runs in the transaction that deletes `base` (an `rm`, `gc`,
    /// eviction): each delta costs a decode and one or two compressions at the store's default level.
    @available(*, noasync)
    @discardableResult
    mutating func detachDeltas(from base: ChunkDigest, _ dbs: Databases) throws -> Int {
        var dependents: [(digest: ChunkDigest, ref: ChunkRef)] = []
        for delta in try deltas(of: base, dbs) {
            // The link may outlive a delta a repair dropped: then there is nothing to re-encode.
            if let ref = try intactChunkRef(delta, dbs) {
                dependents.append((delta, ref))
            } else {
                try delete(dbs.bases, key: Self.baseKey(base, delta))
            }
        }
        guard !dependents.isEmpty else { return 0 }
        dependents.sort { $0.ref.count > $1.ref.count }
        let coder = Reencoder()
        var successor: (digest: ChunkDigest, rawLength: Int)?
        for (delta, ref) in dependents {
            guard let old = try delta.withUnsafeBytes({ key in try withValue(dbs.chunks, key: key) { Array($0) } }),
                let oldLayout = old.withUnsafeBytes({ DeltaLayout(parsing: $0) })
            else {
                try delete(dbs.bases, key: Self.baseKey(base, delta))
                continue
            }
            // Its other base stays (it is not being deleted, or it would have been detached first).
            var newBases = oldLayout.bases.filter { $0.digest != base }
            if let successor { newBases.insert(successor, at: 0) }
            let encoded = try old.withUnsafeBytes { stored in
                try coder.reencode(
                    stored, rawCount: Int(ref.rawLength), digest: delta, against: newBases, in: self, dbs)
            }
            try replaceEncoding(of: delta, with: encoded.bytes, ref: ref, dbs)
            if let layout = encoded.layout {
                try linkDelta(delta, layout: layout, storedCount: encoded.bytes.count, dbs)
            } else if successor == nil {
                successor = (delta, Int(ref.rawLength))
            }
        }
        return dependents.count
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
