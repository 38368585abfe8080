import Foundation
import LMDBKit
import SeededRandom
import TestSupport
import Testing

@testable import ChunkCache

/// Damaged chunks are never served: fetch fails, verify names them, repair turns them into absent entries.
@Suite struct IntegrityTests {
    /// Flips one payload byte of `digest`'s stored value inside `data.mdb`, as a disk error would.
    static func flipStoredByte(of digest: ChunkDigest, in cache: ChunkCache) throws {
        let stored: [UInt8] = try cache.store.environment.read { txn in
            try #require(
                try digest.withUnsafeBytes { key in try txn.withValue(cache.store.dbs.chunks, key: key) { Array($0) } })
        }
        let payload = Array(stored[ChunkCodec.headerSize...])
        let needle = Array(payload.prefix(64))
        let file = try Data(contentsOf: URL(fileURLWithPath: cache.path + "/data.mdb"))
        let offset = try #require(file.firstRange(of: Data(needle))?.lowerBound)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: cache.path + "/data.mdb"))
        defer { try? handle.close() }
        let target = UInt64(offset + payload.count / 2)
        try handle.seek(toOffset: target)
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: target)
        handle.write(Data([byte ^ 0x5A]))
    }

    static func digest(ofChunk index: Int64, item: ItemIdentifier, version: String, in cache: ChunkCache) throws
        -> ChunkDigest
    {
        try cache.store.environment.read { txn in
            let key = Keys.version(
                itemKey: Keys.item(domain: item.domain, id: item.rawValue), contentVersion: Array(version.utf8))
            let record = try #require(
                try txn.withValue(cache.store.dbs.versions, key: key) {
                    try VersionRecord(decoding: $0, name: "version \(version) of \(item)")
                })
            var cursor = ManifestCursor(manifestID: record.manifestID, dbs: cache.store.dbs)
            guard case .stored(let digest) = try cursor.entry(index, in: txn) else {
                throw CacheError(.corruptData, "not stored")
            }
            return digest
        }
    }

    @Test(
        "B6 C4: a flipped stored byte is corruptData on fetch, verify names exactly that chunk, repair marks it absent; the older version never stands in",
        arguments: [false, true])
    func flippedByte(compressible: Bool) async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let chunk = 65536
            let make = { (seed: UInt64) in
                compressible ? TestData.text(count: chunk, seed: seed) : TestData.random(count: chunk, seed: seed)
            }
            let v1 = make(1) + make(2) + make(3) + make(4)
            let v2 = make(1) + make(2) + make(99) + make(4)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(cache, v2, as: id, version: "v2", in: dir)
            let bad = try Self.digest(ofChunk: 2, item: id, version: "v2", in: cache)
            try Self.flipStoredByte(of: bad, in: cache)

            let chunk2 = ByteRange(location: Int64(2 * chunk), length: 100)
            let fetchCode = await errorCode {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("v2"), minimalRange: chunk2, aligningTo: 4096)
            }
            #expect(fetchCode == .corruptData, "never wrong bytes")
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty,
                "the failed fetch left no file")

            let report = try await cache.verify()
            #expect(report.chunksChecked == 5)
            #expect(report.corrupt == [bad])
            #expect(report.repaired == 0)

            let repaired = try await cache.verify(repair: true)
            #expect(repaired.corrupt == [bad])
            #expect(repaired.repaired == 1)
            #expect(try await cache.verify().corrupt.isEmpty)

            let strict = await errorCode {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("v2"), minimalRange: chunk2, aligningTo: 4096,
                    options: .strictVersioning)
            }
            #expect(strict == .versionNoLongerAvailable)
            let lost = await caught {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("v2"), minimalRange: chunk2, aligningTo: 4096)
            }
            #expect(
                lost?.code == .corruptData, "B6 C4: never the older v1, never versionNoLongerAvailable without strict")
            #expect(lost?.message.contains("chunk 2 (\(bad))") == true, "names the lost chunk: \(lost?.message ?? "")")
            let intact = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("v2"), minimalRange: ByteRange(location: 0, length: 100),
                aligningTo: 4096, options: .strictVersioning)
            #expect(try readRange(intact.url.path, intact.retrievedRange) == Array(v2[0..<chunk]))
            let (_, versions) = try await cache.versions(of: id)
            #expect(versions.first { $0.contentVersion == "v2" }?.cachedBytes == Int64(3 * chunk))
        }
    }

    @Test(
        "C4: without strict versioning, a range that no version can serve is corruptData naming the lost chunk; strict is versionNoLongerAvailable"
    )
    func noVersionCanServe() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "solo")
            let chunk = 65536
            try await put(cache, TestData.random(count: 3 * chunk, seed: 7), as: id, version: "v1", in: dir)
            let bad = try Self.digest(ofChunk: 1, item: id, version: "v1", in: cache)
            try Self.flipStoredByte(of: bad, in: cache)
            #expect(try await cache.verify(repair: true).repaired == 1)

            let middle = ByteRange(location: Int64(chunk) + 10, length: 100)
            for version in [ItemVersion("v1"), nil] {
                let error = await caught {
                    _ = try await cache.fetchPartialContents(
                        for: id, version: version, minimalRange: middle, aligningTo: 4096)
                }
                #expect(error?.code == .corruptData, "version \(String(describing: version))")
                let message = error?.message ?? ""
                #expect(
                    message.contains("chunk 1 (\(bad))") && message.contains("verify --repair")
                        && message.contains("put the file again"), "\(message)")
            }
            let strict = await errorCode {
                _ = try await cache.fetchPartialContents(
                    for: id, version: ItemVersion("v1"), minimalRange: middle, aligningTo: 4096,
                    options: .strictVersioning)
            }
            #expect(strict == .versionNoLongerAvailable)
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
            // The chunks still there keep serving.
            _ = try await cache.fetchPartialContents(
                for: id, version: ItemVersion("v1"), minimalRange: ByteRange(location: 0, length: 10), aligningTo: 4096)
        }
    }
}

/// A writer killed mid-ingest leaves nothing behind once the store is opened again.
@Suite struct CrashCleanupTests {
    @Test(
        "a put killed with SIGKILL mid-write is rolled back on the next open; the store verifies clean",
        .enabled(if: ChunkCacheBinary.path != nil, "needs the built chunkcache executable"))
    func killedPut() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let keep = TestData.text(count: 300_000, seed: 7)
            try await put(cache, keep, as: ItemIdentifier(domain: "d", "keep"), in: dir)
            let before = try await cache.statistics()
            let big = dir + "/big"
            let fd = open(big, O_CREAT | O_WRONLY, 0o600)
            var rng = SplitMix64(seed: 3)
            var block = [UInt8](repeating: 0, count: 1 << 20)
            for _ in 0..<384 {
                for i in stride(from: 0, to: block.count, by: 8) {
                    block.withUnsafeMutableBytes { $0.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self) }
                }
                _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            }
            close(fd)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(ChunkCacheBinary.path))
            process.arguments = ["put", "--store", cache.path, "--domain", "d", "big", big]
            try process.run()
            // Wait until some batches are committed, then kill the writer.
            let deadline = Date().addingTimeInterval(60)
            while try fileSizes(cache.path + "/data.mdb").size < before.fileBytes + (64 << 20) && process.isRunning
                && Date() < deadline
            {
                usleep(20_000)
            }
            #expect(process.isRunning, "the put was still writing when killed")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            #expect(process.terminationReason == .uncaughtSignal)

            let reopened = try await ChunkCache.open(at: cache.path)
            var after = try await reopened.statistics()
            after.fileBytes = before.fileBytes
            #expect(after == before)
            #expect(
                await errorCode { _ = try await reopened.fetchContents(for: ItemIdentifier(domain: "d", "big")) }
                    == .noSuchItem)
            let report = try await reopened.verify()
            #expect(report.corrupt.isEmpty)
            #expect(report.chunksChecked == before.chunks)
            let fetched = try await reopened.fetchContents(for: ItemIdentifier(domain: "d", "keep"))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == keep)
            let pending = try reopened.store.environment.read { txn in try txn.count(reopened.store.dbs.pending) }
            #expect(pending == 0)
        }
    }
}
