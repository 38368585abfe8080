import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// Puts, dedup, versions and the store's figures through real LMDB files.
@Suite struct StoreTests {
    @Test("§6 featureUnsupported: a store written in another format is refused at open")
    func otherFormat() async throws {
        try await withTemporaryDirectory { dir in
            let store = try await makeCache(dir).store
            try await store.writer.write { txn in try txn.setCounter(store.dbs, MetaKey.format, Store.formatVersion + 1)
            }
            #expect(await errorCode { _ = try await makeCache(dir) } == .featureUnsupported)
        }
    }

    @Test(
        "dedup: a second version that changes one chunk stores exactly one new chunk, as a delta against its old self (§14)"
    )
    func oneChangedChunk() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "big")
            var bytes = TestData.random(count: 64 * 65536, seed: 9)
            let first = try await put(cache, bytes, as: id, in: dir)
            #expect(first.newChunks == 64)
            bytes[17 * 65536 + 100] ^= 0xFF
            let second = try await put(cache, bytes, as: id, in: dir)
            #expect(second.newChunks == 1)
            #expect(second.deltaChunks == 1)
            #expect(
                second.storedBytes < 65536 / 32,
                "an incompressible chunk one byte away from its base is a tiny delta: \(second.storedBytes)")
            #expect(second.item.itemVersion.contentVersion != first.item.itemVersion.contentVersion, "D2")
            let stats = try await cache.statistics()
            #expect(stats.chunks == 65)
            #expect(stats.versions == 2)
            #expect(stats.logicalBytes == Int64(2 * bytes.count))
            #expect(stats.uniqueBytes == 65 * 65536)
        }
    }

    @Test("D2 D3: re-putting the same bytes stores nothing, keeps the content version and the domain version")
    func samebytesSameVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            let bytes = TestData.mixed(count: 20 * 65536 + 5, chunkSize: 65536, seed: 4)
            let first = try await put(cache, bytes, as: id, in: dir)
            let statsBefore = try await cache.statistics()
            let again = try await put(cache, bytes, as: id, in: dir)  // a new file: another mtime, same bytes
            #expect(again.newChunks == 0)
            #expect(again.storedBytes == 0)
            #expect(again.item.itemVersion.contentVersion == first.item.itemVersion.contentVersion)
            #expect(again.domainVersion == first.domainVersion)
            var statsAfter = try await cache.statistics()
            statsAfter.fileBytes = statsBefore.fileBytes
            #expect(statsAfter == statsBefore)
            #expect(first.item.itemVersion.contentVersion.count <= 128, "D1")
        }
    }

    @Test("content versions are immutable: other bytes under an existing version fail and change nothing")
    func immutableVersions() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 100_000, seed: 1), as: id, version: "v1", in: dir)
            let before = try await cache.statistics()
            let code = await errorCode {
                try await put(cache, TestData.text(count: 100_000, seed: 2), as: id, version: "v1", in: dir)
            }
            #expect(code == .invalidArgument)
            var after = try await cache.statistics()
            after.fileBytes = before.fileBytes
            #expect(after == before)
            #expect(try await cache.domainVersion(of: "d") == DomainVersion(rawValue: 1))
        }
    }

    @Test("D1: a content version over 128 bytes is invalidArgument")
    func longVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let code = await errorCode {
                try await put(
                    cache, [1, 2, 3], as: ItemIdentifier(domain: "d", "a"), version: String(repeating: "x", count: 129),
                    in: dir)
            }
            #expect(code == .invalidArgument)
        }
    }

    @Test("E1: every change bumps the domain version by one and it never goes back across reopen")
    func domainVersionGrows() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            var last = DomainVersion(rawValue: 0)
            for i in 0..<5 {
                let result = try await put(
                    cache, TestData.text(count: 5000 + i, seed: UInt64(i)),
                    as: ItemIdentifier(domain: "d", "a\(i % 2)"), in: dir)
                #expect(result.domainVersion == last.next())
                last = result.domainVersion
            }
            let reopened = try await ChunkCache.open(at: cache.path)
            #expect(try reopened.domainVersion(of: "d") == last)
        }
    }

    @Test("all-zero chunks are never stored; sparse inputs are read around their holes")
    func sparseInput() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let path = dir + "/sparse"
            let fd = open(path, O_CREAT | O_RDWR, 0o600)
            let data = TestData.random(count: 65536, seed: 5)
            _ = data.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 512 << 20) }
            ftruncate(fd, 1 << 30)
            close(fd)
            let result = try await cache.put(fileAt: path, as: ItemIdentifier(domain: "d", "sparse"))
            #expect(result.chunks == 16384)
            #expect(result.zeroChunks == 16383)
            #expect(result.newChunks == 1)
            let fetched = try await cache.fetchPartialContents(
                for: ItemIdentifier(domain: "d", "sparse"), version: nil,
                minimalRange: ByteRange(location: 512 << 20, length: 65536), aligningTo: 4096)
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == data)
        }
    }

    @Test("versions lists newest first with sizes and cached bytes")
    func versionList() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 1000, seed: 1), as: id, version: "one", in: dir)
            try await put(cache, TestData.text(count: 2000, seed: 2), as: id, version: "two", in: dir)
            let (item, versions) = try await cache.versions(of: id)
            #expect(versions.map(\.contentVersion) == ["two", "one"])
            #expect(versions.map(\.size) == [2000, 1000])
            #expect(versions.map(\.cachedBytes) == [2000, 1000])
            #expect(item.itemVersion.contentVersionString == "two")
        }
    }

    @Test("a full store is insufficientQuota and keeps what it had")
    func fullStore() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, maxSize: 4 << 20)
            let keep = TestData.text(count: 200_000, seed: 1)
            try await put(cache, keep, as: ItemIdentifier(domain: "d", "keep"), in: dir)
            let before = try await cache.statistics()
            let code = await errorCode {
                try await put(
                    cache, TestData.random(count: 16 << 20, seed: 2), as: ItemIdentifier(domain: "d", "big"), in: dir)
            }
            #expect(code == .insufficientQuota)
            var after = try await cache.statistics()
            after.fileBytes = before.fileBytes
            #expect(after == before)
            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "keep"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == keep)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "big")) }
                    == .noSuchItem)
        }
    }

    @Test("a different chunk size for an existing store is invalidArgument; the same settings change nothing")
    func reopenSettings() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, chunkSize: 16384)
            let same = try await ChunkCache.open(
                at: cache.path, creatingWith: StoreSettings(layout: try ChunkLayout(chunkSize: 16384), maxSize: 1 << 34)
            )
            #expect(same.layout.chunkSize == 16384)
            let code = await errorCode {
                _ = try await ChunkCache.open(
                    at: cache.path, creatingWith: StoreSettings(layout: .standard, maxSize: 1 << 34))
            }
            #expect(code == .invalidArgument)
        }
    }

    @Test("a damaged data.mdb is corruptData on open, not a crash")
    func damagedDataFile() async throws {
        try await withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/bad", withIntermediateDirectories: true)
            try TestData.write(TestData.random(count: 1 << 16, seed: 3), to: dir + "/bad/data.mdb")
            #expect(await errorCode { _ = try await ChunkCache.open(at: dir + "/bad") } == .corruptData)
        }
    }

    @Test("a store path that is a file is invalidArgument")
    func storeIsAFile() async throws {
        try await withTemporaryDirectory { dir in
            try TestData.write([1], to: dir + "/file")
            #expect(await errorCode { _ = try await ChunkCache.open(at: dir + "/file") } == .invalidArgument)
        }
    }

    @Test("put of a missing file or a directory is invalidArgument naming the path")
    func badPutInput() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            for path in [dir + "/missing", dir] {
                do {
                    _ = try await cache.put(fileAt: path, as: ItemIdentifier(domain: "d", "a"))
                    Issue.record("put of \(path) succeeded")
                } catch let error as CacheError {
                    #expect(error.code == .invalidArgument)
                    #expect(error.message.contains(path))
                }
            }
            #expect(try await cache.statistics().versions == 0)
        }
    }
}
