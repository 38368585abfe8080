import FileIO
import Foundation
import LMDBKit
import Synchronization
import ZstdKit

/// Reusable zstd contexts and scratch buffers, one set per worker at a time.
///
/// What it guarantees: ``withDecoder(_:)`` and ``withCompressor(_:)`` lend a context to one caller for the
/// length of its body, and to nobody else meanwhile; they never wait (with none free, a new one is made) and
/// keep at most 16 of each for reuse. Any thread may borrow. A storage type, not a coordination type: its
/// lock only guards the free lists, so it stays in Store/.
final class CodecPool: Sendable {
    /// A decompression context with a staging buffer for decoded chunks waiting to be written (at least one
    /// chunk, ``FetchThresholds/stagingBytes`` when chunks are smaller), its pages already touched, and the
    /// vectors and run starts to write them with.
    /// `@unchecked Sendable`: used by one thread at a time, passed between threads only through the pool's lock.
    final class DecodeContext: @unchecked Sendable {
        let decompressor = Decompressor()
        let buffer: UnsafeMutableRawBufferPointer
        let vectors: UnsafeMutableBufferPointer<iovec>
        let runStarts: UnsafeMutableBufferPointer<RunWriter.RunStart>
        /// Where delta reads decode their bases (no buffer until the first one).
        let baseRoom: BaseRoom

        init(chunkSize: Int) {
            baseRoom = BaseRoom(chunkSize: chunkSize)
            buffer = .allocate(byteCount: max(chunkSize, FetchThresholds.stagingBytes), alignment: 4096)
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            vectors = .allocate(capacity: FetchThresholds.runChunks)
            vectors.initialize(repeating: iovec())
            runStarts = .allocate(capacity: FetchThresholds.runChunks)
            runStarts.initialize(repeating: RunWriter.RunStart(offset: 0, firstVector: 0))
        }

        /// The bases a delta read in `txn` decodes from, in this context's room.
        func bases<T: TransactionReading & ~Copyable>(in txn: borrowing T, _ dbs: Databases) -> SnapshotBases {
            SnapshotBases(txn, dbs, room: baseRoom)
        }

        deinit {
            buffer.deallocate()
            vectors.deallocate()
            runStarts.deallocate()
        }
    }

    private let chunkSize: Int
    private let level: Int32
    // Only the lock's owner touches the pooled objects; each is used by one thread at a time.
    private let decoders = Mutex<[DecodeContext]>([])
    private let encoders = Mutex<[EncodeContext]>([])

    /// `@unchecked Sendable` for the same reason as ``DecodeContext``.
    final class EncodeContext: @unchecked Sendable {
        let compressor: Compressor
        init(level: Int32) { compressor = Compressor(level: level) }
    }

    init(chunkSize: Int, level: Int32) {
        self.chunkSize = chunkSize
        self.level = level
    }

    func withDecoder<R>(_ body: (DecodeContext) throws -> R) rethrows -> R {
        let context = decoders.withLock { $0.popLast() } ?? DecodeContext(chunkSize: chunkSize)
        defer { decoders.withLock { if $0.count < 16 { $0.append(context) } } }
        return try body(context)
    }

    func withCompressor<R>(_ body: (Compressor) throws -> R) rethrows -> R {
        let context = encoders.withLock { $0.popLast() } ?? EncodeContext(level: level)
        defer { encoders.withLock { if $0.count < 16 { $0.append(context) } } }
        return try body(context.compressor)
    }
}
