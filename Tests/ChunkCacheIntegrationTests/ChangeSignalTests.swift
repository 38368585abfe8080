import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// Waiters of changes are woken by a signal, not by polling (CONTRACT §11, E2).
@Suite(.serialized) struct ChangeSignalTests {
    /// Runs `chunkcache ARGS` to its end; returns when it exited.
    static func run(_ binary: String, _ arguments: [String]) async throws -> ContinuousClock.Instant {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream<ContinuousClock.Instant>.makeStream()
        process.terminationHandler = { _ in continuation.yield(.now) }
        try process.run()
        var it = exited.makeAsyncIterator()
        let end = try #require(await it.next())
        #expect(process.terminationStatus == 0, "\(arguments)")
        return end
    }

    /// Waits for a change after the domain's current anchor in a task; returns when it woke and whether it
    /// saw a change.
    static func startWaiter(_ cache: ChunkCache, _ domain: String, timeout: Duration) async throws -> Task<
        (ContinuousClock.Instant, Bool), any Error
    > {
        let enumerator = try await cache.enumeratorOfAllItems(in: domain)
        let anchor = try await enumerator.currentSyncAnchor()
        return Task {
            let changed = try await enumerator.waitForChanges(after: anchor, timeout: timeout)
            return (.now, changed)
        }
    }

    @Test(
        "E2 §11: a put by another process wakes a waiter at once (a signal, not the next 100 ms poll)",
        .enabled(if: ChunkCacheBinary.path != nil, "needs the built chunkcache executable"))
    func otherProcessWakesWaiter() async throws {
        try await withTemporaryDirectory { dir in
            let binary = try #require(ChunkCacheBinary.path)
            let cache = try await makeCache(dir)
            // No check on a timer within the test: only the signal can wake the waiter before its timeout.
            cache.engine.changes.watchedPoll.withLock { $0 = .seconds(60) }
            try await put(cache, TestData.text(count: 100, seed: 1), as: ItemIdentifier(domain: "d", "seed"), in: dir)
            var latencies: [Duration] = []
            for round in 0..<9 {
                let input = dir + "/in\(round)"
                try TestData.write(TestData.text(count: 1000, seed: UInt64(round + 10)), to: input)
                let waiter = try await Self.startWaiter(cache, "d", timeout: .seconds(20))
                // Long enough for a poller to have backed off to its 100 ms interval.
                try await Task.sleep(for: .milliseconds(300))
                let exited = try await Self.run(
                    binary, ["put", "--store", dir + "/store", "--domain", "d", "f\(round)", input])
                let (woke, changed) = try await waiter.value
                #expect(changed)
                // The commit comes before the writer exits, so a prompt waiter often wakes first: count that as 0.
                latencies.append(max(.zero, woke - exited))
            }
            // Each woke although nothing polled; how soon is a figure of a quiet machine, not asserted here.
            #expect(latencies.allSatisfy { $0 < .seconds(5) }, "\(latencies.sorted())")
        }
    }

    @Test("E2 §11: a put in this process wakes a waiter at once")
    func sameProcessWakesWaiter() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            cache.engine.changes.watchedPoll.withLock { $0 = .seconds(60) }
            try await put(cache, TestData.text(count: 100, seed: 1), as: ItemIdentifier(domain: "d", "seed"), in: dir)
            var latencies: [Duration] = []
            for round in 0..<5 {
                let waiter = try await Self.startWaiter(cache, "d", timeout: .seconds(20))
                try await Task.sleep(for: .milliseconds(300))
                try await put(
                    cache, TestData.text(count: 1000, seed: UInt64(round + 10)),
                    as: ItemIdentifier(domain: "d", "f\(round)"), in: dir)
                let returned = ContinuousClock.now
                let (woke, changed) = try await waiter.value
                #expect(changed)
                latencies.append(max(.zero, woke - returned))
            }
            #expect(
                latencies.allSatisfy { $0 < .seconds(5) }, "from the put's return to the wake-up: \(latencies.sorted())"
            )
        }
    }

    @Test(
        "E2 §11: a change of a domain's settings (setDomain, setNonMaterializingProcesses) bumps its version and wakes a waiter of the domain version at once"
    )
    func settingsChangeWakesVersionWaiter() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            // No check on a timer within the test: only the signal can wake the waiter before its timeout.
            cache.engine.changes.watchedPoll.withLock { $0 = .seconds(60) }
            _ = try await cache.addDomain("d")
            let changes: [(String, () async throws -> Void)] = [
                ("setDomain", { _ = try await cache.setDomain("d", readAhead: 1 << 20) }),
                (
                    "setNonMaterializingProcesses",
                    { _ = try await cache.setNonMaterializingProcesses(["mds"], forDomain: "d") }
                ),
            ]
            for (what, change) in changes {
                let before = try cache.domainVersion(of: "d")
                let waiter = Task {
                    try await cache.waitForDomainVersion(of: "d", after: before, timeout: .seconds(10))
                }
                try await Task.sleep(for: .milliseconds(300))
                try await change()
                let changed = ContinuousClock.now
                let seen = try await waiter.value
                #expect(seen == before.next(), "\(what) bumps the domain version once and the waiter sees it")
                #expect(ContinuousClock.now - changed < .seconds(5), "\(what): woken by the signal, not its timeout")
            }
            // A waiter with nothing to see times out with nil; one of a domain removed meanwhile gets noSuchItem.
            let current = try cache.domainVersion(of: "d")
            #expect(try await cache.waitForDomainVersion(of: "d", after: current, timeout: .milliseconds(200)) == nil)
            let waiter = Task { try await cache.waitForDomainVersion(of: "d", after: current, timeout: .seconds(10)) }
            try await Task.sleep(for: .milliseconds(300))
            try await cache.removeDomain("d")
            #expect(await errorOf { _ = try await waiter.value }?.code == .noSuchItem)
        }
    }

    @Test("E2 §11: a waiter with no change returns false at its timeout, not before and not long after")
    func waiterTimesOut() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, TestData.text(count: 100, seed: 1), as: ItemIdentifier(domain: "d", "seed"), in: dir)
            // A change in another domain wakes the waiter, which finds nothing of its own and waits on.
            let start = ContinuousClock.now
            let waiter = try await Self.startWaiter(cache, "d", timeout: .milliseconds(1500))
            try await Task.sleep(for: .milliseconds(200))
            try await put(cache, TestData.text(count: 100, seed: 2), as: ItemIdentifier(domain: "other", "x"), in: dir)
            let (woke, changed) = try await waiter.value
            #expect(!changed)
            let waited = woke - start
            // Not long after: under a full suite on two cores a wake-up can lag by several hundred ms.
            #expect(waited >= .milliseconds(1500) && waited < .milliseconds(2500), "\(waited)")
        }
    }

    @Test("E2 §11: removing the domain wakes its waiters at once, with noSuchItem")
    func removalWakesWaiter() async throws {
        try await withTemporaryDirectory { dir in
            let cache = try await makeCache(dir)
            try await put(cache, TestData.text(count: 100, seed: 1), as: ItemIdentifier(domain: "d", "seed"), in: dir)
            let waiter = try await Self.startWaiter(cache, "d", timeout: .seconds(20))
            try await Task.sleep(for: .milliseconds(300))
            try await cache.removeDomain("d")
            let removed = ContinuousClock.now
            let error = await errorOf { _ = try await waiter.value }
            #expect(error?.code == .noSuchItem)
            #expect(ContinuousClock.now - removed < .milliseconds(500))
        }
    }
}
