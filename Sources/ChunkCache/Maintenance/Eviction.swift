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
    /// Drops the cached chunks of one version of an origin item (CONTRACT §12): each stored entry becomes
    /// `absent` with its hash kept, so a later fetch downloads it again and checks it, and the chunk loses a
    /// reference (freed with its last). Returns the raw bytes no longer cached.
    @available(*, noasync)
    mutating func evictCachedChunks(of version: VersionRecord, _ dbs: Databases) throws -> Int64 {
        var pages: [(key: [UInt8], value: [UInt8])] = []
        try scan(dbs.manifests, prefix: Keys.manifest(version.manifestID)) { key, value in
            pages.append((Array(key), Array(value)))
            return true
        }
        try policyForget(manifest: version.manifestID, dbs)
        let layout = version.layout
        var evicted: Int64 = 0
        for page in pages {
            let pageIndex = Int64(bitPattern: UInt64(bigEndian: page.key.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self) }))
            var dropped: [(slot: Int, digest: ChunkDigest)] = []
            let rewritten = try page.value.withUnsafeBytes { raw -> [UInt8]? in
                guard let entries = ManifestPage.entries(ofStored: raw) else {
                    throw ManifestPage.damaged(version.manifestID, page: pageIndex, in: self, dbs)
                }
                var slot = -1
                return try ManifestPage.rewrite(entries) { entry in
                    slot += 1
                    guard case .stored(let digest) = entry else { return nil }
                    dropped.append((slot, digest))
                    return .absent(digest)
                }
            }
            guard var rewritten else { continue }
            rewritten.removeLast(Seal.size)  // ManifestPage.store seals what it is given
            try ManifestPage.store(&rewritten, manifest: version.manifestID, page: pageIndex, in: &self, dbs)
            for (slot, digest) in dropped {
                try releaseChunk(digest, dbs)
                evicted += layout.range(ofChunk: pageIndex * ManifestPage.entriesPerPage + Int64(slot), length: version.size).length
            }
        }
        try addToCounter(dbs, PolicyMeta.evictedBytes, evicted)
        return evicted
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
