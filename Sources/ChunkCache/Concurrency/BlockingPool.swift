import Dispatch
import FileIO
import Foundation
import Synchronization

/// The one home of the engine's blocking work: LMDB reads, zstd, and `pread`/`pwrite`/clone calls run on these
/// threads, never on Swift's cooperative pool (whose few threads must stay free to run tasks) and never on
/// `DispatchQueue.global()` (which adds a thread whenever its threads block, so it has no bound).
///
/// As NIO's `NIOThreadPool`: as many threads as cores, named `chunkcache-io-N`, started on first use, taking
/// jobs in order from one queue. ``runBlocking(doing:store:_:)`` submits here; ``SharedWork`` offers its helpers here.
///
/// What runs on the caller's thread instead, and why:
/// - A fetch handed off as a temp file whose range is at most ``FetchThresholds/inlineBytes`` is planned and
///   assembled inline, in one snapshot. Such work is bounded and page-cache-hot (map pages and a small
///   `pwrite`), and a hop here and back costs two thread wake-ups, as much as the fetch itself.
/// - Write transactions run on the store's serial ``Writer`` queue: LMDB binds each to the thread that began it.
///
/// What it guarantees: jobs start in the order they were submitted, at most ``threadCount`` at once, each
/// exactly once; any thread or task may submit, and submitting never blocks. A job cannot be cancelled once
/// submitted: cancellation reaches it as a ``CancellationFlag`` it checks (``runBlocking(doing:store:_:)``).
///
/// What keeps it free of deadlock with as few as two threads:
/// - No job waits for another job of this pool. Jobs may wait for the writer queue, which never waits for this
///   pool, and for ``SharedWork`` helpers that have already started.
/// - Nothing waits for a helper by spinning on a cooperative thread: ``SharedWork`` never waits for a helper
///   that has not started, and for one that has, it blocks on a semaphore until that helper leaves.
final class BlockingPool: Sendable {
    /// The bound of the engine's blocking work, defined here only: one thread per core. More would not make
    /// CPU-bound work (SHA-256, zstd) faster, and LMDB reads of mapped pages are CPU work once the pages are
    /// cached; fewer would leave a core idle during a put or a large fetch. Parallel work (``SharedWork``)
    /// never asks for more helpers than this.
    static let width = max(1, ProcessInfo.processInfo.activeProcessorCount)

    /// The pool the engine uses: ``width`` threads.
    static let shared = BlockingPool(threads: width, name: "chunkcache-io")

    typealias Job = @Sendable () -> Void

    /// The number of threads, the most jobs that run at once.
    let threadCount: Int
    private let name: String
    private let state = Mutex(State())
    /// Signalled once per job queued; each thread waits on it, then takes one job.
    private let queued = DispatchSemaphore(value: 0)

    private struct State {
        var started = false
        /// Jobs in order: taken from `front` (reversed), added to `back`, so both ends are O(1).
        var front: [Job] = []
        var back: [Job] = []

        mutating func take() -> Job? {
            if front.isEmpty {
                front = back.reversed()
                back.removeAll(keepingCapacity: true)
            }
            return front.popLast()
        }
    }

    init(threads: Int, name: String) {
        precondition(threads > 0, "a blocking pool needs a thread")  // Callers pass a core count or a test's constant.
        self.threadCount = threads
        self.name = name
    }

    /// Queues `job`; a pool thread runs it when free. Starts the threads on first use.
    func submit(_ job: @escaping Job) {
        let start = state.withLock { state in
            state.back.append(job)
            defer { state.started = true }
            return !state.started
        }
        if start { startThreads() }
        queued.signal()
    }

    private func startThreads() {
        for index in 1...threadCount {
            // Linux limits a thread's name to 15 bytes.
            let threadName = String("\(name)-\(index)".utf8.prefix(15)) ?? name
            let thread = Thread { [self] in
                ThisProcess.nameCurrentThread(threadName)
                runJobs()
            }
            thread.start()
        }
    }

    private func runJobs() -> Never {
        while true {
            queued.wait()
            // One signal per job queued, so a job is there.
            if let job = state.withLock({ $0.take() }) { job() }
        }
    }
}
