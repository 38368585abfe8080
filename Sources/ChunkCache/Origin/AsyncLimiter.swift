import Synchronization

/// Lets at most `limit` tasks hold a permit at once; the rest wait in order (CONTRACT §10: at most
/// `--pipeline-depth` origin requests of a domain in flight per process).
///
/// Waiting suspends the task (no thread is parked); a cancelled waiter leaves the queue at once.
final class AsyncLimiter: Sendable {
    private struct State {
        var limit: Int
        var active = 0
        var nextTicket: UInt64 = 0
        var waiters: [(ticket: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    private let state: Mutex<State>

    init(limit: Int) { state = Mutex(State(limit: max(1, limit))) }

    /// Runs `body` holding a permit.
    func withPermit<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        try await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async throws {
        let ticket = state.withLock { state -> UInt64 in
            state.nextTicket += 1
            return state.nextTicket
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else if state.active < state.limit && state.waiters.isEmpty {
                        state.active += 1
                        continuation.resume()
                    } else {
                        state.waiters.append((ticket, continuation))
                    }
                }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                state.waiters.firstIndex { $0.ticket == ticket }.map { state.waiters.remove(at: $0).continuation }
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiters.isEmpty, state.active <= state.limit else {
                state.active -= 1
                return nil
            }
            return state.waiters.removeFirst().continuation  // the permit passes on: `active` is unchanged
        }
        next?.resume()
    }
}
