import Foundation
import Synchronization
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

    // MARK: - A download whose commit fails

    /// Fails a store's first commit of downloaded chunks as a full store fails one
    /// (``EngineProbes/beforeDownloadCommit``), holding it on the writer until ``release()`` so that a test can
    /// gather the fetches that share the download first; later commits pass.
    final class FailingCommit: Sendable {
        static let full = CacheError(.insufficientQuota, "the store is full (a test failed this commit)")
        private let commits = Mutex(0)
        private let entered = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)

        var probes: EngineProbes {
            EngineProbes(beforeDownloadCommit: { [self] in
                guard
                    commits.withLock({ count in
                        count += 1
                        return count
                    }) == 1
                else { return }
                entered.signal()
                _ = released.wait(timeout: .now() + 30)  // never holds the writer for ever
                throw Self.full
            })
        }

        /// Whether the first commit reached the probe within `seconds`.
        func held(within seconds: Int) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(seconds)
            while entered.wait(timeout: .now()) == .timedOut {
                guard ContinuousClock.now < deadline else { return false }
                try await Task.sleep(for: .milliseconds(5))
            }
            return true
        }

        /// Lets the held commit fail.
        func release() { released.signal() }
    }

    /// `count` bytes of `item` from `offset`, read into a buffer (past ``FetchThresholds/inlineBytes`` such a
    /// read waits for the store, never served from its download).
    static func read(_ cache: ChunkCache, _ item: ItemIdentifier, _ offset: Int, _ count: Int) async throws -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        let read = try await cache.read(item, version: nil, at: Int64(offset), into: buffer)
        return Array(buffer[0..<read.bytesRead])
    }

    /// The bytes of `count` from `offset` a fetch to a hand-off file returned (the file is removed).
    static func fetchedBytes(_ cache: ChunkCache, _ name: String, _ offset: Int, _ count: Int) async throws -> [UInt8] {
        let result = try await ColdPathTests.fetch(cache, name, Int64(offset), Int64(count))
        defer { try? FileManager.default.removeItem(at: result.url) }
        return try readRange(result.url.path, ByteRange(location: Int64(offset), length: Int64(count)))
    }

    @Test(
        "§10: when a download's commit fails, every fetch that shares the download ends, with the download's failure or served by a download of its own, and a later fetch reads the right bytes",
        .requires(NginxServer.self), .timeLimit(.minutes(1)))
    func aFailedCommitEndsEveryFetchOfItsDownload() async throws {
        let bytes = TestData.random(count: 8 << 20, seed: 2810)
        let commit = FailingCommit()
        defer { commit.release() }
        try await ColdPathTests.withOrigin(["big.bin": bytes], readAhead: 0, probes: commit.probes) { cache, _, _ in
            let item = ItemIdentifier(domain: "web", "big.bin")
            _ = try await cache.versions(of: item)  // known (one HEAD), none of its bytes: the reads fill
            let owner = (offset: 0, count: 6 << 20)
            let joined = (offset: 1 << 20, count: 5 << 20)
            // The owner's download claims [0, 6 MiB) and its first commit is held; three fetches join it past
            // that commit's chunks. Then the commit fails, and the download's next batch must stay where its
            // abandon fails their flights: a batch taken out of the sink before the wait for the failed commit
            // is in no list, and the fetches waiting for its chunks (the joined ones first) wait for ever.
            let ended = try await WireSpeedTests.within(30) {
                await withTaskGroup(of: (String, Result<[UInt8], any Error>).self) { group in
                    group.addTask {
                        ("owner", await Result { try await Self.read(cache, item, owner.offset, owner.count) })
                    }
                    guard (try? await commit.held(within: 20)) == true else {
                        return [String: Result<[UInt8], any Error>]()
                    }
                    for name in ["read 1", "read 2"] {
                        group.addTask {
                            (name, await Result { try await Self.read(cache, item, joined.offset, joined.count) })
                        }
                    }
                    group.addTask {
                        (
                            "hand-off",
                            await Result { try await Self.fetchedBytes(cache, "big.bin", joined.offset, joined.count) }
                        )
                    }
                    // Time to reach their waits; one that comes later claims the chunks again once the download
                    // failed, and downloads them itself.
                    try? await Task.sleep(for: .milliseconds(300))
                    commit.release()
                    var outcomes: [String: Result<[UInt8], any Error>] = [:]
                    for await (name, outcome) in group { outcomes[name] = outcome }
                    return outcomes
                }
            }
            let outcomes = try #require(ended, "a fetch that shared the failed download never ended")
            #expect(outcomes.count == 4, "the download's first commit was never held: \(outcomes.keys.sorted())")
            // The owner waits for its first chunk, whose commit failed: it ends with that failure.
            #expect(Self.failedAsTheCommit(outcomes["owner"]), "owner: \(String(describing: outcomes["owner"]))")
            let expected = Array(bytes[joined.offset..<(joined.offset + joined.count)])
            for name in ["read 1", "read 2", "hand-off"] {
                let outcome = outcomes[name]
                let served = (try? outcome?.get()).map { $0 == expected } ?? false
                #expect(
                    served || Self.failedAsTheCommit(outcome),
                    "\(name): neither the download's failure nor the right bytes: \(String(describing: outcome))")
            }
            // At least one of them joined the download before its commit failed (else the test proved nothing).
            #expect(
                ["read 1", "read 2", "hand-off"].contains { Self.failedAsTheCommit(outcomes[$0]) },
                "no fetch joined the download: \(outcomes)")
            await cache.waitForDownloads()
            // Nothing of the failed download is still claimed: the whole range is downloaded again, byte-exact.
            let later = try await WireSpeedTests.within(30) { try await Self.read(cache, item, 0, 8 << 20) }
            #expect(later == bytes, "a later read of the range never ended, or read other bytes")
            await cache.waitForDownloads()
            try await Self.expectClean(cache)
        }
    }

    /// Whether `outcome` is the failure of ``FailingCommit``'s commit, as the fetch's caller sees it.
    static func failedAsTheCommit(_ outcome: Result<[UInt8], any Error>?) -> Bool {
        guard case .failure(let error as CacheError) = outcome else { return false }
        return error.code == FailingCommit.full.code && error.message == FailingCommit.full.message
    }
}
