import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// CONTRACT §10, "served as it arrives, stored behind", against a real nginx on 127.0.0.1: a reader is served
/// while the store lags behind it; a downloaded chunk is first a fill and later settled into what a put
/// stores; a fill whose bytes do not hash to what the store knew is dropped and reported; fills are evicted
/// and counted toward the bound like stored chunks. Each test turns background settling off, so settling
/// happens only where the test calls ``ChunkCache/settle()``.
@Suite(.serialized) struct SettleTests {
    static let chunk = 65_536

    /// ``ColdPathTests/withOrigin(_:readAhead:maxSize:minFree:_:)`` without read-ahead, with background
    /// settling off from the moment the store opens.
    static func withOrigin(
        _ files: [String: [UInt8]], maxSize: Int64 = 1 << 34, minFree: Int64? = nil, probes: EngineProbes = .none,
        _ body: (ChunkCache, NginxServer, String) async throws -> Void
    ) async throws {
        try await ColdPathTests.withOrigin(files, readAhead: 0, maxSize: maxSize, minFree: minFree, probes: probes) {
            cache, server, root in
            cache.settleInBackground(false)
            try await body(cache, server, root)
        }
    }

    /// The version record of version `version` of `item`.
    static func record(of item: ItemIdentifier, version: String, in cache: ChunkCache) throws -> VersionRecord {
        try cache.store.environment.read { txn in
            let key = Keys.version(
                itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: Array(version.utf8))
            return try #require(
                try txn.withValue(cache.store.dbs.versions, key: key) {
                    try VersionRecord(decoding: $0, name: "version \(version) of \(item)")
                })
        }
    }

    /// The manifest entries of version `version` of `item`, chunk by chunk.
    static func entries(of item: ItemIdentifier, version: String, in cache: ChunkCache) throws -> [ManifestEntry] {
        let record = try record(of: item, version: version, in: cache)
        return try cache.store.environment.read { txn in
            var cursor = ManifestCursor(manifestID: record.manifestID, dbs: cache.store.dbs)
            let count = (record.size + Int64(chunk) - 1) / Int64(chunk)
            return try (0..<count).map { try cursor.entry($0, in: txn) }
        }
    }

    /// The fill files in the store's `fills/` folder (its lock file aside).
    static func fillFiles(of cache: ChunkCache) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: cache.path + "/" + FillFiles.folder)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted()
    }

    /// The bytes the store's fill files take on disk (their allocated blocks).
    static func fillDiskBytes(of cache: ChunkCache) throws -> Int64 {
        try fillFiles(of: cache).reduce(0) { $0 + (try fileSizes(cache.path + "/fills/" + $1).allocated) }
    }

    /// Runs `body` while the store's writer is held: no write transaction of this process begins until it
    /// returns, or until `limit` passed (a body that waits for the store would wait for ever: the writer is let
    /// go then, and the result says so). Returns what `body` returned and whether the writer was still held.
    static func withWriterHeld<R: Sendable>(
        _ cache: ChunkCache, limit: Duration = .seconds(60), _ body: () async throws -> R
    ) async throws -> (R, heldThroughout: Bool) {
        // The writer queue runs one closure at a time: while this one waits, no transaction begins.
        let gate = DispatchSemaphore(value: 0)
        let held = Mutex(true)
        cache.store.writer.enqueue { gate.wait() }
        let release: @Sendable () -> Bool = {
            let was = held.withLock { (isHeld: inout Bool) -> Bool in
                defer { isHeld = false }
                return isHeld
            }
            if was { gate.signal() }
            return was
        }
        let watchdog = Task {
            try await Task.sleep(for: limit)
            _ = release()
        }
        defer { watchdog.cancel() }
        do {
            let result = try await body()
            return (result, release())
        } catch {
            _ = release()
            throw error
        }
    }

    /// The whole item's bytes through `fetchContents`, the hand-off removed after.
    static func fetchWhole(_ cache: ChunkCache, _ name: String) async throws -> (bytes: [UInt8], result: FetchResult) {
        let result = try await cache.fetchContents(for: ItemIdentifier(domain: "web", name))
        defer { unlink(result.url.path) }
        return (try TestData.read(result.url.path, count: Int(result.item.documentSize) + 1), result)
    }

    @Test(
        "§10 served as it arrives: while the store's writer is held, a cold whole-file fetch and a cold small range return the origin's bytes and no fill is recorded; once it goes on the fills are recorded, and settling stores them as chunks",
        .requires(NginxServer.self))
    func servedWhileTheStoreLags() async throws {
        // Within the sink's batch (ChunkSink.batchBytes), which is what storing may hold in memory before it
        // holds the reader back: a larger file waits for the writer at its first full batch.
        let whole = TestData.random(count: 3 << 20, seed: 2701)
        let ranged = TestData.text(count: 2 << 20, seed: 2702)
        try await Self.withOrigin(["whole.bin": whole, "ranged.bin": ranged]) { cache, server, _ in
            // The items' versions are recorded first (a HEAD each, no byte downloaded): recording a version
            // takes the writer.
            for name in ["whole.bin", "ranged.bin"] {
                #expect(try await cache.versions(of: ItemIdentifier(domain: "web", name)).versions.count == 1)
            }
            try await server.clearAccessLog()

            let ((partial, full, unsettledWhileHeld), stillHeld) = try await Self.withWriterHeld(cache) {
                let partial = try await ColdPathTests.fetch(cache, "ranged.bin", (1 << 20) + 100, 5000)
                let full = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "whole.bin"))
                return (partial, full, try await cache.statistics().unsettledChunks)
            }
            #expect(stillHeld, "both fetches returned while the writer was held")
            #expect(unsettledWhileHeld == 0, "no fill was recorded while the writer was held")

            #expect(partial.retrievedRange == ByteRange(location: 1 << 20, length: Int64(Self.chunk)))
            #expect(partial.downloadedBytes == Int64(Self.chunk))
            try ColdPathTests.expectBytes(partial, ranged)
            #expect(full.downloadedBytes == Int64(whole.count))
            #expect(try TestData.read(full.url.path, count: whole.count + 1) == whole)
            unlink(full.url.path)
            #expect(try await server.accessLog(atLeast: 2).count == 2, "one GET each")

            await cache.waitForDownloads()
            let recorded = try await cache.statistics()
            #expect(recorded.unsettledChunks == 1 + Int64(whole.count / Self.chunk))
            #expect(recorded.unsettledBytes == Int64(whole.count + Self.chunk))
            #expect(recorded.fillBytes == recorded.unsettledBytes)
            #expect(recorded.chunks == 0, "nothing is named before settling")

            let settled = try await cache.settle()
            #expect(settled.settled == Int(recorded.unsettledChunks) && settled.mismatched == 0 && settled.lost == 0)
            #expect(settled.settledBytes == recorded.unsettledBytes)
            let after = try await cache.statistics()
            #expect(after.unsettledChunks == 0 && after.fillBytes == 0)
            #expect(after.chunks == recorded.unsettledChunks, "every chunk of random or text bytes is its own")
            #expect(Self.fillFiles(of: cache).isEmpty)
            try await server.clearAccessLog()
            let warm = try await Self.fetchWhole(cache, "whole.bin")
            #expect(warm.bytes == whole && warm.result.downloadedBytes == 0)
            try await WireSpeedTests.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§10 served as it arrives: a whole-file fetch of a file the store holds part of is served from its download while the store's writer is held",
        .requires(NginxServer.self))
    func partlyHeldFileServedWhileTheStoreLags() async throws {
        let bytes = TestData.random(count: 3 << 20, seed: 2703)
        try await Self.withOrigin(["a.bin": bytes]) { cache, _, _ in
            // One chunk held (a fill), the rest absent.
            try ColdPathTests.expectBytes(try await ColdPathTests.fetch(cache, "a.bin", 0, 1), bytes)
            await cache.waitForDownloads()
            let (whole, stillHeld) = try await Self.withWriterHeld(cache, limit: .seconds(3)) {
                try await Self.fetchWhole(cache, "a.bin")
            }
            #expect(whole.bytes == bytes && whole.result.downloadedBytes == Int64(bytes.count - Self.chunk))
            // The fetch's own file serves only when its download brings every chunk of the file; otherwise it
            // is written from the store once the download is committed, which waits for the writer.
            withKnownIssue("the streamed file is given up when the store holds part of the file") {
                #expect(stillHeld, "the fetch returned while the writer was held")
            }
        }
    }

    @Test(
        "§10 stored behind: settling a downloaded file stores what a put of the same bytes stores: the same chunk names, the same stored bytes, nothing left unsettled",
        .requires(NginxServer.self))
    func settlingStoresWhatAPutStores() async throws {
        // Random and compressible text, an all-zero chunk between them, a short last chunk.
        let bytes =
            TestData.random(count: 4 * Self.chunk, seed: 2711) + [UInt8](repeating: 0, count: Self.chunk)
            + TestData.text(count: 4 * Self.chunk + 10_000, seed: 2712)
        try await Self.withOrigin(["a.bin": bytes]) { cache, _, root in
            let dir = (root as NSString).deletingLastPathComponent
            let fetched = try await Self.fetchWhole(cache, "a.bin")
            #expect(fetched.bytes == bytes)
            await cache.waitForDownloads()
            #expect(try await cache.statistics().unsettledChunks == 9, "every chunk but the zero one is a fill")
            let result = try await cache.settle()
            #expect(result == SettleResult(settled: 9, settledBytes: Int64(bytes.count - Self.chunk)))
            let settled = try await cache.statistics()
            #expect(settled.unsettledChunks == 0 && settled.unsettledBytes == 0 && settled.fillBytes == 0)
            #expect(Self.fillFiles(of: cache).isEmpty, "no fill file is left")
            let origin = try Self.entries(
                of: ItemIdentifier(domain: "web", "a.bin"),
                version: fetched.result.item.itemVersion.contentVersionString, in: cache)

            let local = ItemIdentifier(domain: "local", "a.bin")
            try await put(cache, bytes, as: local, version: "v1", in: dir)
            let putEntries = try Self.entries(of: local, version: "v1", in: cache)
            #expect(origin == putEntries, "the same chunk names, the zero chunk a zero entry in both")
            #expect(origin.filter { if case .stored = $0 { true } else { false } }.count == 9)
            let both = try await cache.statistics()
            #expect(both.uniqueBytes == settled.uniqueBytes, "the put shares every chunk")
            #expect(both.storedBytes == settled.storedBytes && both.chunks == settled.chunks)
            #expect(both.logicalBytes == 2 * settled.logicalBytes)

            // The put alone, in a store of its own with the same settings.
            try await withTemporaryDirectory { freshDir in
                let fresh = try await makeCache(freshDir)
                try await put(fresh, bytes, as: local, version: "v1", in: freshDir)
                let alone = try await fresh.statistics()
                #expect(alone.storedBytes == settled.storedBytes, "the same compressed bytes")
                #expect(alone.uniqueBytes == settled.uniqueBytes && alone.chunks == settled.chunks)
                #expect(try Self.entries(of: local, version: "v1", in: fresh) == origin)
            }
        }
    }

    /// The fills' side of `verify` finds nothing wrong: every fill's bytes are there and pass their checks.
    static func expectFillsVerifyClean(_ cache: ChunkCache, sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let report = try await cache.verify()
        #expect(
            report.corruptFills.isEmpty && report.inconsistencies.isEmpty,
            "\(report.corruptFills) \(report.inconsistencies)", sourceLocation: sourceLocation)
    }

    /// Two files at the origin (6 random chunks and 5 text chunks and a bit, from `seed` and `seed + 1`),
    /// fetched whole and left as 12 fills, for `body` with the files, their total size and each fetch's result.
    static func withTwoFilledFiles(
        seed: UInt64, probes: EngineProbes = .none,
        _ body: (ChunkCache, _ files: [String: [UInt8]], _ total: Int64, _ fetched: [String: FetchResult])
            async throws -> Void
    ) async throws {
        let files = [
            "a.bin": TestData.random(count: 6 * chunk, seed: seed),
            "b.bin": TestData.text(count: 5 * chunk + 123, seed: seed + 1),
        ]
        let total = Int64(files.values.reduce(0) { $0 + $1.count })
        try await withOrigin(files, probes: probes) { cache, _, _ in
            var fetched: [String: FetchResult] = [:]
            for name in files.keys.sorted() {
                let whole = try await fetchWhole(cache, name)
                #expect(whole.bytes == files[name])
                fetched[name] = whole.result
            }
            await cache.waitForDownloads()
            let filled = try await cache.statistics()
            #expect(filled.unsettledChunks == 12 && filled.fillBytes == total)
            try await body(cache, files, total, fetched)
        }
    }

    @Test(
        "§10 a crash never damages the store: a settle whose batch is undone before it commits (as by a kill) leaves every fill as it was, bytes and file included; verify is clean, and the next settle settles every one, none lost",
        .requires(NginxServer.self))
    func settleUndoneBeforeItsCommitLosesNothing() async throws {
        let beforeBatchCommit = ArmedProbe()
        try await Self.withTwoFilledFiles(
            seed: 2761, probes: EngineProbes(beforeBatchCommit: beforeBatchCommit.run)
        ) { cache, files, total, _ in
            let before = try await cache.statistics()

            struct Undone: Error {}
            beforeBatchCommit.arm { throw Undone() }
            await #expect(throws: (any Error).self) { try await cache.settle() }
            beforeBatchCommit.arm(nil)

            let after = try await cache.statistics()
            #expect(
                after.unsettledChunks == 12 && after.unsettledBytes == before.unsettledBytes
                    && after.fillBytes == total && after.chunks == 0,
                "the undone batch changed nothing: \(after.unsettledChunks) unsettled, \(after.fillBytes) fill bytes")
            #expect(Self.fillFiles(of: cache).count == 2, "both fill files are still there")
            #expect(try Self.fillDiskBytes(of: cache) >= total, "no fill's bytes were punched out")
            try await Self.expectFillsVerifyClean(cache)

            #expect(try await cache.settle() == SettleResult(settled: 12, settledBytes: total))
            let fillBytesLeft = try await cache.statistics().fillBytes
            #expect(Self.fillFiles(of: cache).isEmpty && fillBytesLeft == 0, "nothing is left unsettled")
            try await Self.expectFillsVerifyClean(cache)
            for name in files.keys.sorted() { #expect(try await Self.fetchWhole(cache, name).bytes == files[name]) }
            #expect(try await cache.statistics().misses == 12, "nothing was downloaded again")
        }
    }

    @Test(
        "§10 a crash never damages the store: freeing a settled batch's fill bytes after its commit frees only what no record names: a place filled again since keeps its bytes, a version with fills keeps its file",
        .requires(NginxServer.self))
    func releaseAfterCommitSparesRecordedFills() async throws {
        let bytes = TestData.random(count: 4 * Self.chunk, seed: 2781)
        try await Self.withOrigin(["a.bin": bytes]) { cache, _, _ in
            let fetched = try await Self.fetchWhole(cache, "a.bin")
            await cache.waitForDownloads()
            let id = try Self.record(
                of: ItemIdentifier(domain: "web", "a.bin"),
                version: fetched.result.item.itemVersion.contentVersionString, in: cache
            ).manifestID
            // What a batch that settled chunk 1 and emptied the version would hand over, had both been filled
            // again by the time it runs (another process evicted and fetched them meanwhile).
            var handed = UnnamedFills()
            handed.places = [(id, 1, Int64(Self.chunk))]
            handed.versions = [id]
            let (unnamed, dbs) = (handed, cache.store.dbs)
            try await cache.store.writer.write { txn in try txn.releaseUnnamedFills(unnamed, dbs) }
            #expect(Self.fillFiles(of: cache) == [String(id, radix: 16)], "the version's file is kept")
            #expect(try Self.fillDiskBytes(of: cache) >= 4 * Int64(Self.chunk), "no recorded fill was punched")
            try await Self.expectFillsVerifyClean(cache)
            #expect(try await cache.settle() == SettleResult(settled: 4, settledBytes: 4 * Int64(Self.chunk)))
            #expect(Self.fillFiles(of: cache).isEmpty)
        }
    }

    @Test(
        "§10 stored behind: a settle of many batches, each read, hashed and compressed while the one before commits, settles every fill once into what a put stores, and frees every fill's bytes",
        .requires(NginxServer.self))
    func overlappedBatchesSettleEveryFill() async throws {
        // A 16 MiB bound makes batches of 512 KiB: 5 MiB of fills are 10 of them.
        let bytes =
            TestData.random(count: 40 * Self.chunk, seed: 2771) + TestData.text(count: 40 * Self.chunk, seed: 2772)
        try await Self.withOrigin(["a.bin": bytes], maxSize: BoundTests.bound, minFree: 0) { cache, _, _ in
            #expect(Settler.batchBytes(cache.store) == 512 << 10)
            #expect(try await Self.fetchWhole(cache, "a.bin").bytes == bytes)
            await cache.waitForDownloads()
            #expect(try await cache.settle() == SettleResult(settled: 80, settledBytes: Int64(bytes.count)))
            let settled = try await cache.statistics()
            #expect(settled.unsettledChunks == 0 && settled.fillBytes == 0 && settled.chunks == 80)
            #expect(Self.fillFiles(of: cache).isEmpty, "no fill file is left")
            try await Self.expectFillsVerifyClean(cache)
            try await WireSpeedTests.expectVerifiesClean(cache)
            try await withTemporaryDirectory { freshDir in
                let fresh = try await makeCache(freshDir)
                try await put(fresh, bytes, as: ItemIdentifier(domain: "local", "a.bin"), version: "v1", in: freshDir)
                let alone = try await fresh.statistics()
                #expect(alone.storedBytes == settled.storedBytes && alone.chunks == settled.chunks)
            }
            #expect(try await Self.fetchWhole(cache, "a.bin").bytes == bytes)
        }
    }

    @Test(
        "§10 stored behind: a fill whose bytes do not hash to what the store knew is dropped at settling and reported; its entry is absent with the known hash, and the next read downloads it again",
        .requires(NginxServer.self))
    func mismatchAtSettlingDropsTheChunk() async throws {
        let bytes = TestData.random(count: 16 * Self.chunk, seed: 2721)
        let reports = Mutex<[String]>([])
        let probes = EngineProbes(diagnostics: { line in reports.withLock { $0.append(line) } })
        try await Self.withOrigin(["a.bin": bytes], probes: probes) { cache, server, root in
            let item = ItemIdentifier(domain: "web", "a.bin")
            let first = try await Self.fetchWhole(cache, "a.bin")
            let version = first.result.item.itemVersion.contentVersionString
            _ = try await cache.settle()
            let known = try Self.entries(of: item, version: version, in: cache)
            _ = try await cache.evict(inDomain: "web")
            #expect(try Self.entries(of: item, version: version, in: cache) == known.map(\.absentKeepingHash))

            // The origin's chunk 5 changes under the same ETag: nginx's is the modification time in seconds and
            // the size, both kept, so If-Match cannot tell.
            let path = root + "/a.bin"
            let modified = try #require(
                try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
            var changed = bytes
            changed.replaceSubrange(
                (5 * Self.chunk)..<(6 * Self.chunk), with: TestData.random(count: Self.chunk, seed: 2722))
            try TestData.write(changed, to: path + ".tmp")
            #expect(rename(path + ".tmp", path) == 0)
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)

            let again = try await Self.fetchWhole(cache, "a.bin")
            #expect(again.result.item.itemVersion.contentVersionString == version, "the same ETag")
            #expect(again.bytes == changed, "the reader gets what the origin sent: no hash is checked on the way")
            let result = try await cache.settle()
            #expect(result == SettleResult(settled: 15, settledBytes: 15 * Int64(Self.chunk), mismatched: 1))
            let entries = try Self.entries(of: item, version: version, in: cache)
            #expect(entries[5] == known[5].absentKeepingHash, "dropped, the hash the store knew kept")
            #expect(Array(entries[..<5]) + Array(entries[6...]) == Array(known[..<5]) + Array(known[6...]))
            let stats = try await cache.statistics()
            #expect(stats.settleMismatches == 1 && stats.unsettledChunks == 0 && stats.fillBytes == 0)
            #expect(Self.fillFiles(of: cache).isEmpty)
            let named = reports.withLock { $0 }.filter { $0.contains(cache.path) }
            #expect(named.count == 1, "one report names the store: \(reports.withLock { $0 })")
            #expect(named.first?.contains("1 downloaded chunk") == true, "\(named)")

            try await server.clearAccessLog()
            let refetched = try await Self.fetchWhole(cache, "a.bin")
            #expect(refetched.result.downloadedBytes == Int64(Self.chunk), "the dropped chunk alone")
            #expect(try await server.accessLog(atLeast: 1).map(\.range) == ["bytes=327680-393215"])
            #expect(refetched.bytes == changed)
        }
    }

    @Test(
        "§10 §12: unsettled chunks are evicted like stored ones: their fills go (records, counted bytes and the file), each entry is absent with the hash the store knew, a hand-off from before reads right, the next fetch downloads them again",
        .requires(NginxServer.self))
    func evictingUnsettledChunks() async throws {
        let known = TestData.random(count: 16 * Self.chunk, seed: 2731)
        let fresh = TestData.text(count: 16 * Self.chunk, seed: 2732)
        try await Self.withOrigin(["known.bin": known, "fresh.bin": fresh]) { cache, _, _ in
            // known.bin's chunks are named once, evicted, and downloaded again: fills whose hash the store knows.
            let firstKnown = try await Self.fetchWhole(cache, "known.bin")
            let knownVersion = firstKnown.result.item.itemVersion.contentVersionString
            let knownItem = ItemIdentifier(domain: "web", "known.bin")
            _ = try await cache.settle()
            let digests = try Self.entries(of: knownItem, version: knownVersion, in: cache)
            _ = try await cache.evict(["known.bin"], inDomain: "web")
            #expect(try await Self.fetchWhole(cache, "known.bin").bytes == known)
            // fresh.bin's are fills the store never named; its hand-off is kept.
            let handOff = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "fresh.bin"))
            defer { unlink(handOff.url.path) }
            let freshVersion = handOff.item.itemVersion.contentVersionString
            await cache.waitForDownloads()
            let before = try await cache.statistics()
            #expect(before.unsettledChunks == 32 && before.fillBytes == 32 * Int64(Self.chunk))
            #expect(Self.fillFiles(of: cache).count == 2)
            #expect(try Self.fillDiskBytes(of: cache) >= 32 * Int64(Self.chunk), "the fills' bytes are on disk")

            let evicted = try await cache.evict(inDomain: "web")
            #expect(evicted.versions == 2 && evicted.bytes == 32 * Int64(Self.chunk))
            let after = try await cache.statistics()
            #expect(after.unsettledChunks == 0 && after.unsettledBytes == 0 && after.fillBytes == 0)
            #expect(Self.fillFiles(of: cache).isEmpty, "the fill files went with their last fill")
            #expect(after.evictableBytes == 0, "nothing held is left to evict")
            #expect(
                try Self.entries(of: knownItem, version: knownVersion, in: cache) == digests.map(\.absentKeepingHash),
                "each evicted fill keeps the hash the store knew")
            #expect(
                try Self.entries(of: ItemIdentifier(domain: "web", "fresh.bin"), version: freshVersion, in: cache)
                    == Array(repeating: .absent(nil), count: 16),
                "a fill never named has no hash to keep")
            #expect(try TestData.read(handOff.url.path, count: fresh.count + 1) == fresh, "H1: the hand-off stays")

            for (name, bytes) in [("known.bin", known), ("fresh.bin", fresh)] {
                let again = try await Self.fetchWhole(cache, name)
                #expect(again.bytes == bytes && again.result.downloadedBytes == Int64(bytes.count), "\(name)")
            }
            let settled = try await cache.settle()
            #expect(settled.settled == 32 && settled.mismatched == 0 && settled.lost == 0)
            try await WireSpeedTests.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§12 a crash never damages the store: an eviction undone before it commits leaves every fill readable, bytes and file included (here undone by a damaged manifest page of its last item, after it forgot the first item's fills); verify is clean, nothing is downloaded again, and the next settle settles every one, none lost",
        .requires(NginxServer.self))
    func evictionUndoneBeforeItsCommitLeavesEveryFillReadable() async throws {
        try await Self.withTwoFilledFiles(seed: 2791) { cache, files, total, fetched in
            let before = try await cache.statistics()
            let version = try #require(fetched["b.bin"]).item.itemVersion.contentVersionString
            let record = try Self.record(of: ItemIdentifier(domain: "web", "b.bin"), version: version, in: cache)
            let lastPage = Keys.manifestPage(record.manifestID, page: 0)

            // b.bin's page fails its seal: the eviction, which forgot a.bin's fills first, throws and aborts.
            let flip: @Sendable (inout [UInt8]) -> Void = { $0[0] ^= 0x01 }
            try await RecordIntegrityTests.damage(cache.store.dbs.manifests, key: lastPage, in: cache, flip)
            await #expect(throws: (any Error).self) { _ = try await cache.evict(["a.bin", "b.bin"], inDomain: "web") }
            try await RecordIntegrityTests.damage(cache.store.dbs.manifests, key: lastPage, in: cache, flip)

            let after = try await cache.statistics()
            #expect(
                after.unsettledChunks == 12 && after.unsettledBytes == before.unsettledBytes
                    && after.fillBytes == total,
                "the undone eviction changed nothing: \(after.unsettledChunks) unsettled, \(after.fillBytes) fill bytes"
            )
            #expect(Self.fillFiles(of: cache).count == 2, "both fill files are still there")
            #expect(try Self.fillDiskBytes(of: cache) >= total, "no fill's bytes were punched out")
            try await Self.expectFillsVerifyClean(cache)
            for name in files.keys.sorted() {
                let again = try await Self.fetchWhole(cache, name)
                #expect(again.bytes == files[name] && again.result.downloadedBytes == 0, "\(name) read from its fills")
            }
            #expect(try await cache.settle() == SettleResult(settled: 12, settledBytes: total))
            #expect(Self.fillFiles(of: cache).isEmpty)
            try await WireSpeedTests.expectVerifiesClean(cache)
        }
    }

    @Test(
        "§10 §12: a fill file no record names (its writer died between writing the bytes and recording them) is removed by the next settle, before and after its version is dropped",
        .requires(NginxServer.self))
    func settlingRemovesUnrecordedFillFiles() async throws {
        let bytes = TestData.random(count: 8 * Self.chunk, seed: 2751)
        let newer = TestData.text(count: 8 * Self.chunk, seed: 2752)
        try await Self.withOrigin(["a.bin": bytes, "b.bin": bytes.reversed()]) { cache, _, root in
            var versions: [(name: String, version: String)] = []
            for name in ["a.bin", "b.bin"] {
                versions.append(
                    (name, try await Self.fetchWhole(cache, name).result.item.itemVersion.contentVersionString))
            }
            _ = try await cache.settle()
            var orphans: [String] = []
            for (name, version) in versions {
                let record = try Self.record(of: ItemIdentifier(domain: "web", name), version: version, in: cache)
                // What a process killed after writing a batch into a new fill file leaves: the bytes, no record.
                try TestData.write(
                    Array(bytes[..<(4 * Self.chunk)]), to: cache.store.dbs.fillFiles.path(of: record.manifestID))
                orphans.append(String(record.manifestID, radix: 16))
            }
            #expect(Self.fillFiles(of: cache) == orphans.sorted())
            // b.bin's old version is dropped with its orphan still there: evicted, so the next fetch asks the
            // origin, which holds a new version.
            _ = try await cache.evict(["b.bin"], inDomain: "web")
            try await ColdPathTests.replace("b.bin", in: root, with: newer)
            #expect(try await Self.fetchWhole(cache, "b.bin").bytes == newer)
            #expect(try await cache.collectGarbage(keepVersions: 1).versions == 1)
            #expect(try await cache.settle() == SettleResult(settled: 8, settledBytes: 8 * Int64(Self.chunk)))
            #expect(Self.fillFiles(of: cache).isEmpty, "the unrecorded fill files are gone")
            let stats = try await cache.statistics()
            #expect(stats.unsettledChunks == 0 && stats.fillBytes == 0)
            #expect(try await Self.fetchWhole(cache, "a.bin").bytes == bytes, "a.bin's settled chunks are untouched")
        }
    }

    @Test(
        "§12 Limits: while a batch settles, a store at its bound passes it by at most that batch: a 16 MiB store full of fills settles with every file it keeps within 16 MiB and one 512 KiB batch, nothing lost",
        .requires(NginxServer.self))
    func settlingAtTheBoundPassesItByOneBatchAtMost() async throws {
        var files: [String: [UInt8]] = [:]
        for n in 0..<4 { files["g\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(2790 + n)) }
        try await Self.withOrigin(files, maxSize: BoundTests.bound, minFree: 0) { cache, _, _ in
            for n in 0..<4 { #expect(try await Self.fetchWhole(cache, "g\(n).bin").bytes == files["g\(n).bin"]) }
            await cache.waitForDownloads()
            #expect(try await cache.statistics().unsettledChunks > 0)
            let store = cache.path
            let peak = Mutex<Int64>(try BoundTests.keptFileBytes(store))
            let settling = Atomic<Bool>(true)
            let watcher = Task.detached {
                while settling.load(ordering: .relaxed) {
                    let now = (try? BoundTests.keptFileBytes(store)) ?? 0
                    peak.withLock { $0 = max($0, now) }
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            let settled = try await cache.settle()
            settling.store(false, ordering: .relaxed)
            await watcher.value
            let most = BoundTests.bound + Int64(Settler.batchBytes(cache.store))
            #expect(peak.withLock { $0 } <= most, "the store's files took \(peak.withLock { $0 }) bytes at most")
            #expect(settled.settled > 0 && settled.lost == 0 && settled.mismatched == 0, "\(settled)")
            #expect(try await cache.statistics().unsettledChunks == 0 && Self.fillFiles(of: cache).isEmpty)
            try await Self.expectFillsVerifyClean(cache)
        }
    }

    @Test(
        "§10 §12: with settling off, a store bounded at 16 MiB fetching 48 MiB from an origin keeps data.mdb and its fill files within the bound; every fetch is byte-exact",
        .requires(NginxServer.self))
    func unsettledChunksStayWithinTheBound() async throws {
        let bound = BoundTests.bound
        var files: [String: [UInt8]] = [:]
        for n in 0..<12 { files["f\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(2740 + n)) }
        try await Self.withOrigin(files, maxSize: bound, minFree: 0) { cache, _, _ in
            for n in 0..<12 {
                #expect(try await Self.fetchWhole(cache, "f\(n).bin").bytes == files["f\(n).bin"])
                await cache.waitForDownloads()
                let data = try fileSizes(cache.path + "/data.mdb").size
                let fills = try Self.fillDiskBytes(of: cache)
                #expect(data + fills <= bound, "after fetch \(n): data.mdb \(data) + fill files \(fills)")
                let stats = try await cache.statistics()
                #expect(stats.fillBytes <= bound && stats.fillBytes <= fills, "after fetch \(n): \(stats.fillBytes)")
            }
            let stats = try await cache.statistics()
            #expect(stats.chunks == 0 && stats.unsettledChunks > 0, "nothing was settled")
            #expect(stats.evictedBytes >= 32 << 20, "at least 32 MiB of fills had to go: \(stats.evictedBytes)")
            #expect(stats.misses == 12 * 64, "every chunk was downloaded once: \(stats.misses)")
            #expect(try await BoundTests.cached(cache, "f11.bin") == 4 << 20, "the newest file is held whole")
        }
    }
}

extension ManifestEntry {
    /// What eviction leaves of this entry: a stored chunk becomes absent with its hash.
    fileprivate var absentKeepingHash: ManifestEntry {
        if case .stored(let digest) = self { return .absent(digest) }
        return self
    }
}
