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

    /// `logicalBytes / uniqueBytes`: how many times each unique byte is used (zero chunks count as saved).
    public var dedupRatio: Double { uniqueBytes == 0 ? 1 : Double(logicalBytes) / Double(uniqueBytes) }
    /// `uniqueBytes / storedBytes`.
    public var compressionRatio: Double { storedBytes == 0 ? 1 : Double(uniqueBytes) / Double(storedBytes) }
}

extension ChunkCache {
    /// The store's figures.
    public func statistics() async throws -> StoreStatistics {
        let engine = self.engine
        let store = engine.store
        return try await runBlocking(doing: "reading the store's figures", store: store.path) { _ in
            let dbs = store.dbs
            var stats = try store.environment.read { txn in
                let held = try txn.heldChunks(dbs)
                var stats = StoreStatistics(
                    chunkSize: store.layout.chunkSize, domains: try txn.count(dbs.domains),
                    items: try txn.count(dbs.items),
                    versions: try txn.count(dbs.versions), chunks: try txn.count(dbs.refs),
                    logicalBytes: Int64(try txn.counter(dbs, MetaKey.logicalBytes)),
                    uniqueBytes: Int64(try txn.counter(dbs, MetaKey.uniqueBytes)),
                    storedBytes: Int64(try txn.counter(dbs, MetaKey.storedBytes)), fileBytes: 0,
                    maxSize: store.maxSize, minFree: engine.space.minFree,
                    evictableBytes: held.evictableBytes, pinnedBytes: held.pinnedBytes,
                    hits: Int64(try txn.counter(dbs, PolicyMeta.hits)),
                    misses: Int64(try txn.counter(dbs, PolicyMeta.misses)),
                    evictedBytes: Int64(try txn.counter(dbs, PolicyMeta.evictedBytes)),
                    deltaChunks: Int64(try txn.counter(dbs, MetaKey.deltaChunks)),
                    deltaSavedBytes: Int64(try txn.counter(dbs, MetaKey.deltaSavedBytes)))
                try stats.readHotTier(in: txn, dbs, maxSize: store.maxSize)
                try stats.readFills(in: txn, dbs)
                return stats
            }
            stats.fileBytes = StoreFiles.diskBytes(of: store.path)
            return stats
        }
    }
}

extension StoreStatistics {
    /// Counts the fills (a scan of `fills`: one short record each) and reads their counters.
    mutating func readFills(in txn: borrowing ReadTransaction, _ dbs: Databases) throws {
        (unsettledChunks, unsettledBytes) = try txn.fillRecords(under: [], dbs)
        fillBytes = Int64(try txn.counter(dbs, MetaKey.fillBytes))
        settleMismatches = Int64(try txn.counter(dbs, MetaKey.settleMismatches))
    }
}

/// What eviction could free and what pins hold (`stat`'s `evictableBytes` and `pinnedBytes`,
/// <doc:Contract#12-A-bounded-cache>): stored bytes of distinct chunks, each counted once however many versions share
/// it.
struct HeldChunks: Sendable, Equatable {
    /// Chunks every reference of which is a version of an unpinned item of an origin domain.
    var evictableBytes: Int64 = 0
    /// Chunks a version of a pinned item references.
    var pinnedBytes: Int64 = 0
}

extension TransactionReading where Self: ~Copyable {
    /// Counts the chunks eviction could free and those pins hold, exactly, by a scan of the manifests of
    /// origin domains' versions and of pinned items' versions (never of local domains' unpinned ones) with one
    /// reference-count lookup per chunk entry. A chunk of one reference is decided at once; only chunks with
    /// several references are remembered until the scan ends (memory grows with shared chunks, not all).
    /// A chunk is evictable when its reference count equals the entries naming it in evictable versions: a
    /// reference from anywhere else (a local domain, a pinned item, a put still pending) keeps it.
    func heldChunks(_ dbs: Databases) throws -> HeldChunks {
        let pinnedItems = try pinnedFileItems(dbs)
        var evictableManifests: [UInt64] = []
        try scan(dbs.domains, prefix: []) { key, value in
            guard DomainRecord(ifIntact: value)?.origin != nil else { return true }
            try scan(dbs.versions, prefix: Array(key)) { versionKey, versionValue in
                guard let parts = Keys.parseVersion(versionKey), !pinnedItems.contains(Array(parts.itemKey)),
                    let version = VersionRecord(ifIntact: versionValue)
                else { return true }
                evictableManifests.append(version.manifestID)
                return true
            }
            return true
        }
        var held = HeldChunks()
        var shared: [ChunkDigest: (entries: UInt64, ref: ChunkRef)] = [:]
        for manifest in evictableManifests {
            held.evictableBytes += try unsettledBytes(ofManifest: manifest, dbs)
            try forEachStoredChunk(ofManifest: manifest, dbs) { digest, ref in
                if ref.count == 1 {
                    held.evictableBytes += Int64(ref.storedLength)
                } else {
                    shared[digest, default: (0, ref)].entries += 1
                }
            }
        }
        for (_, chunk) in shared where chunk.entries == chunk.ref.count {
            held.evictableBytes += Int64(chunk.ref.storedLength)
        }
        var pinnedShared: [ChunkDigest: UInt32] = [:]
        for itemKey in pinnedItems {
            for version in try Records.versions(ofItemKey: itemKey, in: self, dbs) {
                held.pinnedBytes += try unsettledBytes(ofManifest: version.manifestID, dbs)
                try forEachStoredChunk(ofManifest: version.manifestID, dbs) { digest, ref in
                    if ref.count == 1 {
                        held.pinnedBytes += Int64(ref.storedLength)
                    } else {
                        pinnedShared[digest] = ref.storedLength
                    }
                }
            }
        }
        held.pinnedBytes += pinnedShared.values.reduce(Int64(0)) { $0 + Int64($1) }
        return held
    }

    /// The raw bytes of a manifest's fills: each is its version's alone, as a chunk of one reference is.
    private func unsettledBytes(ofManifest manifest: UInt64, _ dbs: Databases) throws -> Int64 {
        try fillRecords(under: Keys.manifest(manifest), dbs).bytes
    }

    /// The `items` keys of pinned files, in every domain.
    private func pinnedFileItems(_ dbs: Databases) throws -> Set<[UInt8]> {
        var keys = Set<[UInt8]>()
        try scan(dbs.items, prefix: []) { key, value in
            if let item = ItemRecord(ifIntact: value), item.flags.contains(.pinned), item.kind == .file {
                keys.insert(Array(key))
            }
            return true
        }
        return keys
    }

    /// Calls `body` with each `stored` entry of a manifest and its chunk's reference record; a damaged page
    /// or reference is skipped (`verify` reports those).
    private func forEachStoredChunk(
        ofManifest manifest: UInt64, _ dbs: Databases, _ body: (ChunkDigest, ChunkRef) throws -> Void
    ) throws {
        try scan(dbs.manifests, prefix: Keys.manifest(manifest)) { _, value in
            guard let entries = ManifestPage.entries(ofStored: value) else { return true }
            for slot in 0..<(entries.count / ManifestPage.entrySize) {
                guard case .stored(let digest)? = try? ManifestPage.entry(in: entries, at: slot),
                    let ref = try intactChunkRef(digest, dbs)
                else { continue }
                try body(digest, ref)
            }
            return true
        }
    }
}
