import Crypto

/// One chunk index of a manifest.
public enum ManifestEntry: Hashable, Sendable {
    /// The chunk with this digest, stored in the cache.
    case stored(ChunkDigest)
    /// An all-zero chunk: nothing is stored.
    case zero
    /// Not in the cache (never downloaded, or dropped by `verify --repair`); the digest when known.
    case absent(ChunkDigest?)
    /// Downloaded and not settled yet: its raw bytes wait at their own offset in the version's fill file,
    /// checked by this XXH3 of them (<doc:Contract#10-Origins-the-cold-path>; the hash the manifest knew before, if
    /// any, is kept beside them for the settler, which names the chunk).
    case filled(checksum: UInt64)
}
