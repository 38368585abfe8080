import Dispatch

/// A gate one thread at a time passes: the workers of a parallel fetch take it to write their shared file
/// (``RunWriter``), so one writes while the others decode on.
///
/// What it guarantees:
/// - **One holder.** Between an entry (``enterIfFree()`` returning true, or ``enter()`` returning) and its
///   ``leave()``, no other thread is inside. Only the holder may call `leave()`, once per entry, and every
///   entry leaves before the gate goes (libdispatch traps a semaphore released while taken).
/// - **No wait when busy, if asked.** `enterIfFree()` never sleeps: a worker that finds the gate taken keeps
///   its work and decodes more. `enter()` sleeps until the gate is free; sleepers are not served in any
///   promised order.
/// - **No cancellation.** It is for blocking threads (pool jobs), never tasks: a sleeper waits until the
///   holder leaves, which is at most one `pwritev` away.
///
/// A semaphore, not `Mutex`: that one's priority-inheritance futex spins in the kernel while the holder runs,
/// which is the waste this avoids.
final class WriteGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 1)

    /// Takes the gate if nobody holds it.
    func enterIfFree() -> Bool { semaphore.wait(timeout: .now()) == .success }

    /// Takes the gate, sleeping while another thread holds it.
    func enter() { semaphore.wait() }

    /// Lets the gate go, waking one sleeper if any.
    func leave() { semaphore.signal() }
}
