import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ChunkCache

#if canImport(Glibc)
import Glibc
#endif

/// Blocking work has one home: a pool of as many threads as cores, named, that never runs more jobs at once,
/// and on which no job waits for another.
@Suite struct BlockingPoolTests {
    /// Counts jobs running at once and the most there ever were.
    final class Occupancy: Sendable {
        let running = Atomic<Int>(0)
        let peak = Atomic<Int>(0)
        let finished = Atomic<Int>(0)

        func enter() {
            let now = running.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
            var seen = peak.load(ordering: .sequentiallyConsistent)
            while now > seen {
                let (exchanged, current) = peak.compareExchange(
                    expected: seen, desired: now, ordering: .sequentiallyConsistent)
                if exchanged { break }
                seen = current
            }
        }

        func leave() {
            running.wrappingSubtract(1, ordering: .sequentiallyConsistent)
            finished.wrappingAdd(1, ordering: .relaxed)
        }
    }

    @Test("the pool never runs more jobs at once than it has threads", arguments: [1, 2, 3])
    func neverMoreThanItsThreads(threads: Int) {
        let pool = BlockingPool(threads: threads, name: "test-bound")
        let occupancy = Occupancy()
        let done = DispatchGroup()
        for _ in 0..<500 {
            done.enter()
            pool.submit {
                occupancy.enter()
                sched_yield()  // give the other threads a chance to overlap
                occupancy.leave()
                done.leave()
            }
        }
        done.wait()
        #expect(occupancy.finished.load(ordering: .relaxed) == 500)
        #expect(occupancy.peak.load(ordering: .sequentiallyConsistent) <= threads)
        #expect(occupancy.peak.load(ordering: .sequentiallyConsistent) >= 1)
    }

    @Test("runBlocking runs its work on the pool's named threads, not on the global queue")
    func runBlockingUsesThePool() async throws {
        // The kernel's name of the thread, as `ps -L` and `top -H` show it.
        let name = try await runBlocking(doing: "naming the thread", store: "/nowhere") { () -> String in
            try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
        }
        #expect(name.hasPrefix("chunkcache-io-"), "ran on \"\(name)\"")
        #expect(BlockingPool.shared.threadCount == ProcessInfo.processInfo.activeProcessorCount)
    }

    @Test("jobs submitted from inside jobs complete, with every thread busy")
    func jobsFromJobsComplete() {
        let pool = BlockingPool(threads: 2, name: "test-nested")
        let done = DispatchGroup()
        let ran = Atomic<Int>(0)
        for _ in 0..<2 {
            done.enter()
            pool.submit {
                for _ in 0..<3 {
                    done.enter()
                    pool.submit {
                        ran.wrappingAdd(1, ordering: .relaxed)
                        done.leave()
                    }
                }
                done.leave()
            }
        }
        done.wait()
        #expect(ran.load(ordering: .relaxed) == 6)
    }

    /// With a pool of two, one thread held and the other running a job that shares its work: the job must
    /// not wait for its helper, which cannot start until the held thread is free.
    @Test("SharedWork inside a pool job never waits for a helper that has not started (no deadlock on 2 threads)")
    func sharedWorkOnABusyPool() {
        let pool = BlockingPool(threads: 2, name: "test-shared")
        let held = DispatchSemaphore(value: 0)
        let holding = DispatchSemaphore(value: 0)
        let jobDone = DispatchSemaphore(value: 0)
        let pieces = Atomic<Int>(0)
        pool.submit {
            holding.signal()
            held.wait()
        }
        holding.wait()
        pool.submit {
            SharedWork.run(helpers: 1, on: pool) {
                while pieces.wrappingAdd(1, ordering: .relaxed).oldValue < 100 {}
            }
            jobDone.signal()
        }
        // The job finishes while the only other thread is still held: its helper never started.
        jobDone.wait()
        #expect(pieces.load(ordering: .relaxed) >= 100)
        held.signal()
    }

    @Test("cancelling the task sets the flag the blocking work checks")
    func cancellationSetsTheFlag() async throws {
        let started = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let task = Task {
            try await runBlocking(doing: "waiting to be cancelled", store: "/nowhere") { cancellation in
                started.signal()
                proceed.wait()
                return cancellation.isCancelled
            }
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                started.wait()
                continuation.resume()
            }
        }
        task.cancel()  // runs the cancellation handler before it returns
        proceed.signal()
        #expect(try await task.value == true)
    }
}
