import Synchronization

/// State behind a lock, and the tasks waiting for it to change: what ``AsyncLimiter``, ``Flight``, ``SetOnce``,
/// ``RunningCount`` and ``DirectBytes`` are made of.
///
/// Waiting suspends the task (no thread is parked); a cancelled waiter leaves the queue at once with
/// `CancellationError`.
///
/// What it guarantees: `admit` and every `withLock` body run under one lock, so a waiter either is admitted
/// or is queued before any change that would have admitted it can run; waiters queue oldest first and leave
/// from the front only (or by cancellation); each waiter is resumed exactly once: by whoever took it out of
/// the queue (outside the lock), or by its cancellation. The types made of it decide who is woken when.
///
/// A value, not an object, so the type made of it holds it inline and pays no allocation of its own.
struct WaitQueue<State: Sendable>: ~Copyable, Sendable {
    typealias Waiter = CheckedContinuation<Void, any Error>

    /// Internal, not private: a private type nested in this noncopyable generic crashes the 6.3 compiler.
    struct Inside: Sendable {
        var state: State
        var nextTicket: UInt64 = 0
        var waiters: [(ticket: UInt64, waiter: Waiter)] = []
    }

    private let inside: Mutex<Inside>

    init(_ state: State) { inside = Mutex(Inside(state: state)) }

    /// Runs `body` under the lock with the state and the waiters, oldest first (`body` may remove some and
    /// return them to be resumed outside the lock).
    func withLock<R>(_ body: (inout State, inout [Waiter]) -> R) -> R {
        inside.withLock { inside in
            var waiters = inside.waiters.map(\.waiter)
            let before = waiters.count
            let result = body(&inside.state, &waiters)
            // Waiters only ever leave from the front.
            inside.waiters.removeFirst(before - waiters.count)
            return result
        }
    }

    /// Waits unless `admit`, run under the lock, returns an outcome at once; then until a waiter is resumed.
    func wait(admit: (inout State, _ queued: Bool) -> Result<Void, any Error>?) async throws {
        let ticket = inside.withLock { inside -> UInt64 in
            inside.nextTicket += 1
            return inside.nextTicket
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: Waiter) in
                inside.withLock { inside in
                    if let outcome = admit(&inside.state, !inside.waiters.isEmpty) {
                        waiter.resume(with: outcome)
                    } else if Task.isCancelled {
                        waiter.resume(throwing: CancellationError())
                    } else {
                        inside.waiters.append((ticket, waiter))
                    }
                }
            }
        } onCancel: {
            let waiter = inside.withLock { inside in
                inside.waiters.firstIndex { $0.ticket == ticket }.map { inside.waiters.remove(at: $0).waiter }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
