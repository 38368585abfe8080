import FileIO
import Foundation
import LMDBKit

extension ChunkCache {
    /// Drops the cached content of `items` (every item when empty) of an origin domain now (`evict`,
    /// <doc:Contract#12-A-bounded-cache>): each version's stored chunks become `absent` with their hashes kept, so the
    /// next fetch downloads and checks them. Pinned items are left as they are. Files already handed off or cloned are
    /// independent of it (<doc:FileProviderRules#H1>). Not a catalogue change: no domain version.
    /// - Throws: `invalidArgument` for a domain without an origin (the store is its only copy);
    ///   `noSuchItem` for an unknown domain or item.
    public func evict(_ items: [String] = [], inDomain domain: String) async throws -> EvictionResult {
        try Records.validate(domain: domain, item: nil)
        for item in items { try Records.validate(domain: domain, item: item) }
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                let record = try Records.domain(domain, in: txn, dbs)
                guard record.origin != nil else {
                    throw CacheError(
                        .invalidArgument,
                        "domain \"\(domain)\" has no origin: the store is the only copy of its files, so nothing of it is evicted"
                    )
                }
                var records: [ItemRecord] = []
                if items.isEmpty {
                    try txn.scan(dbs.items, prefix: Keys.domain(domain)) { _, value in
                        records.append(
                            try ItemRecord(decoding: value, name: "an item of \(RecordNames.domain(domain))"))
                        return true
                    }
                } else {
                    records = try items.map { try Records.item($0, domain: domain, in: txn, dbs) }
                }
                var result = EvictionResult(versions: 0, bytes: 0, pinnedSkipped: 0)
                for item in records where item.kind == .file {
                    guard !item.flags.contains(.pinned) else {
                        result.pinnedSkipped += 1
                        continue
                    }
                    for version in try Records.versions(ofItem: item.identifier, domain: domain, in: txn, dbs) {
                        let bytes = try txn.evictCachedChunks(of: version, dbs)
                        if bytes > 0 { result.versions += 1 }
                        result.bytes += bytes
                    }
                }
                return result
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "evicting from domain \"\(domain)\"")
        }
    }

    /// Pins an item ("available offline", `pin`): exempts it from eviction and downloads what of its newest
    /// version is absent. A metadata change (<doc:FileProviderRules#D4>); pinned items are in the working set.
    ///
    /// A pin that fails changes nothing (<doc:Contract#12-A-bounded-cache>): one the store's bound cannot hold beside
    /// what is pinned already and the local domains is refused before anything is written, and one whose download
    /// fails is unpinned again.
    /// - Parameters:
    ///   - item: The file to pin.
    ///   - progress: Updated as the download proceeds.
    /// - Returns: The item as pinned, and the bytes downloaded.
    /// - Throws: `insufficientQuota` when the bound cannot hold the item pinned; the download's errors.
    public func pin(_ item: ItemIdentifier, progress: DownloadProgress? = nil) async throws -> (
        change: ItemChange, downloadedBytes: Int64
    ) {
        var downloaded: Int64 = 0
        var known = try await pinnable(item)
        if known == nil {
            // An origin item the store has not seen yet: the fetch discovers it (or confirms it is gone).
            let fetched = try await fetchContents(for: item, version: nil, request: FetchRequest(progress: progress))
            try? FileSystem.unlink(fetched.url.path)
            downloaded = fetched.downloadedBytes
            known = try await pinnable(item)
        }
        let wasPinned = known ?? false
        let change = try await setPinned(true, item)
        guard change.item.kind == .file else { return (change, 0) }
        do {
            let fetched = try await fetchContents(for: item, version: nil, request: FetchRequest(progress: progress))
            try? FileSystem.unlink(fetched.url.path)
            await waitForDownloads()
            return (change, downloaded + fetched.downloadedBytes)
        } catch {
            // The download failed (the origin, the disk): the item is left unpinned, as it was.
            if !wasPinned { _ = try? await setPinned(false, item) }
            throw error
        }
    }

    /// Whether `item` is pinned already, after checking that the store's bound can hold it pinned: what
    /// cannot be evicted once it is (the pinned items, the local domains, all of its newest version) must
    /// fit where eviction could make room. A file of a domain without an origin takes no more room pinned.
    /// `nil` when the catalogue does not know the item.
    /// - Throws: `insufficientQuota` naming the item and the bound, before anything is written.
    private func pinnable(_ item: ItemIdentifier) async throws -> Bool? {
        let engine = self.engine
        let store = engine.store
        return try await runBlocking(doing: "pinning \(item)", store: store.path) { () throws -> Bool? in
            guard let status = try self.status(of: item) else { return nil }
            let file = status.item
            guard file.kind == .file, !file.isPinned,
                try store.environment.read({ txn in try Records.domain(item.domain, in: txn, store.dbs).origin })
                    != nil,
                !engine.space.couldFit(file.documentSize)
            else {
                return file.isPinned
            }
            throw CacheError(
                .insufficientQuota,
                "cannot pin \(item) (\(formatSize(file.documentSize))): the bound of the store at \(store.path) cannot hold it beside what is pinned already and the local domains' files; nothing was changed: unpin other items, or raise the bound with `chunkcache init --max-size`/`--min-free`"
            )
        }
    }

    /// Unpins an item: eviction may drop its cached content again.
    public func unpin(_ item: ItemIdentifier) async throws -> ItemChange {
        try await setPinned(false, item)
    }

    private func setPinned(_ pinned: Bool, _ item: ItemIdentifier) async throws -> ItemChange {
        try await applyEdit(item, doing: pinned ? "pinning" : "unpinning") { txn, changes in
            try txn.setPinned(item.rawValue, pinned, in: &changes, self.store.dbs)
        }
    }

    /// Removes every item's versions beyond the newest `keepVersions` (`gc --keep-versions N`), freeing the
    /// chunks no remaining version references. The newest version of each item always stays.
    /// - Throws: `invalidArgument` when `keepVersions` is below 1.
    public func collectGarbage(keepVersions: Int) async throws -> EvictionResult {
        guard keepVersions >= 1 else {
            throw CacheError(
                .invalidArgument,
                "--keep-versions \(keepVersions) must be at least 1: the newest version of each item always stays")
        }
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in try txn.removeOldVersions(keeping: keepVersions, dbs) }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "collecting garbage")
        }
    }

    /// The free space eviction keeps on the store's filesystem (<doc:Contract#12-A-bounded-cache>; default 1 GiB).
    public var minimumFreeSpace: Int64 { engine.space.minFree }

    /// Keeps `bytes` free on the store's filesystem from now on (`init --min-free`), recorded in the store:
    /// origin content is evicted to keep it, and a put or download that would pass it is `insufficientQuota`.
    /// - Throws: `invalidArgument` for a negative size.
    public func setMinimumFreeSpace(_ bytes: Int64) async throws {
        guard bytes >= 0 else {
            throw CacheError(
                .invalidArgument, "--min-free \(bytes) is negative; give a size such as 1GiB, or 0 for none")
        }
        try await recordSetting(MetaKey.minFree, UInt64(bytes), doing: "setting the free space to keep")
        engine.space.setMinFree(bytes)
    }

    /// Evicts now, on the writer, what keeps the store above its low-water mark (80 % of what its bound
    /// allows, <doc:Contract#12-A-bounded-cache>), as the writer does by itself after a commit passes 90 %; returns
    /// what went. Also waits for an eviction already queued.
    public func enforceBound() async throws -> EvictionResult {
        let engine = self.engine
        let store = engine.store
        do {
            return try await store.writer.onQueue { try engine.space.evictToLowWater() }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "evicting to the store's bound")
        }
    }
}
