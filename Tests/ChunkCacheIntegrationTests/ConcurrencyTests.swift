import FileIO
import Foundation
import SeededRandom
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

@Suite struct ConcurrencyTests {
    @Test("A18: 64 fetches in parallel tasks while a writer puts new versions; every byte checked")
    func parallelFetchesDuringWrites() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir, chunkSize: 16384)
            let cold = TestData.mixed(count: 3 << 20, chunkSize: 16384, seed: 1)
            let versions = (0..<8).map { TestData.mixed(count: 1 << 20, chunkSize: 16384, seed: 100 + UInt64($0)) }
            try await put(cache, cold, as: ItemIdentifier(domain: "d", "cold"), in: dir)
            try await put(cache, versions[0], as: ItemIdentifier(domain: "d", "hot"), version: "h0", in: dir)
            let byVersion = Dictionary(
                uniqueKeysWithValues: versions.enumerated().map { ("h\($0.offset)", $0.element) })
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for i in 1..<versions.count {
                        try await put(
                            cache, versions[i], as: ItemIdentifier(domain: "d", "hot"), version: "h\(i)", in: dir)
                    }
                }
                for task in 0..<64 {
                    group.addTask {
                        var rng = SplitMix64(seed: UInt64(task))
                        for _ in 0..<8 {
                            let hot = rng.next() % 2 == 0
                            let id = ItemIdentifier(domain: "d", hot ? "hot" : "cold")
                            let size = UInt64(hot ? 1 << 20 : 3 << 20)
                            let minimal = ByteRange(
                                location: Int64(rng.next() % size), length: Int64(rng.next() % 300_000))
                            let result = try await cache.fetchPartialContents(
                                for: id, version: nil, minimalRange: minimal, aligningTo: 4096)
                            let original =
                                hot ? try #require(byVersion[result.item.itemVersion.contentVersionString]) : cold
                            let r = result.retrievedRange
                            #expect(try readRange(result.url.path, r) == Array(original[Int(r.location)..<Int(r.end)]))
                            unlink(result.url.path)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let (_, listed) = try await cache.versions(of: ItemIdentifier(domain: "d", "hot"))
            #expect(listed.count == versions.count)
        }
    }

    @Test("A16 A17: cancelling the Progress completes once with userCancelled (Cocoa 3072) and leaves no file")
    func cancelledFetch() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "big")
            try await put(cache, TestData.text(count: 48 << 20, seed: 1), as: id, in: dir)
            let calls = Mutex<[(URL?, (any Error)?)]>([])
            let progress = cache.fetchPartialContents(
                for: id, version: nil, request: FetchRequest(), minimalRange: ByteRange(location: 0, length: 48 << 20),
                aligningTo: 4096, options: []
            ) { url, item, _, flags, error in
                calls.withLock { $0.append((url, error)) }
                if error != nil {
                    #expect(item == nil && flags.isEmpty, "A16: a failed fetch hands back no item and no flags")
                }
            }
            progress.cancel()
            try await Task.sleep(for: .seconds(2))
            let recorded = calls.withLock { $0 }
            #expect(recorded.count == 1)
            let error = try #require(recorded.first?.1) as NSError
            #expect(error.domain == "NSCocoaErrorDomain")
            #expect(error.code == 3072)
            #expect(recorded.first?.0 == nil)
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
        }
    }

    /// CONTRACT §3: Swift `Task` cancellation stops a put in flight with `userCancelled` and leaves the store as
    /// it was (a fetch in flight: `FetchCancellationTests`). No sleeps: the writer's hook cancels the put's task
    /// once its first batch is committed, so the put is certainly mid-way.
    @Test("§3 A16: cancelling the Task of a put in flight reports userCancelled and leaves the store as it was")
    func cancelledPut() async throws {
        try await withTemporaryDirectory { dir in
            let afterEach = ArmedProbe()
            let cache = try await makeCache(
                dir, probes: EngineProbes(afterEachTransaction: afterEach.runWithoutThrowing))
            try await put(
                cache, TestData.text(count: 1 << 20, seed: 3), as: ItemIdentifier(domain: "d", "small"), in: dir)
            let before = try await cache.statistics()
            let input = dir + "/other"
            try TestData.write(TestData.text(count: 48 << 20, seed: 4), to: input)
            let handle = Mutex<Task<ChunkCache.PutResult, any Error>?>(nil)
            let transactions = Atomic(0)
            let (published, publish) = AsyncStream<Void>.makeStream()
            // The first transaction begins the pending manifest, the second commits the first batch.
            afterEach.arm {
                if transactions.wrappingAdd(1, ordering: .relaxed).newValue == 2 {
                    handle.withLock { $0 }?.cancel()
                }
            }
            defer { afterEach.arm(nil) }
            let task = Task {
                for await _ in published { break }  // the hook needs the handle
                return try await cache.put(fileAt: input, as: ItemIdentifier(domain: "d", "other"))
            }
            handle.withLock { $0 = task }
            publish.yield()
            #expect(await errorCode { _ = try await task.value } == .userCancelled)
            #expect(transactions.load(ordering: .relaxed) >= 2, "the put was cancelled mid-way")
            var after = try await cache.statistics()
            after.fileBytes = before.fileBytes
            #expect(after == before, "a cancelled put is rolled back")
        }
    }

    @Test("C1: an engine-only error reaches the completion handler as Cocoa 4101 wrapping it")
    func completionErrorsUseSystemDomains() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            try await put(cache, TestData.text(count: 10_000, seed: 5), as: id, in: dir)
            let (stream, continuation) = AsyncStream<NSError?>.makeStream()
            _ = cache.fetchPartialContents(
                for: id, version: nil, request: FetchRequest(), minimalRange: ByteRange(location: 0, length: 10),
                aligningTo: 3, options: []
            ) { _, _, _, _, error in
                continuation.yield(error as NSError?)
                continuation.finish()
            }
            var received: NSError?? = nil
            for await error in stream { received = error }
            let error = try #require(received ?? nil, "a bad alignment must fail")
            #expect(error.domain == "NSCocoaErrorDomain" && error.code == 4101)
            let underlying = try #require(error.userInfo[NSUnderlyingErrorKey] as? NSError)
            #expect(underlying.domain == "ChunkCacheErrorDomain" && underlying.code == 1, "invalidArgument underneath")
        }
    }

    @Test("A17: the completion runs exactly once on success and on error")
    func completionOnce() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            let id = ItemIdentifier(domain: "d", "a")
            let bytes = TestData.text(count: 100_000, seed: 2)
            try await put(cache, bytes, as: id, in: dir)
            let outcomes = Mutex<[String]>([])
            let done = AsyncStream<Void>.makeStream()
            cache.fetchPartialContents(
                for: id, version: nil, request: FetchRequest(), minimalRange: ByteRange(location: 10, length: 10),
                aligningTo: 4096, options: []
            ) { url, item, range, _, error in
                outcomes.withLock {
                    $0.append(
                        error == nil && url != nil && item?.documentSize == 100_000 && range.length == 65536
                            ? "ok" : "bad")
                }
                done.continuation.yield()
            }
            cache.fetchPartialContents(
                for: ItemIdentifier(domain: "d", "missing"), version: nil, request: FetchRequest(),
                minimalRange: ByteRange(location: 0, length: 10), aligningTo: 4096, options: []
            ) { url, _, _, _, error in
                let code = (error as NSError?)?.code
                outcomes.withLock { $0.append(url == nil && code == -1005 ? "noSuchItem" : "bad") }
                done.continuation.yield()
            }
            var iterator = done.stream.makeAsyncIterator()
            _ = await iterator.next()
            _ = await iterator.next()
            try await Task.sleep(for: .milliseconds(300))
            #expect(outcomes.withLock { $0.sorted() } == ["noSuchItem", "ok"])
        }
    }

    // MARK: - The coordination types of Concurrency/ keep their documented guarantees

    @Test(
        "Concurrency, SetOnce: only the first set counts, and every waiter, task or thread, wakes once with it",
        .timeLimit(.minutes(1)))
    func setOnceWakesEveryWaiterOnce() async throws {
        let slot = SetOnce<Int>()
        let woken = Witnessed()
        let taskWaiters = (0..<16).map { _ in
            Task {
                let value = try await slot.value()
                woken.values.withLock { $0.append(value) }
            }
        }
        let threadsDone = DispatchGroup()
        for _ in 0..<4 {
            threadsDone.enter()
            Thread {
                let value = slot.waitBlocking()
                woken.values.withLock { $0.append(value) }
                threadsDone.leave()
            }.start()
        }
        try await Task.sleep(for: .milliseconds(100))
        #expect(woken.values.withLock { $0.isEmpty }, "nobody returns before the value is set")
        #expect(slot.current == nil)
        let setters = await withTaskGroup(of: Bool.self) { group in
            for value in 1...8 { group.addTask { slot.set(value) } }
            return await group.reduce(into: 0) { count, set in count += set ? 1 : 0 }
        }
        #expect(setters == 1, "exactly one set counts")
        let value = try #require(slot.current)
        for waiter in taskWaiters { try await waiter.value }
        await withCheckedContinuation { done in threadsDone.notify(queue: .global()) { done.resume() } }
        #expect(
            woken.values.withLock { $0 } == Array(repeating: value, count: 20), "each waiter woke once, with the value")
        #expect(try await slot.value() == value, "a late waiter returns at once")
        #expect(!slot.set(value + 100) && slot.current == value, "a later set changes nothing")
    }

    @Test(
        "Concurrency, SetOnce: a cancelled waiter stops waiting at once; the others still get the value",
        .timeLimit(.minutes(1)))
    func setOnceCancelledWaiterStops() async throws {
        let slot = SetOnce<String>()
        let cancelled = Task { try await slot.value() }
        let staying = Task { try await slot.value() }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(slot.current == nil, "the cancelled waiter returned before any value was set")
        #expect(slot.set("done"))
        #expect(try await staying.value == "done")
        let alreadyCancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await SetOnce<Int>().value()
        }
        await #expect(throws: CancellationError.self) { try await alreadyCancelled.value }
    }

    @Test("Concurrency, SetOnce: runFirst runs the body of exactly one of racing callers (A17's one completion)")
    func setOnceRunsFirstBodyOnce() async {
        let completed = SetOnce<Void>()
        let runs = Witnessed()
        let ran = await withTaskGroup(of: Bool.self) { group in
            for caller in 0..<32 { group.addTask { completed.runFirst { runs.values.withLock { $0.append(caller) } } } }
            return await group.reduce(into: 0) { count, ran in count += ran ? 1 : 0 }
        }
        #expect(ran == 1)
        #expect(runs.values.withLock { $0.count } == 1)
    }

    @Test("Concurrency, FirstValue: of racing offers only the first counts, and it is the one kept")
    func firstValueKeepsTheFirstOffer() async {
        let first = Held(FirstValue<Int>())
        let kept = await withTaskGroup(of: Int?.self) { group in
            for offered in 0..<32 { group.addTask { first.value.offer(offered) ? offered : nil } }
            return await group.compactMap { $0 }.reduce(into: []) { $0.append($1) }
        }
        #expect(kept.count == 1, "exactly one offer counts")
        #expect(first.value.current == kept.first)
        #expect(!first.value.offer(99) && first.value.current == kept.first, "a later offer changes nothing")
    }

    @Test("Concurrency, WorkClaims: each index is claimed exactly once across threads; after stop none is")
    func workClaimsHandOutEachIndexOnce() throws {
        let claims = WorkClaims(5..<10_005, size: 7)
        let claimed = Mutex<[Int64]>([])
        SharedWork.run(helpers: 3, on: BlockingPool(threads: 3, name: "claims-test")) {
            var mine: [Int64] = []
            while let range = claims.next() {
                #expect(range.count <= 7 && !range.isEmpty)
                mine.append(contentsOf: range)
            }
            claimed.withLock { $0.append(contentsOf: mine) }
        }
        #expect(claimed.withLock { $0.sorted() } == Array(5..<10_005))
        let stopped = WorkClaims(0..<100, size: 10)
        #expect(stopped.next() == 0..<10)
        stopped.stop()
        #expect(stopped.next() == nil, "nothing is claimed after a stop")
    }

    @Test(
        "Concurrency, WriteGate: one holder at a time; enterIfFree never waits and fails while it is held",
        .timeLimit(.minutes(1)))
    func writeGateHasOneHolder() {
        let gate = WriteGate()
        #expect(gate.enterIfFree())
        #expect(!gate.enterIfFree(), "taken: the caller goes on without waiting")
        gate.leave()
        let inside = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        SharedWork.forEachIndex(below: 400, on: BlockingPool(threads: 4, name: "gate-test")) { claim in
            while claim() != nil {
                if !gate.enterIfFree() { gate.enter() }
                let now = inside.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
                _ = most.max(now, ordering: .relaxed)
                usleep(50)
                _ = inside.wrappingSubtract(1, ordering: .sequentiallyConsistent)
                gate.leave()
            }
        }
        #expect(most.load(ordering: .relaxed) == 1)
        #expect(gate.enterIfFree(), "free again once every holder left")
        gate.leave()
    }

    @Test(
        "Concurrency, WakeUps: a wake-up between the reading and the wait is not lost, every waiter wakes, a wait ends at its pause or its cancellation",
        .timeLimit(.minutes(2)))
    func wakeUpsWakeEveryWaiter() async throws {
        let wakeUps = WakeUps()
        let clock = ContinuousClock()
        let seen = wakeUps.generation
        wakeUps.wake()
        let late = await clock.measure { await wakeUps.wait(after: seen, atMost: .seconds(3600)) }
        #expect(late < .seconds(50), "the wake-up before the wait is not lost")
        let now = wakeUps.generation
        #expect(now == seen + 1)
        let waiters = (0..<8).map { _ in
            Task { await clock.measure { await wakeUps.wait(after: now, atMost: .seconds(3600)) } }
        }
        try await Task.sleep(for: .milliseconds(100))
        wakeUps.wake()
        for waiter in waiters { #expect(await waiter.value < .seconds(50), "woken, not timed out") }
        let paused = await clock.measure { await wakeUps.wait(after: wakeUps.generation, atMost: .milliseconds(50)) }
        #expect(paused >= .milliseconds(50) && paused < .seconds(50), "a wait ends at its pause")
        let current = wakeUps.generation
        let cancelled = Task { await clock.measure { await wakeUps.wait(after: current, atMost: .seconds(3600)) } }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        #expect(await cancelled.value < .seconds(50), "a cancelled wait ends at once")
    }

    @Test("Concurrency, ClaimTable: an entry stands from its add to its claim's end, whichever task adds or ends")
    func claimTableEntriesStandUntilEnd() async {
        let table = ClaimTable<Int>()
        let claims = (0..<8).map { _ in table.claim() }
        await withTaskGroup(of: Void.self) { group in
            for (index, claim) in claims.enumerated() {
                group.addTask {
                    claim.add(2 * index)
                    claim.add(2 * index + 1)
                }
            }
        }
        #expect(table.entries.sorted() == Array(0..<16))
        await withTaskGroup(of: Void.self) { group in
            for index in stride(from: 0, to: claims.count, by: 2) { group.addTask { claims[index].end() } }
        }
        let standing = stride(from: 1, to: claims.count, by: 2).flatMap { [2 * $0, 2 * $0 + 1] }
        #expect(table.entries.sorted() == standing, "the ended claims' entries are gone, the others stand")
        for claim in claims { claim.end() }
        #expect(table.entries.isEmpty)
    }

    // MARK: - The counters a stuck soak reports

    /// Whether `condition` holds within `seconds`, looked at every millisecond: for a count that changes once
    /// another task has run.
    private static func eventually(within seconds: Int = 20, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(1))
        }
        return true
    }

    @Test(
        "Concurrency, RunningCount: current is the begins not yet ended, and a wait for zero returns when the last end brings it there",
        .timeLimit(.minutes(1)))
    func runningCountIsTheBeginsNotEnded() async throws {
        let running = RunningCount()
        #expect(running.current == 0)
        await running.waitForZero()  // at once: nothing runs
        for _ in 0..<3 { running.begin() }
        #expect(running.current == 3)
        let returned = Witnessed()
        let waiter = Task {
            await running.waitForZero()
            returned.values.withLock { $0.append(running.current) }
        }
        running.end()
        #expect(running.current == 2)
        running.end()
        #expect(running.current == 1)
        try await Task.sleep(for: .milliseconds(50))
        #expect(returned.values.withLock { $0.isEmpty }, "a wait for zero returned with one still running")
        running.end()
        #expect(running.current == 0)
        await waiter.value
        #expect(returned.values.withLock { $0 } == [0], "the wait returned once, at zero")
        running.begin()
        #expect(running.current == 1, "counts again after reaching zero")
        running.end()
        #expect(running.current == 0)
    }

    /// An ``AsyncLimiter``'s usage as `[held, waiting]`.
    private static func usage(_ limiter: AsyncLimiter) -> [Int] { [limiter.usage.held, limiter.usage.waiting] }

    @Test(
        "Concurrency, AsyncLimiter: usage is the permits held and the tasks waiting (limit 2, three callers: 2 held, 1 waiting); a release passes its permit to the waiter, then frees it; a cancelled waiter leaves the count",
        .timeLimit(.minutes(1)))
    func limiterUsageIsHeldAndWaiting() async throws {
        let limiter = AsyncLimiter(limit: 2)
        #expect(Self.usage(limiter) == [0, 0])
        #expect(AsyncLimiter(limit: 0).limit == 1, "a limit under one is one")
        let gates = (0..<3).map { _ in SetOnce<Void>() }
        let inside = Witnessed()
        let callers = gates.enumerated().map { index, gate in
            Task {
                try await limiter.withPermit {
                    inside.values.withLock { $0.append(index) }
                    try await gate.value()
                }
            }
        }
        #expect(try await Self.eventually { Self.usage(limiter) == [2, 1] }, "now \(Self.usage(limiter))")
        let first = inside.values.withLock { $0 }
        #expect(first.count == 2, "two hold a permit: \(first)")
        let cancelled = Task { try await limiter.withPermit {} }
        #expect(try await Self.eventually { Self.usage(limiter) == [2, 2] }, "now \(Self.usage(limiter))")
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(Self.usage(limiter) == [2, 1], "the cancelled waiter left the queue and holds no permit")
        _ = gates[first[0]].set(())
        try await callers[first[0]].value
        // The permit passed on: as many held, none waiting.
        #expect(try await Self.eventually { Self.usage(limiter) == [2, 0] }, "now \(Self.usage(limiter))")
        #expect(inside.values.withLock { $0.count } == 3)
        _ = gates[first[1]].set(())
        try await callers[first[1]].value
        #expect(Self.usage(limiter) == [1, 0])
        let last = try #require(inside.values.withLock { $0 }.last)
        _ = gates[last].set(())
        try await callers[last].value
        #expect(Self.usage(limiter) == [0, 0])
    }

    @Test(
        "Concurrency, Flights: count is the keys claimed and not yet finished; a second claim joins the key's flight, and finishing an ended flight leaves the key's new one"
    )
    func flightsCountIsTheUnfinishedClaims() {
        let flights = Flights<Int>()
        #expect(flights.count == 0)
        let one = flights.claim(1)
        let two = flights.claim(2)
        let joined = flights.claim(1)
        #expect(one.claimed && two.claimed && !joined.claimed)
        #expect(flights.count == 2, "a joined claim counts once")
        flights.finish(1, one.flight, with: .success(()))
        #expect(flights.count == 1)
        let again = flights.claim(1)
        #expect(again.claimed && again.flight !== one.flight, "a claim after the finish starts a new flight")
        #expect(flights.count == 2)
        flights.finish(1, one.flight, with: .success(()))
        #expect(flights.count == 2, "the ended flight's second finish left the new one")
        flights.finish(2, two.flight, with: .failure(CacheError(.transient, "a failed download")))
        flights.finish(1, again.flight, with: .success(()))
        #expect(flights.count == 0)
    }

    @Test(
        "§10 store behind: a streamed file stays open while a download may write, no write starts once it is retired, and it is removed unless kept"
    )
    func streamedFileClosesAtLastHold() throws {
        try withTemporaryDirectory { dir in
            for keep in [false, true] {
                let path = dir + "/streamed-\(keep)"
                let descriptor = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_EXCL, mode: 0o600)
                var owner: StreamedFile.Owner? = StreamedFile.Owner(handOff: OwnedFile(descriptor, path: path))
                if keep { owner?.keep() }
                let target = DirectBytes(
                    range: ByteRange(location: 0, length: 8192), manifestID: 1, chunkShift: 12,
                    file: HandOffWriter(file: descriptor, holesForZeros: false), owner: try #require(owner))
                owner = nil
                #expect(FileManager.default.fileExists(atPath: path), "the download's target still holds the file")
                let chunk = [UInt8](repeating: 7, count: 4096)
                try chunk.withUnsafeBytes { try target.take(0, $0, isZero: false) }
                target.retire()
                #expect(
                    FileManager.default.fileExists(atPath: path) == keep, "closed at the last hold; kept or removed")
                try chunk.withUnsafeBytes { try target.take(1, $0, isZero: false) }
                #expect(target.missing == [1], "no write starts once retired")
                if keep {
                    #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(chunk), "only the first chunk")
                }
            }
        }
    }
}

/// What concurrent waiters or callers saw, in the order they saw it.
private final class Witnessed: Sendable {
    let values = Mutex<[Int]>([])
}

/// A value shared by reference, as a type that holds it inline shares it.
private final class Held<Value: ~Copyable & Sendable>: Sendable {
    let value: Value
    init(_ value: consuming Value) { self.value = value }
}
