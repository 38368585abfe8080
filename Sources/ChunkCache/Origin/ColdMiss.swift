import ZstdKit

/// An error that is an instruction inside the engine, not a failure: passed through every wrapping unchanged
/// so the code that acts on it sees it.
protocol EngineSignal: Error {}

/// What a fetch of an origin domain lacks, found while planning (CONTRACT §10): the fetch fills it from the
/// origin, then plans again.
enum ColdMiss: EngineSignal {
    /// The store does not hold the item, or not the version asked for: one ranged GET of `range` (or of the
    /// range's first chunks) tells its size and version and brings the first bytes.
    /// - pinned: the version the origin must have (a strict fetch's), nil for whatever it holds now.
    /// - refresh: the store's version is stale (the origin moved on): ask even though the item is known.
    case discover(pinned: [UInt8]?, range: ByteRange?, refresh: Bool = false)
    /// The version is known but chunks of `range` are absent (of `item`, in the domain at `domainVersion`).
    case fill(version: VersionRecord, range: ByteRange, item: ItemRecord, domainVersion: DomainVersion)
    /// Stored chunk `index` (`digest`) of the version failed its check on read: it is downloaded again and
    /// replaces the damaged copy.
    case replace(version: VersionRecord, index: Int64, digest: ChunkDigest)
}

extension FetchPlan {
    /// Decodes a stored chunk of the plan (``ChunkCodec/decode(_:rawCount:decompressor:buffer:digest:)``). On an
    /// origin domain a chunk that fails its check is a ``ColdMiss/replace(version:index:digest:)``: the fetch
    /// downloads it again and succeeds (CONTRACT §10); elsewhere it is `corruptData`.
    func decode(
        _ stored: UnsafeRawBufferPointer, rawCount: Int, decompressor: Decompressor, buffer: UnsafeMutableRawBufferPointer,
        digest: ChunkDigest, index: Int64
    ) throws -> UnsafeRawBufferPointer {
        do {
            return try ChunkCodec.decode(stored, rawCount: rawCount, decompressor: decompressor, buffer: buffer, digest: digest)
        } catch {
            guard fromOrigin else { throw error }
            throw ColdMiss.replace(version: version, index: index, digest: digest)
        }
    }
}
