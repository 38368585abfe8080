import LMDBKit
import ZstdKit

/// Decodes a delta and encodes it again, against new bases or plain: the re-encoding of the deltas of a base
/// that goes. Made only when a base with deltas is deleted, so a store without deltas never pays for its buffers.
final class Reencoder {
    private let decompressor = Decompressor()
    private let compressor = Compressor(level: StoreSettings.standard.compressionLevel)
    private var raw: [UInt8] = []
    private var room: BaseRoom?

    /// The chunk stored as `stored`, decoded with its bases from `txn`, then encoded against `newBases` when
    /// that beats its plain form by the ingest's margin (``DeltaEncoder``), else plain; with the delta's layout.
    /// - Throws: `corruptData` when it does not decode (a damaged delta or base), which fails the transaction:
    ///   the store stays as it was and `verify --repair` drops the damage.
    func reencode<T: TransactionReading & ~Copyable>(
        _ stored: UnsafeRawBufferPointer, rawCount: Int, digest: ChunkDigest,
        against newBases: [(digest: ChunkDigest, rawLength: Int)], in txn: borrowing T, _ dbs: Databases
    ) throws -> (bytes: [UInt8], layout: DeltaLayout?) {
        if raw.count < rawCount { raw = [UInt8](repeating: 0, count: rawCount) }
        let oldBases = DeltaLayout(parsing: stored)?.bases.map(\.rawLength) ?? []
        let largest = (oldBases + newBases.map(\.rawLength)).max() ?? 0
        let room =
            self.room.flatMap { $0.chunkSize >= largest ? $0 : nil }
            ?? BaseRoom(chunkSize: max(largest, 1), keepsDecoded: false)
        self.room = room
        return try raw.withUnsafeMutableBytes { rawBuffer in
            do {
                let reader = StoredChunkReader(dbs: dbs, decompressor: decompressor, room: room)
                let bytes = try reader.decode(stored, digest: digest, length: rawCount, into: rawBuffer, in: txn)
                var plain = [UInt8](repeating: 0, count: ChunkCodec.encodedBound(rawCount: rawCount))
                let plainLength = try plain.withUnsafeMutableBytes {
                    try ChunkCodec.encode(bytes, compressor: compressor, into: $0)
                }
                plain.removeLast(plain.count - plainLength)
                guard !newBases.isEmpty else { return (plain, nil) }
                let layout = DeltaLayout(bases: newBases, plainLength: plainLength - ChunkCodec.headerSize)
                let prefix = try ChunkCodec.readBases(
                    of: layout, for: digest, decompressor: decompressor, bases: SnapshotBases(txn, dbs, room: room))
                var delta = [UInt8](
                    repeating: 0, count: ChunkCodec.encodedBound(rawCount: rawCount) + layout.headerLength)
                let budget = DeltaLayout.frameBudget(
                    rawCount: rawCount, plainLength: layout.plainLength, layout: layout)
                guard budget > 0,
                    let frameLength = try delta.withUnsafeMutableBytes({ output in
                        try compressor.compress(
                            bytes, against: prefix,
                            into: UnsafeMutableRawBufferPointer(
                                rebasing: output[layout.headerLength..<(layout.headerLength + budget)]))
                    })
                else { return (plain, nil) }
                delta.withUnsafeMutableBytes { layout.write(into: $0) }
                delta.removeLast(delta.count - layout.headerLength - frameLength)
                return (delta, layout)
            }
        }
    }
}
