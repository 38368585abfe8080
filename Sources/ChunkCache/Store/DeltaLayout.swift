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

/// Where a delta's bases are read from while it is decoded: the stored values of plain chunks, and room to
/// decode two of them side by side (the frame's prefix).
package protocol BaseValues {
    /// At least two chunks of scratch space.
    var scratch: UnsafeMutableRawBufferPointer { get }
    /// Bases decoded by earlier reads, kept by digest; nil where none are kept.
    var decoded: DecodedBases? { get }
    /// Calls `body` with the stored value of chunk `digest`; nil when the store does not hold it.
    func withStoredChunk<R>(_ digest: ChunkDigest, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?
}

/// The bases of one LMDB snapshot: valid while the transaction it was made from lasts.
struct SnapshotBases: BaseValues {
    private let view: TransactionView
    private let chunks: Database
    private let room: BaseRoom

    /// - Parameter room: Where bases are decoded, and kept decoded between reads.
    init<T: TransactionReading & ~Copyable>(_ txn: borrowing T, _ dbs: Databases, room: BaseRoom) {
        view = TransactionView(handle: txn.handle)
        chunks = dbs.chunks
        self.room = room
    }

    var scratch: UnsafeMutableRawBufferPointer { room.scratch }
    var decoded: DecodedBases? { room.decoded }

    func withStoredChunk<R>(_ digest: ChunkDigest, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let stored = try digest.withUnsafeBytes({ try view.unsafeValue(chunks, key: $0) }) else { return nil }
        return try body(stored)
    }
}

/// Room to decode a delta's bases in, and the bases decoded before: made with its owner (a decode context),
/// its buffers only at the first delta read, so reads of plain chunks never pay for them (nor allocate per
/// read). Used by one thread at a time.
final class BaseRoom {
    let chunkSize: Int
    private let keepsDecoded: Bool
    private var buffer: UnsafeMutableRawBufferPointer?
    private var kept: DecodedBases?

    /// - Parameters:
    ///   - chunkSize: The largest base: two of them fit side by side.
    ///   - keepsDecoded: Whether bases are kept between reads (``DecodedBases``).
    init(chunkSize: Int, keepsDecoded: Bool = true) {
        self.chunkSize = chunkSize
        self.keepsDecoded = keepsDecoded
    }

    deinit { buffer?.deallocate() }

    var scratch: UnsafeMutableRawBufferPointer {
        if let buffer { return buffer }
        let made = UnsafeMutableRawBufferPointer.allocate(byteCount: DeltaLayout.maxBases * chunkSize, alignment: 4096)
        buffer = made
        return made
    }

    var decoded: DecodedBases? {
        guard keepsDecoded else { return nil }
        if let kept { return kept }
        let made = DecodedBases(chunkSize: chunkSize)
        kept = made
        return made
    }
}

/// A transaction borrowed by its handle, so that a decode deep in a call can read bases from it. Only made
/// from a live transaction, and used while that transaction lasts.
private struct TransactionView: TransactionReading {
    let handle: OpaquePointer
}

/// No bases at all: where a chunk is checked on its own (the fuzz target), a delta cannot be read.
package struct NoBases: BaseValues {
    package let scratch = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    package init() {}
    package var decoded: DecodedBases? { nil }
    package func withStoredChunk<R>(_: ChunkDigest, _: (UnsafeRawBufferPointer) throws -> R) throws -> R? { nil }
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

/// Bases decoded by earlier delta reads, kept by digest so that the next delta, which mostly shares one of
/// them (consecutive chunks of a version are placed on consecutive chunks of the previous one), decodes one
/// base rather than two. A digest names its bytes for good, so a kept base never goes stale; only bytes that
/// passed their check are kept. Used by one thread at a time, as its ``CodecPool/DecodeContext`` is.
package final class DecodedBases {
    private let chunkSize: Int
    private let slots: UnsafeMutableRawBufferPointer
    private var names: [(digest: ChunkDigest, length: Int)?]
    private var next = 0

    /// Bases kept: the two of one delta and the two of the next.
    static let count = 4

    init(chunkSize: Int) {
        self.chunkSize = chunkSize
        slots = .allocate(byteCount: Self.count * chunkSize, alignment: 4096)
        names = Array(repeating: nil, count: Self.count)
    }

    deinit { slots.deallocate() }

    /// Copies the kept bytes of `digest` into `target`; false when they are not kept.
    func copy(_ digest: ChunkDigest, length: Int, into target: UnsafeMutableRawBufferPointer) -> Bool {
        guard let slot = names.firstIndex(where: { $0?.digest == digest && $0?.length == length }) else { return false }
        target.copyMemory(
            from: UnsafeRawBufferPointer(rebasing: slots[(slot * chunkSize)..<(slot * chunkSize + length)]))
        return true
    }

    /// Keeps the checked bytes of base `digest`, in place of the oldest kept.
    func keep(_ digest: ChunkDigest, _ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= chunkSize, !names.contains(where: { $0?.digest == digest }) else { return }
        UnsafeMutableRawBufferPointer(rebasing: slots[(next * chunkSize)..<(next * chunkSize + bytes.count)])
            .copyMemory(from: bytes)
        names[next] = (digest, bytes.count)
        next = (next + 1) % Self.count
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
