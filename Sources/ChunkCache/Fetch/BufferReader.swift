import FileIO
import LMDBKit

/// Reads part of a planned version straight into a caller's buffer: no temp file, no write.
///
/// The mount and the buffer-returning API serve reads this way. Whole chunks of zstd are decoded in place in
/// the caller's buffer; raw chunks and the partly covered chunks at either end are copied from LMDB's map or
/// from the decoder's scratch buffer. Every chunk is checked before a byte of it is handed over.
enum BufferReader {
    /// Fills `buffer` with the bytes of `plan`'s version from `offset` on, stopping at EOF, and returns how
    /// many it wrote. `plan` must cover those bytes (plan it with `minimal` = `offset` and the buffer's length).
    /// On a throw, or when a chunk is damaged, the buffer's contents are unspecified.
    ///
    /// - Returns: The count read, or on an origin domain the first stored chunk found damaged.
    static func read<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer, store: Store,
        in txn: borrowing T
    ) throws -> BufferRead {
        let size = plan.version.size
        guard offset < size, buffer.count > 0 else { return .read(0) }
        let count = Int(min(Int64(buffer.count), size - offset))
        let end = offset + Int64(count)
        let layout = plan.version.layout
        let dbs = store.dbs
        let indices = (offset >> layout.shift)..<((end - 1) >> layout.shift + 1)
        try prefetch(indices, of: plan, dbs: dbs, in: txn)
        return try store.codecs.withDecoder { context -> BufferRead in
            let reader = StoredChunkReader(context, dbs)
            var cursor = ManifestCursor(manifestID: plan.version.manifestID, dbs: dbs)
            for index in indices {
                let chunk = layout.range(ofChunk: index, length: size)
                let lower = max(chunk.location, offset)
                let upper = min(chunk.end, end)
                let target = UnsafeMutableRawBufferPointer(rebasing: buffer[Int(lower - offset)..<Int(upper - offset)])
                // A whole chunk is decoded or read in place; a partly covered one in the context's buffer.
                let whole = lower == chunk.location && upper == chunk.end
                // One chunk: its pages read in one request, not a fault each (several: prefetched above).
                switch try reader.read(
                    try cursor.entry(index, in: txn), of: plan.version.manifestID, spanning: chunk,
                    into: { whole ? target : context.buffer }, willNeed: indices.count == 1, in: txn)
                {
                case .zero:
                    target.initializeMemory(as: UInt8.self, repeating: 0)
                case .bytes(let bytes):
                    if bytes.baseAddress != UnsafeRawPointer(target.baseAddress) {
                        target.copyMemory(
                            from: UnsafeRawBufferPointer(
                                rebasing: bytes[Int(lower - chunk.location)..<Int(upper - chunk.location)]))
                    }
                case .unreadable(let why):
                    return .damaged(try plan.damage(why, index: index))
                }
            }
            return .read(count)
        }
    }

    /// Starts the reads of the stored chunks `indices` of `plan` from disk at once (``MappedPages/willNeed(_:)``),
    /// before they are read one by one: a store whose pages left the page cache is read in one request per
    /// chunk, all in flight together, instead of a 4 KiB fault at a time. Costs an LMDB lookup and an
    /// `madvise` per chunk, so only reads of several chunks ask; a read of one chunk asks for its pages as it
    /// reaches them, with no second lookup.
    private static func prefetch<T: TransactionReading & ~Copyable>(
        _ indices: Range<Int64>, of plan: FetchPlan, dbs: Databases, in txn: borrowing T
    ) throws {
        guard indices.count > 1 else { return }
        var cursor = ManifestCursor(manifestID: plan.version.manifestID, dbs: dbs)
        for index in indices {
            guard case .stored(let digest) = try cursor.entry(index, in: txn),
                let stored = try digest.withUnsafeBytes({ try txn.unsafeValue(dbs.chunks, key: $0) })
            else { continue }
            MappedPages.willNeed(stored)
        }
    }

    /// What ``read(_:at:into:store:in:)`` did.
    enum BufferRead {
        /// How many bytes it read.
        case read(Int)
        case damaged(DamagedChunk)
    }
}
