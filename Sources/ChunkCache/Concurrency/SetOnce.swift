import Dispatch

/// A value set at most once, which any number of tasks and threads read or wait for: the outcome of a task a
/// thread waits for, a completion handler's one call, what a download's response head said.
///
/// What it guarantees:
/// - **One value.** Only the first ``set(_:)`` counts and returns true; every later one returns false and
///   changes nothing, from whichever thread or task it comes.
/// - **Every waiter woken exactly once.** The first `set` resumes each task in ``value()`` and each thread in
///   ``waitBlocking()`` once, with that value; one that starts waiting after it returns at once. Waiters are
///   resumed on the setter's thread, outside the lock.
/// - **Cancellation.** A task cancelled while it waits in ``value()`` stops waiting at once with
///   `CancellationError`; the value is still set for the others. ``waitBlocking()`` cannot be cancelled.
/// - ``current`` never waits: the value if set, else nil.
final class SetOnce<Value: Sendable>: Sendable {
    private struct Slot: Sendable {
        var value: Value?
        /// The threads parked in ``waitBlocking()``, each signalled once.
        var sleepers: [DispatchSemaphore] = []
    }

    private let queue = WaitQueue(Slot())

    init() {}

    /// The value if it was set, without waiting.
    var current: Value? { queue.withLock { slot, _ in slot.value } }

    /// Sets the value unless it was set; returns whether this call set it, and wakes every waiter if so.
    @discardableResult
    func set(_ value: Value) -> Bool {
        let woken = queue.withLock {
            slot, waiters -> (tasks: [WaitQueue<Slot>.Waiter], threads: [DispatchSemaphore])? in
            guard slot.value == nil else { return nil }
            slot.value = value
            defer {
                waiters.removeAll()
                slot.sleepers.removeAll()
            }
            return (waiters, slot.sleepers)
        }
        guard let woken else { return false }
        for waiter in woken.tasks { waiter.resume() }
        for sleeper in woken.threads { sleeper.signal() }
        return true
    }

    /// The value, once set; suspends the task until then. A cancelled task stops waiting with `CancellationError`.
    func value() async throws -> Value {
        try await queue.wait { slot, _ in slot.value == nil ? nil : .success(()) }
        return current!
    }

    /// The value, once set; parks the calling thread until then. Never call it on a Swift concurrency thread:
    /// it holds one of their few threads while it waits.
    @available(*, noasync)
    func waitBlocking() -> Value {
        let sleeper = DispatchSemaphore(value: 0)
        let value = queue.withLock { slot, _ -> Value? in
            if slot.value == nil { slot.sleepers.append(sleeper) }
            return slot.value
        }
        if let value { return value }
        sleeper.wait()
        return current!
    }
}

extension SetOnce where Value == Void {
    /// Runs `body` when this call is the first to set the value, whichever path gets there first (a completion
    /// handler that must run exactly once); returns whether it ran. `body` runs outside the lock.
    @discardableResult
    func runFirst(_ body: () -> Void) -> Bool {
        guard set(()) else { return false }
        body()
        return true
    }
}
