import DeltaKit
import FileIO
import LMDBKit

/// The previous version of the item being ingested, indexed so that each new chunk finds its base there
/// (<doc:Contract#14-Chunk-encodings>).
///
/// A base is never a delta (depth 1), so what is indexed is the previous version's *plain* bytes: the version's
/// chunks in order, each plain chunk as itself and each delta as the plain chunks it was made against (each
/// once). A version whose chunks are deltas against the one before thus still serves as the base of the next,
/// through the plain chunks under it. Every piece takes a whole chunk of the indexed stream (a short last chunk
/// is padded with zeros), so a place in the stream names its chunk by a division.
///
/// Built once per ingest, at the first batch with a chunk the store lacks: the pieces are decoded in order, one
/// snapshot per manifest page, and streamed into a ``BaseIndex`` (never held whole).
final class DeltaSource: Sendable {
    let index: BaseIndex
    let chunkSize: Int
    /// The plain chunk of each chunk-sized piece of the indexed stream; nil for zeros.
    private let pieces: [PlainChunk?]

    /// A plain chunk of the store: a base candidate.
    struct PlainChunk: Equatable, Sendable {
        let digest: ChunkDigest
        let rawLength: Int
        /// Its payload as stored: about what a chunk nearly equal to it takes plain.
        var storedLength = 0
    }

    /// A chunk whose bytes lie in one piece but for 1/64 of them takes that piece alone as its base.
    static let oneBaseSlack = 64

    /// The largest previous version indexed: its index then takes at most 48 MiB (64 KiB blocks, a stream of
    /// up to twice the version when every chunk is a delta against two bases).
    static let maxPreviousLength: Int64 = 64 << 30

    /// The block size that keeps the index of `length` bytes to at most two million blocks (about 48 MiB).
    static func blockSize(forLength length: Int64) -> Int {
        var size = BaseIndex.defaultBlockSize
        while Int64(size) << 21 < length && size < BaseIndex.blockSizes.upperBound { size <<= 1 }
        return size
    }

    private init(index: BaseIndex, chunkSize: Int, pieces: [PlainChunk?]) {
        self.index = index
        self.chunkSize = chunkSize
        self.pieces = pieces
    }

    /// Indexes `version`, or returns nil when it cannot serve as a base (empty, too large, or gone meanwhile).
    @available(*, noasync)
    static func build(from version: VersionRecord, store: Store, cancellation: CancellationFlag) throws -> DeltaSource?
    {
        guard version.size > 0, version.size <= maxPreviousLength, version.layout == store.layout else { return nil }
        let layout = version.layout
        let chunkSize = layout.chunkSize
        let chunkCount = layout.chunkCount(forLength: version.size)
        var index = BaseIndex(blockSize: blockSize(forLength: version.size), expectedLength: version.size)
        var pieces: [PlainChunk?] = []
        pieces.reserveCapacity(Int(chunkCount))
        var indexed = Set<ChunkDigest>()
        let dbs = store.dbs
        var first: Int64 = 0
        while first < chunkCount {
            try cancellation.check()
            let end = min(first + ManifestPage.entriesPerPage, chunkCount)
            let stillThere = try store.environment.read { txn in
                let page = Keys.manifestPage(version.manifestID, page: ManifestPage.page(ofChunk: first))
                guard try txn.contains(dbs.manifests, key: page) else { return false }
                try store.codecs.withDecoder { context in
                    func append(_ bytes: UnsafeRawBufferPointer, as piece: PlainChunk?) {
                        index.append(bytes)
                        if bytes.count < chunkSize { index.append(ZeroBytes.prefix(chunkSize - bytes.count)) }
                        pieces.append(piece)
                    }
                    var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
                    for chunk in first..<end {
                        let length = Int(layout.range(ofChunk: chunk, length: version.size).length)
                        guard case .stored(let digest) = try cursor.entry(chunk, in: txn),
                            let stored = try digest.withUnsafeBytes({ try txn.unsafeValue(dbs.chunks, key: $0) })
                        else {
                            // A zero chunk, or one an origin version lacks: zeros keep the places right.
                            append(ZeroBytes.prefix(length), as: nil)
                            continue
                        }
                        let plain =
                            DeltaLayout(parsing: stored)?.bases.map {
                                PlainChunk(digest: $0.digest, rawLength: $0.rawLength)
                            }
                            ?? [PlainChunk(digest: digest, rawLength: length)]
                        for piece in plain where indexed.insert(piece.digest).inserted {
                            guard
                                let value = try piece.digest.withUnsafeBytes({
                                    try txn.unsafeValue(dbs.chunks, key: $0)
                                })
                            else { continue }
                            var stored = piece
                            stored.storedLength = value.count - ChunkCodec.headerSize
                            append(
                                try ChunkCodec.decodePlain(
                                    value, rawCount: piece.rawLength, decompressor: context.decompressor,
                                    buffer: context.buffer, digest: piece.digest), as: stored)
                        }
                    }
                }
                return true
            }
            guard stillThere else { return nil }
            store.environment.releaseMappedPages()
            first = end
        }
        return DeltaSource(index: index, chunkSize: chunkSize, pieces: pieces)
    }

    /// The plain chunks to make `chunk` (at `offset` of the new version) a delta against: the two pieces of the
    /// indexed stream from the piece where the rolling match places the chunk's first bytes; empty when no block
    /// of it is found there.
    ///
    /// - Parameter likelyShift: The previous chunk's shift, updated to this one's.
    func bases(for chunk: UnsafeRawBufferPointer, at offset: Int64, likelyShift: inout Int64) -> [PlainChunk] {
        guard
            let match = index.findBase(
                for: chunk, at: offset, maxLength: DeltaLayout.maxBases * chunkSize, likelyShift: likelyShift)
        else { return [] }
        likelyShift = match.shift
        let start = max(0, offset + match.shift)
        var positions = Int(start / Int64(chunkSize))...Int(start / Int64(chunkSize)) + 1
        // Where the chunk's bytes sit (nearly) whole in one piece, that piece alone: a read decodes one base, not
        // two. An edit in place (shift 0) is the common case; a tail of up to 1/64 in the other piece costs
        // a few hundred bytes of delta.
        let within = Int(start % Int64(chunkSize))
        if within <= chunkSize / Self.oneBaseSlack {
            positions = positions.lowerBound...positions.lowerBound
        } else if within >= chunkSize - chunkSize / Self.oneBaseSlack {
            positions = positions.upperBound...positions.upperBound
        }
        return positions.compactMap { $0 < pieces.count ? pieces[$0] : nil }
    }
}
