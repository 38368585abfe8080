import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// Whether a writer is alive is decided by a lock the kernel drops when it dies, never by its pid: a process in
/// another PID namespace (a container sharing the store) sees other pids as dead or as someone else.
@Suite struct WriterLivenessTests {
    /// `unshare` can make a PID namespace here: root, the tool, and a kernel that allows it.
    static let canUnsharePID: Bool = {
        guard getuid() == 0, let unshare = Capabilities.path(of: "unshare") else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: unshare)
        probe.arguments = ["--pid", "--fork", "--mount-proc", "true"]
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationStatus == 0
    }()

    @Test(
        "an open from another PID namespace during a put leaves the put's pending manifest alone; the version fetches and verifies",
        .enabled(if: ChunkCacheBinary.path != nil, "needs the built chunkcache executable"),
        .enabled(if: canUnsharePID, "needs root and `unshare --pid --fork --mount-proc`"))
    func openerInAnotherPIDNamespace() async throws {
        try await withTemporaryDirectory { dir in
            let afterEach = ArmedProbe()
            let cache = try await makeCache(
                dir, probes: EngineProbes(afterEachTransaction: afterEach.runWithoutThrowing))
            let store = cache.store
            let binary = try #require(ChunkCacheBinary.path)
            let unshare = try #require(Capabilities.path(of: "unshare"))
            // Two batches, so the put still has chunks to commit after the other process opened the store.
            let bytes = TestData.mixed(count: Ingestor.batchBytes + (4 << 20), chunkSize: 65536, seed: 11)
            let opener = Mutex<(status: Int32, output: String)?>(nil)
            let transactionsWithPending = Atomic<Int>(0)
            afterEach.arm {
                // Once, after the put's first batch is committed under its pending manifest (a rollback
                // before that would drop nothing): open the store from a new PID namespace while the put
                // waits here.
                let pending = (try? store.environment.read { txn in try txn.count(store.dbs.pending) }) ?? 0
                guard pending > 0 else { return }
                guard transactionsWithPending.wrappingAdd(1, ordering: .relaxed).newValue == 2 else { return }
                let process = Process()
                process.executableURL = URL(fileURLWithPath: unshare)
                process.arguments = ["--pid", "--fork", "--mount-proc", binary, "stat", "--store", store.path]
                let output = Pipe()
                process.standardOutput = output
                process.standardError = output
                do { try process.run() } catch {
                    opener.withLock { $0 = (-1, "\(error)") }
                    return
                }
                let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                opener.withLock { $0 = (process.terminationStatus, text) }
            }
            let id = ItemIdentifier(domain: "d", "big")
            let result = try await put(cache, bytes, as: id, in: dir)
            afterEach.arm(nil)

            let ran = try #require(opener.withLock { $0 }, "the other process never opened the store during the put")
            #expect(ran.status == 0, "\(ran.output)")
            let fetched = try await cache.fetchContents(for: id, version: result.item.itemVersion)
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == bytes)
            unlink(fetched.url.path)
            let report = try await cache.verify()
            #expect(report.corrupt.isEmpty)
            let pending = try store.environment.read { txn in try txn.count(store.dbs.pending) }
            #expect(pending == 0)
        }
    }

    @Test(
        "§2 §6: a put that publishes between an opener's look at the pending manifests and its rollback keeps its manifest: the rollback drops only what is still pending when it writes"
    )
    func publishBetweenAnOpenersLookAndItsRollback() async throws {
        try await withTemporaryDirectory { dir in
            let id = ItemIdentifier(domain: "d", "new")
            let bytes = TestData.mixed(count: 3 << 20, chunkSize: 65536, seed: 26)
            // The opener's first look, taken while the put's manifest is pending under the put's lease.
            let seen = Mutex<[WriterToken: [UInt64]]?>(nil)
            let lease: String
            do {
                let afterEach = ArmedProbe()
                let writing = try await makeCache(
                    dir, probes: EngineProbes(afterEachTransaction: afterEach.runWithoutThrowing))
                let store = writing.store
                afterEach.arm {
                    guard seen.withLock({ $0 == nil }),
                        let pending = try? store.pendingManifestsByWriter(), !pending.isEmpty
                    else { return }
                    seen.withLock { $0 = pending }
                }
                try await put(writing, bytes, as: id, in: dir)
                afterEach.arm(nil)
                lease = store.writersPath + "/" + (try store.writerToken()).description
            }
            // The put's process ends: its lease goes with its store.
            let deadline = Date().addingTimeInterval(10)
            while access(lease, F_OK) == 0, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(access(lease, F_OK) != 0, "the writer's lease outlived its store")
            let stale = try #require(seen.withLock { $0 }, "the put never had a pending manifest")

            let opening = try await makeCache(dir)
            #expect(try rollBack(stale, in: opening.store) == 0)
            let fetched = try await opening.fetchContents(for: id, version: nil)
            #expect(try readRange(fetched.url.path, fetched.retrievedRange) == bytes)
            unlink(fetched.url.path)
            #expect(try await opening.verify().corrupt.isEmpty)
        }
    }
}

/// The crash clean-up's rollback of what an earlier look found pending, as an opener runs it (off the
/// cooperative pool in the engine; a test may block).
private func rollBack(_ seen: [WriterToken: [UInt64]], in store: Store) throws -> Int { try store.rollBack(seen) }
