import FileIO

/// Why a chunk could not be read.
enum UnreadableChunk {
    /// Its manifest entry is `absent`: evicted, dropped by a repair, or never downloaded.
    case absent
    /// Its entry names a stored chunk the `chunks` database lacks.
    case missing(ChunkDigest)
    /// The stored chunk fails its check; `error` (`corruptData`) says which.
    case damaged(ChunkDigest, CacheError)
    /// A fill's bytes are missing, short, or fail the XXH3 its entry holds: lost to a system crash, or settled
    /// and removed since the read's snapshot.
    case fillLost
}
