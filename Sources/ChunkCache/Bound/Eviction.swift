import Foundation
import LMDBKit

/// What an eviction or a garbage collection freed.
public struct EvictionResult: Sendable, Hashable {
    /// Versions whose cached chunks were dropped (eviction) or which were removed (gc).
    public var versions: Int
    /// Bytes of content no longer cached: chunk entries turned `absent` (eviction) or versions removed (gc).
    public var bytes: Int64
    /// Pinned items left as they were.
    public var pinnedSkipped: Int
}

extension WriteTransaction {
    /// Drops the cached chunks of one version of an origin item (<doc:Contract#12-A-bounded-cache>): each stored entry
    /// becomes `absent` with its hash kept, so a later fetch downloads it again and checks it, and the chunk loses a
    /// reference (freed with its last). Returns the raw bytes no longer cached.
    @available(*, noasync)
    mutating func evictCachedChunks(of version: VersionRecord, _ dbs: Databases) throws -> Int64 {
        var pages: [Int64] = []
        try scan(dbs.manifests, prefix: Keys.manifest(version.manifestID)) { key, _ in
            if let (_, page) = Keys.parseManifestPage(key) { pages.append(page) }
            return true
        }
        try policyForget(manifest: version.manifestID, dbs)
        var evicted: Int64 = 0
        for page in pages {
            let intact = try withValue(dbs.manifests, key: Keys.manifestPage(version.manifestID, page: page)) {
                ManifestPage.entries(ofStored: $0) != nil
            }
            guard intact == true else {
                throw ManifestPage.damaged(version.manifestID, page: page, in: self, dbs)
            }
            evicted += try makeAbsent(manifest: version.manifestID, page: page, slots: nil, dbs)
        }
        try addToCounter(dbs, PolicyMeta.evictedBytes, evicted)
        return evicted
    }

    /// Turns the `stored` entries of one manifest page in `slots` (every one when nil) `absent` with their
    /// hashes kept, and releases their chunks: what eviction by hand and by the bound both do. Returns the raw
    /// bytes no longer cached. A page that is missing or fails its seal is left as it is (0).
    @available(*, noasync)
    mutating func makeAbsent(manifest: UInt64, page: Int64, slots: Set<Int>?, _ dbs: Databases) throws -> Int64 {
        var dropped: [ChunkDigest] = []
        var fills: [(index: Int64, length: Int64)] = []
        var slot = -1
        let rewrite = try withValue(dbs.manifests, key: Keys.manifestPage(manifest, page: page)) { raw -> [UInt8]? in
            guard let entries = ManifestPage.entries(ofStored: raw) else { return nil }
            return try ManifestPage.rewrite(entries) { entry in
                slot += 1
                guard slots?.contains(slot) ?? true else { return nil }
                switch entry {
                case .stored(let digest):
                    dropped.append(digest)
                    return .absent(digest)
                case .filled:
                    // A fill keeps the hash its manifest knew, as a stored chunk does.
                    let index = page * ManifestPage.entriesPerPage + Int64(slot)
                    let record =
                        try withValue(dbs.fills, key: FillKeys.fill(manifest, index), FillKeys.parseRecord) ?? nil
                    fills.append((index, Int64(record?.length ?? 0)))
                    return .absent(record?.expected)
                case .zero, .absent:
                    return nil
                }
            }
        }
        guard var rewritten = rewrite ?? nil else { return 0 }
        rewritten.removeLast(Seal.size)  // ManifestPage.store seals what it is given
        try ManifestPage.store(&rewritten, manifest: manifest, page: page, in: &self, dbs)
        var bytes: Int64 = 0
        for fill in fills {
            try forgetFill(manifest, fill.index, dbs)
            bytes += fill.length
        }
        if !fills.isEmpty { try forgetFillFileIfDone(manifest, dbs) }
        for digest in dropped {
            bytes += Int64(try intactChunkRef(digest, dbs)?.rawLength ?? 0)
            try releaseChunk(digest, dbs)
        }
        return bytes
    }

    /// Removes versions beyond the newest `keep` of every item of every domain, freeing chunks no other
    /// version references. Not a catalogue change: each item's newest version stays.
    @available(*, noasync)
    mutating func removeOldVersions(keeping keep: Int, _ dbs: Databases) throws -> EvictionResult {
        var byItem: [[UInt8]: [(key: [UInt8], record: VersionRecord)]] = [:]
        try scan(dbs.versions, prefix: []) { key, value in
            guard let parts = Keys.parseVersion(key) else { return true }
            let record = try VersionRecord(decoding: value, name: RecordNames.version(key: key, in: self, dbs))
            byItem[Array(parts.itemKey), default: []].append((Array(key), record))
            return true
        }
        var result = EvictionResult(versions: 0, bytes: 0, pinnedSkipped: 0)
        for (_, versions) in byItem where versions.count > keep {
            for old in versions.sorted(by: { $0.record.sequence > $1.record.sequence }).dropFirst(keep) {
                try dropVersion(key: old.key, old.record, dbs)
                result.versions += 1
                result.bytes += old.record.size
            }
        }
        return result
    }
}
