import LMDBKit

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

/// A transaction borrowed by its handle, so that a decode deep in a call can read bases from it. Only made
/// from a live transaction, and used while that transaction lasts.
private struct TransactionView: TransactionReading {
    let handle: OpaquePointer
}
