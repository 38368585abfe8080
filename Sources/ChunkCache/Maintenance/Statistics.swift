import FileIO
import Foundation
import LMDBKit

/// Store figures, as `chunkcache stat` prints them.
public struct StoreStatistics: Sendable, Hashable {
    public var chunkSize: Int
    public var domains: Int
    public var items: Int
    public var versions: Int
    public var chunks: Int
    /// The sum of the sizes of every stored version.
    public var logicalBytes: Int64
    /// Raw bytes of the distinct stored chunks.
    public var uniqueBytes: Int64
    /// Their payload bytes as stored (after compression).
    public var storedBytes: Int64
    /// Bytes the store's files take on disk.
    public var fileBytes: Int64

    /// `logicalBytes / uniqueBytes`: how many times each unique byte is used (zero chunks count as saved).
    public var dedupRatio: Double { uniqueBytes == 0 ? 1 : Double(logicalBytes) / Double(uniqueBytes) }
    /// `uniqueBytes / storedBytes`.
    public var compressionRatio: Double { storedBytes == 0 ? 1 : Double(uniqueBytes) / Double(storedBytes) }
}

extension ChunkCache {
    /// The store's figures.
    public func statistics() async throws -> StoreStatistics {
        let store = self.store
        return try await runBlocking(doing: "reading the store's figures", store: store.path) { _ in
            let dbs = store.dbs
            var stats = try store.environment.read { txn in
                StoreStatistics(
                    chunkSize: store.layout.chunkSize, domains: try txn.count(dbs.domains), items: try txn.count(dbs.items),
                    versions: try txn.count(dbs.versions), chunks: try txn.count(dbs.refs),
                    logicalBytes: Int64(try txn.counter(dbs, MetaKey.logicalBytes)),
                    uniqueBytes: Int64(try txn.counter(dbs, MetaKey.uniqueBytes)),
                    storedBytes: Int64(try txn.counter(dbs, MetaKey.storedBytes)), fileBytes: 0)
            }
            for name in ["data.mdb", "lock.mdb"] {
                // lock.mdb may be missing (LMDB makes it on first open); a missing file takes no space.
                if let st = try? FileSystem.status(store.path + "/" + name) { stats.fileBytes += Int64(st.st_blocks) * 512 }
            }
            return stats
        }
    }
}
