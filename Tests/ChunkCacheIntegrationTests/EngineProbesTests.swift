import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// Tests run the product's path: what a test injects is a value given to its store when it opens
/// (``EngineProbes``), held by that store's engine, never process-wide state.
@Suite struct EngineProbesTests {
    /// Probes that count the writer's transactions in `count`.
    static func counting(_ count: CommitCounter) -> EngineProbes {
        EngineProbes(afterEachTransaction: { count.add() })
    }

    @Test("Tests run the product's path: a store opened through the public API has no probe of any kind")
    func theProductOpensWithoutProbes() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await ChunkCache.open(at: dir + "/store")
            let probes = cache.engine.probes
            #expect(probes.afterEachTransaction == nil)
            #expect(probes.beforeBatchCommit == nil)
            #expect(probes.beforeDownloadCommit == nil)
            #expect(probes.beforeTakingStored == nil)
            #expect(probes.diagnostics == nil)
            #expect(probes.destination.stagingCreated == nil)
            #expect(!probes.destination.namedStaging)
        }
    }

    @Test(
        "Tests run the product's path: the writer runs the probe of the store it was opened with, and another store of the process runs without it"
    )
    func probesBelongToTheirStore() async throws {
        try await withTemporaryDirectory { dir in
            let probed = CommitCounter()
            let cache = try await makeCache(dir, probes: Self.counting(probed))
            let other = try await openCache(dir + "/other", probes: .none)
            try await put(other, TestData.text(count: 100_000, seed: 1), as: ItemIdentifier(domain: "d", "a"), in: dir)
            #expect(probed.value == 0, "the other store's writes ran the probe")
            try await put(cache, TestData.text(count: 100_000, seed: 2), as: ItemIdentifier(domain: "d", "b"), in: dir)
            #expect(probed.value > 0, "the probed store's writes never ran its probe")
        }
    }

    @Test(
        "Tests run the product's path: a second open of a store already open in the process keeps the first open's probes; once every cache of it closed, the next open's hold"
    )
    func theFirstOpensProbesHold() async throws {
        try await withTemporaryDirectory { dir in
            let first = CommitCounter()
            let second = CommitCounter()
            do {
                let cache = try await makeCache(dir, probes: Self.counting(first))
                let again = try await makeCache(dir, probes: Self.counting(second))
                #expect(again.engine === cache.engine)
                try await put(
                    again, TestData.text(count: 100_000, seed: 3), as: ItemIdentifier(domain: "d", "a"), in: dir)
                #expect(first.value > 0, "the engine lost its first open's probe")
                #expect(second.value == 0, "a second open replaced the engine's probes")
            }
            let before = first.value
            let reopened = try await makeCache(dir, probes: Self.counting(second))
            try await put(
                reopened, TestData.text(count: 100_000, seed: 4), as: ItemIdentifier(domain: "d", "b"), in: dir)
            #expect(second.value > 0, "a fresh engine did not take its open's probes")
            #expect(first.value == before, "a closed engine's probe still ran")
        }
    }

    @Test(
        "Tests run the product's path: a probed store's cold fetch of a range is served from its download as the product's is, reading no chunk back from the store; its warm fetch reads each chunk through the probe",
        .requires(NginxServer.self))
    func aProbedColdFetchServesFromItsDownload() async throws {
        let chunksRead = CommitCounter()
        let bytes = TestData.random(count: 1 << 20, seed: 28)
        try await ColdPathTests.withOrigin(
            ["a.bin": bytes], readAhead: 0, probes: EngineProbes(beforeChunk: { _ in chunksRead.add() })
        ) { cache, _, _ in
            let range = ByteRange(location: 65536, length: 65536)
            let cold = try await ColdPathTests.fetch(cache, "a.bin", range.location, range.length)
            defer { unlink(cold.url.path) }
            #expect(cold.downloadedBytes > 0, "the first fetch went to the origin")
            #expect(try readRange(cold.url.path, range) == Array(bytes[65536..<131072]))
            #expect(chunksRead.value == 0, "the cold fetch read \(chunksRead.value) chunk(s) back from the store")
            await cache.waitForDownloads()
            let warm = try await ColdPathTests.fetch(cache, "a.bin", range.location, range.length)
            defer { unlink(warm.url.path) }
            #expect(warm.downloadedBytes == 0)
            #expect(try readRange(warm.url.path, range) == Array(bytes[65536..<131072]))
            #expect(chunksRead.value == 1, "the warm fetch reads its one chunk from the store")
        }
    }
}
