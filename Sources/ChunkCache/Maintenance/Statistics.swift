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
    /// Bytes the store's files take on disk, as `du` counts them (`st_blocks` × 512): every file the store
    /// keeps (`data.mdb`, `lock.mdb`, the space reserve, the writers' leases), but not the hand-offs in `tmp/`,
    /// which belong to their callers.
    public var fileBytes: Int64
    /// The bound on the store's disk use, `fileBytes` (`init --max-size`, CONTRACT §12).
    public var maxSize: Int64 = 0
    /// The free space eviction keeps on the store's filesystem (`init --min-free`).
    public var minFree: Int64 = 0
    /// Stored bytes of the chunks eviction may drop now (origin domains, unpinned); a chunk another
    /// version shares frees nothing, so this is at most what eviction can free.
    public var evictableBytes: Int64 = 0
    /// The sizes of the newest versions of pinned items.
    public var pinnedBytes: Int64 = 0
    /// Chunks of origin domains that fetches read from the store.
    public var hits: Int64 = 0
    /// Chunks fetches downloaded from an origin.
    public var misses: Int64 = 0
    /// Raw bytes of content eviction has made absent (by the bound and by `evict`).
    public var evictedBytes: Int64 = 0

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
                    storedBytes: Int64(try txn.counter(dbs, MetaKey.storedBytes)), fileBytes: 0,
                    maxSize: store.space.maxSize, minFree: store.space.minFree,
                    evictableBytes: try txn.policyTrackedBytes(dbs), pinnedBytes: try txn.pinnedBytes(dbs),
                    hits: Int64(try txn.counter(dbs, PolicyMeta.hits)), misses: Int64(try txn.counter(dbs, PolicyMeta.misses)),
                    evictedBytes: Int64(try txn.counter(dbs, PolicyMeta.evictedBytes)))
            }
            stats.fileBytes = StoreFiles.diskBytes(of: store.path)
            return stats
        }
    }
}

extension TransactionReading where Self: ~Copyable {
    /// The sizes of the newest versions of pinned items (`stat`'s `pinnedBytes`).
    func pinnedBytes(_ dbs: Databases) throws -> Int64 {
        var keys: [[UInt8]] = []
        try scan(dbs.items, prefix: []) { key, value in
            if let item = ItemRecord(ifIntact: value), item.flags.contains(.pinned), item.kind == .file { keys.append(Array(key)) }
            return true
        }
        var total: Int64 = 0
        for key in keys { total += try Catalog.versions(ofItemKey: key, in: self, dbs).first?.size ?? 0 }
        return total
    }
}
