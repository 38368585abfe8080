import Synchronization

/// Tasks waiting for the next wake-up of something they check on their own (a store's changes,
/// ``ChangeSignal``), each for at most a pause.
///
/// What it guarantees:
/// - **No lost wake-up.** A waiter reads ``generation`` before it checks, then waits ``wait(after:atMost:)``
///   for a wake-up after that reading: one that came in between makes the wait return at once.
/// - **Every waiter woken once.** ``wake()`` resumes each task waiting then, exactly once, and moves the
///   generation on; a task that starts waiting after it waits for the next one.
/// - **Bounded, cancellable waits.** A wait returns at the latest after its pause (a sleeping task, no thread
///   held), and at once when its task is cancelled; it never throws: the caller checks `Task.isCancelled` and
///   checks again what it waits for.
/// - Any thread or task may wake; waiters are resumed outside the lock.
final class WakeUps: Sendable {
    private struct State {
        /// Counts the wake-ups: a waiter sleeps only while it is still the one it read before checking.
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var lastWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    /// The wake-ups so far; read it before checking, and wait after it.
    var generation: UInt64 { state.withLock { $0.generation } }

    /// Waits until a wake-up after `seen` (``generation``), `pause`, or the task's cancellation, whichever
    /// comes first; returns at once when one already came.
    func wait(after seen: UInt64, atMost pause: Duration) async {
        let id = state.withLock { state in
            state.lastWaiter += 1
            return state.lastWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { state -> Bool in
                    // Checked under the lock the cancellation handler takes: one of the two sees the other.
                    guard state.generation == seen, !Task.isCancelled else { return false }
                    state.waiters[id] = continuation
                    return true
                }
                guard waiting else { return continuation.resume() }
                guard pause > .zero else { return self.resume(id) }
                // A sleeping task holds no thread; a wake-up before it ends makes its `resume` do nothing.
                Task { [weak self] in
                    try? await Task.sleep(for: pause)
                    self?.resume(id)
                }
            }
        } onCancel: {
            self.resume(id)
        }
    }

    /// Wakes every task waiting now.
    func wake() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    private func resume(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
