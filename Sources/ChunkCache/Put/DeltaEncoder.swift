import FileIO
import ZstdKit

/// One ingest worker's means to store new chunks as deltas against the previous version
/// (<doc:Contract#14-Chunk-encodings>).
///
/// Its bases are decoded as a read decodes them (``ChunkCodec/readBases(of:for:decompressor:bases:)``), in a
/// ``BaseRoom`` that keeps the last ones: consecutive new chunks mostly share a base chunk (a chunk's bytes at a
/// shift span two chunks of the previous version, the next chunk's the second of them and the one after), so
/// each base is decoded about once per ingest. Used by one thread at a time.
final class DeltaEncoder {
    private let source: DeltaSource
    private let store: Store
    /// Where the bases are decoded side by side (the delta frame's prefix), and kept.
    private let room: BaseRoom
    /// The frame being made.
    private let frame: UnsafeMutableRawBufferPointer
    private var likelyShift: Int64 = 0
    private let decompressor = Decompressor()

    init(source: DeltaSource, store: Store) {
        self.source = source
        self.store = store
        room = BaseRoom(chunkSize: source.chunkSize)
        frame = .allocate(byteCount: ChunkCodec.encodedBound(rawCount: source.chunkSize), alignment: 64)
    }

    deinit { frame.deallocate() }

    /// How ``encode(_:at:compressor:into:)`` stored a chunk.
    enum Encoded {
        case plain(length: Int)
        case delta(length: Int, layout: DeltaLayout)
    }

    /// Writes `raw` (at `offset` of the new version) into `output` (at least ``ChunkCodec/encodedBound(rawCount:)``
    /// bytes) as a delta when it has a base and beats its plain form by the margin
    /// (``DeltaLayout/frameBudget(rawCount:plainLength:layout:)``), else plain. A base that cannot be read is no base.
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
        var layout = DeltaLayout(bases: bases.map { ($0.digest, $0.rawLength) }, plainLength: 0)
        guard let first = bases.first, let prefix = try? readBases(of: layout, first.digest) else {
            return .plain(length: try plain())
        }
        let capacity = ChunkCodec.worthwhileLength(rawCount: raw.count) - layout.headerLength + ChunkCodec.headerSize
        guard capacity > 0,
            let frameLength = try? compressor.compress(
                raw, against: prefix,
                into: UnsafeMutableRawBufferPointer(rebasing: frame[..<capacity]))
        else { return .plain(length: try plain()) }
        let payload = layout.headerLength - ChunkCodec.headerSize + frameLength
        let estimate = Self.plainEstimate(of: raw.count, from: bases)
        if payload <= raw.count / DeltaLayout.smallDeltaDivisor, payload < estimate {
            layout.plainLength = estimate
        } else {
            let plainLength = try plain() - ChunkCodec.headerSize
            guard frameLength <= DeltaLayout.frameBudget(rawCount: raw.count, plainLength: plainLength, layout: layout)
            else {
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

    /// The bases' raw bytes side by side, read in a snapshot of the store (a base gone meanwhile throws).
    @available(*, noasync)
    private func readBases(of layout: DeltaLayout, _ name: ChunkDigest) throws -> UnsafeRawBufferPointer {
        try store.environment.read { txn in
            try ChunkCodec.readBases(
                of: layout, for: name, decompressor: decompressor, bases: SnapshotBases(txn, store.dbs, room: room))
        }
    }
}
