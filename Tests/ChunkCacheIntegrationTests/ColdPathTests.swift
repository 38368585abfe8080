import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path against a real nginx on 127.0.0.1 (CONTRACT §10): what is downloaded, in how many requests,
/// and what the store holds after; the access log is the witness.
@Suite(.serialized) struct ColdPathTests {
    static let chunk = 65_536

    /// A store with domain "web" whose origin is an nginx serving `files` (name → bytes) from `dir/origin`.
    /// - Parameters:
    ///   - maxSize: The store's bound; `minFree` the free space it keeps (nil: the default).
    static func withOrigin(
        _ files: [String: [UInt8]], readAhead: Int64 = DomainInfo.defaultReadAhead, maxSize: Int64 = 1 << 34,
        minFree: Int64? = nil, probes: EngineProbes = .none,
        _ body: (ChunkCache, NginxServer, String) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            for (name, bytes) in files { try TestData.write(bytes, to: root + "/" + name) }
            let server = try await NginxServer.start(root: URL(fileURLWithPath: root))
            do {
                let cache = try await makeCache(dir, maxSize: maxSize, probes: probes)
                if let minFree { try await cache.setMinimumFreeSpace(minFree) }
                _ = try await cache.addDomain("web", origin: try Origin(server.baseURL), readAhead: readAhead)
                try await body(cache, server, root)
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }

    static func fetch(
        _ cache: ChunkCache, _ item: String, _ location: Int64, _ length: Int64, version: String? = nil,
        strict: Bool = false
    ) async throws -> FetchResult {
        try await cache.fetchPartialContents(
            for: ItemIdentifier(domain: "web", item), version: version.map { ItemVersion($0) },
            minimalRange: ByteRange(location: location, length: length), aligningTo: 4096,
            options: strict ? .strictVersioning : [])
    }

    /// Replaces the origin's file `name` under `root` with `bytes` at once (a rename), a second after it was
    /// last written: nginx's ETag holds the modification time in seconds, so the version changes.
    static func replace(_ name: String, in root: String, with bytes: [UInt8]) async throws {
        try await Task.sleep(for: .milliseconds(1100))
        try TestData.write(bytes, to: root + "/" + name + ".tmp")
        #expect(rename(root + "/" + name + ".tmp", root + "/" + name) == 0)
    }

    static func expectBytes(_ result: FetchResult, _ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation)
        throws
    {
        let range = result.retrievedRange
        #expect(
            try readRange(result.url.path, range) == Array(bytes[Int(range.location)..<Int(range.end)]),
            sourceLocation: sourceLocation)
        try? FileManager.default.removeItem(at: result.url)
    }

    @Test(
        "§10: the first fetch of an unknown item is one ranged GET that tells its size and version",
        .requires(NginxServer.self))
    func discoveryIsOneRequest() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 1)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let result = try await Self.fetch(cache, "a.bin", 131_072 + 10, 100)
            try Self.expectBytes(result, bytes)
            #expect(result.retrievedRange == ByteRange(location: 131_072, length: 65_536))
            #expect(result.item.documentSize == 1 << 20)
            #expect(result.item.itemVersion.contentVersionString.hasPrefix("\""), "the strong ETag, quotes included")
            #expect(result.downloadedBytes == 65_536 && result.originRequests == 1)
            let log = try await server.accessLog(atLeast: 1)
            #expect(log.count == 1)
            #expect(log.first?.method == "GET" && log.first?.range == "bytes=131072-196607")
            #expect(log.first?.ifMatch == nil, "nothing to pin before the version is known")
        }
    }

    @Test(
        "§10: a small read over a stored chunk and a cold one ends even when the cold chunk arrives before the stored one is read",
        .requires(NginxServer.self))
    func storedChunkAfterDownloadArrived() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 12)
        let hold = ArmedProbe()
        try await Self.withOrigin(
            ["a.bin": bytes], readAhead: 0, probes: EngineProbes(beforeTakingStored: hold.runWithoutThrowing)
        ) { cache, server, _ in
            let item = ItemIdentifier(domain: "web", "a.bin")
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
            defer { buffer.deallocate() }
            // Chunk 0 into the store (committed: a read is answered before its download is).
            _ = try await cache.read(item, version: nil, at: 0, into: buffer)
            await cache.waitForDownloads()
            try await server.clearAccessLog()
            // 200 bytes across chunks 0 and 1; chunk 1's download hands it over before the read looks at the
            // store for chunk 0.
            hold.arm { Thread.sleep(forTimeInterval: 0.5) }
            struct Hung: Error {}
            let got = try await withThrowingTaskGroup(of: [UInt8].self) { group in
                group.addTask {
                    let target = UnsafeMutableRawBufferPointer.allocate(byteCount: 200, alignment: 16)
                    defer { target.deallocate() }
                    let result = try await cache.read(item, version: nil, at: 65_536 - 100, into: target)
                    return Array(target[0..<result.bytesRead])
                }
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    throw Hung()
                }
                defer { group.cancelAll() }
                return try await group.next()!
            }
            hold.arm(nil)
            #expect(got == Array(bytes[(65_536 - 100)..<(65_536 + 100)]))
            #expect(try await server.accessLog().map(\.range) == ["bytes=65536-131071"], "chunk 1 alone")
        }
    }

    @Test(
        "§10 single flight: 32 concurrent fetches of one cold 64 KiB range make exactly one GET",
        .requires(NginxServer.self))
    func singleFlight() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 2)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            try await withThrowingTaskGroup(of: FetchResult.self) { group in
                for _ in 0..<32 { group.addTask { try await Self.fetch(cache, "a.bin", 65_536, 65_536) } }
                for try await result in group { try Self.expectBytes(result, bytes) }
            }
            try await Task.sleep(for: .milliseconds(200))
            let log = try await server.accessLog()
            #expect(log.count == 1, "\(log.map(\.range))")
        }
    }

    @Test(
        "§10: a cold 1 MiB range is one GET pinned with If-Match, not 16; the same range again makes none",
        .requires(NginxServer.self))
    func coalescedAndWarm() async throws {
        let bytes = TestData.random(count: 8 << 20, seed: 3)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let first = try await Self.fetch(cache, "a.bin", 0, 100)
            let version = first.item.itemVersion.contentVersionString
            try Self.expectBytes(first, bytes)
            _ = try await server.accessLog(atLeast: 1)
            try await server.clearAccessLog()
            let range = try await Self.fetch(cache, "a.bin", 4 << 20, 1 << 20)
            try Self.expectBytes(range, bytes)
            #expect(range.originRequests == 1 && range.downloadedBytes == 1 << 20)
            let log = try await server.accessLog(atLeast: 1)
            #expect(log.count == 1)
            #expect(log.first?.range == "bytes=4194304-5242879")
            #expect(log.first?.ifMatch == version, "A10: every ranged request is pinned to the version")
            try await server.clearAccessLog()
            let again = try await Self.fetch(cache, "a.bin", 4 << 20, 1 << 20)
            try Self.expectBytes(again, bytes)
            #expect(again.originRequests == 0 && again.downloadedBytes == 0)
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await server.accessLog().isEmpty)
        }
    }

    @Test(
        "§10 store behind: a cold range is returned as it arrives and stored behind the fetch; then it is warm",
        .requires(NginxServer.self))
    func storedBehind() async throws {
        let bytes = TestData.random(count: 4 << 20, seed: 14)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            try Self.expectBytes(try await Self.fetch(cache, "a.bin", 0, 10), bytes)
            for offset in [Int64(1 << 20), 3 << 20] {
                let cold = try await Self.fetch(cache, "a.bin", offset + 100, 200_000)
                #expect(cold.retrievedRange == ByteRange(location: offset, length: 262_144))
                #expect(cold.originRequests == 1 && cold.downloadedBytes == 262_144)
                try Self.expectBytes(cold, bytes)
            }
            await cache.waitForDownloads()
            let listed = try await cache.versions(of: ItemIdentifier(domain: "web", "a.bin"))
            let cached = try #require(listed.versions.first).cachedBytes
            #expect(cached == 65_536 + 2 * 262_144, "what was handed over is stored")
            let warm = try await Self.fetch(cache, "a.bin", (1 << 20) + 100, 200_000)
            #expect(warm.originRequests == 0)
            try Self.expectBytes(warm, bytes)
            #expect(try await server.accessLog(atLeast: 3).count == 3)
            let report = try await cache.verify()
            #expect(report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
        }
    }

    @Test(
        "§10 integrity: a stored chunk that fails its check on read is downloaded again and replaced; the fetch succeeds",
        .requires(NginxServer.self))
    func damagedChunkRefetched() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 15)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let first = try await Self.fetch(cache, "a.bin", 0, 4 * 65_536)
            try Self.expectBytes(first, bytes)
            _ = try await cache.settle()  // a stored chunk, named by its hash (a fill's damage has its own test)
            let version = first.item.itemVersion.contentVersionString
            let digest = try IntegrityTests.digest(
                ofChunk: 2, item: ItemIdentifier(domain: "web", "a.bin"), version: version, in: cache)
            try IntegrityTests.flipStoredByte(of: digest, in: cache)
            try await server.clearAccessLog()
            let again = try await Self.fetch(cache, "a.bin", 0, 4 * 65_536)
            try Self.expectBytes(again, bytes)
            #expect(again.originRequests == 1 && again.downloadedBytes == 65_536, "only the damaged chunk")
            #expect(try await server.accessLog(atLeast: 1).first?.range == "bytes=131072-196607")
            let report = try await cache.verify()
            #expect(
                report.damagedRecords.isEmpty && report.damagedVersions.isEmpty && report.corrupt.isEmpty,
                "the damaged copy was replaced")
        }
    }

    @Test(
        "§10: downloaded chunks are deduplicated against everything in the store (two items with the same bytes)",
        .requires(NginxServer.self))
    func deduplicated() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 16)
        try await Self.withOrigin(["a.bin": bytes, "copy.bin": bytes]) { cache, _, _ in
            for name in ["a.bin", "copy.bin"] {
                let whole = try await cache.fetchContents(for: ItemIdentifier(domain: "web", name))
                #expect(try TestData.read(whole.url.path, count: 1 << 20) == bytes)
                try? FileManager.default.removeItem(at: whole.url)
            }
            // Deduplicated when settled: until then each is a fill at its own place.
            _ = try await cache.settle()
            let stats = try await cache.statistics()
            #expect(stats.logicalBytes == 2 << 20 && stats.uniqueBytes == 1 << 20)
            #expect(stats.unsettledChunks == 0 && stats.fillBytes == 0)
        }
    }

    @Test("A19: random fetches download only their own ranges, nothing ahead", .requires(NginxServer.self))
    func randomFetchNoReadAhead() async throws {
        let bytes = TestData.random(count: 16 << 20, seed: 4)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            for offset in [Int64(10 << 20), 3 << 20, 12 << 20, 1 << 20] {
                try Self.expectBytes(try await Self.fetch(cache, "a.bin", offset, 65_536), bytes)
            }
            try await Task.sleep(for: .milliseconds(300))
            let log = try await server.accessLog()
            #expect(
                log.map(\.range) == [
                    "bytes=10485760-10551295", "bytes=3145728-3211263", "bytes=12582912-12648447",
                    "bytes=1048576-1114111",
                ])
        }
    }

    @Test(
        "A19: a fetch from offset 0 after two random fetches is out of order too: it downloads only its own range, not to EOF",
        .requires(NginxServer.self))
    func fetchFromStartAfterRandomFetchesNoReadAhead() async throws {
        let bytes = TestData.random(count: 2 << 20, seed: 41)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            for (location, length) in [(9 * Self.chunk, 2 * Self.chunk), (5 * Self.chunk, Self.chunk), (0, 1 << 20)] {
                try Self.expectBytes(try await Self.fetch(cache, "a.bin", Int64(location), Int64(length)), bytes)
            }
            await cache.waitForDownloads()
            try await Task.sleep(for: .milliseconds(300))
            let log = try await server.accessLog()
            let asked = log.compactMap(\.requestedBytes)
            #expect(asked.count == log.count && asked.allSatisfy { $0.upperBound <= 1 << 20 }, "\(log.map(\.range))")
            #expect(asked.reduce(0) { $0 + $1.count } == 1 << 20, "the first MiB once: \(log.map(\.range))")
        }
    }

    @Test("§10 read-ahead: 200 sequential 64 KiB fetches make at most 10 requests", .requires(NginxServer.self))
    func sequentialReadAhead() async throws {
        let bytes = TestData.random(count: 16 << 20, seed: 5)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            var requests = 0
            for i in 0..<200 {
                let result = try await Self.fetch(cache, "a.bin", Int64(i) * 65_536, 65_536)
                requests += result.originRequests
                try Self.expectBytes(result, bytes)
            }
            try await Task.sleep(for: .milliseconds(300))
            let log = try await server.accessLog()
            #expect(log.count <= 10, "\(log.map(\.range))")
            #expect(log.count >= 3, "the window grew in steps")
            #expect(requests < 200)
        }
    }

    @Test(
        "A10: the file replaced at the origin: strict is versionNoLongerAvailable, non-strict serves the new version whole",
        .requires(NginxServer.self))
    func replacedAtOrigin() async throws {
        let old = TestData.random(count: 4 << 20, seed: 6)
        let new = TestData.random(count: 4 << 20, seed: 7)
        try await Self.withOrigin(["a.bin": old]) { cache, server, root in
            let first = try await Self.fetch(cache, "a.bin", 0, 65_536)
            try Self.expectBytes(first, old)
            let oldVersion = first.item.itemVersion.contentVersionString
            try await ColdPathTests.replace("a.bin", in: root, with: new)
            let strict = await errorCode {
                _ = try await Self.fetch(cache, "a.bin", 2 << 20, 65_536, version: oldVersion, strict: true)
            }
            #expect(strict == .versionNoLongerAvailable)
            let moved = try await Self.fetch(cache, "a.bin", 2 << 20, 65_536, version: oldVersion)
            #expect(moved.item.itemVersion.contentVersionString != oldVersion, "the new version, reported")
            try Self.expectBytes(moved, new)
            let log = try await server.accessLog(atLeast: 3)
            #expect(log.contains { $0.status == 412 && $0.ifMatch == oldVersion })
            let stillOld = try await Self.fetch(cache, "a.bin", 0, 65_536, version: oldVersion, strict: true)
            try Self.expectBytes(stillOld, old)  // what the store holds of the old version still serves it
        }
    }

    @Test(
        "C2: a 404 of the item is noSuchItem and removes it from the store; an item never there is noSuchItem",
        .requires(NginxServer.self))
    func goneAtOrigin() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 8)
        try await Self.withOrigin(["a.bin": bytes]) { cache, _, root in
            try Self.expectBytes(try await Self.fetch(cache, "a.bin", 0, 65_536), bytes)
            try FileManager.default.removeItem(atPath: root + "/a.bin")
            #expect(await errorCode { _ = try await Self.fetch(cache, "a.bin", 512 << 10, 65_536) } == .noSuchItem)
            #expect(
                await errorCode { _ = try await Self.fetch(cache, "a.bin", 0, 65_536) } == .noSuchItem,
                "the item is gone from the store too: what it held no longer serves")
            #expect(await errorCode { _ = try await Self.fetch(cache, "never.bin", 0, 1) } == .noSuchItem)
            let report = try await cache.verify()
            #expect(report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
        }
    }

    @Test(
        "§10: a TLS failure (an HTTPS origin whose certificate no one trusts) is serverUnreachable, never noSuchItem",
        .requires(NginxServer.self))
    func untrustedTLS() async throws {
        try await withTemporaryDirectory { dir in
            try TestData.write(TestData.random(count: 100_000, seed: 17), to: dir + "/a.bin")
            let server = try await NginxServer.start(root: URL(fileURLWithPath: dir), tls: true)
            do {
                #expect(server.baseURL.hasPrefix("https://"))
                let cache = try await makeCache(dir + "/cache")
                _ = try await cache.addDomain("tls", origin: try Origin(server.baseURL))
                let error = await caught {
                    _ = try await cache.fetchPartialContents(
                        for: ItemIdentifier(domain: "tls", "a.bin"), version: nil,
                        minimalRange: ByteRange(location: 0, length: 1), aligningTo: 1)
                }
                #expect(error?.code == .serverUnreachable, "\(String(describing: error))")
                #expect(error?.message.contains("127.0.0.1") == true)
                #expect(try await server.accessLog().isEmpty, "no request got through the failed handshake")
                await server.stop()
            } catch {
                await server.stop()
                throw error
            }
        }
    }

    @Test("§10: a stopped origin is serverUnreachable, and the store verifies clean", .requires(NginxServer.self))
    func stoppedOrigin() async throws {
        let bytes = TestData.random(count: 2 << 20, seed: 9)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            try Self.expectBytes(try await Self.fetch(cache, "a.bin", 0, 65_536), bytes)
            await server.stop()
            #expect(await errorCode { _ = try await Self.fetch(cache, "a.bin", 1 << 20, 65_536) } == .serverUnreachable)
            #expect(await errorCode { _ = try await Self.fetch(cache, "b.bin", 0, 65_536) } == .serverUnreachable)
            let report = try await cache.verify()
            #expect(report.damagedRecords.isEmpty && report.damagedVersions.isEmpty)
            try Self.expectBytes(try await Self.fetch(cache, "a.bin", 0, 65_536), bytes)
        }
    }

    @Test("§4 §10: a whole 20 MiB file comes in requests of at most 8 MiB, byte for byte", .requires(NginxServer.self))
    func wholeFile() async throws {
        var bytes = TestData.random(count: 20 << 20, seed: 10)
        for i in (5 << 20)..<(6 << 20) { bytes[i] = 0 }  // zero chunks stay holes
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let result = try await cache.fetchContents(for: ItemIdentifier(domain: "web", "a.bin"))
            #expect(result.retrievedRange == ByteRange(location: 0, length: 20 << 20))
            #expect(try TestData.read(result.url.path, count: 20 << 20) == bytes)
            #expect(result.flags.contains(.knownSparseRanges))
            #expect(result.downloadedBytes == 20 << 20)
            let log = try await server.accessLog(atLeast: result.originRequests)
            #expect(log.count == result.originRequests && log.count >= 3)
            for entry in log {
                #expect((entry.requestedBytes?.count ?? .max) <= 8 << 20, "\(entry.range ?? "no range")")
            }
            try? FileManager.default.removeItem(at: result.url)
        }
    }

    @Test(
        "§3 §10: a first fetch past the end is answered 416, which tells the size (a HEAD the version); an empty file is one GET",
        .requires(NginxServer.self))
    func pastTheEnd() async throws {
        let bytes = TestData.random(count: 100_000, seed: 13)
        try await Self.withOrigin(["a.bin": bytes, "empty.bin": []]) { cache, server, _ in
            let empty = try await Self.fetch(cache, "empty.bin", 0, 10)
            #expect(empty.retrievedRange == ByteRange(location: 0, length: 0) && empty.item.documentSize == 0)
            #expect(empty.item.itemVersion.contentVersionString.hasPrefix("\""))
            let past = try await Self.fetch(cache, "a.bin", 5 << 20, 10)
            #expect(
                past.retrievedRange == ByteRange(location: 65_536, length: 100_000 - 65_536),
                "§3: clamped to the last chunk")
            #expect(past.item.documentSize == 100_000)
            try Self.expectBytes(past, bytes)
            let log = try await server.accessLog(atLeast: 4)
            // nginx answers a Range of an empty file with 200; past the end of another with 416 and no ETag.
            #expect(log.map { "\($0.method) \($0.status)" } == ["GET 200", "GET 416", "HEAD 200", "GET 206"])
            let tail = try await Self.fetch(cache, "a.bin", 99_990, 100)
            #expect(tail.retrievedRange == ByteRange(location: 65_536, length: 100_000 - 65_536))
            try Self.expectBytes(tail, bytes)
            try? FileManager.default.removeItem(at: empty.url)
        }
    }

    @Test(
        "§10: versions of an item the store lacks is one HEAD; the item is recorded, nothing downloaded",
        .requires(NginxServer.self))
    func versionsByHead() async throws {
        let bytes = TestData.random(count: 300_000, seed: 12)
        try await Self.withOrigin(["a.bin": bytes]) { cache, server, _ in
            let listed = try await cache.versions(of: ItemIdentifier(domain: "web", "a.bin"))
            #expect(listed.versions.count == 1 && listed.versions.first?.size == 300_000)
            #expect(listed.versions.first?.cachedBytes == 0)
            #expect(listed.versions.first?.contentVersion.hasPrefix("\"") == true)
            let log = try await server.accessLog(atLeast: 1)
            #expect(log.map(\.method) == ["HEAD"])
            #expect(
                await errorCode { _ = try await cache.versions(of: ItemIdentifier(domain: "web", "none.bin")) }
                    == .noSuchItem)
            let fetched = try await Self.fetch(cache, "a.bin", 0, 10)
            #expect(fetched.item.itemVersion.contentVersionString == listed.versions.first?.contentVersion)
            try Self.expectBytes(fetched, bytes)
        }
    }

    @Test("§10: read(into:) of a cold item on the caller's thread fills from the origin", .requires(NginxServer.self))
    func synchronousRead() async throws {
        let bytes = TestData.random(count: 1 << 20, seed: 11)
        try await Self.withOrigin(["a.bin": bytes]) { cache, _, _ in
            let result = try await readOnThread(cache, ItemIdentifier(domain: "web", "a.bin"), at: 300_000, count: 5000)
            #expect(result == Array(bytes[300_000..<305_000]))
        }
    }
}

/// `ChunkCache.read(_:version:at:into:)` on a thread of its own, as a FUSE worker calls it; the test awaits
/// it without holding a cooperative thread, which the cold read's download needs.
private func readOnThread(_ cache: ChunkCache, _ item: ItemIdentifier, at offset: Int64, count: Int) async throws
    -> [UInt8]
{
    try await onThreadOfItsOwn {
        var buffer = [UInt8](repeating: 0, count: count)
        let read = try buffer.withUnsafeMutableBytes { try cache.read(item, version: nil, at: offset, into: $0) }
        return Array(buffer[..<read.bytesRead])
    }.get()
}
