import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path goes one way (CONTRACT §10): a miss carries the plan it made to the fill and to the read,
/// so a cold fetch reads the catalogue once (``Engine/plansMade`` counts the plans).
@Suite(.serialized) struct ColdPlanTests {
    static let item = ItemIdentifier(domain: "web", "a.bin")

    /// A store whose origin serves 1 MiB as "a.bin", the item discovered (its first chunk fetched), read-ahead
    /// off, and no plan counted yet.
    static func discovered(_ body: (ChunkCache, [UInt8]) async throws -> Void) async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 27)
        try await ColdPathTests.withOrigin(["a.bin": bytes], readAhead: 0) { cache, _, _ in
            try ColdPathTests.expectBytes(try await ColdPathTests.fetch(cache, "a.bin", 0, 100), bytes)
            cache.engine.plansMade.store(0, ordering: .relaxed)
            try await body(cache, bytes)
        }
    }

    static func plans(_ cache: ChunkCache) -> Int { cache.engine.plansMade.load(ordering: .relaxed) }

    @Test(
        "§10 a cold path that goes one way: a cold fetch read from the store after its fill plans once; the fill serves the plan its miss made",
        .requires(NginxServer.self))
    func coldFetchPlansOnce() async throws {
        try await Self.discovered { cache, bytes in
            let range = ByteRange(location: 300_000, length: 100_000)
            let result = try await onThreadOfItsOwn {
                try cache.fetchPartialContentsSynchronously(
                    for: Self.item, version: nil, minimalRange: range, aligningTo: 4096)
            }.get()
            #expect(result.retrievedRange == ByteRange(location: 262_144, length: 196_608))
            #expect(result.downloadedBytes == 196_608 && result.originRequests == 1)
            try ColdPathTests.expectBytes(result, bytes)
            #expect(Self.plans(cache) == 1)
        }
    }

    @Test(
        "§13 a cold READ plans once: the miss readCached found on the FUSE thread carries its plan to the async read",
        .requires(NginxServer.self))
    func cachedReadMissPlansOnce() async throws {
        try await Self.discovered { cache, bytes in
            nonisolated(unsafe) let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 5000, alignment: 16)
            defer { buffer.deallocate() }
            let cached = try await onThreadOfItsOwn {
                try cache.readCached(Self.item, version: nil, at: 600_000, into: buffer)
            }.get()
            guard case .missing(let miss) = cached else {
                Issue.record("a range never downloaded was served from the store")
                return
            }
            let read = try await cache.read(miss)
            #expect(read.bytesRead == 5000)
            #expect(Array(buffer) == Array(bytes[600_000..<605_000]))
            #expect(Self.plans(cache) == 1)
            // Warm once the chunks are recorded behind the read: served on the FUSE thread, by one more plan.
            await cache.waitForDownloads()
            let warm = try await onThreadOfItsOwn {
                try cache.readCached(Self.item, version: nil, at: 600_000, into: buffer)
            }.get()
            guard case .served(let served) = warm else {
                Issue.record("the range just read was not served from the store")
                return
            }
            #expect(served.bytesRead == 5000 && Self.plans(cache) == 2)
        }
    }

    @Test(
        "§10 A16 a completion-handler fetch that misses reads the catalogue once: its Progress and its cold path share one plan",
        .requires(NginxServer.self))
    func completionMissPlansOnce() async throws {
        try await Self.discovered { cache, bytes in
            let (done, continuation) = AsyncStream<(URL?, ByteRange)>.makeStream()
            let progress = cache.fetchPartialContents(
                for: Self.item, version: nil, request: FetchRequest(),
                minimalRange: ByteRange(location: 700_000, length: 1000), aligningTo: 4096, options: []
            ) { url, _, range, _, _ in continuation.yield((url, range)) }
            #expect(progress.totalUnitCount == 65_536, "determinate when returned: the plan's range")
            var it = done.makeAsyncIterator()
            let (url, range) = try #require(await it.next())
            let path = try #require(url).path
            #expect(range == ByteRange(location: 655_360, length: 65_536))
            #expect(try readRange(path, range) == Array(bytes[Int(range.location)..<Int(range.end)]))
            unlink(path)
            #expect(Self.plans(cache) == 1)
            // Warm once the chunks are recorded: the fetch serves the plan made on the caller's thread.
            await cache.waitForDownloads()
            let warm = cache.fetchPartialContents(
                for: Self.item, version: nil, request: FetchRequest(),
                minimalRange: ByteRange(location: 700_000, length: 1000), aligningTo: 4096, options: []
            ) { url, _, range, _, _ in continuation.yield((url, range)) }
            #expect(warm.totalUnitCount == 65_536)
            let (warmURL, warmRange) = try #require(await it.next())
            let warmPath = try #require(warmURL).path
            #expect(try readRange(warmPath, warmRange) == Array(bytes[Int(range.location)..<Int(range.end)]))
            unlink(warmPath)
            #expect(Self.plans(cache) == 2)
        }
    }
}
