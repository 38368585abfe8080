import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// `read(_:version:at:into:)` and the synchronous fetch: the engine without async, for FUSE and C callers.
@Suite struct ReadIntoBufferTests {
    /// Reads `count` bytes at `offset` into a fresh buffer.
    static func read(
        _ cache: ChunkCache, _ id: ItemIdentifier, version: String? = nil, at offset: Int64, count: Int,
        options: FetchOptions = []
    ) throws -> (bytes: [UInt8], result: ReadResult) {
        var buffer = [UInt8](repeating: 0xEE, count: count)
        let result = try buffer.withUnsafeMutableBytes {
            try cache.read(id, version: version.map { ItemVersion($0) }, at: offset, into: $0, options: options)
        }
        return (Array(buffer.prefix(result.bytesRead)), result)
    }

    @Test(
        "§13: reads on, ending on and straddling chunk boundaries, across zero chunks, and past EOF return the source bytes",
        arguments: [4096, 65536])
    func readsMatchTheSource(chunkSize: Int) async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, chunkSize: chunkSize)
            let id = ItemIdentifier(domain: "d", "mixed")
            let c = chunkSize
            let source =
                TestData.text(count: c, seed: 1) + TestData.random(count: c, seed: 2)
                + [UInt8](repeating: 0, count: 2 * c)
                + TestData.text(count: c + 777, seed: 3)
            try await put(cache, source, as: id, in: dir)
            let size = source.count
            let cases: [(Int, Int)] = [
                (0, c), (c, c), (c, 2 * c), (10, c), (c - 10, 20), (c / 2, 3 * c), (2 * c + 5, c), (0, size),
                (size - 100, 100), (size - 100, 1000), (size, 10), (size + 5000, 10), (7, 0), (3 * c - 1, 2),
            ]
            for (offset, count) in cases {
                let (bytes, result) = try Self.read(cache, id, at: Int64(offset), count: count)
                let end = min(size, offset + count)
                let expected = offset < size ? Array(source[offset..<end]) : []
                #expect(result.bytesRead == expected.count, "\(offset)+\(count)")
                #expect(bytes == expected, "\(offset)+\(count)")
                #expect(result.item.documentSize == Int64(size))
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty,
                "no temp file")
        }
    }

    @Test("A14: a read of an empty item returns 0 bytes")
    func emptyItem() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "empty")
            try await put(cache, [], as: id, in: dir)
            #expect(try Self.read(cache, id, at: 0, count: 100).result.bytesRead == 0)
            #expect(await errorCode { _ = try Self.read(cache, id, at: -1, count: 1) } == .invalidArgument)
        }
    }

    @Test("B6 C4 A11: reads follow the version rules: newer never older, strict or corruptData")
    func versionRules() async throws {
        try await withTemporaryDirectory { dir in
            let (cache, id, bytes) = try await VersionChoiceTests.threeVersions(damaged: ["v2"], in: dir)
            let at = Int64(2 * VersionChoiceTests.chunk + 10)
            let v1 = try Self.read(cache, id, version: "v1", at: at, count: 100, options: .strictVersioning)
            #expect(v1.result.item.itemVersion.contentVersionString == "v1")
            #expect(v1.bytes == Array(try #require(bytes["v1"])[Int(at)..<Int(at + 100)]))
            let v2 = try Self.read(cache, id, version: "v2", at: at, count: 100)
            #expect(v2.result.item.itemVersion.contentVersionString == "v3", "newer, never the older v1")
            #expect(v2.bytes == Array(try #require(bytes["v3"])[Int(at)..<Int(at + 100)]))
            #expect(
                await errorCode {
                    _ = try Self.read(cache, id, version: "v2", at: at, count: 100, options: .strictVersioning)
                }
                    == .versionNoLongerAvailable)
            #expect(try Self.read(cache, id, at: at, count: 100).result.item.itemVersion.contentVersionString == "v3")
        }
    }

    /// The synchronous fetch, from a synchronous function as a FUSE thread would call it.
    static func fetchSynchronously(_ cache: ChunkCache, _ id: ItemIdentifier, _ range: ByteRange) throws -> FetchResult
    {
        try cache.fetchPartialContentsSynchronously(for: id, version: nil, minimalRange: range, aligningTo: 4096)
    }

    @Test("the synchronous fetch gives the same file as the async one, on the calling thread")
    func synchronousFetch() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "big")
            let source = TestData.mixed(count: 6 << 20, chunkSize: 65536, seed: 9)
            try await put(cache, source, as: id, in: dir)
            for range in [ByteRange(location: 70_000, length: 100), ByteRange(location: 0, length: 6 << 20)] {
                let result = try await Task.detached { try Self.fetchSynchronously(cache, id, range) }.value
                let expected = try await cache.fetchPartialContents(
                    for: id, version: nil, minimalRange: range, aligningTo: 4096)
                #expect(result.retrievedRange == expected.retrievedRange)
                #expect(result.flags == expected.flags)
                let r = result.retrievedRange
                #expect(try readRange(result.url.path, r) == Array(source[Int(r.location)..<Int(r.end)]))
            }
        }
    }
}
