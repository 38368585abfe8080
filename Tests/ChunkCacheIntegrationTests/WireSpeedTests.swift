import Dispatch
import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path at the wire's speed (CONTRACT §10): a large cold fetch is written from the bytes as
/// they arrive and the store is written behind it; reads into a buffer are served from the download.
@Suite(.serialized) struct WireSpeedTests {
    /// Holds the store's writer (its serial queue) until `release()`: downloads can hash and hand over their
    /// chunks but not commit them.
    final class HeldWriter: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let held = DispatchSemaphore(value: 0)
        private let task: Task<Void, any Error>

        init(_ cache: ChunkCache) async throws {
            let gate = self.gate
            let held = self.held
            task = Task {
                try await cache.store.writer.write { _ in
                    held.signal()
                    gate.wait()
                }
            }
            while held.wait(timeout: .now()) == .timedOut { try await Task.sleep(for: .milliseconds(5)) }
        }

        func release() async throws {
            gate.signal()
            try await task.value
        }
    }

    /// Everything downloaded was stored right: `verify` finds no damaged record, version or chunk.
    static func expectVerifiesClean(_ cache: ChunkCache, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let report = try await cache.verify()
        #expect(
            report.damagedRecords.isEmpty && report.damagedVersions.isEmpty && report.corrupt.isEmpty,
            sourceLocation: sourceLocation)
    }

    /// `body`'s value, or nil when it has not returned within `seconds`.
    static func within<R: Sendable>(_ seconds: Int, _ body: @escaping @Sendable () async throws -> R) async throws
        -> R?
    {
        try await withThrowingTaskGroup(of: R?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }

    @Test(
        "§10 store behind: a whole cold fetch --out is written from its download and returns while the store still commits behind it; byte-exact, stored, verify clean",
        .requires(NginxServer.self))
    func wholeFetchServedWhileStoreBehind() async throws {
        var bytes = TestData.random(count: 3 << 20, seed: 2001)
        for i in (1 << 20)..<((1 << 20) + 65_536) { bytes[i] = 0 }  // a zero chunk: a hole in a whole file
        let expected = bytes
        try await ColdPathTests.withOrigin(["big.bin": bytes]) { cache, server, _ in
            try await withTemporaryDirectory { dir in
                let item = ItemIdentifier(domain: "web", "big.bin")
                _ = try await cache.versions(of: item)  // known (one HEAD), none of its bytes
                let writer = try await HeldWriter(cache)
                let out = dir + "/big.out"
                let served = try await Self.within(20) {
                    try await cache.fetchContents(for: item, destination: .clone(to: out, replaceExisting: false))
                }
                try await writer.release()
                let result = try #require(served, "the fetch waited for the store instead of its download")
                #expect(try TestData.read(out, count: 3 << 20) == expected)
                #expect(result.url.path == out && result.owner == .destination)
                #expect(result.flags.contains(.knownSparseRanges))
                #expect(result.downloadedBytes == 3 << 20 && result.originRequests == 1)
                await cache.waitForDownloads()
                let listed = try await cache.versions(of: item)
                #expect(try #require(listed.versions.first).cachedBytes == 3 << 20, "every chunk stored behind")
                let warm = try await cache.fetchContents(for: item)
                #expect(warm.originRequests == 0)
                #expect(try TestData.read(warm.url.path, count: 3 << 20) == expected)
                try await Self.expectVerifiesClean(cache)
                #expect(try await server.accessLog(atLeast: 2).map(\.method) == ["HEAD", "GET"])
            }
        }
    }

    @Test(
        "§10: a whole cold fetch of an unknown 20 MiB item streams into its hand-off: one discovery GET, then parallel GETs of at most 8 MiB; byte-exact and verify clean",
        .requires(NginxServer.self))
    func wholeFetchOfUnknownItemStreams() async throws {
        let bytes = TestData.random(count: 20 << 20, seed: 2002)
        try await ColdPathTests.withOrigin(["big.bin": bytes]) { cache, server, _ in
            let item = ItemIdentifier(domain: "web", "big.bin")
            let result = try await cache.fetchContents(for: item)
            #expect(try TestData.read(result.url.path, count: 20 << 20) == bytes)
            try? FileManager.default.removeItem(at: result.url)
            #expect(result.downloadedBytes == 20 << 20 && result.originRequests == 3)
            await cache.waitForDownloads()
            let log = try await server.accessLog(atLeast: 3)
            #expect(log.allSatisfy { $0.method == "GET" } && log.count == 3)
            #expect(log.first?.range == "bytes=0-8388607")
            let listed = try await cache.versions(of: item)
            #expect(try #require(listed.versions.first).cachedBytes == 20 << 20)
            try await Self.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§10 §13: cold reads into a buffer through the async read are byte-exact at odd offsets and sizes, EOF included",
        .requires(NginxServer.self))
    func asyncReadsAtOddOffsets() async throws {
        let size = (3 << 20) + 12_345
        let bytes = TestData.random(count: size, seed: 2003)
        try await ColdPathTests.withOrigin(["odd.bin": bytes]) { cache, _, _ in
            let item = ItemIdentifier(domain: "web", "odd.bin")
            let reads: [(offset: Int, count: Int)] = [
                (1, 1), (65_535, 100_000), (200_001, 65_537), ((1 << 20) - 3, (1 << 20) + 7), (size - 5_000, 70_000),
                (size, 10), (3, 4_095),
            ]
            for (offset, count) in reads {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
                defer { buffer.deallocate() }
                buffer.initializeMemory(as: UInt8.self, repeating: 0xAA)
                let read = try await cache.read(item, version: nil, at: Int64(offset), into: buffer)
                let expected = Array(bytes[min(offset, size)..<min(offset + count, size)])
                #expect(read.bytesRead == expected.count, "read of \(count) at \(offset)")
                #expect(Array(buffer[0..<read.bytesRead]) == expected, "read of \(count) at \(offset)")
            }
            await cache.waitForDownloads()
            try await Self.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§10 §13: concurrent cold reads of overlapping ranges share one download and are answered as their bytes arrive, before the store commits them",
        .requires(NginxServer.self))
    func overlappingReadsShareTheDownload() async throws {
        let bytes = TestData.random(count: 4 << 20, seed: 2004)
        try await ColdPathTests.withOrigin(["seq.bin": bytes], readAhead: 0) { cache, server, _ in
            let item = ItemIdentifier(domain: "web", "seq.bin")
            _ = try await cache.versions(of: item)
            let writer = try await HeldWriter(cache)
            let reads: [(offset: Int, count: Int)] = [(0, 1 << 20), (1 << 19, 1 << 20), (1 << 20, 1 << 20)]
            let answered = try await Self.within(20) {
                try await withThrowingTaskGroup(of: Bool.self) { group in
                    for (offset, count) in reads {
                        group.addTask {
                            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
                            defer { buffer.deallocate() }
                            let read = try await cache.read(item, version: nil, at: Int64(offset), into: buffer)
                            return read.bytesRead == count && Array(buffer) == Array(bytes[offset..<(offset + count)])
                        }
                    }
                    return try await group.reduce(true) { $0 && $1 }
                }
            }
            try await writer.release()
            #expect(answered == true, "every read answered from the download, byte-exact, while the writer was held")
            await cache.waitForDownloads()
            let log = try await server.accessLog(atLeast: 2).filter { $0.method == "GET" }
            #expect(log.reduce(0) { $0 + $1.bytesSent } < (2 << 20) + 65_536, "each chunk downloaded once: \(log)")
            try await Self.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§10 §13: a cold read whose range the store holds part of is answered from the store and the download together, before the store commits the rest",
        .requires(NginxServer.self))
    func partlyStoredReadServedFromDownload() async throws {
        let bytes = TestData.random(count: 4 << 20, seed: 2005)
        try await ColdPathTests.withOrigin(["mixed.bin": bytes], readAhead: 0) { cache, _, _ in
            let item = ItemIdentifier(domain: "web", "mixed.bin")
            let first = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { first.deallocate() }
            _ = try await cache.read(item, version: nil, at: 0, into: first)
            await cache.waitForDownloads()
            // The first 256 KiB are stored; the rest of the read must come from its download, with the
            // writer held so that nothing more can be committed.
            let writer = try await HeldWriter(cache)
            let (offset, count) = (128 << 10, (1 << 20) + 4_321)
            let answered = try await Self.within(20) {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
                defer { buffer.deallocate() }
                let read = try await cache.read(item, version: nil, at: Int64(offset), into: buffer)
                return read.bytesRead == count && Array(buffer) == Array(bytes[offset..<(offset + count)])
            }
            try await writer.release()
            #expect(answered == true, "answered byte-exact while the writer was held")
            await cache.waitForDownloads()
            try await Self.expectVerifiesClean(cache)
        }
    }
}
