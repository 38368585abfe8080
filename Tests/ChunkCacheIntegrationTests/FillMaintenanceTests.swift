import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// `verify` and `recover` of a store whose downloaded chunks are in both states (CONTRACT §10, "served as it
/// arrives, stored behind"): fills waiting in their version's fill file, and settled, stored chunks. The origin
/// is a real nginx (``ColdPathTests/withOrigin(_:readAhead:maxSize:minFree:_:)``); background settling is off,
/// so what is a fill stays one until the test settles it.
@Suite(.serialized) struct FillMaintenanceTests {
    static let chunk = 65_536
    static let bytes = TestData.random(count: 4 * chunk, seed: 2701)

    /// Fetches all of `item`, expects `bytes`, waits until what was downloaded is recorded, and returns how many
    /// bytes came from the origin.
    @discardableResult
    static func fetchAll(_ cache: ChunkCache, _ item: String, _ bytes: [UInt8]) async throws -> Int64 {
        let result = try await ColdPathTests.fetch(cache, item, 0, Int64(bytes.count))
        try ColdPathTests.expectBytes(result, bytes)
        await cache.waitForDownloads()
        return result.downloadedBytes
    }

    /// Whether `report` found nothing wrong at all.
    static func isClean(_ report: VerifyReport) -> Bool {
        report.corrupt.isEmpty && report.corruptFills.isEmpty && report.damagedVersions.isEmpty
            && report.damagedRecords.isEmpty && report.inconsistencies.isEmpty
    }

    /// The fill files of the store at `storePath`, by path.
    static func fillFiles(_ storePath: String) -> [String] {
        let folder = storePath + "/" + FillFiles.folder
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { folder + "/" + $0 }
    }

    /// Changes the byte at `offset` of the store's only fill file (holding ``bytes``), as a disk error would.
    static func flipFillByte(at offset: Int, in cache: ChunkCache) throws {
        let file = try #require(fillFiles(cache.store.path).first)
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [bytes[offset] ^ 0x5A])
        try handle.close()
    }

    /// The manifest id of the store's only version.
    static func manifestID(in store: Store) throws -> UInt64 {
        try store.environment.read { txn in
            var manifest: UInt64?
            try txn.scan(store.dbs.versions, prefix: []) { _, value in
                manifest = VersionRecord(ifIntact: value)?.manifestID
                return false
            }
            return try #require(manifest)
        }
    }

    /// Opens a store with an origin serving `a.bin`, background settling off, and fetches all of it as fills.
    static func withFills(_ body: (ChunkCache, String) async throws -> Void) async throws {
        try await ColdPathTests.withOrigin(["a.bin": bytes]) { cache, _, root in
            cache.settleInBackground(false)
            #expect(try await fetchAll(cache, "a.bin", bytes) == Int64(bytes.count))
            #expect(try await cache.statistics().unsettledChunks == 4)
            try await body(cache, root)
        }
    }

    @Test(
        "§10 verify checks both states: every fill's bytes are checked while unsettled, every chunk once settled, and both verify clean",
        .requires(NginxServer.self))
    func verifyBothStates() async throws {
        try await Self.withFills { cache, _ in
            let unsettled = try await cache.verify()
            #expect(Self.isClean(unsettled), "\(unsettled)")
            #expect(unsettled.fillsChecked == 4 && unsettled.chunksChecked == 0)
            #expect(try await cache.settle().settled == 4)
            let settled = try await cache.verify()
            #expect(Self.isClean(settled), "\(settled)")
            #expect(settled.fillsChecked == 0 && settled.chunksChecked == 4)
        }
    }

    @Test(
        "§10 a fill whose bytes changed is never served: verify names it, --repair makes it absent, the next fetch downloads it again",
        .requires(NginxServer.self))
    func damagedFillRepaired() async throws {
        try await Self.withFills { cache, _ in
            try Self.flipFillByte(at: 2 * Self.chunk + 10, in: cache)

            let report = try await cache.verify()
            #expect(report.corruptFills.count == 1, "\(report)")
            #expect(report.corruptFills.first?.hasPrefix("fill 2 of the manifest of version") == true, "\(report)")
            #expect(report.corruptFills.first?.contains("a.bin") == true)
            #expect(report.corrupt.isEmpty && report.inconsistencies.isEmpty && report.damagedRecords.isEmpty)
            #expect(report.repaired == 0 && report.fillsChecked == 4)

            let repair = try await cache.verify(repair: true)
            #expect(repair.corruptFills.count == 1 && repair.repaired == 1)
            let repaired = try await cache.verify()
            #expect(Self.isClean(repaired), "\(repaired)")
            #expect(repaired.fillsChecked == 3)
            #expect(try await cache.statistics().unsettledChunks == 3)

            #expect(try await Self.fetchAll(cache, "a.bin", Self.bytes) == Int64(Self.chunk), "only the dropped fill")
            let after = try await cache.verify()
            #expect(Self.isClean(after) && after.fillsChecked == 4, "\(after)")
        }
    }

    @Test(
        "§10 a system crash may lose the pages of many fills: a fetch downloads each lost one again, one by one, and serves every byte right",
        .requires(NginxServer.self))
    func everyFillLostIsDownloadedAgain() async throws {
        try await Self.withFills { cache, _ in
            // As after a power cut before the kernel wrote the fills back: each of the four fails its check.
            for index in 0..<4 { try Self.flipFillByte(at: index * Self.chunk + 100, in: cache) }
            #expect(try await Self.fetchAll(cache, "a.bin", Self.bytes) == Int64(Self.bytes.count))
            let after = try await cache.verify()
            #expect(Self.isClean(after) && after.fillsChecked == 4, "\(after)")
        }
    }

    @Test(
        "§10 a lost fill file: verify names each of its fills, --repair makes them absent and removes their count, the next fetch downloads them",
        .requires(NginxServer.self))
    func lostFillFileRepaired() async throws {
        try await Self.withFills { cache, _ in
            let file = try #require(Self.fillFiles(cache.store.path).first)
            try FileManager.default.removeItem(atPath: file)

            let report = try await cache.verify()
            #expect(report.corruptFills.count == 4, "\(report)")
            #expect(report.corrupt.isEmpty && report.inconsistencies.isEmpty)
            let repair = try await cache.verify(repair: true)
            #expect(repair.repaired == 4)
            let repaired = try await cache.verify()
            #expect(Self.isClean(repaired) && repaired.fillsChecked == 0, "\(repaired)")
            let stat = try await cache.statistics()
            #expect(stat.unsettledChunks == 0 && stat.fillBytes == 0)

            #expect(try await Self.fetchAll(cache, "a.bin", Self.bytes) == Int64(Self.bytes.count))
            #expect(try await cache.settle().settled == 4)
            #expect(Self.isClean(try await cache.verify()))
        }
    }

    @Test(
        "§10 a fill whose bytes do not hash to the SHA-256 its manifest knew is named by verify and dropped by --repair, that hash kept",
        .requires(NginxServer.self))
    func mismatchedFillRepaired() async throws {
        try await Self.withFills { cache, _ in
            let store = cache.store
            let manifest = try Self.manifestID(in: store)
            // The hash the manifest knew for chunk 3, as if the origin had served other bytes than it promised.
            let promised = [UInt8](repeating: 7, count: Self.chunk).withUnsafeBytes { ChunkDigest(hashing: $0) }
            try await store.writer.write { txn in
                try txn.put(
                    store.dbs.fills, key: FillKeys.fill(manifest, 3),
                    value: FillKeys.record(length: Self.chunk, expected: promised))
            }
            let report = try await cache.verify()
            #expect(report.corruptFills.count == 1, "\(report)")
            #expect(report.corruptFills.first?.hasPrefix("fill 3 of") == true)
            #expect(
                report.corruptFills.first?.hasSuffix("its bytes do not hash to the SHA-256 its manifest knew") == true)
            #expect(try await cache.verify(repair: true).repaired == 1)
            let repaired = try await cache.verify()
            #expect(Self.isClean(repaired) && repaired.fillsChecked == 3, "\(repaired)")
            let entry = try store.environment.read { txn in
                var cursor = ManifestCursor(manifestID: manifest, dbs: store.dbs)
                return try cursor.entry(3, in: txn)
            }
            #expect(entry == .absent(promised))
        }
    }

    @Test(
        "§10 fills the store cannot account for: a record whose entry is no fill, a fill file of no version and a wrong fillBytes are reported, and --repair mends only them",
        .requires(NginxServer.self))
    func orphanFillsRepaired() async throws {
        try await Self.withFills { cache, _ in
            let store = cache.store
            let dbs = store.dbs
            let manifest = try Self.manifestID(in: store)
            // A record past the version's last chunk (its 100 bytes counted in the file, as a fill's are), a file for
            // a manifest that does not exist, a counter off by 7.
            try await store.writer.write { txn in
                try txn.put(
                    dbs.fills, key: FillKeys.fill(manifest, 99), value: FillKeys.record(length: 100, expected: nil))
                var count = ByteWriter()
                count.append((try txn.fileBytes(manifest, dbs) ?? 0) + 100)
                try txn.put(dbs.fills, key: FillKeys.file(manifest), value: count.bytes)
                try txn.addToCounter(dbs, MetaKey.fillBytes, 100 + 7)
            }
            let orphan = dbs.fillFiles.path(of: 0xABCDEF)
            try TestData.write([1, 2, 3], to: orphan)

            let report = try await cache.verify()
            #expect(report.corrupt.isEmpty && report.corruptFills.isEmpty, "\(report)")
            #expect(report.inconsistencies.count == 3, "\(report.inconsistencies)")
            #expect(report.inconsistencies.contains { $0.contains("fill 99 of") && $0.contains("is not a fill") })
            #expect(report.inconsistencies.contains { $0.contains("fills/abcdef") })
            #expect(report.inconsistencies.contains { $0.contains(MetaKey.fillBytes) })

            _ = try await cache.verify(repair: true)
            let repaired = try await cache.verify()
            #expect(Self.isClean(repaired) && repaired.fillsChecked == 4, "\(repaired)")
            #expect(!FileManager.default.fileExists(atPath: orphan))
            #expect(try await cache.statistics().fillBytes == Int64(Self.bytes.count))
            #expect(try await Self.fetchAll(cache, "a.bin", Self.bytes) == 0, "the fills are untouched")
        }
    }

    @Test(
        "§10 recover of a store holding settled chunks and fills: every fill is checked and taken as a settled chunk, the new store verifies clean and reads every byte without the origin",
        .requires(NginxServer.self))
    func recoverBothStates() async throws {
        let other = TestData.random(count: 3 * Self.chunk + 100, seed: 2702)
        try await ColdPathTests.withOrigin(["a.bin": Self.bytes, "b.bin": other]) { cache, _, _ in
            cache.settleInBackground(false)
            try await Self.fetchAll(cache, "b.bin", other)
            #expect(try await cache.settle().settled == 4)
            try await Self.fetchAll(cache, "a.bin", Self.bytes)
            #expect(try await cache.statistics().unsettledChunks == 4)
            let storePath = cache.store.path
            let target = URL(fileURLWithPath: storePath).deletingLastPathComponent().path + "/recovered"

            let report = try await ChunkCache.recover(storeAt: storePath, into: target)
            #expect(report.versions == RecoveryReport.Count(recovered: 2, lost: 0))
            #expect(report.fills == RecoveryReport.Count(recovered: 4, lost: 0))
            #expect(report.versionsWithAbsentChunks == 0 && report.damage.isEmpty, "\(report)")
            #expect(Self.fillFiles(target).isEmpty, "the new store has no fill left")

            let recovered = try await ChunkCache.open(at: target)
            let verified = try await recovered.verify()
            #expect(Self.isClean(verified), "\(verified)")
            #expect(verified.chunksChecked == 8 && verified.fillsChecked == 0)
            #expect(try await Self.fetchAll(recovered, "a.bin", Self.bytes) == 0)
            #expect(try await Self.fetchAll(recovered, "b.bin", other) == 0)
        }
    }

    @Test(
        "§10 recover drops a fill whose bytes are lost: its entry is absent, the fetch downloads it again",
        .requires(NginxServer.self))
    func recoverLostFill() async throws {
        try await Self.withFills { cache, _ in
            try Self.flipFillByte(at: Self.chunk + 3, in: cache)
            let target = URL(fileURLWithPath: cache.store.path).deletingLastPathComponent().path + "/recovered"

            let report = try await ChunkCache.recover(storeAt: cache.store.path, into: target)
            #expect(report.fills == RecoveryReport.Count(recovered: 3, lost: 1))
            #expect(report.versionsWithAbsentChunks == 1)

            let recovered = try await ChunkCache.open(at: target)
            #expect(Self.isClean(try await recovered.verify()))
            #expect(try await Self.fetchAll(recovered, "a.bin", Self.bytes) == Int64(Self.chunk))
        }
    }
}
