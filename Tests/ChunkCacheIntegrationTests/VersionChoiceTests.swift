import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The error a throwing call raised, as a `CacheError` (nil when it did not throw one).
func caught(_ body: () async throws -> Void) async -> CacheError? {
    do {
        try await body()
        return nil
    } catch let error as CacheError {
        return error
    } catch {
        Issue.record("not a CacheError: \(error)")
        return nil
    }
}

/// Which version serves a fetch (CONTRACT §7, B6, C4) when chunks were lost and repaired away.
@Suite struct VersionChoiceTests {
    static let chunk = 65536

    /// Three versions of one item whose chunk 2 differs in each; chunk 2 of `damaged` is then lost
    /// (flipped on disk and dropped by `verify --repair`).
    static func threeVersions(damaged: [String], in dir: String) async throws -> (
        ChunkCache, ItemIdentifier, [String: [UInt8]]
    ) {
        let cache = try await makeCache(dir)
        let id = ItemIdentifier(domain: "d", "doc")
        let common = TestData.random(count: 2 * chunk, seed: 1)
        var bytes: [String: [UInt8]] = [:]
        for (i, name) in ["v1", "v2", "v3"].enumerated() {
            bytes[name] =
                common + TestData.random(count: chunk, seed: 10 + UInt64(i)) + TestData.random(count: chunk, seed: 2)
            try await put(cache, try #require(bytes[name]), as: id, version: name, in: dir)
        }
        for name in damaged {
            try IntegrityTests.flipStoredByte(
                of: try IntegrityTests.digest(ofChunk: 2, item: id, version: name, in: cache), in: cache)
        }
        #expect(try await cache.verify(repair: true).repaired == damaged.count)
        return (cache, id, bytes)
    }

    static let chunk2 = ByteRange(location: Int64(2 * chunk) + 10, length: 100)

    @Test("B6: a requested version that cannot serve the range is replaced by a newer one, never an older one")
    func newerNeverOlder() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, bytes) = try await Self.threeVersions(damaged: ["v2"], in: dir)
            let served = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("v2"), minimalRange: Self.chunk2, aligningTo: 4096)
            #expect(served.item.itemVersion.contentVersionString == "v3", "the newer v3, not the older v1")
            let r = served.retrievedRange
            #expect(try readRange(served.url.path, r) == Array(try #require(bytes["v3"])[Int(r.location)..<Int(r.end)]))
        }
    }

    @Test(
        "B6 C4: the newest version that cannot serve, asked for by name or by nil, is corruptData; the older one never serves"
    )
    func newestLostNeverFallsBack() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, _) = try await Self.threeVersions(damaged: ["v3"], in: dir)
            for version in [ItemVersion("v3"), nil] {
                let error = await caught {
                    _ = try await cache.fetchPartialContents(
                        for: id, version: version, minimalRange: Self.chunk2, aligningTo: 4096)
                }
                #expect(error?.code == .corruptData, "\(String(describing: version))")
                #expect(error?.message.contains("version \"v3\"") == true, "\(error?.message ?? "")")
            }
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: id) } == .corruptData,
                "§4 nil means the newest")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
        }
    }

    @Test("B6: a version the store does not know is replaced by the newest version that can serve the range")
    func goneVersionGetsNewestThatCanServe() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, _) = try await Self.threeVersions(damaged: ["v3"], in: dir)
            let served = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("gone"), minimalRange: Self.chunk2, aligningTo: 4096)
            #expect(served.item.itemVersion.contentVersionString == "v2")
            let whole = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("gone"), minimalRange: ByteRange(location: 0, length: 10),
                aligningTo: 4096)
            #expect(whole.item.itemVersion.contentVersionString == "v3", "v3 still serves its other chunks")
        }
    }

    @Test("A11 C4: a strict fetch gets its version or versionNoLongerAvailable, and only a strict one gets that code")
    func strictOnly() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, _) = try await Self.threeVersions(damaged: ["v2"], in: dir)
            for version in ["v2", "gone"] {
                #expect(
                    await errorCode {
                        _ = try await cache.fetchPartialContents(
                            for: id, version: ItemVersion(version), minimalRange: Self.chunk2,
                            aligningTo: 4096, options: .strictVersioning)
                    } == .versionNoLongerAvailable, "\(version)")
            }
            let old = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("v1"), minimalRange: Self.chunk2,
                aligningTo: 4096, options: .strictVersioning)
            #expect(old.item.itemVersion.contentVersionString == "v1")
        }
    }

    @Test(
        "B6 A11 §4: the async fetchContents with a version returns that version or versionNoLongerAvailable, as the seed's; options [] keeps the non-strict rule"
    )
    func asyncFetchContentsHonoursTheVersion() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, bytes) = try await Self.threeVersions(damaged: ["v2"], in: dir)
            for version in ["v2", "gone"] {
                #expect(
                    await errorCode {
                        _ = try await cache.fetchContents(for: id, version: ItemVersion(version))
                    } == .versionNoLongerAvailable, "\(version): the seed's rule, not the newer v3")
            }
            let v1 = try await cache.fetchContents(for: id, version: ItemVersion("v1"))
            #expect(v1.item.itemVersion.contentVersionString == "v1")
            #expect(try readRange(v1.url.path, ByteRange(location: 0, length: Int64(4 * Self.chunk))) == bytes["v1"])
            let newer = try await cache.fetchContents(for: id, version: ItemVersion("v2"), options: [])
            #expect(
                newer.item.itemVersion.contentVersionString == "v3", "explicit non-strict options: the CLI's rule (§7)")
            #expect(
                try await cache.fetchContents(for: id).item.itemVersion.contentVersionString == "v3",
                "nil means the newest")
        }
    }

    @Test(
        "C2: an unknown item of a domain without an origin is noSuchItem (the store is authoritative); an unknown domain too"
    )
    func confirmedMissing() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, TestData.text(count: 1000, seed: 1), as: ItemIdentifier(domain: "d", "a"), in: dir)
            let item = await caught { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "d", "nope")) }
            #expect(item?.code == .noSuchItem)
            #expect(item?.message.contains("\"nope\"") == true && item?.message.contains("\"d\"") == true)
            #expect(
                await errorCode { _ = try await cache.fetchContents(for: ItemIdentifier(domain: "x", "a")) }
                    == .noSuchItem)
            #expect(
                await errorCode { _ = try await cache.versions(of: ItemIdentifier(domain: "d", "nope")) } == .noSuchItem
            )
        }
    }
}

/// A chunk that leaves the cache between a fetch's plan and its read (a parallel worker's newer snapshot sees
/// `verify --repair` mark it absent) is planned again in a fresh snapshot, never reported as
/// `versionNoLongerAvailable` (C4).
@Suite struct VanishedChunkTests {
    @Test("C4: a chunk vanishing mid-fetch is re-planned in a fresh snapshot, and the retry serves")
    func replanned() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let snapshots = Counter()
            let served = try ChunkCache.inFreshSnapshots(of: cache.store, fetching: ItemIdentifier(domain: "d", "doc"))
            { _ in
                if snapshots.increment() == 1 { throw ChunkVanished(index: 7) }
                return "served"
            }
            #expect(served == "served")
            #expect(snapshots.value == 2)
        }
    }

    @Test("C4: a chunk that keeps vanishing ends in corruptData naming it, never versionNoLongerAvailable")
    func keepsVanishing() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let snapshots = Counter()
            let error = await caught {
                _ = try ChunkCache.inFreshSnapshots(of: cache.store, fetching: ItemIdentifier(domain: "d", "doc")) {
                    _ -> Int in
                    _ = snapshots.increment()
                    throw ChunkVanished(index: 7)
                }
            }
            #expect(error?.code == .corruptData)
            #expect(error?.message.contains("chunk 7 of item d/doc") == true)
            #expect(snapshots.value == ChunkCache.maxSnapshots)
        }
    }
}

/// A count bumped from a synchronous closure.
private final class Counter: @unchecked Sendable {
    private(set) var value = 0
    /// Adds one and returns the new count. Used from one thread at a time.
    func increment() -> Int {
        value += 1
        return value
    }
}
