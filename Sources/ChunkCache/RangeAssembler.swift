import Dispatch
import FileIO
import Foundation
import LMDBKit
import Synchronization

/// Writes a planned range of chunks into a sparse file at their own offsets.
///
/// Small ranges run on the calling thread; large ones are split into one contiguous run per core, each
/// with its own read snapshot (manifests and chunks of a published version never change, so the runs see
/// the same bytes). Raw chunks are written straight from LMDB's map; zstd chunks are decoded into a
/// reused, already-touched buffer. Every chunk is checked (XXH3 or the zstd frame checksum) before a byte
/// of it is written.
enum RangeAssembler {
    /// Ranges at least this long are spread over the cores.
    static let parallelThreshold: Int64 = 256 << 10
    /// Every this many bytes a worker drops the process's mappings of the store's file, so a large fetch
    /// does not keep it resident. In strides, not per chunk: each `madvise` flushes the TLB on every core.
    static let releaseStride: Int64 = 64 << 20

    /// Ranges up to this long are assembled on the calling thread (with one more worker when parallel):
    /// a few milliseconds at most, cheaper than two thread wake-ups of a hop to the blocking pool.
    static let inlineLimit: Int64 = 4 << 20

    /// Writes `plan`'s range into `file`, which already has the item's full length. A single worker reads
    /// in `txn` (the snapshot the plan came from); parallel workers each open their own.
    static func assemble<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, store: Store, into file: FileDescriptor, cancellation: CancellationFlag, in txn: borrowing T
    ) throws {
        guard plan.retrieved.length > 0 else { return }
        let layout = plan.version.layout
        let first = plan.retrieved.location >> layout.shift
        let end = (plan.retrieved.end - 1) >> layout.shift + 1
        let count = end - first
        let workers = plan.retrieved.length >= parallelThreshold
            ? Int(min(count, Int64(ProcessInfo.processInfo.activeProcessorCount))) : 1
        if workers == 1 {
            try store.codecs.withDecoder { context in
                try writeChunks(first..<end, of: plan, store: store, into: file, cancellation: cancellation, context: context, in: txn)
            }
            return
        }
        let failure = Mutex<(any Error)?>(nil)
        let stop = CancellationFlag()
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            let lower = first + count * Int64(worker) / Int64(workers)
            let upper = first + count * Int64(worker + 1) / Int64(workers)
            do {
                try store.codecs.withDecoder { context in
                    try store.environment.read { txn in
                        try writeChunks(lower..<upper, of: plan, store: store, into: file, cancellation: cancellation,
                                        peers: stop, context: context, in: txn)
                    }
                }
            } catch {
                stop.cancel()
                failure.withLock { if $0 == nil { $0 = error } }
            }
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    private static func writeChunks<T: TransactionReading & ~Copyable>(
        _ indices: Range<Int64>, of plan: FetchPlan, store: Store, into file: FileDescriptor,
        cancellation: CancellationFlag, peers: CancellationFlag? = nil, context: CodecPool.DecodeContext, in txn: borrowing T
    ) throws {
        let layout = plan.version.layout
        let size = plan.version.size
        let dbs = store.dbs
        var sinceRelease: Int64 = 0
        var cursor = ManifestCursor(manifestID: plan.version.manifestID, dbs: dbs)
        for index in indices {
            try cancellation.check()
            if peers?.isCancelled == true { return }
            let range = layout.range(ofChunk: index, length: size)
            switch try cursor.entry(index, in: txn) {
            case .zero:
                // Inside a partial range a hole would read as "not materialized" (A7): write zeros.
                if !plan.wholeFile {
                    try file.writeAll(toAbsoluteOffset: range.location, ZeroBytes.prefix(Int(range.length)))
                }
            case .stored(let digest):
                guard let stored = try digest.withUnsafeBytes({ try txn.get(dbs.chunks, key: $0) }) else {
                    throw CacheError(.corruptData, "chunk \(digest) of item \"\(plan.item.identifier)\" is missing from the store; run `chunkcache verify --repair`")
                }
                let bytes = try ChunkCodec.decode(
                    stored, rawCount: Int(range.length), decompressor: context.decompressor,
                    buffer: context.buffer, digest: digest)
                try file.writeAll(toAbsoluteOffset: range.location, bytes)
                sinceRelease += range.length
                if sinceRelease >= releaseStride {
                    store.environment.releaseMappedPages()
                    sinceRelease = 0
                }
            case .absent:
                throw CacheError(.versionNoLongerAvailable, "chunk \(index) of item \"\(plan.item.identifier)\" left the cache during the fetch; retry")
            }
        }
    }
}

/// A read-only run of zero bytes as long as the largest chunk, for zero chunks inside partial ranges.
enum ZeroBytes {
    // calloc'd and never written: the kernel backs it with the shared zero page.
    private nonisolated(unsafe) static let buffer = UnsafeRawBufferPointer(
        start: calloc(1, 1 << ChunkLayout.shifts.upperBound), count: 1 << ChunkLayout.shifts.upperBound)

    static func prefix(_ count: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[..<count]) }
}
