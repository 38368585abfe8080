import Dispatch
import Synchronization

/// Runs one job on the calling thread and on helper threads of a ``BlockingPool``, and returns as soon as the
/// calling thread has finished it and no helper is still inside it.
///
/// A helper that starts after that skips the job, so the caller never waits for a helper that has not started
/// (which makes it safe to call from a job of the same pool, however busy). `DispatchQueue.concurrentPerform`
/// instead waits for every helper it woke to run and leave, however late it wakes. A helper already inside is
/// finishing its last piece: the caller blocks on a semaphore until it leaves, it never spins. The job must
/// share its work out itself (for example by claiming pieces from an atomic counter) so that whichever threads
/// turn up finish it.
final class SharedWork: Sendable {
    /// The number of helpers inside the job, plus ``closedFlag`` once the caller has finished it.
    private let state = Atomic<Int>(0)
    private static let closedFlag = 1 << 62
    /// Signalled by the last helper to leave after the caller finished.
    private let lastHelperLeft = DispatchSemaphore(value: 0)
    private let body: @Sendable () -> Void

    private init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    /// Runs `body` on this thread and offers it to `helpers` threads of `pool`.
    /// When this returns, `body` is running nowhere and will not start again.
    static func run(helpers: Int, on pool: BlockingPool = .shared, _ body: @escaping @Sendable () -> Void) {
        let work = SharedWork(body)
        for _ in 0..<helpers {
            pool.submit { work.helperRun() }
        }
        body()
        work.close()
    }

    private func helperRun() {
        var current = state.load(ordering: .acquiring)
        while true {
            if current & Self.closedFlag != 0 { return }
            let (entered, seen) = state.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if entered { break }
            current = seen
        }
        body()
        if state.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == Self.closedFlag {
            lastHelperLeft.signal()
        }
    }

    private func close() {
        // Once the flag is set no helper enters; if some were inside, the last to leave signals.
        let inside = state.bitwiseOr(Self.closedFlag, ordering: .acquiringAndReleasing).oldValue
        if inside != 0 { lastHelperLeft.wait() }
    }
}

extension SharedWork {
    /// Shares the indices `0..<count` out among this thread and helpers of `pool` (one per spare thread of the
    /// pool, or of `threads` in all, at most one per index): each thread that turns up runs `body` once, which calls its `claim` for
    /// the next unclaimed index until it returns `nil`. Every index is claimed exactly once.
    static func forEachIndex(
        below count: Int, on pool: BlockingPool = .shared, threads: Int? = nil,
        _ body: @escaping @Sendable (_ claim: () -> Int?) -> Void
    ) {
        guard count > 0 else { return }
        let claims = WorkClaims(0..<Int64(count))
        run(helpers: max(0, min(count, threads ?? pool.threadCount, pool.threadCount) - 1), on: pool) {
            body { claims.next().map { Int($0.lowerBound) } }
        }
    }
}
