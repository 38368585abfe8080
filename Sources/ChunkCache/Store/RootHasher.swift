import Crypto

/// The hash that names a version's bytes: SHA-256 over the length (8 bytes, little-endian), then per chunk a
/// tag (0 for an all-zero chunk, 1 for data) and, for data, the chunk's digest. The ingest computes it as it
/// reads; `verify` derives it again from the manifest to catch a manifest that no longer matches its version.
struct RootHasher {
    private var hasher = SHA256()

    init(length: Int64) {
        withUnsafeBytes(of: length.littleEndian) { hasher.update(bufferPointer: $0) }
    }

    /// Adds the next chunk: its digest, or nil for an all-zero chunk.
    mutating func add(_ digest: ChunkDigest?) {
        let tag: UInt8 = digest == nil ? 0 : 1
        withUnsafeBytes(of: tag) { hasher.update(bufferPointer: $0) }
        digest?.withUnsafeBytes { hasher.update(bufferPointer: $0) }
    }

    func finalize() -> ChunkDigest {
        hasher.finalize().withUnsafeBytes { ChunkDigest(raw: $0) }
    }
}
