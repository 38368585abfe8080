import Synchronization

/// One piece of work (a download) that any number of tasks wait for: a single flight
/// (<doc:Contract#10-Origins-the-cold-path>).
///
/// What it guarantees: only the first ``finish(_:)`` counts, and every task waiting in ``wait()`` wakes with
/// that outcome; ``arrived(_:)`` hands the bytes once, before the outcome, to those in ``waitForBytes()``. A
/// cancelled waiter stops waiting at once (`CancellationError`) and the work goes on for the others. Only
/// the task that claimed the flight (``Flights/claim(_:)``) finishes it; anyone may wait.
final class Flight: Sendable {
    private struct Progress: Sendable {
        var outcome: Result<Void, any Error>?
        /// Someone waits for it: the downloader commits it as soon as it is in instead of batching on.
        var awaited = false
        /// Someone waits for the chunk's bytes as they arrive: the downloader hands them over at once.
        var bytesAwaited = false
        /// The chunk's raw bytes, checked, from when they arrive until the flight ends (stored).
        var bytes: [UInt8]?
    }

    private let queue = WaitQueue(Progress())

    /// Whether a task waits for this flight now or did.
    var isAwaited: Bool { queue.withLock { progress, _ in progress.awaited } }

    /// Whether a task waits for the chunk's bytes as they arrive (``waitForBytes()``).
    var wantsBytes: Bool { queue.withLock { progress, _ in progress.bytesAwaited } }

    /// Waits for the flight's outcome; a cancelled waiter stops waiting at once (the download goes on for the
    /// others), with `CancellationError`.
    func wait() async throws {
        // Woken when the bytes arrive too (``arrived(_:)``): waits on until the outcome.
        repeat {
            try await queue.wait { progress, _ in
                progress.awaited = true
                return progress.outcome
            }
        } while queue.withLock({ progress, _ in progress.outcome == nil })
    }

    /// Waits for the chunk's bytes as they arrive, before they are stored (a reader served from the download,
    /// ``DirectBytes``): nil when the flight ended without handing them over (they are in the store then).
    func waitForBytes() async throws -> [UInt8]? {
        try await queue.wait { progress, _ in
            progress.bytesAwaited = true
            return progress.bytes != nil ? .success(()) : progress.outcome
        }
        return queue.withLock { progress, _ in progress.bytes }
    }

    /// Hands over the chunk's raw bytes, checked against its hash, to those waiting for them.
    func arrived(_ bytes: [UInt8]) {
        let waiters = queue.withLock { progress, waiters -> [WaitQueue<Progress>.Waiter] in
            guard progress.outcome == nil, progress.bytes == nil else { return [] }
            progress.bytes = bytes
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Ends the flight; only the first outcome counts.
    func finish(_ outcome: Result<Void, any Error>) {
        let waiters = queue.withLock { progress, waiters -> [WaitQueue<Progress>.Waiter] in
            guard progress.outcome == nil else { return [] }
            progress.outcome = outcome
            progress.bytes = nil
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume(with: outcome) }
    }
}
