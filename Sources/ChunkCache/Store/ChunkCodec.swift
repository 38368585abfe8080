import CXXHash
import ZstdKit

/// How a chunk's payload is stored, and how it is checked on every read.
///
/// A stored value is a 16-byte header then the payload:
/// `[encoding: 1 byte][reserved: 7][xxh3-64 of the raw bytes: 8, raw and hot encodings only]`.
/// A zstd payload carries its own frame checksum; a raw payload is checked with XXH3, an order of magnitude
/// cheaper than SHA-256, which stays for ingest and `verify`. A delta's header and payload are laid out in
/// ``DeltaLayout``: a zstd frame made against the raw bytes of one or two *base* chunks it names.
package enum ChunkCodec {
    package enum Encoding: UInt8 {
        case zstd = 0
        case raw = 1
        /// A zstd frame against one or two plain chunks (<doc:Contract#14-Chunk-encodings>): ``DeltaLayout``.
        case delta = 2
        /// Raw bytes of a chunk the hot tier promoted from zstd (``HotTier``): read like `raw`, re-compressed
        /// when it cools.
        case hot = 3
    }

    static let headerSize = 16

    /// The most bytes an encoded chunk of `rawCount` bytes takes.
    static func encodedBound(rawCount: Int) -> Int { headerSize + max(rawCount, Compressor.bound(for: rawCount)) }

    /// Encodes `raw` into `output` (at least ``encodedBound(rawCount:)`` bytes), returning its length.
    ///
    /// The longest compressed form worth keeping of `rawCount` bytes: compression must save at least 1/32
    /// of the bytes to pay for its decode on every read; otherwise the chunk is stored raw and served
    /// straight from LMDB's map.
    package static func worthwhileLength(rawCount: Int) -> Int { rawCount - rawCount / 32 }

    /// Compression must save at least 1/32 of the bytes (``worthwhileLength(rawCount:)``).
    static func encode(
        _ raw: UnsafeRawBufferPointer, compressor: Compressor, into output: UnsafeMutableRawBufferPointer
    ) throws -> Int {
        let worthwhile = worthwhileLength(rawCount: raw.count)
        let body = UnsafeMutableRawBufferPointer(rebasing: output[headerSize..<(headerSize + worthwhile)])
        // The header's unused bytes are zero; the body is written whole below (a memset of it cost a pass).
        UnsafeMutableRawBufferPointer(rebasing: output[..<headerSize]).initializeMemory(as: UInt8.self, repeating: 0)
        if worthwhile > 0, let frameLength = try compressor.compress(raw, into: body) {
            output[0] = Encoding.zstd.rawValue
            return headerSize + frameLength
        }
        output[0] = Encoding.raw.rawValue
        output.storeBytes(of: checksum(raw).littleEndian, toByteOffset: 8, as: UInt64.self)
        UnsafeMutableRawBufferPointer(rebasing: output[headerSize..<(headerSize + raw.count)]).copyMemory(from: raw)
        return headerSize + raw.count
    }

    /// The XXH3-64 of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        XXH3_64bits(bytes.baseAddress, bytes.count)
    }

    /// Whether a stored value needs decoding (a zstd frame or a delta) rather than being raw bytes.
    static func isCompressed(_ stored: UnsafeRawBufferPointer) -> Bool {
        stored.count >= headerSize && (stored[0] == Encoding.zstd.rawValue || stored[0] == Encoding.delta.rawValue)
    }

    /// Whether a stored value is a delta, which names base chunks it cannot be read without.
    static func isDelta(_ stored: UnsafeRawBufferPointer) -> Bool {
        stored.count >= headerSize && stored[0] == Encoding.delta.rawValue
    }

    /// The raw bytes of a chunk, checked: borrowed from `stored` when it is raw, else decoded into `buffer`.
    ///
    /// - Parameters:
    ///   - stored: The value as read from the `chunks` database.
    ///   - rawCount: The chunk's length, from its manifest: a payload of another length is corrupt.
    ///   - buffer: Scratch space of at least `rawCount` bytes, reused across calls.
    ///   - bases: Where a delta's base chunks are read from (the same snapshot as `stored`), with room to decode them.
    /// - Throws: `corruptData` when the payload fails its checksum, is damaged, or has the wrong length, or, for a
    ///   delta, when a base is missing, damaged or itself a delta.
    package static func decode(
        _ stored: UnsafeRawBufferPointer, rawCount: Int, decompressor: Decompressor,
        buffer: UnsafeMutableRawBufferPointer, digest: ChunkDigest, bases: some BaseValues
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        if isDelta(stored) {
            return try decodeDelta(
                stored, rawCount: rawCount, decompressor: decompressor, buffer: buffer, digest: digest, bases: bases)
        }
        return try decodePlain(stored, rawCount: rawCount, decompressor: decompressor, buffer: buffer, digest: digest)
    }

    /// The raw bytes of a chunk that is not a delta (a delta is `corruptData` here: bases are plain, depth 1).
    package static func decodePlain(
        _ stored: UnsafeRawBufferPointer, rawCount: Int, decompressor: Decompressor,
        buffer: UnsafeMutableRawBufferPointer, digest: ChunkDigest
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        guard stored.count >= headerSize, let encoding = Encoding(rawValue: stored[0]), encoding != .delta else {
            throw corrupt(digest, "has an unknown header")
        }
        let payload = UnsafeRawBufferPointer(rebasing: stored[headerSize...])
        switch encoding {
        case .raw, .hot:
            guard payload.count == rawCount else {
                throw corrupt(digest, "has \(payload.count) bytes, not \(rawCount)")
            }
            let expected = UInt64(littleEndian: stored.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            guard checksum(payload) == expected else { throw corrupt(digest, "fails its XXH3 checksum") }
            return payload
        case .zstd:
            // Every frame is written with its checksum: one whose flag (bit 2 of the header descriptor, after
            // the 4-byte magic) was flipped off would decode damaged bytes without a sound.
            guard payload.count > 4, payload[4] & 0x04 != 0 else {
                throw corrupt(digest, "has lost its frame checksum")
            }
            let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[..<rawCount])
            do {
                _ = try decompressor.decompress(payload, into: destination)
            } catch {
                throw corrupt(digest, "fails to decode (\(error))")
            }
            return UnsafeRawBufferPointer(destination)
        case .delta:
            throw corrupt(digest, "is a delta where a plain chunk is needed")
        }
    }

    static func corrupt(_ digest: ChunkDigest, _ what: String) -> CacheError {
        CacheError(.corruptData, "chunk \(digest) \(what); run `chunkcache verify --repair` to drop it")
    }
}

/// Whether every byte of `bytes` is zero, a word at a time.
package func isAllZero(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    let count = bytes.count
    while offset + 8 <= count {
        if bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) != 0 { return false }
        offset += 8
    }
    while offset < count {
        if bytes[offset] != 0 { return false }
        offset += 1
    }
    return true
}
