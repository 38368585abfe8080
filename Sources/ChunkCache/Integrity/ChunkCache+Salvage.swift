import Crypto
import FileIO
import Foundation
import LMDBKit
import ZstdKit

extension ChunkCache {
    /// Salvages everything readable of the store at `source` into a new store at `destination`, as
    /// `sqlite3 .recover` does: domains with their origin settings, items, versions with their manifests,
    /// and chunks, each re-hashed with SHA-256 and checked against its name. Downloaded chunks not settled yet
    /// (fills) are settled on the way: checked against their XXH3 and the SHA-256 their manifest knew, and
    /// stored as chunks. The new store verifies clean.
    ///
    /// The old store is read straight from the pages of its `data.mdb`, never through LMDB, which trusts its
    /// pages and crashes the process on a damaged one; a damaged page loses only the records it held.
    /// Nothing in the old store is written. Stop every process using the old store first: its file is read
    /// as it is. A version of a domain without an origin that lost a chunk or a manifest page is left out
    /// (put its file again); one of an origin domain is kept with those chunks `absent`, downloaded again
    /// when fetched.
    ///
    /// - Parameters:
    ///   - source: The damaged store's directory (by default as ``open(at:creatingWith:handOffGracePeriod:)``
    ///     finds it).
    ///   - destination: A directory that holds no store yet; created when missing.
    /// - Returns: What was recovered and lost, and the damage found.
    /// - Throws: `fileExists` when `destination` already holds a store, `invalidArgument` when it is the
    ///   source, `corruptData` when `source`'s data file has no usable meta page.
    public static func recover(storeAt source: String?, into destination: String) async throws -> RecoveryReport {
        let sourcePath = Store.resolvePath(source)
        return try await runBlocking(doing: "recovering the store at \(sourcePath)", store: sourcePath) { _ in
            guard (try? FileSystem.checkAccess(sourcePath + "/data.mdb", for: .exists)) != nil else {
                throw CacheError(
                    .invalidArgument,
                    "there is no store at \(sourcePath) (no data.mdb); give the damaged store with --store")
            }
            let canonicalSource = (try? FileSystem.canonicalPath(sourcePath)) ?? sourcePath
            if let canonical = try? FileSystem.canonicalPath(destination), canonical == canonicalSource {
                throw CacheError(
                    .invalidArgument,
                    "recover writes a new store: --to \(destination) is the damaged store itself; give a new directory")
            }
            guard (try? FileSystem.checkAccess(destination + "/data.mdb", for: .exists)) == nil else {
                throw CacheError(
                    .fileExists, "\(destination) already holds a store; give recover a new directory with --to")
            }
            let shift = PageFile.chunkShift(ofStoreAt: sourcePath)
            // Through the engine: the new store's writer keeps its bound as any other store's does.
            let engine = try Engine.open(
                at: destination, layout: shift.map { ChunkLayout(uncheckedShift: $0) }, maxSize: nil)
            defer { engine.release() }
            return try Salvage.recover(source: sourcePath, into: engine.store)
        }
    }
}
