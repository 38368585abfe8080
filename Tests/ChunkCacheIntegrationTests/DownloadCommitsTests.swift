import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// The commits of downloaded chunks, gathered (<doc:Contract#10-Origins-the-cold-path>): batches that come
/// while one commits share the next transaction, and a batch that fails fails alone.
@Suite("Download commits")
struct DownloadCommitsTests {
    struct Refused: Error {}

    /// Set once the first batch holds the writer.
    final class Started: Sendable {
        private let flag = Atomic<Bool>(false)
        func set() { flag.store(true, ordering: .relaxed) }
        var isSet: Bool { flag.load(ordering: .relaxed) }
    }

    @Test(
        "§10: download batches that come while one commits go in one transaction; a batch that fails fails alone, the others' records stand"
    )
    func gatheredAndIsolated() async throws {
        try await withTemporaryDirectory { dir in
            let transactions = CommitCounter()
            let cache = try await makeCache(dir, probes: EngineProbes(afterEachTransaction: { transactions.add() }))
            let store = cache.store
            let dbs = store.dbs
            let commits = DownloadCommits()
            let started = Started()
            let before = transactions.value
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The first batch holds the writer until the ten others wait behind it.
                group.addTask {
                    try await commits.commit(on: store.writer, reserving: 0) { txn in
                        started.set()
                        Thread.sleep(forTimeInterval: 0.3)
                        try txn.addToCounter(dbs, "test/first", 1)
                    }
                }
                while !started.isSet { try await Task.sleep(for: .milliseconds(1)) }
                for index in 0..<10 {
                    group.addTask {
                        try await commits.commit(on: store.writer, reserving: 0) { txn in
                            try txn.addToCounter(dbs, "test/gathered", 1)
                            if index == 4 { throw Refused() }
                        }
                    }
                }
                var refused = 0
                while let result = await group.nextResult() {
                    if case .failure(let error) = result {
                        #expect(error is Refused, "\(error)")
                        refused += 1
                    }
                }
                #expect(refused == 1, "only the failing batch fails")
            }
            let counters = try store.environment.read { txn in
                (try txn.counter(dbs, "test/first"), try txn.counter(dbs, "test/gathered"))
            }
            #expect(
                counters.0 == 1 && counters.1 == 9, "the nine others are stored, the failing one is not: \(counters)")
            // The first alone, the ten together (which failed), then each of the ten alone.
            #expect(transactions.value - before == 1 + 1 + 10, "\(transactions.value - before) transactions")
        }
    }

    @Test("§10: a download batch with no other waiting commits at once, in a transaction of its own")
    func aloneCommitsAtOnce() async throws {
        try await withTemporaryDirectory { dir in
            let transactions = CommitCounter()
            let cache = try await makeCache(dir, probes: EngineProbes(afterEachTransaction: { transactions.add() }))
            let store = cache.store
            let commits = DownloadCommits()
            let before = transactions.value
            for _ in 0..<3 {
                try await commits.commit(on: store.writer, reserving: 0) { txn in
                    try txn.addToCounter(store.dbs, "test/alone", 1)
                }
            }
            #expect(transactions.value - before == 3)
            #expect(try store.environment.read { txn in try txn.counter(store.dbs, "test/alone") } == 3)
        }
    }
}
