import FileIO
import LMDBKit
import ZstdKit

/// The one reader of stored chunks: from a manifest entry, or a chunk's stored value, to the chunk's plain
/// bytes, checked, or exactly why it cannot give them.
///
/// Every read makes the same checks: a raw or hot chunk its XXH3, a zstd chunk its frame checksum, a delta its
/// bases (plain, present, and decoding to the prefix its frame was made against), a fill the XXH3 its entry
/// holds; the length is the one the caller's manifest or reference gives. SHA-256, the chunk's name, is checked
/// only where asked (`verify`, `recover`). What a failure means is the caller's: a fetch of an origin domain
/// downloads a damaged chunk again, `verify` counts it, the hot tier leaves it cold.
///
/// A read that succeeds allocates nothing: plain bytes are borrowed from LMDB's map (raw chunks) or decoded into
/// the caller's buffer, and a delta's bases into the decode context's room. Used by one thread at a time, as its
/// context is.
struct StoredChunkReader {
    let dbs: Databases
    let decompressor: Decompressor
    /// Where a delta's bases are decoded.
    let room: BaseRoom

    init(dbs: Databases, decompressor: Decompressor, room: BaseRoom) {
        self.dbs = dbs
        self.decompressor = decompressor
        self.room = room
    }

    /// A reader with `context`'s decompressor and base room.
    init(_ context: CodecPool.DecodeContext, _ dbs: Databases) {
        self.init(dbs: dbs, decompressor: context.decompressor, room: context.baseRoom)
    }

    /// Reads the chunk manifest `manifestID`'s `entry` names, which spans `chunk` of its version.
    ///
    /// - Parameters:
    ///   - buffer: Where a decoded or filled chunk goes: at least `chunk.length` bytes. Asked for only when the
    ///     entry names bytes to read (not for a zero or absent chunk), so a caller's staging is not taken for nothing.
    ///   - willNeed: Ask for a stored value's pages in one request before it is read (``MappedPages/willNeed(_:)``).
    ///   - txn: The snapshot the entry came from; borrowed bytes are valid while it lasts.
    /// - Throws: What reading the store or `buffer` throws; a chunk that cannot be read is a ``ChunkRead/unreadable(_:)``.
    func read<T: TransactionReading & ~Copyable>(
        _ entry: ManifestEntry, of manifestID: UInt64, spanning chunk: ByteRange,
        into buffer: () throws -> UnsafeMutableRawBufferPointer, willNeed: Bool = false, in txn: borrowing T
    ) throws -> ChunkRead {
        let length = Int(chunk.length)
        switch entry {
        case .zero:
            return .zero
        case .absent:
            return .unreadable(.absent)
        case .stored(let digest):
            guard let stored = try digest.withUnsafeBytes({ try txn.unsafeValue(dbs.chunks, key: $0) }) else {
                return .unreadable(.missing(digest))
            }
            if willNeed { MappedPages.willNeed(stored) }
            let target = try buffer()
            do {
                return .bytes(try decode(stored, digest: digest, length: length, into: target, in: txn))
            } catch {
                return .unreadable(.damaged(digest, error))
            }
        case .filled(let checksum):
            let target = try buffer()
            precondition(length <= target.count, "a chunk is larger than its buffer")
            guard
                let bytes = dbs.fillFiles.read(
                    manifestID: manifestID, at: chunk.location,
                    into: UnsafeMutableRawBufferPointer(rebasing: target[..<length]), checksum: checksum)
            else { return .unreadable(.fillLost) }
            return .bytes(bytes)
        }
    }

    /// The plain bytes of chunk `digest` whose stored value is `stored`, read in `txn` (where a delta's bases
    /// are). See ``decode(_:digest:length:into:decompressor:bases:checkingName:)``.
    func decode<T: TransactionReading & ~Copyable>(
        _ stored: UnsafeRawBufferPointer, digest: ChunkDigest, length: Int, into buffer: UnsafeMutableRawBufferPointer,
        checkingName: Bool = false, in txn: borrowing T
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        try Self.decode(
            stored, digest: digest, length: length, into: buffer, decompressor: decompressor,
            bases: SnapshotBases(txn, dbs, room: room), checkingName: checkingName)
    }

    /// The plain bytes of chunk `digest` whose stored value is `stored`, checked: borrowed from `stored` when it
    /// is raw or hot, else decoded into `buffer`.
    ///
    /// - Parameters:
    ///   - length: The chunk's length, from its manifest or reference: a payload of another length is damaged.
    ///   - buffer: Room for a decoded chunk, at least `length` bytes.
    ///   - bases: Where a delta's bases are read from.
    ///   - checkingName: Also check that the bytes hash (SHA-256) to `digest`.
    /// - Throws: `corruptData` naming the chunk and what fails: its checksum, its length, its delta's base, or its
    ///   name.
    static func decode(
        _ stored: UnsafeRawBufferPointer, digest: ChunkDigest, length: Int, into buffer: UnsafeMutableRawBufferPointer,
        decompressor: Decompressor, bases: some BaseValues, checkingName: Bool = false
    ) throws(CacheError) -> UnsafeRawBufferPointer {
        guard length > 0, length <= buffer.count else {
            throw ChunkCodec.corrupt(digest, "is said to hold \(length) bytes, more than a chunk")
        }
        let bytes = try ChunkCodec.decode(
            stored, rawCount: length, decompressor: decompressor, buffer: buffer, digest: digest, bases: bases)
        if checkingName, ChunkDigest(hashing: bytes) != digest {
            throw ChunkCodec.corrupt(digest, "does not hash to its name")
        }
        return bytes
    }
}

/// What reading one chunk came to (``StoredChunkReader``).
enum ChunkRead {
    /// The chunk's plain bytes, checked: in the caller's buffer, or a raw chunk's borrowed from LMDB's map,
    /// valid while the read's transaction lasts.
    case bytes(UnsafeRawBufferPointer)
    /// An all-zero chunk: nothing is stored and nothing was read.
    case zero
    case unreadable(UnreadableChunk)
}
