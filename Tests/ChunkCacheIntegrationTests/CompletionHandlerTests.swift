import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// The completion-handler layer follows the async API: flags, requested versions, C1 bridging.
@Suite struct CompletionHandlerTests {
    /// What one completion received.
    struct Completion: Sendable {
        var url: URL?
        var item: Item?
        var flags: MaterializationFlags
        var error: NSError?
    }

    /// Calls `start` with a handler and waits for its one completion.
    static func completion(_ start: (@escaping @Sendable (Completion) -> Void) -> Void) async -> Completion? {
        let (stream, continuation) = AsyncStream<Completion>.makeStream()
        start {
            continuation.yield($0)
            continuation.finish()
        }
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }

    @Test("A8 §4: fetchContents with flags passes knownSparseRanges through as the async API returns it")
    func fetchContentsPassesFlags() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "sparse")
            let bytes = TestData.random(count: 65536, seed: 1) + [UInt8](repeating: 0, count: 2 * 65536)
            try await put(cache, bytes, as: id, in: dir)
            #expect(try await cache.fetchContents(for: id).flags == .knownSparseRanges)
            let done = try #require(
                await Self.completion { finish in
                    cache.fetchContents(for: id, version: nil, request: FetchRequest(), options: []) {
                        url, item, flags, error in
                        finish(Completion(url: url, item: item, flags: flags, error: error as NSError?))
                    }
                })
            #expect(done.error == nil)
            #expect(done.flags == .knownSparseRanges)
            #expect(
                try readRange(try #require(done.url).path, ByteRange(location: 0, length: Int64(bytes.count))) == bytes)
        }
    }

    @Test("B6: the seed-shaped fetchContents returns the requested version or an error, never another version")
    func fetchContentsHonoursTheVersion() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let v1 = TestData.text(count: 100_000, seed: 1)
            try await put(cache, v1, as: id, version: "v1", in: dir)
            try await put(cache, TestData.text(count: 120_000, seed: 2), as: id, version: "v2", in: dir)
            let old = try #require(
                await Self.completion { finish in
                    cache.fetchContents(for: id, version: ItemVersion("v1"), request: FetchRequest()) {
                        url, item, error in
                        finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                    }
                })
            #expect(old.item?.itemVersion.contentVersionString == "v1")
            #expect(try readRange(try #require(old.url).path, ByteRange(location: 0, length: Int64(v1.count))) == v1)
            let gone = try #require(
                await Self.completion { finish in
                    cache.fetchContents(for: id, version: ItemVersion("gone"), request: FetchRequest()) {
                        url, item, error in
                        finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                    }
                })
            #expect(gone.url == nil && gone.item == nil)
            #expect(gone.error?.domain == "NSFileProviderErrorDomain" && gone.error?.code == -2009, "C1 bridging kept")
            let newest = try #require(
                await Self.completion { finish in
                    cache.fetchContents(for: id, version: nil, request: FetchRequest()) { url, item, error in
                        finish(Completion(url: url, item: item, flags: [], error: error as NSError?))
                    }
                })
            #expect(newest.item?.itemVersion.contentVersionString == "v2", "nil means the newest")
        }
    }

    @Test("C1: an error thrown by the async API bridges with `as NSError` to its File Provider domain and code")
    func asyncErrorsBridge() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            do {
                _ = try await cache.fetchContents(for: ItemIdentifier(domain: "nope", "a"))
                Issue.record("an unknown domain must fail")
            } catch {
                let bridged = error as NSError
                #expect(bridged.domain == "NSFileProviderErrorDomain" && bridged.code == -1005)
                #expect(bridged.localizedDescription.contains("\"nope\""))
            }
        }
    }

    // MARK: - import

    /// What an import's completion handler and `importDidFinish` saw.
    final class ImportWitness: Sendable {
        let errors = Mutex<[NSError?]>([])
        /// Whether `importDidFinish` had fired when the handler ran.
        let finishedAtHandler = Mutex<Bool?>(nil)
        let finished = Atomic<Bool>(false)
        let finishes: AsyncStream<String>
        private let continuation: AsyncStream<String>.Continuation

        init(_ cache: ChunkCache) {
            (finishes, continuation) = AsyncStream<String>.makeStream()
            cache.observeImportsFinished { [self] domain in
                finished.store(true, ordering: .sequentiallyConsistent)
                continuation.yield(domain)
            }
        }

        func handler(_ error: (any Error)?) {
            finishedAtHandler.withLock { $0 = finished.load(ordering: .sequentiallyConsistent) }
            errors.withLock { $0.append(error as NSError?) }
        }

        /// The next `importDidFinish`, or nil after 30 s.
        func nextFinish() async -> String? {
            await withTaskGroup(of: String?.self) { group in
                group.addTask { [finishes] in
                    var it = finishes.makeAsyncIterator()
                    return await it.next()
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(30))
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
    }

    /// A tree of `count` random files of 256 KiB: `fNN`.
    static func importTree(_ root: String, count: Int) throws -> [String: [UInt8]] {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        var files: [String: [UInt8]] = [:]
        for i in 0..<count {
            let bytes = TestData.random(count: 256 << 10, seed: UInt64(100 + i))
            files[String(format: "f%02d", i)] = bytes
            try TestData.write(bytes, to: root + String(format: "/f%02d", i))
        }
        return files
    }

    /// Every file of `files` is in domain `domain` with its bytes.
    static func expectImported(_ files: [String: [UInt8]], in domain: String, _ cache: ChunkCache) async throws {
        for (name, bytes) in files {
            let fetched = try await cache.fetchContents(for: ItemIdentifier(domain: domain, name))
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == bytes, "\(name)")
            unlink(fetched.url.path)
        }
    }

    @Test(
        "§8 G4: import's completion handler runs once the domain exists, before importDidFinish; the import then finishes with every file"
    )
    func importCompletesWhenTheDomainExists() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            let files = try Self.importTree(tree, count: 8)
            let cache = try await makeCache(dir)
            let witness = ImportWitness(cache)
            let (called, calledContinuation) = AsyncStream<Void>.makeStream()
            cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)) { error in
                witness.handler(error)
                calledContinuation.yield()
            }
            var calls = called.makeAsyncIterator()
            _ = await calls.next()
            #expect(witness.errors.withLock { $0 } == [nil])
            #expect(
                witness.finishedAtHandler.withLock { $0 } == false,
                "the handler ran before importDidFinish, as the seed's does")
            #expect(try await cache.domains().contains { $0.name == "d" }, "the domain exists when the handler runs")
            #expect(await witness.nextFinish() == "d", "importDidFinish follows")
            let info = try #require(try await cache.domains().first { $0.name == "d" })
            #expect(info.importFinished && info.items == files.count)
            try await Self.expectImported(files, in: "d", cache)
            #expect(!FileManager.default.fileExists(atPath: tree), "the directory was taken into the store")
            #expect(witness.errors.withLock { $0 }.count == 1, "the handler ran once")
            // An import that cannot start reports why to its handler.
            let again = dir + "/again"
            _ = try Self.importTree(again, count: 1)
            let refused = await withCheckedContinuation { (continuation: CheckedContinuation<NSError?, Never>) in
                cache.import("d", fromDirectoryAt: URL(fileURLWithPath: again)) {
                    continuation.resume(returning: $0 as NSError?)
                }
            }
            #expect(
                refused?.domain == NSCocoaErrorDomain && refused?.code == 516,
                "fileExists: \(String(describing: refused))")
            #expect(FileManager.default.fileExists(atPath: again + "/f00"), "its directory untouched")
        }
    }

    @Test(
        "§8 A17: a Progress.cancel() once the imported domain exists reports no userCancelled and stops nothing: the import finishes, the domain intact"
    )
    func importCancelAfterTheDomainExists() async throws {
        try await withTemporaryDirectory { dir in
            let tree = dir + "/tree"
            let files = try Self.importTree(tree, count: 40)
            let cache = try await makeCache(dir)
            let witness = ImportWitness(cache)
            let progress = cache.import("d", fromDirectoryAt: URL(fileURLWithPath: tree)) { error in
                witness.handler(error)
            }
            // Cancel as soon as the domain is there (the handler has run, or the import is under way).
            let deadline = ContinuousClock.now + .seconds(30)
            while witness.errors.withLock({ $0.isEmpty }), !(try await cache.domains().contains { $0.name == "d" }),
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(1))
            }
            progress.cancel()
            #expect(await witness.nextFinish() == "d", "the import went on to importDidFinish")
            #expect(
                witness.errors.withLock { $0 } == [nil],
                "called once, with no error: no userCancelled for a domain that exists")
            let info = try #require(try await cache.domains().first { $0.name == "d" })
            #expect(info.importFinished && info.items == files.count)
            try await Self.expectImported(files, in: "d", cache)
        }
    }

    // MARK: - Progress in bytes

    @Test(
        "A16 §3: a fetch's Progress counts bytes: it ends with completed == total == the retrieved range's length"
    )
    func progressCountsBytesWarm() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "doc")
            let bytes = TestData.random(count: 1_000_000, seed: 4)
            try await put(cache, bytes, as: id, in: dir)
            let (done, continuation) = AsyncStream<ByteRange>.makeStream()
            let progress = cache.fetchPartialContents(
                for: id, version: nil, request: FetchRequest(),
                minimalRange: ByteRange(location: 70_000, length: 100_000),
                aligningTo: 4096, options: []
            ) { url, _, range, _, _ in
                if let url { unlink(url.path) }
                continuation.yield(range)
            }
            var it = done.makeAsyncIterator()
            let range = try #require(await it.next())
            #expect(range == ByteRange(location: 65_536, length: 131_072))
            #expect(progress.totalUnitCount == 131_072 && progress.completedUnitCount == 131_072)
        }
    }

    /// What a completion-handler fetch's `Progress` showed: its total when it was returned, every
    /// (total, completed) pair sampled while it ran, and both at the end.
    struct ProgressTrace {
        var returnedTotal: Int64
        var samples: [(total: Int64, completed: Int64)]
        var final: (total: Int64, completed: Int64)
        var url: URL?
        var error: (any Error)?

        /// Every sample had `total` and a completed count at most it, never moving backwards.
        func isDeterminate(at total: Int64) -> Bool {
            let completed = samples.map(\.completed)
            return samples.allSatisfy { $0.total == total && $0.completed <= total }
                && zip(completed, completed.dropFirst()).allSatisfy { $0 <= $1 }
        }
    }

    /// Starts a fetch with `start` (which returns its `Progress` and passes the file or error on), samples the
    /// progress every 200 µs until the fetch completes, and removes the file.
    static func trace(
        _ start: (@escaping @Sendable (URL?, (any Error)?) -> Void) -> Progress,
        check: (URL) throws -> Void = { _ in }
    ) async throws -> ProgressTrace {
        let (done, continuation) = AsyncStream<(URL?, (any Error)?)>.makeStream()
        let progress = start { continuation.yield(($0, $1)) }
        let returnedTotal = progress.totalUnitCount
        let samples = Mutex<[(total: Int64, completed: Int64)]>([])
        let sampler = Task.detached {
            while !Task.isCancelled {
                let sample = (progress.totalUnitCount, progress.completedUnitCount)
                samples.withLock { $0.append(sample) }
                try? await Task.sleep(for: .microseconds(200))
            }
        }
        var it = done.makeAsyncIterator()
        let (url, error) = try #require(await it.next())
        sampler.cancel()
        _ = await sampler.value
        if let url {
            try check(url)
            unlink(url.path)
        }
        return ProgressTrace(
            returnedTotal: returnedTotal, samples: samples.withLock { $0 },
            final: (progress.totalUnitCount, progress.completedUnitCount), url: url, error: error)
    }

    /// A partial completion-handler fetch of `range` of `item` in domain "web", traced (``trace(_:check:)``).
    static func tracePartial(
        _ cache: ChunkCache, _ item: String, _ range: ByteRange, request: FetchRequest = FetchRequest()
    ) async throws -> ProgressTrace {
        try await trace { done in
            cache.fetchPartialContents(
                for: ItemIdentifier(domain: "web", item), version: nil, request: request, minimalRange: range,
                aligningTo: 4096, options: []
            ) { url, _, _, _, error in done(url, error) }
        }
    }

    @Test(
        "A16 §3 §4: a warm fetch's Progress is determinate when it is returned: its total is the retrieved range's length"
    )
    func progressDeterminateWarm() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let bytes = TestData.random(count: 4 << 20, seed: 8)
            try await put(cache, bytes, as: ItemIdentifier(domain: "web", "doc"), in: dir)
            let partial = try await Self.tracePartial(cache, "doc", ByteRange(location: 70_000, length: 100_000))
            #expect(partial.error == nil)
            #expect(partial.returnedTotal == 131_072, "the range 64 KiB…192 KiB, known before the fetch ran")
            #expect(partial.isDeterminate(at: 131_072) && partial.final == (131_072, 131_072))
            let whole = try await Self.trace { done in
                cache.fetchContents(for: ItemIdentifier(domain: "web", "doc"), version: nil, request: FetchRequest()) {
                    url, _, error in done(url, error)
                }
            }
            #expect(whole.error == nil)
            #expect(whole.returnedTotal == 4 << 20 && whole.isDeterminate(at: 4 << 20))
            #expect(whole.final == (4 << 20, 4 << 20))
        }
    }

    @Test(
        "A16 §10: a cold fetch's Progress is determinate when it is returned and counts only its range's bytes, not the read-ahead downloaded with them",
        .requires(NginxServer.self))
    func progressDeterminateColdWithReadAhead() async throws {
        let bytes = TestData.random(count: 4 << 20, seed: 9)
        try await ColdPathTests.withOrigin(["big.bin": bytes]) { cache, _, _ in
            // An item the store does not know yet: the range as asked, rounded to chunks.
            let first = try await Self.tracePartial(cache, "big.bin", ByteRange(location: 0, length: 65_536))
            #expect(first.error == nil)
            #expect(first.returnedTotal == 65_536 && first.isDeterminate(at: 65_536))
            #expect(first.final == (65_536, 65_536))
            // The next range in order: its request brings the read-ahead's megabyte after it.
            let counters = DownloadProgress()
            let next = try await Self.tracePartial(
                cache, "big.bin", ByteRange(location: 65_536, length: 131_072),
                request: FetchRequest(progress: counters))
            #expect(next.error == nil)
            #expect(next.returnedTotal == 131_072 && next.isDeterminate(at: 131_072))
            #expect(next.final == (131_072, 131_072))
            await cache.waitForDownloads()
            #expect(counters.downloadedBytes > 131_072, "read-ahead came in the fetch's own request")
        }
    }

    @Test(
        "§10: a cold fetch's Progress moves monotonically with the download and ends at completed == total == the file's bytes; the request's counters still count",
        .requires(NginxServer.self))
    func progressCountsBytesCold() async throws {
        let bytes = TestData.random(count: 8 << 20, seed: 5)
        try await ColdPathTests.withOrigin(["big.bin": bytes], readAhead: 0) { cache, _, _ in
            let counters = DownloadProgress()
            let trace = try await Self.trace(
                { done in
                    cache.fetchContents(
                        for: ItemIdentifier(domain: "web", "big.bin"), version: nil,
                        request: FetchRequest(progress: counters), options: []
                    ) { url, _, _, error in done(url, error) }
                },
                check: { url in
                    let read = try readRange(url.path, ByteRange(location: 0, length: Int64(bytes.count)))
                    #expect(read == bytes)
                })
            #expect(trace.error == nil)
            #expect(trace.final == (Int64(bytes.count), Int64(bytes.count)))
            let seen = trace.samples.map(\.completed)
            #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 <= $1 }, "never backwards")
            #expect(seen.allSatisfy { $0 <= Int64(bytes.count) })
            #expect(
                trace.samples.allSatisfy { $0.completed == 0 || $0.total == Int64(bytes.count) },
                "nothing counts before the origin's first answer tells the size")
            #expect(
                counters.downloadedBytes == Int64(bytes.count) && counters.originRequests >= 1,
                "the caller's counters count too")
        }
    }
}
