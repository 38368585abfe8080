import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// ``ChunkCache/prefetch(_:version:range:progress:)``: a range downloaded into the store with no reader, in the
/// background lane a mount hydrates files with (CONTRACT §10, §13).
@Suite("Prefetch")
struct PrefetchTests {
    static let bytes = TestData.random(count: 16 << 20, seed: 27)
    static let extent = Int(ChunkCache.prefetchExtentBytes)

    /// A store (settling off, so what is downloaded stays fills) and a fault origin serving `a.bin` (16 MiB)
    /// through `behaviour` as domain `web` of pipeline depth `depth`, the item discovered by a 1-byte fetch;
    /// the origin's log is cleared before `body`.
    static func withOrigin(
        behaviour: String, depth: Int = 8,
        _ body: (ChunkCache, FaultOrigin, ItemIdentifier, ItemVersion) async throws -> Void
    ) async throws {
        try await ColdPathFaultTests.withFaultOrigin(serving: bytes) { cache, origin, _ in
            cache.settleInBackground(false)
            // No timeout is under test here: beside a full run's load the Python origin may take over the fault
            // tests' one second to answer.
            cache.engine.origins.policy.withLock {
                $0.idleTimeout = .seconds(20)
                $0.connectTimeout = .seconds(20)
            }
            _ = try await cache.addDomain(
                "web", origin: try Origin(origin.baseURL(behaviour: behaviour)), pipelineDepth: depth)
            let item = ItemIdentifier(domain: "web", "a.bin")
            let first = try await cache.fetchPartialContents(
                for: item, version: nil, minimalRange: ByteRange(location: 0, length: 1), aligningTo: 1)
            try? FileManager.default.removeItem(at: first.url)
            await cache.waitForDownloads()
            try await origin.clear()
            try await body(cache, origin, item, first.item.itemVersion)
        }
    }

    @Test(
        "§10: a prefetch stores its range as fills with no reader, one request per 2 MiB extent, nothing asked twice; a read after it asks the origin nothing",
        .requires(FaultOrigin.self))
    func prefetchStoresFills() async throws {
        try await Self.withOrigin(behaviour: "ok") { cache, origin, item, version in
            let progress = DownloadProgress()
            try await cache.prefetch(
                item, version: version, range: ByteRange(location: 0, length: Int64(Self.bytes.count)),
                progress: progress)
            let requests = try await origin.requests()
            // The discovery stored the first chunk: the first extent asks for the rest of it.
            #expect(requests.count == Self.bytes.count / Self.extent, "\(requests)")
            #expect(progress.downloadedBytes == Int64(Self.bytes.count - 65_536))
            let stats = try await cache.statistics()
            #expect(stats.unsettledBytes == Int64(Self.bytes.count), "every chunk is a fill: \(stats)")
            try await origin.clear()
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { buffer.deallocate() }
            let read = try await cache.read(item, version: version, at: 9 << 20, into: buffer)
            #expect(read.bytesRead == 4096 && Array(buffer) == Array(Self.bytes[(9 << 20)..<((9 << 20) + 4096)]))
            #expect(try await origin.requests().isEmpty)
        }
    }

    @Test(
        "§13 §10: a reader's own read is not queued behind a prefetch: at pipeline depth 2 the prefetch holds one request, the read gets the other at once",
        .requires(FaultOrigin.self))
    func readerGoesFirst() async throws {
        try await Self.withOrigin(behaviour: "slow", depth: 2) { cache, origin, item, version in
            let size = Int64(Self.bytes.count)
            let prefetchDone = Atomic(false)
            let prefetch = Task {
                defer { prefetchDone.store(true, ordering: .relaxed) }
                try await cache.prefetch(item, version: version, range: ByteRange(location: 0, length: size))
            }
            // Once the prefetch's first request is at the origin (each waits 100 ms there), the program reads the
            // last extent's bytes.
            let deadline = ContinuousClock.now + .seconds(10)
            while try await origin.mostInFlight() == 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            let offset = size - 65_536
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
            defer { buffer.deallocate() }
            let read = try await cache.read(item, version: version, at: offset, into: buffer)
            let prefetchRunning = !prefetchDone.load(ordering: .relaxed)
            #expect(read.bytesRead == 4096 && Array(buffer) == Array(Self.bytes[Int(offset)..<(Int(offset) + 4096)]))
            // The origin logs a request as it answers: the read's is answered second, after the one prefetch
            // request that was under way; sharing the two requests evenly would put it third.
            let requests = try await origin.requests()
            let readAt = requests.firstIndex { $0.range == "bytes=\(offset)-\(size - 1)" }
            #expect(readAt != nil && readAt! <= 1, "\(requests)")
            #expect(prefetchRunning, "the read ended while the prefetch still ran (8 extents, one at a time)")
            try await prefetch.value
            let all = try await origin.requests()
            let asked = all.compactMap(\.range).map(Self.length).reduce(0, +)
            #expect(asked == size - 65_536, "every byte but the discovery's chunk asked once: \(all)")
            #expect(try await cache.statistics().unsettledBytes == size)
        }
    }

    /// The length of a `bytes=a-b` range.
    static func length(_ range: String) -> Int64 {
        let bounds = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int64($0) }
        return bounds.count == 2 ? bounds[1] - bounds[0] + 1 : 0
    }

    @Test("§10: a prefetch of a domain without an origin is invalidArgument naming the domain")
    func prefetchWithoutOrigin() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let item = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.random(count: 100_000, seed: 1), as: item, in: dir)
            let version = try await cache.fetchContents(for: item).item.itemVersion
            await #expect {
                try await cache.prefetch(item, version: version, range: ByteRange(location: 0, length: 100))
            } throws: { error in
                (error as? CacheError)?.code == .invalidArgument && "\(error)".contains("\"d\" has no origin")
            }
        }
    }
}
