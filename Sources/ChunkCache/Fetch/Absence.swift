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
