/// What a fetch will serve: one version of one item, and the aligned range of it.
struct FetchPlan: Sendable {
    let item: ItemRecord
    let version: VersionRecord
    let retrieved: ByteRange
    /// The retrieved range is the whole file: zero chunks stay holes.
    var wholeFile: Bool { version.isWhole(retrieved) }
    /// The retrieved range holds at least one zero chunk.
    let hasZeroChunks: Bool
    let domainVersion: DomainVersion
    /// The domain has an origin: a stored chunk that fails its check is downloaded again
    /// (<doc:Contract#10-Origins-the-cold-path>).
    var fromOrigin = false

    /// The plan as the cold path carries it: what a damaged chunk's refill serves afterwards.
    var cold: ColdPlan {
        ColdPlan(version: version, range: retrieved, item: item, domainVersion: domainVersion)
    }

    /// The chunks served, for the eviction policy: only an origin domain's (the others are never evicted).
    var policyReads: ChunkReads? { fromOrigin ? servedChunks : nil }

    /// The chunks served, for the hot tier (any domain).
    var servedChunks: ChunkReads? {
        guard retrieved.length > 0 else { return nil }
        let shift = version.layout.shift
        return ChunkReads(
            manifestID: version.manifestID, chunks: (retrieved.location >> shift)...((retrieved.end - 1) >> shift))
    }
}

extension FetchPlan {
    /// What a chunk of the plan that could not be read (``StoredChunkReader``) makes of the fetch. On an origin
    /// domain a damaged or lost chunk is downloaded again and the fetch succeeds
    /// (<doc:Contract#10-Origins-the-cold-path>): it is returned.
    ///
    /// - Throws: ``ChunkVanished`` for an `absent` entry (the fetch plans again); `corruptData` for a stored
    ///   chunk the store lacks, and, on a domain without an origin, for a damaged one.
    func damage(_ why: UnreadableChunk, index: Int64) throws -> DamagedChunk {
        switch why {
        case .absent:
            throw ChunkVanished(index: index)
        case .missing(let digest):
            throw CacheError(
                .corruptData,
                "chunk \(digest) of item \"\(item.identifier)\" is missing from the store; run `chunkcache verify --repair`"
            )
        case .damaged(let digest, let error):
            guard fromOrigin else { throw error }
            return DamagedChunk(index: index, digest: digest)
        case .fillLost:
            return DamagedChunk(index: index, digest: nil)
        }
    }
}
