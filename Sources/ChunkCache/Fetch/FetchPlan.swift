/// What planning a fetch decided
/// (``FetchPlanner/plan(store:domain:item:requested:minimal:alignment:options:request:in:)``): the plan that serves it
/// from the store, or what the store lacks, which only an origin domain's fetch can fill
/// (<doc:Contract#10-Origins-the-cold-path>).
enum PlanOutcome: Sendable {
    case serve(FetchPlan)
    case miss(Absence)

    /// What is absent, when the plan missed.
    var missing: Absence? {
        if case .miss(let absence) = self { absence } else { nil }
    }
}

/// What a fetch of an origin domain found absent, planning or reading: the cold path
/// (``ChunkCache/throughOrigin(_:options:request:servesFromDownload:streamed:first:serve:)``) fills it from the
/// origin and serves the plan it carries, without planning again.
enum Absence: Sendable {
    /// The store does not hold the item, or not the version asked for: one ranged GET of `range` (or of the
    /// range's first chunks) tells its size and version and brings the first bytes.
    /// - asked: the version the fetch asks for, nil for whatever the origin holds now. A strict fetch's must
    ///   be the origin's; a non-strict fetch asks for it where the origin still serves old versions by name
    ///   (a versioned S3 bucket), and takes the origin's current version when it lacks it
    ///   (``ChunkCache/discoveryPin(_:strict:origin:)``).
    /// - refresh: the store's version is stale (the origin moved on): ask even though the item is known.
    case undiscovered(asked: [UInt8]?, range: ByteRange?, refresh: Bool = false)
    /// The version is known but chunks of the plan's range are absent.
    case chunks(ColdPlan)
    /// A stored chunk of the plan's version failed its check on read: it is downloaded again and replaces the
    /// damaged copy.
    case damaged(ColdPlan, DamagedChunk)
}

/// What a fetch of an origin domain serves once the store holds it: one version of the item and the range
/// retrieved from it, planned once and carried from the miss through the fill to the read.
struct ColdPlan: Sendable {
    let version: VersionRecord
    let range: ByteRange
    let item: ItemRecord
    let domainVersion: DomainVersion
    /// The domain's record the plan read: it names the origin, so the fill need not read it again. Nil when
    /// the plan came from a discovery or a read.
    var domain: DomainRecord?
}

/// A stored chunk that failed its check (XXH3 or the zstd frame checksum) while a fetch read it.
struct DamagedChunk: Sendable, Equatable {
    let index: Int64
    /// The stored chunk's digest; nil for a fill (``ManifestEntry/filled(checksum:)``), lost or settled since
    /// the read's snapshot.
    let digest: ChunkDigest?
}

/// What writing or reading a plan's chunks came to: every chunk done, or, on an origin domain, a stored chunk
/// that failed its check (elsewhere that is `corruptData`, thrown). The fetch then has nothing to show: a
/// hand-off file or a clone is removed, and the chunk is downloaded again (``Absence/damaged(_:_:)``).
enum Assembly: Sendable, Equatable {
    case complete
    case damaged(DamagedChunk)
}

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
