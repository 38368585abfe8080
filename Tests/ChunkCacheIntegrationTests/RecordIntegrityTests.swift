import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// A damaged record (manifest page, version, …) is never trusted: reads fail naming it, `verify` lists it.
@Suite struct RecordIntegrityTests {
    static let chunk = 65536

    /// Rewrites the value under `key` in `db` through LMDB itself, as a disk error that keeps the length would.
    static func damage(
        _ db: Database, key: [UInt8], in cache: ChunkCache, _ change: @escaping @Sendable (inout [UInt8]) -> Void
    ) async throws {
        try await cache.store.writer.write { txn in
            var value = try #require(try txn.withValue(db, key: key) { Array($0) }, "the record exists")
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
            let version = try txn.withValue(cache.store.dbs.versions, key: versionKey(item, version)) {
                try VersionRecord(decoding: $0, name: "version under test")
            }
            return try #require(version)
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
        await caught {
            let result = try await cache.fetchContents(for: item)
            Issue.record("served \(result.retrievedRange) of a damaged item")
        }
    }

    @Test(
        "a flipped tag byte in a manifest page is corruptData naming the item, not zeros served; other items still fetch"
    )
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
            #expect(
                error.message.contains("page 0 of the manifest of version \"v1\" of item \"doc\" in domain \"d\""),
                "\(error.message)")
            #expect(error.message.contains("chunkcache verify"), "says what to do: \(error.message)")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty,
                "no file left")

            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "other"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == other)
        }
    }

    @Test("a manifest page checked by an earlier fetch is checked again once a commit has changed it")
    func checkedPageMemoIsPerSnapshot() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, _) = try await Self.twoItems(dir)
            let doc = ItemIdentifier(domain: "d", "doc")
            _ = try await cache.fetchContents(for: doc)  // page 0 is now remembered as checked
            let manifest = try Self.versionRecord(doc, "v1", in: cache).manifestID
            try await Self.damage(cache.store.dbs.manifests, key: Keys.manifestPage(manifest, page: 0), in: cache) {
                $0[2 * ManifestPage.entrySize] ^= 0x03
            }
            #expect(await Self.fetchError(cache, doc)?.code == .corruptData)
        }
    }

    @Test("the checked-page memo knows a page only for the snapshot, address and length it was checked at")
    func checkedPageMemoKeys() {
        let memo = CheckedPageMemo()
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { bytes.deallocate() }
        let value = UnsafeRawBufferPointer(bytes)
        memo.insert(CheckedPageMemo.Key(snapshot: 7, manifest: 1, page: 0, value: value))
        #expect(memo.contains(CheckedPageMemo.Key(snapshot: 7, manifest: 1, page: 0, value: value)))
        #expect(!memo.contains(CheckedPageMemo.Key(snapshot: 8, manifest: 1, page: 0, value: value)))
        #expect(!memo.contains(CheckedPageMemo.Key(snapshot: 7, manifest: 1, page: 1, value: value)))
        #expect(
            !memo.contains(
                CheckedPageMemo.Key(
                    snapshot: 7, manifest: 1, page: 0, value: UnsafeRawBufferPointer(rebasing: value[1...]))))
        for page in 1...Int64(CheckedPageMemo.capacity) {
            memo.insert(CheckedPageMemo.Key(snapshot: 7, manifest: 2, page: page, value: value))
        }
        #expect(
            !memo.contains(CheckedPageMemo.Key(snapshot: 7, manifest: 1, page: 0, value: value)),
            "the oldest is forgotten")
    }

    @Test("a flipped byte of a version's size is corruptData naming the version, not a truncated file")
    func flippedVersionSize() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, other) = try await Self.twoItems(dir)
            let doc = ItemIdentifier(domain: "d", "doc")
            // The size (4 × 64 KiB = 0x040000) follows the 8-byte manifest id, little-endian: 0x04 → 0x02 would
            // serve the first two chunks as the whole file.
            try await Self.damage(cache.store.dbs.versions, key: Self.versionKey(doc, "v1"), in: cache) {
                $0[8 + 2] ^= 0x06
            }

            let error = try #require(await Self.fetchError(cache, doc))
            #expect(error.code == .corruptData)
            #expect(error.message.contains("version \"v1\" of item \"doc\" in domain \"d\""), "\(error.message)")
            #expect(error.message.contains("chunkcache verify"), "says what to do: \(error.message)")

            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "other"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == other)
        }
    }

    @Test(
        "verify names every damaged record and version, keeps going past them, and --repair works around a damaged page"
    )
    func verifyReportsDamage() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, docBytes, _) = try await Self.twoItems(dir)
            // `intact` shares its first chunk with chunk 1 of `doc`, whose page is damaged below: a repair of
            // that chunk must leave the damaged page as it is, not seal the damage as valid.
            let intact = ItemIdentifier(domain: "d", "intact")
            let intactBytes =
                Array(docBytes[Self.chunk..<(2 * Self.chunk)]) + TestData.random(count: Self.chunk, seed: 33)
            try await put(cache, intactBytes, as: intact, version: "v1", in: dir)
            let doc = ItemIdentifier(domain: "d", "doc")
            let manifest = try Self.versionRecord(doc, "v1", in: cache).manifestID
            try await Self.damage(cache.store.dbs.manifests, key: Keys.manifestPage(manifest, page: 0), in: cache) {
                $0[2 * ManifestPage.entrySize] ^= 0x03
            }
            try await Self.damage(
                cache.store.dbs.versions, key: Self.versionKey(ItemIdentifier(domain: "d", "other"), "v1"), in: cache
            ) {
                $0[8 + 2] ^= 0x06
            }
            let bad = try IntegrityTests.digest(ofChunk: 0, item: intact, version: "v1", in: cache)
            try IntegrityTests.flipStoredByte(of: bad, in: cache)

            let expectedRecords = [
                "page 0 of the manifest of version \"v1\" of item \"doc\" in domain \"d\"",
                "version \"v1\" of item \"other\" in domain \"d\"",
            ]
            let expectedVersions = [
                DamagedVersion(
                    domain: "d", item: "doc", contentVersion: "v1", problem: "page 0 of its manifest fails its check"),
                DamagedVersion(domain: "d", item: "other", contentVersion: "v1", problem: "its record fails its check"),
            ]
            let report = try await cache.verify()
            #expect(report.chunksChecked == 7)
            #expect(report.corrupt == [bad])
            #expect(report.damagedRecords == expectedRecords)
            #expect(report.damagedVersions == expectedVersions)

            let repaired = try await cache.verify(repair: true)
            #expect(repaired.repaired == 1)
            #expect(
                repaired.damagedRecords == expectedRecords,
                "repair leaves damaged pages as they are, never reseals them")
            let after = try await cache.verify()
            #expect(after.corrupt.isEmpty)
            #expect(after.damagedVersions == expectedVersions, "an absent entry with its digest still derives the root")
            let served = try await cache.fetchPartialContents(
                for: intact, version: ItemVersion("v1"),
                minimalRange: ByteRange(location: Int64(Self.chunk), length: 100), aligningTo: 4096)
            #expect(try readRange(served.url.path, served.retrievedRange) == Array(intactBytes[Self.chunk...]))
        }
    }

    /// Replaces the entries of page 0 of `item`'s v1 manifest with `change`, sealed again as valid.
    static func rewriteEntries(
        of item: ItemIdentifier, in cache: ChunkCache, _ change: @escaping @Sendable (inout [UInt8]) -> Void
    ) async throws {
        let manifest = try versionRecord(item, "v1", in: cache).manifestID
        try await damage(cache.store.dbs.manifests, key: Keys.manifestPage(manifest, page: 0), in: cache) { value in
            var entries = Array(value.dropLast(Seal.size))
            change(&entries)
            Seal.append(to: &entries)
            value = entries
        }
    }

    @Test("verify re-derives each version's root from its manifest: swapped entries under a valid seal are named")
    func rootMismatch() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, _) = try await Self.twoItems(dir)
            try await Self.rewriteEntries(of: ItemIdentifier(domain: "d", "doc"), in: cache) { entries in
                let size = ManifestPage.entrySize
                let first = Array(entries[0..<size])
                entries.replaceSubrange(0..<size, with: entries[size..<(2 * size)])
                entries.replaceSubrange(size..<(2 * size), with: first)
            }
            let report = try await cache.verify()
            #expect(report.damagedRecords.isEmpty)
            #expect(
                report.damagedVersions == [
                    DamagedVersion(
                        domain: "d", item: "doc", contentVersion: "v1",
                        problem: "its manifest does not hash to its root")
                ])
            #expect(report.corrupt.isEmpty)
        }
    }

    @Test("verify skips the root of a version with an entry whose hash is unknown (absent, no digest)")
    func unknownEntrySkipsRoot() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, _) = try await Self.twoItems(dir)
            try await Self.rewriteEntries(of: ItemIdentifier(domain: "d", "doc"), in: cache) { entries in
                var unknown: [UInt8] = []
                ManifestPage.append(.absent(nil), to: &unknown)
                entries.replaceSubrange(0..<ManifestPage.entrySize, with: unknown)
            }
            let report = try await cache.verify()
            #expect(report.damagedVersions.isEmpty)
            #expect(report.damagedRecords.isEmpty)
        }
    }

    @Test("verify checks a chunk's key is 32 bytes before reading a digest from it")
    func shortChunkKey() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, _, _) = try await Self.twoItems(dir)
            let dbs = cache.store.dbs
            try await cache.store.writer.write { txn in
                try txn.put(dbs.chunks, key: [1, 2, 3, 4, 5], value: [0, 0, 0])
            }
            let report = try await cache.verify()
            #expect(report.chunksChecked == 7)
            #expect(report.corrupt.isEmpty)
            #expect(report.damagedRecords == ["the chunk under the 5-byte key 0102030405, which is no SHA-256"])
            #expect(try await cache.verify(repair: true).repaired == 0)
        }
    }

    @Test("§6 featureUnsupported: a store of format 1 (records without their check) is refused at open")
    func formatOne() async throws {
        try await withTemporaryDirectory { dir in
            let store = try await makeCache(dir).store
            try await store.writer.write { txn in try txn.setCounter(store.dbs, MetaKey.format, 1) }
            let error = await #expect(throws: CacheError.self) { _ = try await makeCache(dir) }
            #expect(error?.code == .featureUnsupported)
            #expect(error?.message.contains("format 1") == true, "\(String(describing: error))")
        }
    }
}
