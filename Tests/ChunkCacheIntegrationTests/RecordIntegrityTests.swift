import Foundation
import LMDBKit
import TestSupport
import Testing
@testable import ChunkCache

/// A damaged record (manifest page, version, …) is never trusted: reads fail naming it, `verify` lists it.
@Suite struct RecordIntegrityTests {
    static let chunk = 65536

    /// Rewrites the value under `key` in `db` through LMDB itself, as a disk error that keeps the length would.
    static func damage(_ db: Database, key: [UInt8], in cache: ChunkCache, _ change: @escaping @Sendable (inout [UInt8]) -> Void) async throws {
        try await cache.store.writer.write { txn in
            var value = Array(try #require(try txn.get(db, key: key), "the record exists"))
            let length = value.count
            change(&value)
            #expect(value.count == length)
            try txn.put(db, key: key, value: value)
        }
    }

    static func versionKey(_ item: ItemIdentifier, _ version: String) -> [UInt8] {
        Keys.version(itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: Array(version.utf8))
    }

    static func versionRecord(_ item: ItemIdentifier, _ version: String, in cache: ChunkCache) throws -> VersionRecord {
        try cache.store.environment.read { txn in
            let raw = try #require(try txn.get(cache.store.dbs.versions, key: versionKey(item, version)))
            return try VersionRecord(decoding: raw, name: "version under test")
        }
    }

    /// A store holding `doc` (four random chunks) and `other` (two chunks), each as version v1.
    static func twoItems(_ dir: String) async throws -> (ChunkCache, doc: [UInt8], other: [UInt8]) {
        let cache = try await makeCache(dir)
        let doc = TestData.random(count: 4 * chunk, seed: 31)
        let other = TestData.random(count: 2 * chunk, seed: 32)
        try await put(cache, doc, as: ItemIdentifier(domain: "d", "doc"), version: "v1", in: dir)
        try await put(cache, other, as: ItemIdentifier(domain: "d", "other"), version: "v1", in: dir)
        return (cache, doc, other)
    }

    static func fetchError(_ cache: ChunkCache, _ item: ItemIdentifier) async -> CacheError? {
        do {
            let result = try await cache.fetchContents(for: item)
            Issue.record("served \(result.retrievedRange) of a damaged item")
            return nil
        } catch let error as CacheError {
            return error
        } catch {
            Issue.record("not a CacheError: \(error)")
            return nil
        }
    }

    @Test("a flipped tag byte in a manifest page is corruptData naming the item, not zeros served; other items still fetch")
    func flippedManifestByte() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, other) = try await Self.twoItems(dir)
            let doc = ItemIdentifier(domain: "d", "doc")
            let manifest = try Self.versionRecord(doc, "v1", in: cache).manifestID
            // Chunk 2's tag turns from "stored" (1) into "zero" (2): without a check, zeros would be served.
            try await Self.damage(cache.store.dbs.manifests, key: Keys.manifestPage(manifest, page: 0), in: cache) {
                $0[2 * ManifestPage.entrySize] ^= 0x03
            }

            let error = try #require(await Self.fetchError(cache, doc))
            #expect(error.code == .corruptData)
            #expect(error.message.contains("page 0 of the manifest of version \"v1\" of item \"doc\" in domain \"d\""), "\(error.message)")
            #expect(error.message.contains("chunkcache verify"), "says what to do: \(error.message)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty, "no file left")

            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "other"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == other)
        }
    }

    @Test("a flipped byte of a version's size is corruptData naming the version, not a truncated file")
    func flippedVersionSize() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, other) = try await Self.twoItems(dir)
            let doc = ItemIdentifier(domain: "d", "doc")
            // The size (4 × 64 KiB = 0x040000) follows the 8-byte manifest id, little-endian: 0x04 → 0x02 would
            // serve the first two chunks as the whole file.
            try await Self.damage(cache.store.dbs.versions, key: Self.versionKey(doc, "v1"), in: cache) { $0[8 + 2] ^= 0x06 }

            let error = try #require(await Self.fetchError(cache, doc))
            #expect(error.code == .corruptData)
            #expect(error.message.contains("version \"v1\" of item \"doc\" in domain \"d\""), "\(error.message)")
            #expect(error.message.contains("chunkcache verify"), "says what to do: \(error.message)")

            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "other"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == other)
        }
    }
}
