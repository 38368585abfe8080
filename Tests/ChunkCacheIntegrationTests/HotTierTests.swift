import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// The hot tier (CONTRACT §14 "hot", ``HotTier``): chunks read in two usage flushes are stored decoded, within
/// `--hot-size`, and compressed again when they cool; every re-encode keeps the bytes and the counters exact.
@Suite("Hot tier")
struct HotTierTests {
    static let chunk = 65536

    /// Compressible chunks (text), each different.
    static func textChunks(_ count: Int, seed: UInt64 = 7) -> [UInt8] {
        (0..<count).flatMap { TestData.text(count: chunk, seed: seed + UInt64($0)) }
    }

    /// Reads `count` chunks of `item` from the start in two usage flushes, as a reader coming back does.
    static func readTwice(_ cache: ChunkCache, _ item: ItemIdentifier, chunks count: Int) async throws {
        for _ in 0..<2 {
            for index in 0..<count {
                let fetched = try await cache.fetchPartialContents(
                    for: item, version: nil,
                    minimalRange: ByteRange(location: Int64(index * chunk), length: 4096), aligningTo: 4096)
                unlink(fetched.url.path)
            }
            try await cache.flushUsage()
        }
    }

    /// Each stored chunk's encoding (its header's first byte) and payload length.
    static func storedChunks(_ cache: ChunkCache) throws -> [ChunkDigest: (encoding: UInt8, length: Int)] {
        try cache.store.environment.read { txn in
            var found: [ChunkDigest: (UInt8, Int)] = [:]
            try txn.scan(cache.store.dbs.chunks, prefix: []) { key, value in
                found[ChunkDigest(raw: key)] = (value[0], value.count - ChunkCodec.headerSize)
                return true
            }
            return found
        }
    }

    /// The whole item, fetched.
    static func contents(_ cache: ChunkCache, _ item: ItemIdentifier) async throws -> [UInt8] {
        let fetched = try await cache.fetchContents(for: item)
        defer { unlink(fetched.url.path) }
        return try readRange(fetched.url.path, fetched.retrievedRange)
    }

    /// verify finds nothing wrong, its recounts included.
    static func expectClean(_ cache: ChunkCache) async throws {
        let report = try await cache.verify()
        #expect(report.corrupt.isEmpty && report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
        #expect(report.inconsistencies.isEmpty, "\(report.inconsistencies)")
    }

    /// The store at `path` opened with a new bound, once this process's last holder has closed it.
    static func reopen(_ path: String, maxSize: Int64) async throws -> ChunkCache {
        for _ in 0..<100 {
            do {
                return try await ChunkCache.open(at: path, chunkSize: nil, maxSize: maxSize)
            } catch let error as CacheError where error.code == .transient {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return try await ChunkCache.open(at: path, chunkSize: nil, maxSize: maxSize)
    }

    /// `storedBytes` against a recount of the stored payloads.
    static func expectStoredBytesExact(_ cache: ChunkCache) async throws {
        let recount = try storedChunks(cache).values.reduce(0) { $0 + $1.length }
        #expect(try await cache.statistics().storedBytes == Int64(recount))
    }

    @Test(
        "§14: a chunk read in two flushes is stored hot, stat hotBytes is its raw length, fetches return its bytes"
    )
    func promotion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "hot")
            let bytes = Self.textChunks(1)
            try await put(cache, bytes, as: id, in: dir)
            let zstdBytes = try await cache.statistics().storedBytes
            #expect(zstdBytes < Int64(Self.chunk))
            try await Self.readTwice(cache, id, chunks: 1)
            let stored = try #require(try Self.storedChunks(cache).values.first)
            #expect(stored.encoding == ChunkCodec.Encoding.hot.rawValue && stored.length == Self.chunk)
            let stats = try await cache.statistics()
            #expect(stats.hotBytes == Int64(Self.chunk) && stats.hotChunks == 1)
            #expect(stats.storedBytes == Int64(Self.chunk))
            #expect(try await Self.contents(cache, id) == bytes)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 8)
            defer { buffer.deallocate() }
            _ = try await cache.read(id, version: nil, at: 5000, into: buffer)
            #expect(Array(buffer) == Array(bytes[5000..<6000]))
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: one flush's reads do not make a chunk hot, however many")
    func oneFlushIsNotHot() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "once")
            try await put(cache, Self.textChunks(1), as: id, in: dir)
            for offset in stride(from: 0, to: Self.chunk, by: 4096) {
                let fetched = try await cache.fetchPartialContents(
                    for: id, version: nil, minimalRange: ByteRange(location: Int64(offset), length: 4096),
                    aligningTo: 4096)
                unlink(fetched.url.path)
            }
            try await cache.flushUsage()
            #expect(try await cache.statistics().hotBytes == 0)
            #expect(try Self.storedChunks(cache).values.first?.encoding == ChunkCodec.Encoding.zstd.rawValue)
        }
    }

    @Test("§14: hot bytes never pass --hot-size; --hot-size 0 promotes nothing")
    func budget() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            #expect(try await cache.hotTierSize() == 1 << 30)  // the smaller of 10 % of 16 GiB and 1 GiB
            try await cache.setHotTierSize(Int64(2 * Self.chunk))
            let id = ItemIdentifier(domain: "d", "many")
            let bytes = Self.textChunks(5)
            try await put(cache, bytes, as: id, in: dir)
            try await Self.readTwice(cache, id, chunks: 5)
            var stats = try await cache.statistics()
            #expect(stats.hotChunks == 2 && stats.hotBytes == Int64(2 * Self.chunk) && stats.hotSize == 2 * 65536)
            // Read more often than the hot ones, a third round does not pass the budget either.
            try await Self.readTwice(cache, id, chunks: 5)
            stats = try await cache.statistics()
            #expect(stats.hotBytes <= Int64(2 * Self.chunk))
            #expect(try await Self.contents(cache, id) == bytes)
            try await Self.expectClean(cache)
        }
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await cache.setHotTierSize(0)
            let id = ItemIdentifier(domain: "d", "off")
            try await put(cache, Self.textChunks(3), as: id, in: dir)
            try await Self.readTwice(cache, id, chunks: 3)
            let stats = try await cache.statistics()
            #expect(stats.hotBytes == 0 && stats.hotChunks == 0 && stats.hotSize == 0)
            #expect(try Self.storedChunks(cache).values.allSatisfy { $0.encoding == ChunkCodec.Encoding.zstd.rawValue })
        }
    }

    @Test("§14: in a full tier, a chunk read more often than the least recently read hot one takes its place")
    func displacement() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await cache.setHotTierSize(Int64(Self.chunk))
            let (first, second) = (ItemIdentifier(domain: "d", "first"), ItemIdentifier(domain: "d", "second"))
            let (firstBytes, secondBytes) = (Self.textChunks(1, seed: 1), Self.textChunks(1, seed: 2))
            try await put(cache, firstBytes, as: first, in: dir)
            try await put(cache, secondBytes, as: second, in: dir)
            try await Self.readTwice(cache, first, chunks: 1)
            try await Self.readTwice(cache, second, chunks: 1)
            // Read as often as the hot one: it waits.
            let waiting = try Self.storedChunks(cache).filter { $0.value.encoding == ChunkCodec.Encoding.hot.rawValue }
            #expect(waiting.keys.first == firstBytes.withUnsafeBytes { ChunkDigest(hashing: $0) } && waiting.count == 1)
            try await Self.readTwice(cache, second, chunks: 1)
            // Read twice as often now: it takes the place.
            let stored = try Self.storedChunks(cache)
            let hot = stored.filter { $0.value.encoding == ChunkCodec.Encoding.hot.rawValue }
            let hotChunks = try await cache.statistics().hotChunks
            #expect(hot.count == 1 && hotChunks == 1)
            #expect(hot.keys.first == secondBytes.withUnsafeBytes { ChunkDigest(hashing: $0) })
            #expect(try await Self.contents(cache, first) == firstBytes)
            #expect(try await Self.contents(cache, second) == secondBytes)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: cooling compresses hot chunks again; bytes, storedBytes and each stored length stay exact")
    func cooling() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "cool")
            let bytes = Self.textChunks(3)
            try await put(cache, bytes, as: id, in: dir)
            let before = try await cache.statistics()
            let cold = try Self.storedChunks(cache)
            try await Self.readTwice(cache, id, chunks: 3)
            #expect(try await cache.statistics().hotChunks == 3)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
            try await cache.setHotTierSize(Int64(Self.chunk))  // two must cool
            var stats = try await cache.statistics()
            #expect(stats.hotChunks == 1 && stats.hotBytes == Int64(Self.chunk))
            try await Self.expectStoredBytesExact(cache)
            try await cache.setHotTierSize(0)
            stats = try await cache.statistics()
            #expect(stats.hotChunks == 0 && stats.hotBytes == 0 && stats.storedBytes == before.storedBytes)
            let after = try Self.storedChunks(cache)
            #expect(after.count == cold.count)
            for (digest, chunk) in cold {
                #expect(after[digest]?.encoding == chunk.encoding && after[digest]?.length == chunk.length)
            }
            #expect(try await Self.contents(cache, id) == bytes)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§14: a flush finding more hot bytes than the size (a shrink whose cooling was killed) cools back within it"
    )
    func overBudgetCoolsAtFlush() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "shrunk")
            let bytes = Self.textChunks(3)
            try await put(cache, bytes, as: id, in: dir)
            try await Self.readTwice(cache, id, chunks: 3)
            #expect(try await cache.statistics().hotChunks == 3)
            // The size recorded without the cooling that follows it, as a kill between the two leaves it.
            let dbs = cache.store.dbs
            try await cache.store.writer.write { txn in try txn.setCounter(dbs, HotMeta.size, UInt64(Self.chunk)) }
            try await Self.readTwice(cache, id, chunks: 1)
            let stats = try await cache.statistics()
            #expect(stats.hotBytes <= Int64(Self.chunk) && stats.hotChunks <= 1)
            #expect(try await Self.contents(cache, id) == bytes)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: chunks are promoted only while the store stays under its bound's low-water mark")
    func promotionKeepsTheBound() async throws {
        try await withTemporaryDirectory { dir in
            let id = ItemIdentifier(domain: "d", "bounded")
            let bytes = Self.textChunks(32)
            let live: Int64
            do {
                let cache = try await makeCache(dir)
                try await cache.setMinimumFreeSpace(0)
                try await put(cache, bytes, as: id, in: dir)
                live = Int64(try cache.store.environment.liveBytes())
            }
            // The smallest bound whose low-water mark is above what the store holds: room for one chunk's
            // growth at most, not for 32.
            var bound: Int64 = 1 << 20
            while Int64(SpaceBound.lowWater * Double(Store.mapSize(forBound: bound))) <= live { bound += 16 << 10 }
            #expect(bound > 1 << 20, "the store holds more than the smallest bound's low-water mark")
            let cache = try await Self.reopen(dir + "/store", maxSize: bound)
            try await cache.setHotTierSize(1 << 30)  // the size is no limit here: the bound is
            try await Self.readTwice(cache, id, chunks: 32)
            let stats = try await cache.statistics()
            #expect(stats.hotChunks <= 1, "\(stats)")
            let allowed = Double(cache.engine.space.allowedBytes())
            #expect(Double(try cache.store.environment.liveBytes()) <= SpaceBound.highWater * allowed)
            #expect(try await Self.contents(cache, id) == bytes)
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: making room for the bound cools hot chunks before it evicts anything")
    func boundCoolsFirst() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "room")
            let bytes = Self.textChunks(2)
            try await put(cache, bytes, as: id, in: dir)
            try await Self.readTwice(cache, id, chunks: 2)
            #expect(try await cache.statistics().hotChunks == 2)
            let engine = cache.engine
            // Asked to free more than the store holds: only cooling can help a local domain.
            _ = try await engine.store.writer.onQueue { try engine.space.evictToLowWater(below: 1 << 40) }
            let stats = try await cache.statistics()
            #expect(stats.hotChunks == 0 && stats.hotBytes == 0)
            #expect(try await Self.contents(cache, id) == bytes)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: verify checks hot chunks and finds a damaged one corrupt; a fetch of it is corruptData")
    func damagedHotChunk() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "damaged")
            try await put(cache, Self.textChunks(1), as: id, in: dir)
            try await Self.readTwice(cache, id, chunks: 1)
            let (digest, stored) = try #require(try Self.storedChunks(cache).first)
            #expect(stored.encoding == ChunkCodec.Encoding.hot.rawValue)
            try await Self.expectClean(cache)
            let dbs = cache.store.dbs
            try await cache.store.writer.write { txn in
                try digest.withUnsafeBytes { key in
                    var value = Array(try #require(try txn.unsafeValue(dbs.chunks, key: key)))
                    value[ChunkCodec.headerSize + 100] ^= 0x01
                    try value.withUnsafeBytes { try txn.put(dbs.chunks, key: key, value: $0) }
                }
            }
            let report = try await cache.verify()
            #expect(report.corrupt == [digest])
            #expect(await errorCode { _ = try await Self.contents(cache, id) } == .corruptData)
            // Repair drops it, and the hot tier's counts with it.
            _ = try await cache.verify(repair: true)
            let stats = try await cache.statistics()
            #expect(stats.hotChunks == 0 && stats.hotBytes == 0 && stats.storedBytes == 0)
            #expect(try await cache.verify().inconsistencies.isEmpty)
        }
    }

    @Test("§14: removing a version whose chunks are hot takes them out of the hot tier's counts")
    func removedHotChunks() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "gone")
            try await put(cache, Self.textChunks(2), as: id, version: "one", in: dir)
            try await Self.readTwice(cache, id, chunks: 2)
            #expect(try await cache.statistics().hotChunks == 2)
            try await put(cache, Self.textChunks(2, seed: 99), as: id, version: "two", in: dir)
            _ = try await cache.collectGarbage(keepVersions: 1)
            let stats = try await cache.statistics()
            #expect(stats.hotChunks == 0 && stats.hotBytes == 0)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§14: hot chunks serve as deltas' bases: a new version's deltas against them read byte-exact, and removing the base version re-encodes them from the hot bytes"
    )
    func hotBasesOfDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = DeltaTests.first(seed: 5)
            let v2 = DeltaTests.edited(v1, insertAt: 10, inserted: 5, edit: 300_000)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await Self.readTwice(cache, id, chunks: 20)
            #expect(try await cache.statistics().hotChunks == 20)
            try await put(cache, v2, as: id, version: "v2", in: dir)
            let stats = try await cache.statistics()
            #expect(stats.deltaChunks >= 18 && stats.hotChunks == 20, "\(stats)")
            #expect(try await DeltaTests.contents(of: id, version: "v2", in: cache) == v2)
            try await Self.expectClean(cache)
            _ = try await cache.collectGarbage(keepVersions: 1)
            let after = try await cache.statistics()
            #expect(after.deltaChunks == 0 && after.hotChunks == 0 && after.hotBytes == 0, "\(after)")
            #expect(try await DeltaTests.contents(of: id, version: "v2", in: cache) == v2)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§14: delta chunks read often turn hot too (decoded, their links to their bases dropped); cooled, they are stored plain and read the same"
    )
    func hotDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let (id, _, v2) = try await DeltaTests.twoVersions(in: cache, dir, seed: 9)
            let deltas = try await cache.statistics().deltaChunks
            #expect(deltas >= 18)
            try await Self.readTwice(cache, id, chunks: 21)  // v2, the newest
            let hot = try await cache.statistics()
            #expect(hot.hotChunks == 20, "all but the 5-byte last chunk, stored raw: \(hot)")
            #expect(hot.deltaChunks == 0, "every delta of v2 was read twice: \(hot)")
            #expect(try await DeltaTests.contents(of: id, version: "v2", in: cache) == v2)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
            try await cache.setHotTierSize(0)
            let cooled = try await cache.statistics()
            #expect(cooled.hotChunks == 0 && cooled.deltaChunks == 0, "\(cooled)")
            #expect(try await DeltaTests.contents(of: id, version: "v2", in: cache) == v2)
            try await Self.expectStoredBytesExact(cache)
            try await Self.expectClean(cache)
        }
    }

    @Test("§14: recover keeps hot chunks, stored cold, and the new store verifies clean")
    func recoverKeepsHotChunks() async throws {
        try await withTemporaryDirectory { dir in
            let id = ItemIdentifier(domain: "d", "kept")
            let bytes = Self.textChunks(2)
            do {
                let cache = try await makeCache(dir)
                try await put(cache, bytes, as: id, in: dir)
                try await Self.readTwice(cache, id, chunks: 2)
                #expect(try await cache.statistics().hotChunks == 2)
            }
            _ = try await ChunkCache.recover(storeAt: dir + "/store", into: dir + "/new")
            let recovered = try await ChunkCache.open(at: dir + "/new")
            #expect(try await Self.contents(recovered, id) == bytes)
            #expect(
                try Self.storedChunks(recovered).values.allSatisfy { $0.encoding == ChunkCodec.Encoding.zstd.rawValue })
            #expect(try await recovered.statistics().hotBytes == 0)
            try await Self.expectStoredBytesExact(recovered)
            try await Self.expectClean(recovered)
        }
    }
}
