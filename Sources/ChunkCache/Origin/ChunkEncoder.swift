import FileIO
import Foundation
import Synchronization

/// Hashes and encodes raw chunks for a transaction to store
/// (``WriteTransaction/storeDownloaded(_:manifestID:replacing:_:)``): the cold path's downloads and an import's small
/// files.
struct ChunkEncoder {
    let store: Store
    private var scratch: [UInt8]

    /// - Parameter largest: The largest raw chunk it will be given.
    init(store: Store, largest: Int) {
        self.store = store
        scratch = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: largest))
    }

    /// The digest a chunk is stored under: nil for all zeros, which is never stored.
    static func digest(of raw: UnsafeRawBufferPointer) -> ChunkDigest? {
        isAllZero(raw) ? nil : ChunkDigest(hashing: raw)
    }

    /// Chunk `index`: its digest (nil for all zeros, which is never stored) and stored form.
    mutating func encode(_ raw: UnsafeRawBufferPointer, index: Int64) throws -> DownloadedChunk {
        try encode(raw, index: index, digest: Self.digest(of: raw))
    }

    /// Chunk `index` whose digest (``digest(of:)``) is known: its stored form.
    mutating func encode(_ raw: UnsafeRawBufferPointer, index: Int64, digest: ChunkDigest?) throws -> DownloadedChunk {
        var encoded: [UInt8] = []
        if digest != nil {
            if scratch.count < ChunkCodec.encodedBound(rawCount: raw.count) {
                scratch = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: raw.count))
            }
            let store = self.store
            let count = try scratch.withUnsafeMutableBytes { output in
                try store.codecs.withCompressor { try ChunkCodec.encode(raw, compressor: $0, into: output) }
            }
            encoded = Array(scratch[..<count])
        }
        return DownloadedChunk(index: index, digest: digest, encoded: encoded, rawLength: raw.count)
    }
}
