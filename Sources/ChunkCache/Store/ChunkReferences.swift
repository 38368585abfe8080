import LMDBKit

/// Reference counting of chunks and whole manifests, inside one write transaction.
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

    /// Removes one version: its record, its manifest (releasing its chunks) and its bytes from `logicalBytes`.
    @available(*, noasync)
    mutating func dropVersion(key: [UInt8], _ version: VersionRecord, _ dbs: Databases) throws {
        try dropManifest(version.manifestID, dbs)
        try delete(dbs.versions, key: key)
        try addToCounter(dbs, MetaKey.logicalBytes, -version.size)
    }

    /// Removes every version whose key starts with `prefix` (an item's key, or a domain's); returns how many.
    @available(*, noasync)
    @discardableResult
    mutating func dropVersions(under prefix: [UInt8], _ dbs: Databases) throws -> Int {
        var versions: [(key: [UInt8], record: VersionRecord)] = []
        try scan(dbs.versions, prefix: prefix) { key, value in
            versions.append(
                (Array(key), try VersionRecord(decoding: value, name: RecordNames.version(key: key, in: self, dbs))))
            return true
        }
        for version in versions { try dropVersion(key: version.key, version.record, dbs) }
        return versions.count
    }

    /// Deletes a manifest's pages and releases every chunk it references.
    ///
    /// A page that fails its seal names chunks that cannot be trusted: releasing them could free another
    /// item's chunks, so its references are left counted instead (the chunks stay, unused, and take space).
    @available(*, noasync)
    mutating func dropManifest(_ manifestID: UInt64, _ dbs: Databases) throws {
        var pageKeys: [[UInt8]] = []
        var digests: [ChunkDigest] = []
        try scan(dbs.manifests, prefix: Keys.manifest(manifestID)) { key, value in
            pageKeys.append(Array(key))
            guard let page = ManifestPage.entries(ofStored: value) else { return true }
            for slot in 0..<(page.count / ManifestPage.entrySize) {
                if case .stored(let digest) = try ManifestPage.entry(in: page, at: slot) { digests.append(digest) }
            }
            return true
        }
        for digest in digests { try releaseChunk(digest, dbs) }
        for key in pageKeys { try delete(dbs.manifests, key: key) }
        try delete(dbs.pending, key: Keys.manifest(manifestID))
        try policyForget(manifest: manifestID, dbs)
        try removeFills(of: manifestID, dbs)
    }

    /// Whether `manifestID` is pending now, written by `writer`: not published since, nor rolled back.
    @available(*, noasync)
    func isPending(_ manifestID: UInt64, of writer: WriterToken, _ dbs: Databases) throws -> Bool {
        let record = try withValue(dbs.pending, key: Keys.manifest(manifestID)) {
            try PendingRecord(decoding: $0, name: RecordNames.pending(manifestID))
        }
        return record?.writer == writer
    }

    /// Takes a fresh manifest id and records it as pending for `writer`.
    @available(*, noasync)
    mutating func beginManifest(_ dbs: Databases, writer: WriterToken, now: Double) throws -> UInt64 {
        let id = max(1, try counter(dbs, MetaKey.nextManifestID))
        try setCounter(dbs, MetaKey.nextManifestID, id + 1)
        try put(dbs.pending, key: Keys.manifest(id), value: PendingRecord(writer: writer, startedAt: now).encoded())
        return id
    }
}
