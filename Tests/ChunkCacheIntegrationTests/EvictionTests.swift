import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// Explicit eviction, pins and garbage collection (CONTRACT §12, H1).
@Suite(.serialized) struct EvictionTests {
    static func cached(_ cache: ChunkCache, _ item: String, domain: String = "web") async throws -> Int64 {
        try await cache.versions(of: ItemIdentifier(domain: domain, item)).versions.first?.cachedBytes ?? -1
    }

    @Test(
        "§12 H1: evict turns an origin item's chunks absent with their hash kept; the next fetch downloads them again, right; a file handed off before is untouched",
        .requires(NginxServer.self))
    func evictAndRefetch() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 41)
        try await ColdPathTests.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let item = ItemIdentifier(domain: "web", "a.bin")
            let first = try await cache.fetchContents(for: item)
            _ = try await cache.settle()  // stored chunks (evicting fills has its own test)
            #expect(first.downloadedBytes == 1 << 20)
            #expect(try await Self.cached(cache, "a.bin") == 1 << 20)
            let chunksBefore = try await cache.statistics().chunks
            let result = try await cache.evict(inDomain: "web")
            #expect(result.bytes == 1 << 20 && result.versions == 1 && result.pinnedSkipped == 0)
            #expect(try await Self.cached(cache, "a.bin") == 0)
            #expect(try await cache.statistics().chunks == chunksBefore - 16, "the chunks are freed")
            #expect(
                try TestData.read(first.url.path, count: 2 << 20) == bytes,
                "H1: the hand-off file does not depend on the cache")
            unlink(first.url.path)
            try await server.clearAccessLog()
            let again = try await cache.fetchContents(for: item)
            #expect(again.downloadedBytes == 1 << 20, "every evicted chunk downloaded again")
            #expect(try TestData.read(again.url.path, count: 2 << 20) == bytes)
            unlink(again.url.path)
            _ = try await cache.settle()  // nothing changes behind the figures compared below
            let report = try await cache.verify()
            #expect(report.corrupt.isEmpty && report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
            // A domain without an origin: the store is the only copy.
            _ = try await cache.addDomain("local")
            let before = try await cache.statistics()
            #expect(await errorCode { _ = try await cache.evict(inDomain: "local") } == .invalidArgument)
            #expect(try await cache.statistics() == before)
        }
    }

    @Test(
        "§12: pin downloads what is absent and exempts the item from eviction; unpin lets eviction have it again",
        .requires(NginxServer.self))
    func pinAndUnpin() async throws {
        let bytes = TestData.random(count: 300_000, seed: 42)
        try await ColdPathTests.withOrigin(["p.bin": bytes, "q.bin": bytes.reversed()]) { cache, _, _ in
            let item = ItemIdentifier(domain: "web", "p.bin")
            _ = try await cache.fetchPartialContents(
                for: item, version: nil, minimalRange: ByteRange(location: 0, length: 10), aligningTo: 4096)
            let pinned = try await cache.pin(item)
            #expect(pinned.change.item.isPinned && pinned.change.changed)
            #expect(pinned.downloadedBytes == 300_000 - 65_536, "only what was absent")
            #expect(try await Self.cached(cache, "p.bin") == 300_000)
            let members = try await listAll(try await cache.enumerator(for: Item.workingSetContainer, in: "web")).items
            #expect(members.contains { $0.identifier == "p.bin" }, "pinned items are in the working set")
            _ = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "q.bin"))
            await cache.waitForDownloads()
            let kept = try await cache.evict(inDomain: "web")
            #expect(kept.pinnedSkipped == 1 && kept.bytes == 300_000, "q.bin goes, p.bin stays")
            #expect(try await Self.cached(cache, "p.bin") == 300_000)
            #expect(try await Self.cached(cache, "q.bin") == 0)
            let unpinned = try await cache.unpin(item)
            #expect(
                !unpinned.item.isPinned
                    && unpinned.item.itemVersion.contentVersion == pinned.change.item.itemVersion.contentVersion, "D3")
            #expect(try await cache.evict([item.rawValue], inDomain: "web").bytes == 300_000)
        }
    }

    @Test("§12 gc --keep-versions keeps each item's newest N and frees the chunks only older versions used")
    func garbageCollection() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let shared = TestData.random(count: 65_536, seed: 1)
            for version in 1...3 {
                try await put(
                    cache, shared + TestData.random(count: 65_536, seed: UInt64(10 + version)), as: id,
                    version: "v\(version)", in: dir)
            }
            try await put(
                cache, TestData.random(count: 1000, seed: 5), as: ItemIdentifier(domain: "d", "single"), in: dir)
            #expect(try await cache.statistics().chunks == 5)
            #expect(await errorCode { _ = try await cache.collectGarbage(keepVersions: 0) } == .invalidArgument)
            let two = try await cache.collectGarbage(keepVersions: 2)
            #expect(two.versions == 1 && two.bytes == 131_072)
            #expect(try await cache.versions(of: id).versions.map(\.contentVersion) == ["v3", "v2"])
            #expect(try await cache.statistics().chunks == 4, "v1's own chunk is freed, the shared one stays")
            _ = try await cache.collectGarbage(keepVersions: 1)
            #expect(try await cache.versions(of: id).versions.map(\.contentVersion) == ["v3"])
            #expect(try await cache.statistics().chunks == 3)
            let newest = try await cache.fetchContents(for: id)
            #expect(
                try TestData.read(newest.url.path, count: 200_000) == shared + TestData.random(count: 65_536, seed: 13))
            unlink(newest.url.path)
            #expect(try await cache.verify().corrupt.isEmpty)
        }
    }
}
