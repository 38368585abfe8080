import Foundation

/// A chunk downloaded from an origin, hashed and encoded, ready to be stored.
struct DownloadedChunk: Sendable {
    let index: Int64
    /// nil for an all-zero chunk, which is never stored.
    let digest: ChunkDigest?
    /// The header and payload from ``ChunkCodec``; empty for a zero chunk.
    let encoded: [UInt8]
    let rawLength: Int
}
