import Crypto
import FileIO
import Foundation
import LMDBKit

/// What `verify` found.
public struct VerifyReport: Sendable, Hashable {
    /// Chunks re-hashed.
    public var chunksChecked: Int
    /// Chunks whose bytes do not hash to their name, fail to decode, or that manifests need but the store
    /// lacks; sorted.
    public var corrupt: [ChunkDigest]
    /// Chunks removed by `repair` (their manifest entries now say `absent`).
    public var repaired: Int
}

/// Re-hashes every chunk with SHA-256 and checks every manifest against the chunks.
enum Verifier {
    @available(*, noasync)
    static func verify(_ store: Store, repair: Bool, cancellation: CancellationFlag) throws -> VerifyReport {
        let dbs = store.dbs
        var corrupt = Set<ChunkDigest>()
        var checked = 0
        try store.codecs.withDecoder { context in
            try store.environment.read { txn in
                try txn.scan(dbs.chunks, prefix: []) { key, value in
                    try cancellation.check()
                    checked += 1
                    let digest = ChunkDigest(raw: key)
                    guard key.count == 32, let rawRef = try txn.get(dbs.refs, key: key),
                          let ref = try? ChunkRef(decoding: rawRef), Int(ref.rawLength) <= context.buffer.count,
                          let bytes = try? ChunkCodec.decode(value, rawCount: Int(ref.rawLength), decompressor: context.decompressor,
                                                             buffer: context.buffer, digest: digest),
                          ChunkDigest(hashing: bytes) == digest
                    else {
                        corrupt.insert(digest)
                        return true
                    }
                    return true
                }
                // Every stored entry of every published manifest must name a chunk the store has.
                try txn.scan(dbs.versions, prefix: []) { _, raw in
                    let version = try VersionRecord(decoding: raw)
                    var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
                    for index in 0..<version.layout.chunkCount(forLength: version.size) {
                        if case .stored(let digest) = try cursor.entry(index, in: txn),
                           try digest.withUnsafeBytes({ try txn.get(dbs.chunks, key: $0) }) == nil {
                            corrupt.insert(digest)
                        }
                    }
                    return true
                }
            }
        }
        let sorted = corrupt.sorted()
        guard repair, !sorted.isEmpty else { return VerifyReport(chunksChecked: checked, corrupt: sorted, repaired: 0) }
        try store.writer.writeAndWait { txn in
            for digest in sorted {
                try digest.withUnsafeBytes { key in
                    if let raw = try txn.get(dbs.refs, key: key), let ref = try? ChunkRef(decoding: raw) {
                        try txn.addToCounter(dbs, MetaKey.uniqueBytes, -Int64(ref.rawLength))
                        try txn.addToCounter(dbs, MetaKey.storedBytes, -Int64(ref.storedLength))
                    }
                    try txn.delete(dbs.refs, key: key)
                    try txn.delete(dbs.chunks, key: key)
                }
            }
            var rewritten: [([UInt8], [UInt8])] = []
            try txn.scan(dbs.manifests, prefix: []) { key, page in
                let updated = try ManifestPage.rewrite(page) { entry in
                    if case .stored(let digest) = entry, corrupt.contains(digest) { return .absent(digest) }
                    return nil
                }
                if let updated { rewritten.append((Array(key), updated)) }
                return true
            }
            for (key, page) in rewritten { try txn.put(dbs.manifests, key: key, value: page) }
        }
        return VerifyReport(chunksChecked: checked, corrupt: sorted, repaired: sorted.count)
    }
}

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
    /// Re-hashes every chunk with SHA-256 and checks that every manifest's chunks are there.
    ///
    /// - Parameter repair: Remove the corrupt chunks and mark the manifest entries that used them `absent`,
    ///   so fetches needing them report `versionNoLongerAvailable` (or fall back) instead of bad bytes.
    public func verify(repair: Bool = false) async throws -> VerifyReport {
        let store = self.store
        return try await runBlocking { cancellation in
            try Verifier.verify(store, repair: repair, cancellation: cancellation)
        }
    }

    /// The store's figures.
    public func statistics() async throws -> StoreStatistics {
        let store = self.store
        return try await runBlocking { _ in
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
                var st = stat()
                if stat(store.path + "/" + name, &st) == 0 { stats.fileBytes += Int64(st.st_blocks) * 512 }
            }
            return stats
        }
    }
}
