/// A stored chunk that failed its check (XXH3 or the zstd frame checksum) while a fetch read it.
struct DamagedChunk: Sendable, Equatable {
    let index: Int64
    /// The stored chunk's digest; nil for a fill (``ManifestEntry/filled(checksum:)``), lost or settled since
    /// the read's snapshot.
    let digest: ChunkDigest?
}
