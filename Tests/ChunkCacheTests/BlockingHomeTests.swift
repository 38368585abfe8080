import Dispatch
import FileIO
import Foundation
import Synchronization
import Testing

@testable import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

/// Blocking work has one home. Parallel work shares out indices on the pool's threads, and
/// descriptors are watched by the home's one waiting thread, which hands their jobs to the pool.
@Suite struct BlockingHomeTests {
    /// The kernel's name of the calling thread, as `ps -L` and `top -H` show it.
    static func threadName() -> String {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
            ?? "?"
    }

    /// The names of this process's threads.
    /// Whether `condition` holds within 5 s. A thread names itself once it runs, and a thread it starts
    /// carries its name until it names itself: thread names settle a moment after the thread starts.
    static func settles(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            usleep(10_000)
        }
        return true
    }

    static func threadNames() -> [String] {
        var names: [String] = []
        try? FileSystem.forEachEntry(in: "/proc/self/task") { entry in
            if let name = try? String(contentsOfFile: "/proc/self/task/\(entry.name)/comm", encoding: .utf8) {
                names.append(name.trimmingCharacters(in: .newlines))
            }
        }
        return names
    }

    @Test(
        "Blocking work has one home: parallel work claims each index once, on the calling thread and the blocking pool's threads only, never more than the pool's width"
    )
    func forEachIndexStaysOnThePool() async throws {
        let count = 10_000
        let claims = Mutex([Int](repeating: 0, count: count))
        let threads = Mutex<Set<String>>([])
        // From a pool job, as the ingest calls it.
        try await runBlocking(doing: "sharing work", store: "/nowhere") {
            let caller = Self.threadName()
            SharedWork.forEachIndex(below: count) { claim in
                threads.withLock { _ = $0.insert(Self.threadName()) }
                while let index = claim() { claims.withLock { $0[index] += 1 } }
            }
            threads.withLock { _ = $0.insert(caller) }
        }
        #expect(claims.withLock { $0.allSatisfy { $0 == 1 } }, "every index claimed exactly once")
        let seen = threads.withLock { $0 }
        #expect(seen.allSatisfy { $0.hasPrefix("chunkcache-io-") }, "ran on \(seen)")
        #expect(seen.count <= BlockingPool.width)
        #expect(BlockingPool.shared.threadCount == BlockingPool.width)
    }

    @Test(
        "Blocking work has one home: a watched descriptor's job runs once per input on the home's one waiting thread (chunkcache-wait), not behind bulk work on the pool; a cancelled watch closes its descriptor"
    )
    func inputWatchRunsOnTheWaitingThread() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
        defer { try? writeEnd.close() }
        try readEnd.setBlocking(false)
        let ran = DispatchSemaphore(value: 0)
        let runs = Mutex<[String]>([])
        let closed = DispatchSemaphore(value: 0)
        let watch = try InputWatches.shared.watch(
            readEnd,
            close: {
                try? readEnd.close()
                closed.signal()
            }
        ) {
            var byte: UInt8 = 0
            while read(readEnd.rawValue, &byte, 1) == 1 {}  // drains, as the change signal's job does
            runs.withLock { $0.append(Self.threadName()) }
            ran.signal()
        }
        for round in 1...3 {
            try [UInt8(round)].withUnsafeBytes { try writeEnd.writeAll($0) }
            #expect(ran.wait(timeout: .now() + 10) == .success, "round \(round): the job ran")
        }
        watch.cancel()
        #expect(closed.wait(timeout: .now() + 10) == .success, "the cancelled watch closed its descriptor")
        let names = runs.withLock { $0 }
        #expect(names == ["chunkcache-wait", "chunkcache-wait", "chunkcache-wait"], "\(names)")
        #expect(
            Self.settles { Self.threadNames().filter { $0 == "chunkcache-wait" }.count == 1 },
            "one waiting thread for every watch")
    }

    @Test(
        "Blocking work has one home: a store's change signal is watched by the blocking home's waiting thread (chunkcache-wait), not a dispatch source, and a touch by another writer wakes a waiter"
    )
    func changeSignalWatchesThroughTheHome() async throws {
        let folder = try FileSystem.makeUniqueDirectory(in: NSTemporaryDirectory(), prefix: "chunkcache-signal.")
        defer { try? FileSystem.removeTree(folder) }
        let signal = ChangeSignal(folder: folder, marks: ChangeMarks(), diagnostics: .standardError)
        // Only the inotify event can wake the waiter within two minutes. Generous: in the full suite on two
        // cores, synchronous tests hold the cooperative threads for seconds at a time.
        signal.watchedPoll.withLock { $0 = .seconds(600) }
        let seen = signal.generation()
        #expect(Self.settles { Self.threadNames().contains("chunkcache-wait") }, "the watch waits on the home's thread")
        let start = ContinuousClock.now
        async let woken: Void = signal.wait(after: seen, until: .now + .seconds(600))
        try await Task.sleep(for: .milliseconds(50))
        try FileSystem.touch(folder + "/" + ChangeSignal.fileName)  // as another process's writer does
        await woken
        #expect(ContinuousClock.now - start < .seconds(120), "woken by the touch, not by the deadline")
    }
}
