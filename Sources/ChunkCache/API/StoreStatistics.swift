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
    /// The bound on the store's disk use, `fileBytes` (`init --max-size`, <doc:Contract#12-A-bounded-cache>).
    public var maxSize: Int64 = 0
    /// The free space eviction keeps on the store's filesystem (`init --min-free`).
    public var minFree: Int64 = 0
    /// What eviction could free now: the stored bytes of the distinct chunks every referencing version of
    /// which belongs to an origin domain and is not pinned (<doc:Contract#12-A-bounded-cache>), each chunk once however
    /// many versions share it. A chunk a pinned item, a local domain or a pending put also references is not
    /// counted: evicting the others would free nothing. Exact: `statistics()` scans the manifests of origin
    /// domains and pinned items for it (never local domains' content).
    public var evictableBytes: Int64 = 0
    /// The stored bytes of the distinct chunks pins hold: those any version of a pinned item references, each
    /// chunk once (a chunk shared by two pinned versions counts once). Never part of `evictableBytes`.
    public var pinnedBytes: Int64 = 0
    /// Chunks of origin domains that fetches read from the store.
    public var hits: Int64 = 0
    /// Chunks fetches downloaded from an origin.
    public var misses: Int64 = 0
    /// Raw bytes of content eviction has made absent (by the bound and by `evict`).
    public var evictedBytes: Int64 = 0
    /// Chunks stored as deltas against a base chunk of an earlier version (<doc:Contract#14-Chunk-encodings>).
    public var deltaChunks: Int64 = 0
    /// What the delta chunks would take stored plain (zstd or raw), less what they take. A delta of at most 1/32
    /// of its chunk counts its base's stored size as its plain size (it is made without compressing the chunk
    /// plain, and nearly equals its base).
    public var deltaSavedBytes: Int64 = 0
    /// The hot tier's size (`init --hot-size`, <doc:Contract#14-Chunk-encodings>); 0 when it is off.
    public var hotSize: Int64 = 0
    /// Bytes of the chunks the hot tier keeps decoded (part of `storedBytes`).
    public var hotBytes: Int64 = 0
    /// Chunks the hot tier keeps decoded.
    public var hotChunks: Int64 = 0
    /// Downloaded chunks not settled yet: served from their fills, waiting to be named, checked, deduplicated
    /// and compressed (<doc:Contract#10-Origins-the-cold-path>).
    public var unsettledChunks: Int64 = 0
    /// Their raw bytes.
    public var unsettledBytes: Int64 = 0
    /// The disk the fill files take (part of `fileBytes`): the unsettled bytes, and settled ones whose
    /// version still has fills.
    public var fillBytes: Int64 = 0
    /// Fills the settler dropped because their bytes did not hash to what the store knew of them.
    public var settleMismatches: Int64 = 0
    /// Learned traces in the store (<doc:Contract#15-Learned-prefetch>).
    public var traces = 0
    /// Bytes downloaded because a trace predicted them.
    public var prefetchedBytes: Int64 = 0
    /// Of those, bytes the run that prefetched them then read.
    public var prefetchHitBytes: Int64 = 0

    /// `logicalBytes / uniqueBytes`: how many times each unique byte is used (zero chunks count as saved).
    public var dedupRatio: Double { uniqueBytes == 0 ? 1 : Double(logicalBytes) / Double(uniqueBytes) }
    /// `uniqueBytes / storedBytes`.
    public var compressionRatio: Double { storedBytes == 0 ? 1 : Double(uniqueBytes) / Double(storedBytes) }
}

extension StoreStatistics {
    /// Reads the learned traces' figures (<doc:Contract#15-Learned-prefetch>).
    mutating func readTraces(in txn: borrowing ReadTransaction, _ dbs: Databases) throws {
        var count = 0
        try txn.scan(dbs.meta, prefix: Keys.tracePrefix) { _, _ in
            count += 1
            return true
        }
        traces = count
        prefetchedBytes = Int64(try txn.counter(dbs, MetaKey.prefetchedBytes))
        prefetchHitBytes = Int64(try txn.counter(dbs, MetaKey.prefetchHitBytes))
    }

    /// Counts the fills (a scan of `fills`: one short record each) and reads their counters.
    mutating func readFills(in txn: borrowing ReadTransaction, _ dbs: Databases) throws {
        (unsettledChunks, unsettledBytes) = try txn.fillRecords(under: [], dbs)
        fillBytes = Int64(try txn.counter(dbs, MetaKey.fillBytes))
        settleMismatches = Int64(try txn.counter(dbs, MetaKey.settleMismatches))
    }
}
