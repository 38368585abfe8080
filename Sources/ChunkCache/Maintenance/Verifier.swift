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
}
