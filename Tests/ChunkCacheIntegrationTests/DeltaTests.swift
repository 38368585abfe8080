import Foundation
import LMDBKit
import TestSupport
import Testing

@testable import ChunkCache

/// Deltas across versions (CONTRACT §14): made at ingest, read byte-exact, never left without their base.
@Suite struct DeltaTests {
    static let chunk = 65536

    /// 20 chunks of text: compressible, and with no chunk repeated.
    static func first(seed: UInt64 = 1) -> [UInt8] { TestData.text(count: 20 * chunk, seed: seed) }

    /// `bytes` with `inserted` bytes put in at `at` (shifting the rest) and a few bytes changed at `edit`.
    static func edited(_ bytes: [UInt8], insertAt at: Int, inserted: Int, edit: Int) -> [UInt8] {
        var next = bytes
        next.insert(contentsOf: TestData.random(count: inserted, seed: UInt64(at)), at: at)
        for i in edit..<(edit + 40) { next[i] ^= 0x55 }
        return next
    }

    /// Puts a first version (20 chunks of text) and a second one with bytes inserted at `insertAt` and an edit
    /// at `edit` as item "doc" of domain "d"; returns the item and both versions' bytes.
    static func twoVersions(
        in cache: ChunkCache, _ dir: String, seed: UInt64, insertAt: Int = 10, inserted: Int = 5, edit: Int = 300_000
    ) async throws -> (id: ItemIdentifier, v1: [UInt8], v2: [UInt8]) {
        let id = ItemIdentifier(domain: "d", "doc")
        let v1 = first(seed: seed)
        let v2 = edited(v1, insertAt: insertAt, inserted: inserted, edit: edit)
        try await put(cache, v1, as: id, version: "v1", in: dir)
        try await put(cache, v2, as: id, version: "v2", in: dir)
        return (id, v1, v2)
    }

    /// Every delta chunk of the store with the bases its header names.
    static func deltas(in cache: ChunkCache) throws -> [(digest: ChunkDigest, bases: [ChunkDigest])] {
        try cache.store.environment.read { txn in
            var found: [(ChunkDigest, [ChunkDigest])] = []
            try txn.scan(cache.store.dbs.chunks, prefix: []) { key, value in
                if let layout = DeltaLayout(parsing: value) {
                    found.append((ChunkDigest(raw: key), layout.bases.map(\.digest)))
                }
                return true
            }
            return found
        }
    }

    /// The whole of `version` of `id`, fetched.
    static func contents(of id: ItemIdentifier, version: String, in cache: ChunkCache) async throws -> [UInt8] {
        let result = try await cache.fetchContents(for: id, version: ItemVersion(version))
        defer { try? FileManager.default.removeItem(at: result.url) }
        return Array(try Data(contentsOf: result.url))
    }

    static func expectClean(_ cache: ChunkCache, _ when: String) async throws {
        let report = try await cache.verify()
        #expect(report.corrupt.isEmpty, "\(when): \(report.corrupt)")
        #expect(report.inconsistencies.isEmpty, "\(when): \(report.inconsistencies)")
        #expect(report.damagedVersions.isEmpty, "\(when)")
    }

    @Test(
        "§14: a version with an insertion and an edit is stored as deltas against the one before, reads byte-exact whole and in part, and stat counts the deltas and what they saved"
    )
    func versionsStoredAsDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = Self.first()
            let v2 = Self.edited(v1, insertAt: 100_000, inserted: 300, edit: 700_000)
            let v3 = Self.edited(v2, insertAt: 900_000, inserted: 77, edit: 40_000)
            let first = try await put(cache, v1, as: id, version: "v1", in: dir)
            let second = try await put(cache, v2, as: id, version: "v2", in: dir)
            let third = try await put(cache, v3, as: id, version: "v3", in: dir)
            // After the insertion every chunk of v2 is new; each finds its bytes in v1, shifted.
            #expect(second.newChunks >= 18)
            #expect(
                second.storedBytes * 10 < first.storedBytes,
                "v2 takes a tenth of v1 or less: \(second.storedBytes) against \(first.storedBytes)")
            #expect(third.storedBytes * 10 < first.storedBytes, "v3 too: \(third.storedBytes)")
            let stats = try await cache.statistics()
            let deltas = try Self.deltas(in: cache)
            #expect(Int64(deltas.count) == stats.deltaChunks)
            #expect(stats.deltaChunks >= 25, "most of the 29 new chunks of v2 and v3 are deltas: \(stats.deltaChunks)")
            #expect(
                stats.deltaSavedBytes > 25 * 10_000, "each delta saves most of a plain frame: \(stats.deltaSavedBytes)")
            // Depth 1: v3's deltas are made against the plain chunks under v2 (v1's), never against a delta.
            let deltaNames = Set(deltas.map(\.digest))
            #expect(deltas.allSatisfy { $0.bases.allSatisfy { !deltaNames.contains($0) } })
            for (version, bytes) in [("v1", v1), ("v2", v2), ("v3", v3)] {
                #expect(try await Self.contents(of: id, version: version, in: cache) == bytes, "\(version)")
            }
            // A range across two delta chunks, through the buffer read the mount uses.
            var buffer = [UInt8](repeating: 0, count: 100_000)
            let read = try buffer.withUnsafeMutableBytes {
                try cache.read(id, version: ItemVersion("v3"), at: 500_000, into: $0)
            }
            #expect(read.bytesRead == 100_000)
            #expect(buffer == Array(v3[500_000..<600_000]))
            try await Self.expectClean(cache, "after three versions")
        }
    }

    @Test(
        "§14: removing the versions a delta's base belongs to (gc --keep-versions 1) re-encodes the delta first: the kept version reads byte-exact, no delta's base is missing, counters match a recount"
    )
    func removedBaseReencodesDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let (id, _, v2) = try await Self.twoVersions(in: cache, dir, seed: 2)
            let before = try await cache.statistics()
            #expect(before.deltaChunks >= 18)
            let result = try await cache.collectGarbage(keepVersions: 1)
            #expect(result.versions == 1)
            let after = try await cache.statistics()
            // v1 shares no chunk with v2 (the insertion shifted all), so every base went and every delta was re-encoded.
            #expect(after.deltaChunks == 0)
            #expect(after.deltaSavedBytes == 0)
            #expect(try Self.deltas(in: cache).isEmpty)
            #expect(after.chunks == 21)
            #expect(try await Self.contents(of: id, version: "v2", in: cache) == v2)
            let links = try cache.store.environment.read { txn in try txn.count(cache.store.dbs.bases) }
            #expect(links == 0, "no link outlives its delta")
            try await Self.expectClean(cache, "after the gc")
        }
    }

    @Test(
        "§14: when the oldest of three versions goes, the deltas of its chunks are rebased: one of each chunk's deltas is stored plain and the other becomes a delta against it, so the two versions left keep their saving"
    )
    func removedBaseRebasesDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            // Every chunk edited in place in each version: each new chunk's base is the chunk at its offset.
            func edited(_ bytes: [UInt8], by mask: UInt8) -> [UInt8] {
                var next = bytes
                for chunk in 0..<20 { next[chunk * Self.chunk + 1000] ^= mask }
                return next
            }
            let v1 = Self.first(seed: 8)
            let v2 = edited(v1, by: 0x11)
            let v3 = edited(v2, by: 0x22)
            let first = try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(cache, v2, as: id, version: "v2", in: dir)
            try await put(cache, v3, as: id, version: "v3", in: dir)
            #expect(try await cache.statistics().deltaChunks == 40)
            _ = try await cache.collectGarbage(keepVersions: 2)
            let after = try await cache.statistics()
            #expect(after.deltaChunks == 20, "one version's chunks are deltas against the other's")
            #expect(
                after.storedBytes < first.storedBytes + first.storedBytes / 5,
                "two versions take about one: \(after.storedBytes) against \(first.storedBytes) for v1 alone")
            #expect(try await Self.contents(of: id, version: "v2", in: cache) == v2)
            #expect(try await Self.contents(of: id, version: "v3", in: cache) == v3)
            try await Self.expectClean(cache, "after the gc")
            // And when the middle version goes too, the last one's chunks stand alone again.
            _ = try await cache.collectGarbage(keepVersions: 1)
            #expect(try await cache.statistics().deltaChunks == 0)
            #expect(try await Self.contents(of: id, version: "v3", in: cache) == v3)
            try await Self.expectClean(cache, "after the second gc")
        }
    }

    @Test(
        "§14: a base removed while another version still uses it as a plain chunk stays, and its deltas with it"
    )
    func sharedBaseStays() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let v1 = Self.first(seed: 3)
            // The same bytes in a second item keep v1's chunks referenced when v1's item is removed.
            try await put(cache, v1, as: ItemIdentifier(domain: "d", "copy"), version: "c1", in: dir)
            let id = ItemIdentifier(domain: "d", "doc")
            try await put(cache, v1, as: id, version: "v1", in: dir)
            let v2 = Self.edited(v1, insertAt: 1000, inserted: 9, edit: 200_000)
            try await put(cache, v2, as: id, version: "v2", in: dir)
            let deltas = try await cache.statistics().deltaChunks
            #expect(deltas >= 18)
            _ = try await cache.collectGarbage(keepVersions: 1)
            #expect(try await cache.statistics().deltaChunks == deltas, "the bases are still referenced by copy")
            #expect(try await Self.contents(of: id, version: "v2", in: cache) == v2)
            try await Self.expectClean(cache, "after the gc")
        }
    }

    @Test(
        "§14: a damaged base is corruptData for the delta read through it, never wrong bytes; verify names the base and its deltas, and repair drops them and their links"
    )
    func damagedBase() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let (id, _, _) = try await Self.twoVersions(
                in: cache, dir, seed: 4, insertAt: 64, inserted: 3, edit: 500_000)
            let all = try Self.deltas(in: cache)
            let delta = try #require(all.first)
            let base = delta.bases[0]
            let dependents = all.filter { $0.bases.contains(base) }.map(\.digest)
            try IntegrityTests.flipStoredByte(of: base, in: cache)
            var index: Int64 = 0
            while try IntegrityTests.digest(ofChunk: index, item: id, version: "v2", in: cache) != delta.digest {
                index += 1
            }
            let range = ByteRange(location: index * Int64(Self.chunk), length: 100)
            let error = await errorOf {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("v2"), minimalRange: range, aligningTo: 4096)
            }
            let message = error?.message ?? ""
            #expect(error?.code == .corruptData)
            #expect(message.contains(base.description), "names the base: \(message)")
            let report = try await cache.verify()
            #expect(Set(report.corrupt) == Set([base] + dependents))
            let repaired = try await cache.verify(repair: true)
            #expect(repaired.repaired == dependents.count + 1)
            let clean = try await cache.verify()
            #expect(clean.corrupt.isEmpty)
            #expect(
                clean.inconsistencies.isEmpty, "links and delta counters follow the repair: \(clean.inconsistencies)")
        }
    }

    @Test("§14: a damaged delta frame is corruptData, and verify names that chunk alone")
    func damagedDelta() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = Self.first(seed: 5)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(
                cache, Self.edited(v1, insertAt: 5000, inserted: 1, edit: 90_000), as: id, version: "v2", in: dir)
            let delta = try #require(try Self.deltas(in: cache).first)
            try IntegrityTests.flipStoredByte(of: delta.digest, in: cache)
            let code = await errorCode { _ = try await Self.contents(of: id, version: "v2", in: cache) }
            #expect(code == .corruptData)
            #expect(try await cache.verify().corrupt == [delta.digest])
        }
    }

    @Test("§14: recover of a store with deltas keeps every version readable, each delta only with its base")
    func recoverWithDeltas() async throws {
        try await withTemporaryDirectory { dir in
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = Self.first(seed: 6)
            let v2 = Self.edited(v1, insertAt: 123, inserted: 45, edit: 600_000)
            do {
                let cache = try await makeCache(dir)
                try await put(cache, v1, as: id, version: "v1", in: dir)
                try await put(cache, v2, as: id, version: "v2", in: dir)
                #expect(try await cache.statistics().deltaChunks > 0)
            }
            let report = try await ChunkCache.recover(storeAt: dir + "/store", into: dir + "/recovered")
            #expect(report.versions.lost == 0)
            let recovered = try await ChunkCache.open(at: dir + "/recovered")
            #expect(try await Self.contents(of: id, version: "v1", in: recovered) == v1)
            #expect(try await Self.contents(of: id, version: "v2", in: recovered) == v2)
            try await Self.expectClean(recovered, "the recovered store")
        }
    }

    @Test("§14: a store of format 2 (before deltas) opens, is migrated to format 3, and reads as before")
    func formatTwoMigrates() async throws {
        try await withTemporaryDirectory { dir in
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = Self.first(seed: 7)
            do {
                let cache = try await makeCache(dir)
                try await put(cache, v1, as: id, version: "v1", in: dir)
                try await cache.store.writer.write { txn in
                    try txn.setCounter(cache.store.dbs, MetaKey.format, Store.formatBeforeDeltas)
                }
            }
            let reopened = try await ChunkCache.open(at: dir + "/store")
            let format = try reopened.store.environment.read { txn in
                try txn.counter(reopened.store.dbs, MetaKey.format)
            }
            #expect(format == Store.formatVersion)
            #expect(try await Self.contents(of: id, version: "v1", in: reopened) == v1)
            try await put(
                reopened, Self.edited(v1, insertAt: 1, inserted: 1, edit: 100), as: id, version: "v2", in: dir)
            #expect(try await reopened.statistics().deltaChunks > 0)
        }
    }
}
