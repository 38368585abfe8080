import FileIO
import Foundation
import LMDBKit

/// Writes a planned range of chunks into a sparse file at their own offsets.
///
/// Small ranges, and ranges of raw chunks, run on the calling thread; large ranges of compressed chunks are
/// spread over the cores, each worker claiming a few chunks at a time and reading in its own snapshot
/// (manifests and chunks of a published version never change, so all see the same bytes). Raw chunks are
/// written straight from LMDB's map; zstd chunks are decoded into a reused, already-touched buffer; runs
/// of consecutive chunks go out in one `pwritev` (``RunWriter``). Every chunk is checked (XXH3 or the zstd
/// frame checksum) before a byte of it is written.
enum RangeAssembler {
    /// Writes `plan`'s range into `file`, which already has the item's full length. A single worker reads
    /// in `txn` (the snapshot the plan came from); parallel workers each open their own.
    ///
    /// - Returns: `.complete`, or on an origin domain the first stored chunk found damaged (the file is then
    ///   incomplete: the caller discards it).
    static func assemble<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, store: Store, into file: FileDescriptor, checkpoint: ChunkCheckpoint, in txn: borrowing T
    ) throws -> Assembly {
        guard plan.retrieved.length > 0 else { return .complete }
        let layout = plan.version.layout
        let first = plan.retrieved.location >> layout.shift
        let end = (plan.retrieved.end - 1) >> layout.shift + 1
        let count = end - first
        let writer = HandOffWriter(file: file, holesForZeros: plan.wholeFile)
        let workers =
            try plan.retrieved.length >= FetchThresholds.parallelBytes
            && startsWithCompressedChunks(plan, store: store, from: first, in: txn)
            ? Int(min(count, Int64(BlockingPool.width))) : 1
        if workers == 1 {
            return try store.codecs.withDecoder { context in
                try context.withRunWriter(into: writer) { run -> Assembly in
                    let stride = max(1, FetchThresholds.releaseStrideBytes >> layout.shift)
                    for lower in Swift.stride(from: first, to: end, by: Int(stride)) {
                        let upper = min(lower + stride, end)
                        let written = try writeChunks(
                            lower..<upper, of: plan, store: store, run: &run, checkpoint: checkpoint,
                            context: context, in: txn)
                        if case .damaged(let chunk) = written { return .damaged(chunk) }
                        // Queued raw chunks point into the map: written before its pages are released.
                        try run.flush()
                        if upper < end { store.environment.releaseMappedPages() }
                    }
                    return .complete
                }
            }
        }
        // Workers claim a few chunks at a time rather than a fixed share each: the calling thread starts at
        // once and the other joins when it wakes (tens of µs later), so neither waits on a straggler.
        let shared = ParallelRange(
            first..<end, claiming: Int64(max(1, FetchThresholds.claimBytes >> layout.shift)))
        let gate = WriteGate()
        SharedWork.run(helpers: workers - 1) {
            do {
                try store.codecs.withDecoder { context in
                    try store.environment.read { txn in
                        try context.withRunWriter(into: writer, gate: gate) { run -> Void in
                            while let indices = shared.claims.next() {
                                switch try writeChunks(
                                    indices, of: plan, store: store, run: &run,
                                    checkpoint: checkpoint, context: context, in: txn)
                                {
                                case .damaged(let chunk):
                                    // The range cannot be completed from the store: every worker stops.
                                    shared.claims.stop()
                                    shared.damaged.offer(chunk)
                                    return
                                case .written(let bytes):
                                    try run.writeIfFree()
                                    if crossesReleaseStride(shared.written.add(bytes)) {
                                        store.environment.releaseMappedPages()
                                    }
                                }
                            }
                        }
                    }
                }
            } catch {
                // Every worker stops; the first error is the one reported.
                shared.claims.stop()
                shared.failure.offer(error)
            }
        }
        if let error = shared.failure.current { throw error }
        return shared.damaged.current.map { .damaged($0) } ?? .complete
    }

    /// Whether the bytes written crossed a multiple of ``FetchThresholds/releaseStrideBytes`` (in strides,
    /// not per chunk: each `madvise` flushes the TLB on every core).
    private static func crossesReleaseStride(_ written: (before: Int64, after: Int64)) -> Bool {
        written.after / FetchThresholds.releaseStrideBytes != written.before / FetchThresholds.releaseStrideBytes
    }

    /// Whether one of the first stored chunks from `first` on is compressed
    /// (``FetchThresholds/compressionProbeChunks``): only decoding is worth a second core.
    private static func startsWithCompressedChunks<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, store: Store, from first: Int64, in txn: borrowing T
    ) throws -> Bool {
        let probes = FetchThresholds.compressionProbeChunks
        let dbs = store.dbs
        var cursor = ManifestCursor(manifestID: plan.version.manifestID, dbs: dbs)
        for index in first..<min(first + probes, plan.version.layout.chunkCount(forLength: plan.version.size)) {
            guard case .stored(let digest) = try cursor.entry(index, in: txn),
                let compressed = try digest.withUnsafeBytes({
                    try txn.withValue(dbs.chunks, key: $0, ChunkCodec.isCompressed)
                })
            else { continue }
            if compressed { return true }
        }
        return false
    }

    /// What ``writeChunks(_:of:store:run:checkpoint:context:in:)`` did.
    private enum Written {
        /// Every chunk queued: their stored bytes (zero chunks not counted).
        case written(Int64)
        /// A chunk failed its check on an origin domain; the chunks after it were not queued.
        case damaged(DamagedChunk)
    }

    /// Queues chunks `indices` of `plan` on `run` (which writes some as it fills).
    private static func writeChunks<T: TransactionReading & ~Copyable>(
        _ indices: Range<Int64>, of plan: FetchPlan, store: Store, run: inout RunWriter,
        checkpoint: ChunkCheckpoint, context: CodecPool.DecodeContext, in txn: borrowing T
    ) throws -> Written {
        let layout = plan.version.layout
        let size = plan.version.size
        let reader = StoredChunkReader(context, store.dbs)
        var written: Int64 = 0
        var cursor = ManifestCursor(manifestID: plan.version.manifestID, dbs: store.dbs)
        for index in indices {
            try checkpoint.check(index)
            let range = layout.range(ofChunk: index, length: size)
            let length = Int(range.length)
            // Its pages read in one request, not a fault each (a store out of the page cache). Not for a
            // one-chunk range: the warm fetch of one chunk (a read()'s path) pays no system call for it.
            switch try reader.read(
                try cursor.entry(index, in: txn), of: plan.version.manifestID, spanning: range,
                into: { try run.space(length, at: range.location) }, willNeed: indices.count > 1, in: txn)
            {
            case .zero:
                try run.appendZero(length, at: range.location)
            case .bytes(let bytes):
                try run.append(bytes, at: range.location)
                written += range.length
            case .unreadable(let why):
                return .damaged(try plan.damage(why, index: index))
            }
        }
        return .written(written)
    }
}

/// What the workers of a parallel range share, in one object: the chunks they claim a few at a time, the
/// first error and the first damaged chunk (either stops them all), and the bytes written. The guarantees are
/// those of ``WorkClaims``, ``FirstValue`` and ``AtomicTotal``; this only holds them together.
private final class ParallelRange: Sendable {
    let claims: WorkClaims
    let failure = FirstValue<any Error>()
    let damaged = FirstValue<DamagedChunk>()
    let written = AtomicTotal()

    init(_ chunks: Range<Int64>, claiming size: Int64) { claims = WorkClaims(chunks, size: size) }
}
