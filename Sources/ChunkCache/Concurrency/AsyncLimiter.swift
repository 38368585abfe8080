/// Lets at most `limit` tasks hold a permit at once; the rest wait in order (<doc:Contract#10-Origins-the-cold-path>:
/// at most `--pipeline-depth` origin requests of a domain in flight per process).
///
/// What it guarantees: never more than ``limit`` bodies run at once; waiters get permits in the order they
/// came (a newcomer queues behind them even when a permit is free), and a released permit passes straight to
/// the oldest waiter. A task cancelled while it waits leaves the queue at once with `CancellationError`,
/// holding no permit; a body that runs is never interrupted by the limiter. Any task may call.
final class AsyncLimiter: Sendable {
    private struct Permits: Sendable {
        let limit: Int
        var active = 0
    }

    private let queue: WaitQueue<Permits>
    /// How many may hold a permit at once.
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
        queue = WaitQueue(Permits(limit: self.limit))
    }

    /// The permits held and the tasks waiting for one (a diagnostic: it may change as soon as it is read).
    var usage: (held: Int, waiting: Int) { queue.withLock { permits, waiters in (permits.active, waiters.count) } }

    /// Runs `body` holding a permit.
    func withPermit<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        try await queue.wait { permits, queued in
            guard !queued, permits.active < permits.limit else { return nil }
            permits.active += 1
            return .success(())
        }
        defer { release() }
        return try await body()
    }

    private func release() {
        let next = queue.withLock { permits, waiters -> WaitQueue<Permits>.Waiter? in
            guard !waiters.isEmpty else {
                permits.active -= 1
                return nil
            }
            return waiters.removeFirst()  // the permit passes on: `active` is unchanged
        }
        next?.resume()
    }
}
