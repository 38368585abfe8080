import FileIO
import ZstdKit

/// One ingest worker's means to store new chunks as deltas against the previous version (CONTRACT §14).
///
/// Its bases are decoded from the store into a small cache: consecutive new chunks mostly share a base chunk
/// (a chunk's bytes at a shift span two chunks of the previous version, the next chunk's the second of them and
/// the one after), so each base is decoded about once per ingest. Used by one thread at a time.
final class DeltaEncoder {
    private let source: DeltaSource
    private let store: Store
    /// The bases side by side: the delta frame's prefix.
    private let prefix: UnsafeMutableRawBufferPointer
    /// The frame being made.
    private let frame: UnsafeMutableRawBufferPointer
    /// Decoded bases, by digest.
    private var cached: [(digest: ChunkDigest, length: Int)?]
    private let cache: UnsafeMutableRawBufferPointer
    private var nextSlot = 0
    private var likelyShift: Int64 = 0
    private let decompressor = Decompressor()

    /// Decoded bases kept: the two of this chunk and the two of the next.
    private static let cachedBases = 4

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

    init(source: DeltaSource, store: Store) {
        self.source = source
        self.store = store
        let chunkSize = source.chunkSize
        prefix = .allocate(byteCount: DeltaLayout.maxBases * chunkSize, alignment: 4096)
        frame = .allocate(byteCount: ChunkCodec.encodedBound(rawCount: chunkSize), alignment: 64)
        cache = .allocate(byteCount: Self.cachedBases * chunkSize, alignment: 4096)
        cached = Array(repeating: nil, count: Self.cachedBases)
    }

    deinit {
        prefix.deallocate()
        frame.deallocate()
        cache.deallocate()
    }

    /// How ``encode(_:at:compressor:into:)`` stored a chunk.
    enum Encoded {
        case plain(length: Int)
        case delta(length: Int, layout: DeltaLayout)
    }

    /// Writes `raw` (at `offset` of the new version) into `output` (at least ``ChunkCodec/encodedBound(rawCount:)``
    /// bytes) as a delta when it has a base and beats its plain form by the margin (``frameBudget(rawCount:plainLength:layout:)``),
    /// else plain. A base that cannot be read is no base.
    ///
    /// The delta is made first. One of at most 1/32 of the chunk that is smaller than its base's stored payload (which
    /// a chunk nearly equal to its base would take plain) is kept without compressing the chunk plain too: most
    /// deltas of a version series are that small, and the plain compression would double the ingest's work. Its
    /// plain length is then recorded as that estimate.
    @available(*, noasync)
    func encode(
        _ raw: UnsafeRawBufferPointer, at offset: Int64, compressor: Compressor,
        into output: UnsafeMutableRawBufferPointer
    ) throws -> Encoded {
        func plain() throws -> Int { try ChunkCodec.encode(raw, compressor: compressor, into: output) }
        let bases = source.bases(for: raw, at: offset, likelyShift: &likelyShift)
        guard !bases.isEmpty, let prefixLength = try? fillPrefix(with: bases) else {
            return .plain(length: try plain())
        }
        var layout = DeltaLayout(bases: bases.map { ($0.digest, $0.rawLength) }, plainLength: 0)
        let capacity = ChunkCodec.worthwhileLength(rawCount: raw.count) - layout.headerLength + ChunkCodec.headerSize
        guard capacity > 0,
            let frameLength = try? compressor.compress(
                raw, against: UnsafeRawBufferPointer(rebasing: prefix[..<prefixLength]),
                into: UnsafeMutableRawBufferPointer(rebasing: frame[..<capacity]))
        else { return .plain(length: try plain()) }
        let payload = layout.headerLength - ChunkCodec.headerSize + frameLength
        let estimate = Self.plainEstimate(of: raw.count, from: bases)
        if payload <= raw.count / Self.smallDeltaDivisor, payload < estimate {
            layout.plainLength = estimate
        } else {
            let plainLength = try plain() - ChunkCodec.headerSize
            guard frameLength <= Self.frameBudget(rawCount: raw.count, plainLength: plainLength, layout: layout) else {
                return .plain(length: plainLength + ChunkCodec.headerSize)
            }
            layout.plainLength = plainLength
        }
        layout.write(into: output)
        UnsafeMutableRawBufferPointer(rebasing: output[layout.headerLength..<(layout.headerLength + frameLength)])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: frame[..<frameLength]))
        return .delta(length: layout.headerLength + frameLength, layout: layout)
    }

    /// What a chunk of `rawCount` bytes nearly equal to its bases would take plain: their stored payload per raw byte.
    static func plainEstimate(of rawCount: Int, from bases: [DeltaSource.PlainChunk]) -> Int {
        let raw = bases.reduce(0) { $0 + $1.rawLength }
        let stored = bases.reduce(0) { $0 + $1.storedLength }
        return raw == 0 ? rawCount : Int(Int64(stored) * Int64(rawCount) / Int64(raw))
    }

    /// Decodes `bases` one after the other into the prefix, from the cache or the store; returns their length.
    @available(*, noasync)
    private func fillPrefix(with bases: [DeltaSource.PlainChunk]) throws -> Int {
        var length = 0
        for base in bases {
            let decoded = try decoded(base)
            UnsafeMutableRawBufferPointer(rebasing: prefix[length..<(length + base.rawLength)]).copyMemory(
                from: decoded)
            length += base.rawLength
        }
        return length
    }

    /// The raw bytes of a base, decoded into the cache when not there yet.
    @available(*, noasync)
    private func decoded(_ base: DeltaSource.PlainChunk) throws -> UnsafeRawBufferPointer {
        let chunkSize = source.chunkSize
        func slotBytes(_ slot: Int, _ length: Int) -> UnsafeMutableRawBufferPointer {
            UnsafeMutableRawBufferPointer(rebasing: cache[(slot * chunkSize)..<(slot * chunkSize + length)])
        }
        if let slot = cached.firstIndex(where: { $0?.digest == base.digest }) {
            return UnsafeRawBufferPointer(slotBytes(slot, base.rawLength))
        }
        let slot = nextSlot
        nextSlot = (nextSlot + 1) % Self.cachedBases
        cached[slot] = nil
        let target = slotBytes(slot, base.rawLength)
        let dbs = store.dbs
        try store.environment.read { txn in
            guard let stored = try base.digest.withUnsafeBytes({ try txn.unsafeValue(dbs.chunks, key: $0) }) else {
                throw CacheError(.transient, "base chunk \(base.digest) left the store during the ingest")
            }
            let raw = try ChunkCodec.decodePlain(
                stored, rawCount: base.rawLength, decompressor: decompressor, buffer: target, digest: base.digest)
            if raw.baseAddress != UnsafeRawPointer(target.baseAddress) { target.copyMemory(from: raw) }
        }
        cached[slot] = (base.digest, base.rawLength)
        return UnsafeRawBufferPointer(target)
    }
}
