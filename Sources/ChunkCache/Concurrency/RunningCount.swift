import Synchronization

/// How many of something run, and a way to wait until none does.
///
/// What it guarantees: ``waitForZero()`` returns once the count is zero, at once when it is, and every task
/// waiting when the last ``end()`` brings it to zero wakes then, once. A cancelled waiter returns at once,
/// whatever the count. Each ``begin()`` is matched by one `end()`, from any thread or task; count before
/// the work starts, so a waiter cannot miss it.
final class RunningCount: Sendable {
    private let queue = WaitQueue(0)

    /// How many run now (a diagnostic: it may change as soon as it is read).
    var current: Int { queue.withLock { count, _ in count } }

    func begin() { queue.withLock { count, _ in count += 1 } }

    func end() {
        let waiters = queue.withLock { count, waiters -> [WaitQueue<Int>.Waiter] in
            count -= 1
            guard count == 0 else { return [] }
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the count is zero (at once when it is).
    func waitForZero() async {
        try? await queue.wait { count, _ in count == 0 ? .success(()) : nil }
    }
}
