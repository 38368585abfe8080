import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs one job on the calling thread and on helper threads of a global queue, and returns as soon as the
/// calling thread has finished it and no helper is still inside it.
///
/// A helper that wakes after that skips the job. `DispatchQueue.concurrentPerform` instead waits for every
/// helper it woke to run and leave, however late it wakes (30-150 µs here, for a job of a few hundred). The
/// job must share its work out itself (for example by claiming pieces from an atomic counter) so that
/// whichever threads turn up finish it.
final class SharedWork: Sendable {
    private let inside = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)
    private let body: @Sendable () -> Void

    private init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    /// Runs `body` on this thread and offers it to `helpers` threads of the global queue at `qos`.
    /// When this returns, `body` is running nowhere and will not start again.
    static func run(helpers: Int, qos: DispatchQoS.QoSClass = .userInitiated, _ body: @escaping @Sendable () -> Void) {
        let work = SharedWork(body)
        for _ in 0..<helpers {
            DispatchQueue.global(qos: qos).async { work.helperRun() }
        }
        body()
        work.close()
    }

    private func helperRun() {
        // Enter, then look: with `close` storing before it looks, one of the two sees the other.
        inside.wrappingAdd(1, ordering: .sequentiallyConsistent)
        if !closed.load(ordering: .sequentiallyConsistent) { body() }
        inside.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    private func close() {
        closed.store(true, ordering: .sequentiallyConsistent)
        // A helper inside is finishing its last piece on the other core: spin briefly, then back off.
        var spins = 0
        while inside.load(ordering: .sequentiallyConsistent) != 0 {
            spins += 1
            if spins < 20_000 { sched_yield() } else { usleep(50) }
        }
    }
}
