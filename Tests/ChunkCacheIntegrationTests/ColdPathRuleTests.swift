import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The §3 and §7 rules on the cold path: a fetch that goes to the origin answers exactly as a warm one does.
@Suite(.serialized) struct ColdPathRuleTests {
    static let chunk = 65_536

    /// Four chunks: data, zeros, data, zeros.
    static let sparse =
        TestData.random(count: chunk, seed: 31) + [UInt8](repeating: 0, count: chunk)
        + TestData.random(count: chunk, seed: 32) + [UInt8](repeating: 0, count: chunk)

    @Test(
        "A7 A8 §3 §10: a cold fetch whose retrieved range is the whole file keeps zero chunks as holes and says knownSparseRanges, as a warm one does",
        .requires(NginxServer.self))
    func coldWholeFileKeepsHoles() async throws {
        try await ColdPathTests.withOrigin(["a.bin": Self.sparse]) { cache, _, _ in
            // One byte at 1 GiB alignment: the retrieved range is the whole file.
            var results: [FetchResult] = []
            for _ in 0..<2 {  // cold, then warm
                let result = try await cache.fetchPartialContents(
                    for: ItemIdentifier(domain: "web", "a.bin"), version: nil,
                    minimalRange: ByteRange(location: 0, length: 1), aligningTo: 1 << 30)
                results.append(result)
                await cache.waitForDownloads()
            }
            #expect(
                results[0].downloadedBytes > 0 && results[1].downloadedBytes == 0,
                "the first went to the origin, the second did not")
            for (result, path) in zip(results, ["cold", "warm"]) {
                #expect(result.retrievedRange == ByteRange(location: 0, length: Int64(Self.sparse.count)), "\(path)")
                #expect(result.flags == .knownSparseRanges, "\(path)")
                #expect(try readRange(result.url.path, result.retrievedRange) == Self.sparse, "\(path)")
                let sizes = try fileSizes(result.url.path)
                #expect(
                    sizes.allocated <= Int64(2 * Self.chunk),
                    "\(path): the two zero chunks are holes (\(sizes.allocated) bytes allocated)")
                try? FileManager.default.removeItem(at: result.url)
            }
        }
    }

    @Test(
        "A11 B6 §7 §10: a version the store does not know, on an origin domain, is asked of the origin, never served by an older stored one",
        .requires(NginxServer.self))
    func unknownVersionAsksTheOrigin() async throws {
        let old = TestData.random(count: 1 << 20, seed: 33)
        let new = TestData.random(count: 1 << 20, seed: 34)
        try await ColdPathTests.withOrigin(["a.bin": old]) { cache, _, root in
            let first = try await ColdPathTests.fetch(cache, "a.bin", 0, 65_536)
            try ColdPathTests.expectBytes(first, old)
            let oldVersion = first.item.itemVersion.contentVersionString
            try await ColdPathTests.replace("a.bin", in: root, with: new)

            // A version the caller learnt elsewhere (another replica's listing): the store has never seen it.
            let served = try await ColdPathTests.fetch(cache, "a.bin", 0, 65_536, version: "\"not-yet-seen\"")
            let newVersion = served.item.itemVersion.contentVersionString
            #expect(newVersion != oldVersion, "the origin's version, not the older stored one")
            try ColdPathTests.expectBytes(served, new)
            let strict = await errorCode {
                _ = try await ColdPathTests.fetch(cache, "a.bin", 0, 65_536, version: "\"not-yet-seen\"", strict: true)
            }
            #expect(strict == .versionNoLongerAvailable)
            // The versions the store knows still serve as before.
            try ColdPathTests.expectBytes(
                try await ColdPathTests.fetch(cache, "a.bin", 0, 65_536, version: oldVersion, strict: true), old)
            try ColdPathTests.expectBytes(
                try await ColdPathTests.fetch(cache, "a.bin", 0, 65_536, version: newVersion, strict: true), new)
        }
    }
}
