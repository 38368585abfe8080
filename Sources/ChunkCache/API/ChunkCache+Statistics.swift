import FileIO
import Foundation
import LMDBKit

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
                try stats.readTraces(in: txn, dbs)
                return stats
            }
            stats.fileBytes = StoreFiles.diskBytes(of: store.path)
            return stats
        }
    }
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
