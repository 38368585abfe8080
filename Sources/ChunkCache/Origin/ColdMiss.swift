/// An error that is an instruction inside the engine, not a failure: passed through every wrapping unchanged
/// so the code that acts on it sees it.
protocol EngineSignal: Error {}

/// What a fetch of an origin domain lacks, found while planning (CONTRACT §10): the fetch fills it from the
/// origin, then plans again.
enum ColdMiss: EngineSignal {
    /// The store does not hold the item, or not the version asked for: one ranged GET of `range` (or of the
    /// range's first chunks) tells its size and version and brings the first bytes.
    /// - pinned: the version the origin must have (a strict fetch's), nil for whatever it holds now.
    case discover(pinned: [UInt8]?, range: ByteRange?)
    /// The version is known but chunks of `range` are absent.
    case fill(version: VersionRecord, range: ByteRange)
}
