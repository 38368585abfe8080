import Foundation
import TestSupport
import Testing
@testable import ChunkCache

/// The completion-handler layer follows the async API: flags, requested versions, C1 bridging.
@Suite struct CompletionHandlerTests {
    /// What one completion received.
    struct Completion: Sendable {
        var url: URL?
        var item: Item?
        var flags: MaterializationFlags
        var error: NSError?
    }

    /// Calls `start` with a handler and waits for its one completion.
    static func completion(_ start: (@escaping @Sendable (Completion) -> Void) -> Void) async -> Completion? {
        let (stream, continuation) = AsyncStream<Completion>.makeStream()
        start { continuation.yield($0); continuation.finish() }
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }

    @Test("A8 §4: fetchContents with flags passes knownSparseRanges through as the async API returns it")
    func fetchContentsPassesFlags() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "sparse")
            let bytes = TestData.random(count: 65536, seed: 1) + [UInt8](repeating: 0, count: 2 * 65536)
            try await put(cache, bytes, as: id, in: dir)
            #expect(try await cache.fetchContents(for: id).flags == .knownSparseRanges)
            let done = try #require(await Self.completion { finish in
                cache.fetchContents(for: id, version: nil, request: FetchRequest(), options: []) { url, item, flags, error in
                    finish(Completion(url: url, item: item, flags: flags, error: error as NSError?))
                }
            })
            #expect(done.error == nil)
            #expect(done.flags == .knownSparseRanges)
            #expect(try readRange(try #require(done.url).path, ByteRange(location: 0, length: Int64(bytes.count))) == bytes)
        }
    }

    @Test("B6: the seed-shaped fetchContents returns the requested version or an error, never another version")
    func fetchContentsHonoursTheVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = TestData.text(count: 100_000, seed: 1)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(cache, TestData.text(count: 120_000, seed: 2), as: id, version: "v2", in: dir)
            let old = try #require(await Self.completion { finish in
                cache.fetchContents(for: id, version: ItemVersion("v1"), request: FetchRequest()) { url, item, error in
                    finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                }
            })
            #expect(old.item?.itemVersion.contentVersionString == "v1")
            #expect(try readRange(try #require(old.url).path, ByteRange(location: 0, length: Int64(v1.count))) == v1)
            let gone = try #require(await Self.completion { finish in
                cache.fetchContents(for: id, version: ItemVersion("gone"), request: FetchRequest()) { url, item, error in
                    finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                }
            })
            #expect(gone.url == nil && gone.item == nil)
            #expect(gone.error?.domain == "NSFileProviderErrorDomain" && gone.error?.code == -2009, "C1 bridging kept")
            let newest = try #require(await Self.completion { finish in
                cache.fetchContents(for: id, version: nil, request: FetchRequest()) { url, item, error in
                    finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                }
            })
            #expect(newest.item?.itemVersion.contentVersionString == "v2", "nil means the newest")
        }
    }

    @Test("C1: an error thrown by the async API bridges with `as NSError` to its File Provider domain and code")
    func asyncErrorsBridge() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            do {
                _ = try await cache.fetchContents(for: ItemIdentifier(domain: "nope", "a"))
                Issue.record("an unknown domain must fail")
            } catch {
                let bridged = error as NSError
                #expect(bridged.domain == "NSFileProviderErrorDomain" && bridged.code == -1005)
                #expect(bridged.localizedDescription.contains("\"nope\""))
            }
        }
    }
}
