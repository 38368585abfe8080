import Foundation
import TestSupport
import Testing

@testable import ChunkCache

/// The cold path against an origin that misbehaves on purpose (CONTRACT §10 "Errors", A10, cancellation).
@Suite(.serialized) struct ColdPathFaultTests {
    static let bytes = TestData.random(count: 2 << 20, seed: 21)

    /// A store and a fault origin serving `file` as `a.bin`; `domain(behaviour)` adds a domain reading through
    /// it.
    static func withFaultOrigin(
        serving file: [UInt8] = bytes,
        _ body: (ChunkCache, FaultOrigin, (String) async throws -> String) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            let root = dir + "/origin"
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try TestData.write(file, to: root + "/a.bin")
            let origin = try await FaultOrigin.start(root: URL(fileURLWithPath: root))
            do {
                let cache = try await makeCache(dir)
                cache.engine.origins.policy.withLock {
                    $0.backoff = .milliseconds(20)
                    $0.idleTimeout = .seconds(1)
                    $0.connectTimeout = .seconds(1)
                }
                try await body(cache, origin) { behaviour in
                    let name = "f-" + behaviour
                    _ = try await cache.addDomain(name, origin: try Origin(origin.baseURL(behaviour: behaviour)))
                    return name
                }
                await origin.stop()
            } catch {
                await origin.stop()
                throw error
            }
        }
    }

    static func fetch(
        _ cache: ChunkCache, _ domain: String, _ location: Int64 = 65_536, _ length: Int64 = 65_536,
        version: String? = nil, strict: Bool = false
    ) async throws -> FetchResult {
        try await cache.fetchPartialContents(
            for: ItemIdentifier(domain: domain, "a.bin"), version: version.map { ItemVersion($0) },
            minimalRange: ByteRange(location: location, length: length), aligningTo: 4096,
            options: strict ? .strictVersioning : [])
    }

    static func expectClean(_ cache: ChunkCache, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let report = try await cache.verify()
        #expect(report.damagedRecords.isEmpty && report.damagedVersions.isEmpty, sourceLocation: sourceLocation)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty,
            "no hand-off file left behind", sourceLocation: sourceLocation)
    }

    @Test(
        "§10 C3: 401 is notAuthenticated, 403 noPermission, 404 and 410 noSuchItem; none retried",
        .requires(FaultOrigin.self))
    func statusCodes() async throws {
        try await Self.withFaultOrigin { cache, origin, domain in
            for (status, code) in [
                (401, CacheError.Code.notAuthenticated), (403, .noPermission), (404, .noSuchItem), (410, .noSuchItem),
            ] {
                let name = try await domain("status-\(status)")
                try await origin.clear()
                #expect(await errorCode { _ = try await Self.fetch(cache, name) } == code, "\(status)")
                #expect(try await origin.requests().count == 1, "\(status) is final: no retry")
            }
            try await Self.expectClean(cache)
        }
    }

    @Test("§10 C2: 5xx is retried 3 times, then transient — never noSuchItem", .requires(FaultOrigin.self))
    func serverErrors() async throws {
        try await Self.withFaultOrigin { cache, origin, domain in
            for status in [500, 503] {
                let name = try await domain("status-\(status)")
                try await origin.clear()
                #expect(await errorCode { _ = try await Self.fetch(cache, name) } == .transient)
                #expect(try await origin.requests().count == 3)
            }
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§10: 429 with Retry-After, 503, a reset and a short body are retried and the fetch succeeds byte for byte",
        .requires(FaultOrigin.self), arguments: ["retry-429-1", "fail-5xx-2", "reset-1", "short-1"])
    func retried(behaviour: String) async throws {
        try await Self.withFaultOrigin { cache, origin, domain in
            let name = try await domain(behaviour)
            let result = try await Self.fetch(cache, name, 0, 1 << 20)
            #expect(try readRange(result.url.path, result.retrievedRange) == Array(Self.bytes[0..<(1 << 20)]))
            #expect(try await origin.requests().count >= 2)
            try? FileManager.default.removeItem(at: result.url)
            try await Self.expectClean(cache)
        }
    }

    @Test("A10: a file whose bytes and ETag change between requests never mixes versions", .requires(FaultOrigin.self))
    func changingFile() async throws {
        try await Self.withFaultOrigin { cache, _, domain in
            let name = try await domain("changing")
            let first = try await Self.fetch(cache, name, 0, 65_536)  // version 0
            let version = first.item.itemVersion.contentVersionString
            #expect(try readRange(first.url.path, first.retrievedRange) == Array(Self.bytes[0..<65_536]))
            // The next GET serves version 1: strict refuses, non-strict moves to version 1 whole.
            #expect(
                await errorCode {
                    _ = try await Self.fetch(cache, name, 1 << 20, 65_536, version: version, strict: true)
                } == .versionNoLongerAvailable)
            let moved = try await Self.fetch(cache, name, 0, 2 << 20, version: version)
            let served = try readRange(moved.url.path, moved.retrievedRange)
            let flipped = Self.bytes.map { $0 ^ 0xFF }
            #expect(served == Self.bytes || served == flipped, "one version's bytes, never a mix")
            #expect(moved.item.itemVersion.contentVersionString != version || served == Self.bytes)
            try? FileManager.default.removeItem(at: first.url)
            try? FileManager.default.removeItem(at: moved.url)
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§10: an origin that accepts but never answers is serverUnreachable after the idle timeout",
        .requires(FaultOrigin.self))
    func stalled() async throws {
        try await Self.withFaultOrigin { cache, _, domain in
            let name = try await domain("stall")
            let start = ContinuousClock.now
            #expect(await errorCode { _ = try await Self.fetch(cache, name) } == .serverUnreachable)
            #expect(ContinuousClock.now - start < .seconds(10))
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "A16 §10: cancelling a fetch whose download stalls returns within 100 ms and leaves nothing half-written",
        .requires(FaultOrigin.self))
    func cancelStalledDownload() async throws {
        try await Self.withFaultOrigin { cache, _, domain in
            cache.engine.origins.policy.withLock { $0.idleTimeout = .seconds(30) }
            let name = try await domain("stall-body")
            let fetch = Task { try await Self.fetch(cache, name, 0, 1 << 20) }
            try await Task.sleep(for: .milliseconds(500))
            let cancelled = ContinuousClock.now
            fetch.cancel()
            let code = await errorCode { _ = try await fetch.value }
            #expect(ContinuousClock.now - cancelled < .milliseconds(100))
            #expect(code == .userCancelled)
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§10: an origin stopped mid-transfer is serverUnreachable, and the store verifies clean",
        .requires(FaultOrigin.self))
    func stoppedMidTransfer() async throws {
        try await Self.withFaultOrigin { cache, origin, domain in
            let name = try await domain("stall-body")
            let fetch = Task { try await Self.fetch(cache, name, 0, 1 << 20) }
            try await Task.sleep(for: .milliseconds(300))
            await origin.stop()
            #expect(await errorCode { _ = try await fetch.value } == .serverUnreachable)
            await cache.waitForDownloads()
            try await Self.expectClean(cache)
        }
    }

    @Test(
        "§10: an origin without a strong ETag versions items by Last-Modified and size", .requires(FaultOrigin.self),
        arguments: ["no-etag", "weak-etag"])
    func fallbackVersion(behaviour: String) async throws {
        try await Self.withFaultOrigin { cache, _, domain in
            let name = try await domain(behaviour)
            let result = try await Self.fetch(cache, name, 0, 65_536)
            #expect(result.item.itemVersion.contentVersionString.hasSuffix("; \(2 << 20) bytes"))
            let more = try await Self.fetch(cache, name, 1 << 20, 65_536)
            #expect(
                try readRange(more.url.path, more.retrievedRange) == Array(Self.bytes[(1 << 20)..<((1 << 20) + 65_536)])
            )
        }
    }

    @Test(
        "§10 --pipeline-depth: 8 concurrent cold fetches of a depth-2 domain never have more than 2 requests in flight",
        .requires(FaultOrigin.self))
    func pipelineDepth() async throws {
        try await Self.withFaultOrigin { cache, origin, _ in
            _ = try await cache.addDomain(
                "deep", origin: try Origin(origin.baseURL(behaviour: "slow")), pipelineDepth: 2)
            _ = try await Self.fetch(cache, "deep", 0, 1)
            try await origin.clear()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<8 {
                    group.addTask {
                        let offset = Int64(2 + 3 * i) * 65_536
                        let result = try await Self.fetch(cache, "deep", offset, 65_536)
                        #expect(
                            try readRange(result.url.path, result.retrievedRange)
                                == Array(Self.bytes[Int(offset)..<Int(offset + 65_536)]))
                        try? FileManager.default.removeItem(at: result.url)
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await origin.requests().count == 8)
            #expect(try await origin.mostInFlight() == 2)
        }
    }

    @Test("§10: a server that ignores Range still serves exactly the range asked for", .requires(FaultOrigin.self))
    func ignoredRange() async throws {
        try await Self.withFaultOrigin { cache, _, domain in
            let name = try await domain("ignore-range")
            let result = try await Self.fetch(cache, name, 1 << 20, 65_536)
            #expect(
                try readRange(result.url.path, result.retrievedRange)
                    == Array(Self.bytes[(1 << 20)..<((1 << 20) + 65_536)]))
            #expect(result.downloadedBytes == 65_536, "only the bytes of the range are kept")
        }
    }

    @Test(
        "§10 S3: a listing that hands back the continuation token it was sent fails the sync after two pages instead of listing forever (found while writing the listing's fuzz target)",
        .requires(FaultOrigin.self))
    func s3ListingThatLoops() async throws {
        try await Self.withFaultOrigin { cache, origin, _ in
            _ = try await cache.addDomain(
                "loop",
                origin: try Origin(
                    "s3://s3-same-token/", endpoint: "http://127.0.0.1:\(origin.port)", region: "us-east-1"))
            let failure = await errorOf { _ = try await cache.syncDomain("loop") }
            // As every listing that cannot be read: invalidArgument (the origin is misconfigured), nothing applied.
            #expect(failure?.code == .invalidArgument, "\(failure?.message ?? "no error")")
            #expect(failure?.message.contains("continuation token") == true, "\(failure?.message ?? "no error")")
            let listings = try await origin.requests().filter { $0.path.hasPrefix("/s3-same-token") }
            #expect(listings.count == 2, "the first page, then the one that repeats its token")
        }
    }
}
