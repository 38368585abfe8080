import FileIO
import Foundation
import LMDBKit

extension ChunkCache {

    /// What ``put(fileAt:as:contentVersion:)`` stored.
    public struct PutResult: Sendable {
        /// The item, with the content version the bytes were stored under.
        public var item: Item
        /// Chunks in the file, new chunks stored, all-zero chunks (never stored).
        public var chunks: Int, newChunks: Int, zeroChunks: Int
        /// New chunks stored as deltas against the item's previous version (<doc:Contract#14-Chunk-encodings>).
        public var deltaChunks = 0
        /// Payload bytes this put added to the store.
        public var storedBytes: Int64
        /// The domain's version after the put (unchanged when the item's current version already held the bytes).
        public var domainVersion: DomainVersion
    }

    /// Stores the file at `path` as a content version of `item`, creating the domain and item when missing.
    ///
    /// Streams the file with memory independent of its size, skipping holes; hashes and compresses on
    /// every core. The version is published in one transaction with the domain-version bump, and nothing is
    /// visible before it; a failure leaves the store as it was.
    ///
    /// The put bytes are the item's current content afterwards: bytes an older version holds make that
    /// version current again (a change, and a new domain version); bytes the current version holds change
    /// nothing.
    ///
    /// - Parameters:
    ///   - path: The file to store: a regular file, read as a stream.
    ///   - item: The item to store it as, in its domain.
    ///   - contentVersion: The version's name (≤ 128 bytes); `nil` reuses the item's version that holds these
    ///     bytes, or derives a name from the bytes, so the same bytes give the same version. A new name makes
    ///     a new version even for bytes another version holds.
    /// - Throws: `invalidArgument` (missing file, a directory, a FIFO or anything else that is not a regular
    ///   file, a file beyond ``ChunkLayout/maxItemLength``, an existing version holding other bytes, a bad
    ///   identifier), `insufficientQuota` (the store is full), `noPermission`.
    public func put(fileAt path: String, as item: ItemIdentifier, contentVersion: String? = nil) async throws
        -> PutResult
    {
        try Records.validate(domain: item.domain, item: item.rawValue)
        let version = contentVersion.map { Array($0.utf8) }
        if let version { try Records.validate(contentVersion: version) }
        let engine = self.engine
        return try await runBlocking(doing: "storing \(path) as \(item)", store: engine.store.path) { cancellation in
            do {
                return try Self.put(
                    fileAt: path, as: item, contentVersion: version, engine: engine, cancellation: cancellation)
            } catch {
                throw CacheError.wrap(error, store: engine.store.path, doing: "storing \(path) as \(item)")
            }
        }
    }

    /// The body of ``put(fileAt:as:contentVersion:)``, on a blocking thread.
    @available(*, noasync)
    private static func put(
        fileAt path: String, as item: ItemIdentifier, contentVersion version: [UInt8]?, engine: Engine,
        cancellation: CancellationFlag
    ) throws -> PutResult {
        let store = engine.store
        let file = try openRegularFile(path)
        return try file.closeAfter {
            let status = try file.status()
            let previous = try Ingestor.previousVersion(of: item.rawValue, domain: item.domain, store: store)
            let content = try Ingestor(engine: engine, cancellation: cancellation).ingest(
                file, length: Int64(status.st_size), path: path, previous: previous)
            let published: PublishedVersion
            do {
                published = try store.writer.writeAndWait { txn in
                    var changes = try txn.beginChanges(to: item.domain, create: true, store.dbs)
                    let published = try txn.publish(
                        content, item: item.rawValue, contentVersion: version, layout: store.layout,
                        modificationDate: modificationTime(of: status), in: &changes, store.dbs)
                    if published.changed { try txn.finish(changes, store.dbs) }
                    return published
                }
            } catch {
                // The publishing transaction aborted, so the pending manifest is still there: drop it.
                store.diagnostics.attempt("roll back the pending manifest of \(path)") {
                    try store.writer.writeAndWait { txn in try txn.dropManifest(content.manifestID, store.dbs) }
                }
                throw CacheError.wrap(error, store: store.path, doing: "publishing \(path)")
            }
            let counts =
                published.stored
                ? content.counts : IngestCounts(chunks: content.counts.chunks, zeroChunks: content.counts.zeroChunks)
            return PutResult(
                item: published.item, chunks: counts.chunks, newChunks: counts.newChunks,
                zeroChunks: counts.zeroChunks, deltaChunks: counts.deltaChunks, storedBytes: counts.storedBytes,
                domainVersion: published.domainVersion)
        }
    }
}
