import Dispatch
import FileIO
import Foundation
import LMDBKit

/// Streams a file into the store: reads it in batches (skipping holes), hashes and compresses each batch on
/// the blocking pool's threads (``SharedWork``), and commits batch after batch on the writer while the next
/// is prepared. New chunks of an item's next version are also tried as deltas against the one before
/// (``DeltaSource``, <doc:Contract#14-Chunk-encodings>).
///
/// Memory is two batches of raw and encoded bytes whatever the file's size, and the previous version's index
/// (at most 24 MiB). Chunks go into a pending manifest,
/// invisible until published; ``Store/rollBackAbandonedManifests()`` or the caller's rollback undoes it.
final class Ingestor: Sendable {
    let engine: Engine
    let store: Store
    let cancellation: CancellationFlag

    /// Bytes per batch: big enough to keep both cores busy and commits few.
    static let batchBytes = 16 << 20

    init(engine: Engine, cancellation: CancellationFlag = CancellationFlag()) {
        self.engine = engine
        self.store = engine.store
        self.cancellation = cancellation
    }

    /// The newest version of item `id` of `domain`: the base of its next version's deltas; nil when the store
    /// makes no deltas (`init --no-deltas`).
    static func previousVersion(of id: String, domain: String, store: Store) throws -> VersionRecord? {
        try store.environment.read { txn in
            guard try txn.counter(store.dbs, MetaKey.deltasOff) == 0 else { return nil }
            return try Records.versions(ofItem: id, domain: domain, in: txn, store.dbs).first
        }
    }

    /// Ingests `length` bytes of `file` (named `path` in errors) into a new pending manifest.
    /// On any error the manifest is rolled back before this throws.
    /// - Parameter previous: The item's version before this one, whose chunks new chunks may be stored as deltas
    ///   against (<doc:Contract#14-Chunk-encodings>); nil for a new item.
    /// - Throws: `invalidArgument` when `length` is beyond ``ChunkLayout/maxItemLength``, before anything is written.
    @available(*, noasync)
    func ingest(_ file: FileDescriptor, length: Int64, path: String, previous: VersionRecord?) throws
        -> IngestedContent
    {
        // The one door sizes from outside come through (put and import): checked before any arithmetic.
        try ChunkLayout.checkItemLength(length, of: path)
        let dbs = store.dbs
        let writer = try store.writerToken()
        let manifestID = try store.writer.writeAndWait { txn in
            try txn.beginManifest(dbs, writer: writer, now: Date().timeIntervalSince1970)
        }
        do {
            return try fill(manifestID, from: file, length: length, path: path, previous: previous)
        } catch {
            store.diagnostics.attempt("roll back the pending manifest of \(path)") {
                try store.writer.writeAndWait { txn in try txn.dropManifest(manifestID, dbs) }
            }
            throw CacheError.wrap(error, store: store.path, doing: "storing \(path)")
        }
    }

    @available(*, noasync)
    private func fill(
        _ manifestID: UInt64, from file: FileDescriptor, length: Int64, path: String, previous: VersionRecord?
    ) throws -> IngestedContent {
        var previous = previous
        var deltas: DeltaSource?
        let layout = store.layout
        let chunkCount = layout.chunkCount(forLength: length)
        let perBatch = max(Self.batchBytes >> layout.shift, 2 * BlockingPool.width)
        let dataRanges = try file.dataRanges(length: length)
        // Eviction makes room for the batches only when the whole put could fit once it did (CONTRACT §12).
        let evicting = engine.space.couldFit(dataRanges.reduce(0) { $0 + Int64($1.count) })
        let state = CommitState(manifestID: manifestID)
        let batches: [Batch]
        do {
            batches = [try Batch(capacity: perBatch, layout: layout), try Batch(capacity: perBatch, layout: layout)]
        } catch {
            throw CacheError(
                .transient,
                "no memory for the buffers to store \(path) (\(error)); nothing was stored: retry when fewer puts run at once",
                underlying: error)
        }
        // Whether each batch is free again (its commit finished on the writer): this pool thread waits for the
        // writer queue, which never waits for the pool (see ``BlockingPool``).
        let free = [DispatchSemaphore(value: 1), DispatchSemaphore(value: 1)]
        var rootHasher = RootHasher(length: length)

        var first: Int64 = 0
        var turn = 0
        while first < chunkCount {
            if let error = state.failure { throw error }
            try cancellation.check()
            let batch = batches[turn]
            free[turn].wait()
            let count = Int(min(Int64(perBatch), chunkCount - first))
            do {
                try batch.load(
                    from: file, firstChunk: first, count: count, length: length, dataRanges: dataRanges, path: path)
                batch.hashChunks()
                try batch.markKnownChunks(in: store)
                if let base = previous, batch.hasNewChunks {
                    // Once, at the first chunk the store lacks: a version the store already holds needs no base.
                    previous = nil
                    deltas = try DeltaSource.build(from: base, store: store, cancellation: cancellation)
                }
                batch.compressNewChunks(with: store.codecs, deltas: deltas, store: store)
            } catch {
                free[turn].signal()
                throw error
            }
            for digest in batch.digests[..<count] { rootHasher.add(digest) }
            let semaphore = free[turn]
            let environment = store.environment
            // At most the batch's raw bytes are added: the bound (CONTRACT §12) is checked before they are.
            let most = Int64(count) << Int64(store.layout.shift)
            store.writer.writeLater(
                reserving: most, evicting: evicting, doing: "storing \(path)",
                { txn in try state.commit(batch, into: &txn, store: self.store) },
                completion: { result in
                    if case .failure(let error) = result { state.fail(error) }
                    // Lookups fault in neighbouring pages of the map: keep the RSS flat.
                    environment.releaseMappedPages()
                    semaphore.signal()
                })
            first += Int64(count)
            turn ^= 1
        }
        for semaphore in free {
            semaphore.wait()
            semaphore.signal()
        }
        if let error = state.failure { throw error }
        return IngestedContent(
            manifestID: manifestID, length: length, root: rootHasher.finalize(), counts: state.counts)
    }
}
