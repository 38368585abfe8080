import CFuse3
import FileIO
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Lets replies and notifications through while the session serves, and none once it has ended. A read
/// answered from a task, or a change the mount tells the kernel of, may come after the session ended (an
/// unmount with a download under way): by then the session's device is closed (libfuse printed "writing
/// device: Bad file descriptor") and its memory is freed, so nothing late may reach libfuse.
///
/// What it guarantees:
/// - **Nothing after close.** Once ``close()`` returns, no reply runs and none is still running: a reply
///   either saw the gate open and counted itself in before `close` looked (then `close` waits for it), or
///   sees it closed and is dropped. Both sides use sequentially consistent atomics, so neither misses the
///   other.
/// - Any thread or task may ``pass(_:)``; it never blocks. Only the session's own thread calls `close()`,
///   once, never a task: it spins, in 50 µs sleeps, for at most one `writev` per reply in flight.
/// - A reply dropped at close is not an error: the kernel forgot the request with the session.
///
/// It stays in FuseKit, beside the one libfuse session it guards, rather than in the engine's
/// `Concurrency/`: FuseKit cannot depend on ChunkCache (ChunkCache's mount depends on it), and the gate
/// exists only to keep late calls out of libfuse.
final class ReplyGate: Sendable {
    private let passing = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// Runs `reply` unless the gate is closed.
    func pass(_ reply: () -> Void) {
        passing.add(1, ordering: .sequentiallyConsistent)
        defer { passing.subtract(1, ordering: .sequentiallyConsistent) }
        guard !closed.load(ordering: .sequentiallyConsistent) else { return }
        reply()
    }

    /// Closes the gate and waits for the replies passing it, each one `writev` long. Called on the session's
    /// own thread, never on a task's.
    func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        while passing.load(ordering: .sequentiallyConsistent) > 0 { ThisProcess.sleepBlocking(for: .microseconds(50)) }
    }
}
