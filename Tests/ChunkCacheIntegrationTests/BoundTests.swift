import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// The bounded cache (CONTRACT §12): eviction by the writer between its water marks, W-TinyLFU's scan
/// resistance, pins and local domains never evicted, and the `stat` figures.
@Suite(.serialized) struct BoundTests {
    static let bound: Int64 = 16 << 20

    /// An nginx origin of `files` and a store bounded at `bound` with no free-space floor and no read-ahead;
    /// `body` gets the store's directory's parent.
    static func withBoundedOrigin(
        _ files: [String: [UInt8]], bound: Int64 = bound, probes: EngineProbes = .none,
        _ body: (ChunkCache, NginxServer, String) async throws -> Void
    ) async throws {
        try await ColdPathTests.withOrigin(files, readAhead: 0, maxSize: bound, minFree: 0, probes: probes) {
            cache, server, root in
            try await body(cache, server, (root as NSString).deletingLastPathComponent)
        }
    }

    static func fetchWhole(_ cache: ChunkCache, _ name: String) async throws -> [UInt8] {
        let result = try await cache.fetchContents(for: ItemIdentifier(domain: "web", name))
        defer { unlink(result.url.path) }
        await cache.waitForDownloads()
        return try TestData.read(result.url.path, count: 8 << 20)
    }

    static func cached(_ cache: ChunkCache, _ name: String) async throws -> Int64 {
        try await cache.versions(of: ItemIdentifier(domain: "web", name)).versions.first?.cachedBytes ?? -1
    }

    @Test(
        "§12 H1: a store bounded at 16 MiB, filled with 48 MiB from an origin, keeps its live pages under the bound and data.mdb within it; every fetch is byte-exact; evicted chunks come back with their hash checked; a file handed off before eviction is untouched by it",
        .requires(NginxServer.self))
    func staysWithinItsBound() async throws {
        var files: [String: [UInt8]] = [:]
        for n in 0..<12 { files["f\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(100 + n)) }
        try await Self.withBoundedOrigin(files) { cache, _, dir in
            // H1: a hand-off taken before eviction, kept by the caller.
            let handedOff = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "f0.bin"))
            await cache.waitForDownloads()
            defer { unlink(handedOff.url.path) }
            for n in 0..<12 {
                #expect(try await Self.fetchWhole(cache, "f\(n).bin") == files["f\(n).bin"])
                _ = try await cache.enforceBound()
                let live = try cache.store.environment.liveBytes()
                #expect(
                    Int64(live) <= Int64(SpaceBound.lowWater * Double(Self.bound)) + (1 << 20),
                    "after fetch \(n): \(live) live bytes")
            }
            let size = try FileManager.default.attributesOfItem(atPath: dir + "/store/data.mdb")[.size] as! Int64
            #expect(size <= Self.bound, "data.mdb is \(size) bytes")
            let stats = try await cache.statistics()
            #expect(stats.maxSize == Self.bound && stats.minFree == 0)
            #expect(stats.misses == 12 * 64, "every chunk was downloaded once: \(stats.misses)")
            #expect(stats.evictedBytes >= 32 << 20, "at least 32 MiB had to go: \(stats.evictedBytes)")
            #expect(stats.evictableBytes > 0 && stats.evictableBytes <= Self.bound)
            #expect(try await Self.cached(cache, "f11.bin") == 4 << 20, "the newest file is cached whole")
            // Which files lose chunks is the policy's choice (f0 was read twice, and reads are counted once a
            // second), but what stays must fit the bound, and most files must have lost chunks.
            var cachedTotal: Int64 = 0
            var shrunk: [String] = []
            for n in 0..<12 {
                let bytes = try await Self.cached(cache, "f\(n).bin")
                cachedTotal += bytes
                if bytes < 4 << 20 { shrunk.append("f\(n).bin") }
            }
            #expect(cachedTotal <= Self.bound, "cached bytes of all files: \(cachedTotal)")
            #expect(shrunk.count >= 8, "files that lost chunks: \(shrunk)")
            #expect(
                try TestData.read(handedOff.url.path, count: 8 << 20) == files["f0.bin"],
                "H1: the hand-off does not depend on the cache")
            // Every file that lost chunks comes back from the origin, right.
            for name in shrunk {
                #expect(try await Self.fetchWhole(cache, name) == files[name], "\(name) after eviction")
                _ = try await cache.enforceBound()
            }
            let report = try await cache.verify()
            #expect(report.corrupt.isEmpty && report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
        }
    }

    @Test(
        "§12: W-TinyLFU resists a scan: a file read five times stays cached while 96 MiB read once pass through a 64 MiB store",
        .requires(NginxServer.self))
    func scanResistance() async throws {
        var files: [String: [UInt8]] = ["hot.bin": TestData.random(count: 2 << 20, seed: 7)]
        for n in 0..<48 { files["scan\(n).bin"] = TestData.random(count: 2 << 20, seed: UInt64(200 + n)) }
        try await Self.withBoundedOrigin(files, bound: 64 << 20) { cache, _, _ in
            // The policy's choices alone: settling behind the reads would move bytes between the fill files and
            // data.mdb at moments of its own.
            cache.settleInBackground(false)
            for _ in 0..<5 {
                #expect(try await Self.fetchWhole(cache, "hot.bin") == files["hot.bin"])
                try await cache.flushUsage()
            }
            for n in 0..<48 {
                #expect(try await Self.fetchWhole(cache, "scan\(n).bin") == files["scan\(n).bin"])
                _ = try await cache.enforceBound()
            }
            #expect(try await Self.cached(cache, "hot.bin") == 2 << 20, "the hot file survived the scan")
            let stats = try await cache.statistics()
            #expect(stats.hits >= 4 * 32, "four warm reads of 32 chunks: \(stats.hits)")
            #expect(stats.evictedBytes > 0)
        }
    }

    @Test(
        "§12: a pinned item is never evicted by the bound; a domain without an origin is never evicted, and a put that cannot fit is insufficientQuota with the store unchanged",
        .requires(NginxServer.self))
    func pinnedAndLocalNeverEvicted() async throws {
        var files: [String: [UInt8]] = ["keep.bin": TestData.random(count: 3 << 20, seed: 9)]
        for n in 0..<6 { files["x\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(300 + n)) }
        try await Self.withBoundedOrigin(files) { cache, _, dir in
            let keep = ItemIdentifier(domain: "web", "keep.bin")
            _ = try await cache.pin(keep)
            #expect(try await cache.statistics().pinnedBytes == 3 << 20)
            let local = TestData.random(count: 4 << 20, seed: 10)
            try await put(cache, local, as: ItemIdentifier(domain: "local", "mine.bin"), in: dir)
            for n in 0..<6 {
                #expect(try await Self.fetchWhole(cache, "x\(n).bin") == files["x\(n).bin"])
                _ = try await cache.enforceBound()
            }
            #expect(try await Self.cached(cache, "keep.bin") == 3 << 20, "pinned: kept")
            let mine = try await cache.fetchContents(for: ItemIdentifier(domain: "local", "mine.bin"))
            #expect(try TestData.read(mine.url.path, count: 8 << 20) == local, "local content: kept")
            unlink(mine.url.path)
            // 12 MiB more of local content cannot fit beside 7 MiB that may not go.
            let before = try await cache.statistics()
            let big = TestData.random(count: 12 << 20, seed: 11)
            #expect(
                await errorCode { try await put(cache, big, as: ItemIdentifier(domain: "local", "big.bin"), in: dir) }
                    == .insufficientQuota)
            let after = try await cache.statistics()
            #expect(
                after.items == before.items && after.versions == before.versions
                    && after.logicalBytes == before.logicalBytes)
            #expect(try await cache.verify().damagedRecords.isEmpty)
            #expect(try await Self.cached(cache, "keep.bin") == 3 << 20)
        }
    }

    /// What `du` says of the files a store keeps: `st_blocks` × 512 of every file below `store`, but `tmp/`.
    static func keptFileBytes(_ store: String) throws -> Int64 {
        var total: Int64 = 0
        let enumerator = FileManager.default.enumerator(atPath: store)
        while let name = enumerator?.nextObject() as? String {
            if name == "tmp" || name.hasPrefix("tmp/") { continue }
            let st = try TestData.status(store + "/" + name)
            if st.st_mode & S_IFMT != S_IFDIR { total += Int64(st.st_blocks) * 512 }
        }
        return total
    }

    @Test(
        "§12: the bound is the store's disk use: an empty store bounded at 16 MiB takes at most 16 MiB with its space reserve, and stat's fileBytes is what its files take (tmp/ aside)"
    )
    func emptyStoreWithinItsBound() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, maxSize: Self.bound)
            let onDisk = try Self.keptFileBytes(dir + "/store")
            #expect(onDisk <= Self.bound, "the empty store takes \(onDisk) bytes")
            #expect(
                FileManager.default.fileExists(atPath: dir + "/store/reserve"),
                "the reserve is kept, sized from the bound")
            let stats = try await cache.statistics()
            #expect(stats.fileBytes == onDisk, "fileBytes \(stats.fileBytes), on disk \(onDisk)")
            // A hand-off in tmp/ belongs to its caller: not counted.
            let local = TestData.random(count: 1 << 20, seed: 40)
            try await put(cache, local, as: ItemIdentifier(domain: "local", "a.bin"), in: dir)
            let handOff = try await cache.fetchContents(for: ItemIdentifier(domain: "local", "a.bin"))
            defer { unlink(handOff.url.path) }
            #expect(try await cache.statistics().fileBytes == (try Self.keptFileBytes(dir + "/store")))
        }
    }

    @Test(
        "§12: a store bounded at 16 MiB filled with 32 MiB through an origin keeps every file it keeps (data.mdb, lock.mdb, the reserve; tmp/ aside) within 16 MiB, and fileBytes says so",
        .requires(NginxServer.self))
    func wholeDirectoryWithinItsBound() async throws {
        var files: [String: [UInt8]] = [:]
        for n in 0..<8 { files["d\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(500 + n)) }
        try await Self.withBoundedOrigin(files) { cache, _, dir in
            // The fetches' own writes: while a batch settles, a store at its bound may pass it by about that
            // batch (Limits), which SettleTests measures.
            cache.settleInBackground(false)
            for n in 0..<8 {
                #expect(try await Self.fetchWhole(cache, "d\(n).bin") == files["d\(n).bin"])
                _ = try await cache.enforceBound()
                let onDisk = try Self.keptFileBytes(dir + "/store")
                #expect(onDisk <= Self.bound, "after fetch \(n) the store takes \(onDisk) bytes")
                #expect(try await cache.statistics().fileBytes == (try Self.keptFileBytes(dir + "/store")))
            }
            #expect(try await cache.statistics().evictedBytes > 0)
        }
    }

    @Test(
        "§12: evictableBytes and pinnedBytes count chunks once: pinning a partly cached item moves all its bytes to pinnedBytes, none evictable",
        .requires(NginxServer.self))
    func pinOfPartlyCachedItem() async throws {
        let bytes = TestData.random(count: 4 << 20, seed: 41)
        try await Self.withBoundedOrigin(["p.bin": bytes], bound: 64 << 20) { cache, _, _ in
            let part = try await ColdPathTests.fetch(cache, "p.bin", 0, 1 << 20)
            unlink(part.url.path)
            _ = try await cache.settle()  // unique bytes are counted once chunks are named
            var stats = try await cache.statistics()
            #expect(
                stats.uniqueBytes == 1 << 20 && stats.evictableBytes == 1 << 20 && stats.pinnedBytes == 0,
                "before the pin: \(stats.uniqueBytes) unique, \(stats.evictableBytes) evictable, \(stats.pinnedBytes) pinned"
            )
            _ = try await cache.pin(ItemIdentifier(domain: "web", "p.bin"))
            _ = try await cache.settle()
            stats = try await cache.statistics()
            #expect(stats.uniqueBytes == 4 << 20)
            #expect(stats.pinnedBytes == 4 << 20, "pinned: \(stats.pinnedBytes)")
            #expect(stats.evictableBytes == 0, "evictable: \(stats.evictableBytes)")
            _ = try await cache.unpin(ItemIdentifier(domain: "web", "p.bin"))
            stats = try await cache.statistics()
            #expect(
                stats.pinnedBytes == 0 && stats.evictableBytes == 4 << 20, "unpinned: \(stats.evictableBytes) evictable"
            )
        }
    }

    @Test(
        "§12: evictableBytes counts a chunk two versions share once: two 4 MiB versions sharing 2 MiB make 6 MiB evictable (not 8), and a pin of one holds its 4 MiB, leaving the other's own 2 MiB evictable",
        .requires(NginxServer.self))
    func versionsSharingChunks() async throws {
        let a = TestData.random(count: 4 << 20, seed: 42)
        let b = Array(a[..<(2 << 20)]) + TestData.random(count: 2 << 20, seed: 43)
        try await Self.withBoundedOrigin(["a.bin": a, "b.bin": b], bound: 64 << 20) { cache, _, _ in
            #expect(try await Self.fetchWhole(cache, "a.bin") == a)
            #expect(try await Self.fetchWhole(cache, "b.bin") == b)
            _ = try await cache.settle()  // shared chunks are one chunk once named
            var stats = try await cache.statistics()
            #expect(
                stats.versions == 2 && stats.uniqueBytes == 6 << 20,
                "\(stats.versions) versions, \(stats.uniqueBytes) unique")
            #expect(stats.evictableBytes == 6 << 20, "evictable: \(stats.evictableBytes)")
            // Pinned, a.bin holds the shared chunks too: evicting b.bin would free only its own half.
            _ = try await cache.pin(ItemIdentifier(domain: "web", "a.bin"))
            stats = try await cache.statistics()
            #expect(
                stats.pinnedBytes == 4 << 20 && stats.evictableBytes == 2 << 20,
                "pinned \(stats.pinnedBytes), evictable \(stats.evictableBytes)")
            _ = try await cache.pin(ItemIdentifier(domain: "web", "b.bin"))
            stats = try await cache.statistics()
            #expect(
                stats.pinnedBytes == 6 << 20 && stats.evictableBytes == 0,
                "both pinned: \(stats.pinnedBytes) pinned, \(stats.evictableBytes) evictable")
            // What the figure promises is what eviction frees.
            _ = try await cache.unpin(ItemIdentifier(domain: "web", "a.bin"))
            _ = try await cache.unpin(ItemIdentifier(domain: "web", "b.bin"))
            let before = try await cache.statistics()
            _ = try await cache.evict(inDomain: "web")
            let after = try await cache.statistics()
            #expect(before.storedBytes - after.storedBytes == before.evictableBytes && after.evictableBytes == 0)
        }
    }

    /// Cached bytes of every version of the origin files `names`.
    static func cachedTotal(_ cache: ChunkCache, _ names: [String]) async throws -> Int64 {
        var total: Int64 = 0
        for name in names { total += try await Self.cached(cache, name) }
        return total
    }

    @Test(
        "§12: a local put that cannot fit even once every evictable chunk went is insufficientQuota and evicts nothing; one that fits after evicting part evicts only part",
        .requires(NginxServer.self))
    func refusedPutEvictsNothing() async throws {
        var files: [String: [UInt8]] = [:]
        for n in 0..<3 { files["c\(n).bin"] = TestData.random(count: 3 << 20, seed: UInt64(600 + n)) }
        let names = files.keys.sorted()
        try await Self.withBoundedOrigin(files) { cache, _, dir in
            for name in names { #expect(try await Self.fetchWhole(cache, name) == files[name]) }
            // Settled first: settling in the background would move bytes between the figures compared below.
            _ = try await cache.settle()
            _ = try await cache.enforceBound()
            let cached = try await Self.cachedTotal(cache, names)
            #expect(cached == 9 << 20)
            let before = try await cache.statistics()
            let tooBig = TestData.random(count: 20 << 20, seed: 44)
            #expect(
                await errorCode {
                    try await put(cache, tooBig, as: ItemIdentifier(domain: "local", "big.bin"), in: dir)
                } == .insufficientQuota)
            #expect(try await Self.cachedTotal(cache, names) == cached, "the origin's cache is as it was")
            let after = try await cache.statistics()
            #expect(
                after.evictableBytes == before.evictableBytes && after.evictedBytes == before.evictedBytes
                    && after.uniqueBytes == before.uniqueBytes && after.storedBytes == before.storedBytes
                    && after.items == before.items && after.versions == before.versions
                    && after.logicalBytes == before.logicalBytes)
            // 6 MiB fit once part of the 9 MiB cached went: the put succeeds, and some of the cache stays.
            let fits = TestData.random(count: 6 << 20, seed: 45)
            try await put(cache, fits, as: ItemIdentifier(domain: "local", "fits.bin"), in: dir)
            let left = try await Self.cachedTotal(cache, names)
            #expect(left < cached && left >= 3 << 20, "cached after the put: \(left)")
            let back = try await cache.fetchContents(for: ItemIdentifier(domain: "local", "fits.bin"))
            #expect(try TestData.read(back.url.path, count: 8 << 20) == fits)
            unlink(back.url.path)
        }
    }

    @Test(
        "§12: fetches three at a time through an origin, with no pause for eviction, never take the files a 16 MiB store keeps past 16 MiB (LMDB's map leaves room for the others)",
        .requires(NginxServer.self))
    func concurrentFillWithinItsBound() async throws {
        var files: [String: [UInt8]] = [:]
        for n in 0..<16 { files["e\(n).bin"] = TestData.random(count: 4 << 20, seed: UInt64(700 + n)) }
        let expected = files
        try await ColdPathTests.withOrigin(files, maxSize: Self.bound, minFree: 0) { cache, _, root in
            // The fetches' own writes: while a batch settles, a store at its bound may pass it by about that
            // batch (Limits), which SettleTests measures.
            cache.settleInBackground(false)
            let store = (root as NSString).deletingLastPathComponent + "/store"
            var peak: Int64 = 0
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<16 {
                    group.addTask { try await Self.fetchWhole(cache, "e\(n).bin") == expected["e\(n).bin"] }
                    if n % 3 == 2, let right = try await group.next() { #expect(right) }
                    peak = max(peak, try Self.keptFileBytes(store))
                }
                for try await right in group { #expect(right) }
            }
            peak = max(peak, try Self.keptFileBytes(store))
            #expect(peak <= Self.bound, "the store's files took \(peak) bytes at most")
            #expect(try await cache.statistics().maxSize == Self.bound, "stat reports the bound given, not LMDB's map")
        }
    }

    @Test(
        "§12: reads are counted in batches, not a transaction each: 200 warm fetches of an origin item add hits with one flush"
    )
    func readsAreBatched() async throws {
        let afterEach = ArmedProbe()
        try await Self.withBoundedOrigin(
            ["r.bin": TestData.random(count: 1 << 20, seed: 12)],
            probes: EngineProbes(afterEachTransaction: afterEach.runWithoutThrowing)
        ) { cache, _, _ in
            _ = try await Self.fetchWhole(cache, "r.bin")
            try await cache.flushUsage()
            let before = try await cache.statistics().hits
            let commits = CommitCounter()
            afterEach.arm { commits.add() }
            for n in 0..<200 {
                let result = try await cache.fetchPartialContents(
                    for: ItemIdentifier(domain: "web", "r.bin"), version: nil,
                    minimalRange: ByteRange(location: Int64(n % 16) << 16, length: 100), aligningTo: 4096)
                unlink(result.url.path)
            }
            #expect(commits.value <= 2, "at most a timed flush: \(commits.value) transactions")
            try await cache.flushUsage()
            afterEach.arm(nil)
            #expect(try await cache.statistics().hits - before == 200)
        }
    }
}
