import LMDBKit
import ZstdKit

/// How a delta chunk is stored (<doc:Contract#14-Chunk-encodings>): a zstd frame compressed against the raw bytes of
/// one or two *base* chunks, which it names.
///
/// `[encoding 2: 1][base count, 1 or 2: 1][reserved: 2][plain length: 4][base 1 raw length: 4]
/// [base 2 raw length, or 0: 4]` (the 16-byte header every chunk has), then each base's SHA-256 (32 bytes each),
/// then the frame. Integers are little-endian. The frame carries its content checksum, so a base other than the
/// one it was made against fails the decode, never yields other bytes.
///
/// The plain length is what the chunk would take stored plain (its zstd frame, or its raw bytes): `stat`'s
/// `deltaSavedBytes` is the sum of that minus the delta's length.
struct DeltaLayout: Equatable {
    /// The bases, in the order their raw bytes are concatenated into the frame's prefix, with their raw lengths.
    var bases: [(digest: ChunkDigest, rawLength: Int)]
    var plainLength: Int

    /// The most bases a delta names: two chunks' worth hold a chunk's bytes wherever a shift placed them.
    static let maxBases = 2

    static func == (a: DeltaLayout, b: DeltaLayout) -> Bool {
        a.plainLength == b.plainLength && a.bases.map(\.digest) == b.bases.map(\.digest)
            && a.bases.map(\.rawLength) == b.bases.map(\.rawLength)
    }

    /// The bytes before the frame: the header and the base digests.
    var headerLength: Int { ChunkCodec.headerSize + bases.count * ChunkDigest.byteCount }

    /// Reads a stored delta's header, or nil when it is not a well-formed one.
    init?(parsing stored: UnsafeRawBufferPointer) {
        guard ChunkCodec.isDelta(stored) else { return nil }
        let count = Int(stored[1])
        guard (1...Self.maxBases).contains(count), stored.count > ChunkCodec.headerSize + count * ChunkDigest.byteCount
        else { return nil }
        plainLength = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 4, as: UInt32.self)))
        bases = []
        for i in 0..<count {
            let length = Int(UInt32(littleEndian: stored.loadUnaligned(fromByteOffset: 8 + 4 * i, as: UInt32.self)))
            let start = ChunkCodec.headerSize + i * ChunkDigest.byteCount
            let digest = ChunkDigest(
                raw: UnsafeRawBufferPointer(rebasing: stored[start..<(start + ChunkDigest.byteCount)]))
            bases.append((digest, length))
        }
    }

    init(bases: [(digest: ChunkDigest, rawLength: Int)], plainLength: Int) {
        self.bases = bases
        self.plainLength = plainLength
    }

    /// Writes the header and digests at the start of `output` (at least ``headerLength`` bytes).
    func write(into output: UnsafeMutableRawBufferPointer) {
        UnsafeMutableRawBufferPointer(rebasing: output[..<ChunkCodec.headerSize])
            .initializeMemory(as: UInt8.self, repeating: 0)
        output[0] = ChunkCodec.Encoding.delta.rawValue
        output[1] = UInt8(bases.count)
        output.storeBytes(of: UInt32(plainLength).littleEndian, toByteOffset: 4, as: UInt32.self)
        for (i, base) in bases.enumerated() {
            output.storeBytes(of: UInt32(base.rawLength).littleEndian, toByteOffset: 8 + 4 * i, as: UInt32.self)
            base.digest.withUnsafeBytes { digest in
                let start = ChunkCodec.headerSize + i * ChunkDigest.byteCount
                UnsafeMutableRawBufferPointer(rebasing: output[start..<(start + ChunkDigest.byteCount)])
                    .copyMemory(from: digest)
            }
        }
    }
}

extension ChunkCodec {
    /// The raw bytes of a delta chunk, decoded into `buffer` against its bases (see
    /// ``decode(_:rawCount:decompressor:buffer:digest:bases:)``).
    static func decodeDelta(
        _ stored: UnsafeRawBufferPointer, rawCount: Int, decompressor: Decompressor,
        buffer: UnsafeMutableRawBufferPointer, digest: ChunkDigest, bases: some BaseValues
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        guard let layout = DeltaLayout(parsing: stored) else { throw corrupt(digest, "has a damaged delta header") }
        let prefix = try readBases(of: layout, for: digest, decompressor: decompressor, bases: bases)
        let frame = UnsafeRawBufferPointer(rebasing: stored[layout.headerLength...])
        let destination = UnsafeMutableRawBufferPointer(rebasing: buffer[..<rawCount])
        do {
            _ = try decompressor.decompress(frame, against: prefix, into: destination)
        } catch {
            throw corrupt(digest, "fails to decode against its base (\(error))")
        }
        return UnsafeRawBufferPointer(destination)
    }

    /// The bases' raw bytes, decoded one after the other into `bases.scratch`: the delta frame's prefix.
    static func readBases(
        of layout: DeltaLayout, for digest: ChunkDigest, decompressor: Decompressor, bases: some BaseValues
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        var length = 0
        let scratch = bases.scratch
        for base in layout.bases {
            guard base.rawLength > 0, length + base.rawLength <= scratch.count else {
                throw corrupt(digest, "names a base of \(base.rawLength) bytes, more than two chunks hold")
            }
            let target = UnsafeMutableRawBufferPointer(rebasing: scratch[length..<(length + base.rawLength)])
            if let decoded = bases.decoded, decoded.copy(base.digest, length: base.rawLength, into: target) {
                length += base.rawLength
                continue
            }
            let found: Void?
            do {
                found = try bases.withStoredChunk(base.digest) { stored in
                    let raw = try decodePlain(
                        stored, rawCount: base.rawLength, decompressor: decompressor, buffer: target,
                        digest: base.digest)
                    if raw.baseAddress != UnsafeRawPointer(target.baseAddress) { target.copyMemory(from: raw) }
                }
            } catch let error as CacheError where error.code == .corruptData {
                // The base's message ends with the remedy, which drops the delta too.
                throw CacheError(.corruptData, "chunk \(digest) cannot be read: its base \(error.message)")
            } catch {
                throw CacheError.wrap(error, store: "", doing: "reading the base of chunk \(digest)")
            }
            guard found != nil else {
                throw corrupt(digest, "cannot be read: its base chunk \(base.digest) is missing")
            }
            bases.decoded?.keep(base.digest, UnsafeRawBufferPointer(target))
            length += base.rawLength
        }
        return UnsafeRawBufferPointer(rebasing: scratch[..<length])
    }
}

/// When a delta pays: shared by the put's encoder and the store's re-encoding of a chunk against new bases.
extension DeltaLayout {
    /// A delta is kept when it is smaller than the plain form and at most this fraction of the chunk (a plain
    /// frame that small is rare)…
    static let smallDeltaDivisor = 32
    /// …or saves at least a quarter of the plain form: reading a delta costs its bases' decode too.
    static let requiredSavingDivisor = 4

    /// The longest frame worth keeping for a chunk of `rawCount` bytes whose plain form takes `plainLength`
    /// bytes of payload: the delta's payload (its base digests and frame) must be smaller than the plain form,
    /// and at most 1/32 of the chunk or a quarter smaller than the plain form. 0 or less: no delta pays.
    static func frameBudget(rawCount: Int, plainLength: Int, layout: DeltaLayout) -> Int {
        let worthwhile = min(
            max(rawCount / smallDeltaDivisor, plainLength - plainLength / requiredSavingDivisor), plainLength - 1)
        return min(worthwhile, ChunkCodec.worthwhileLength(rawCount: rawCount)) - layout.headerLength
            + ChunkCodec.headerSize
    }
}
