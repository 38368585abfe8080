import Synchronization

/// A flag that cancellation sets and long loops check between steps.
///
/// What it guarantees: once set it stays set, and every later ``check()`` throws; any thread may set or read
/// it. It is relaxed: work checks it between steps and may finish the step it is in, and it orders no
/// other memory.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    init() {}

    func cancel() { flag.store(true, ordering: .relaxed) }

    var isCancelled: Bool { flag.load(ordering: .relaxed) }

    /// Throws `userCancelled` once the flag is set.
    func check() throws(CacheError) {
        if isCancelled { throw CacheError(.userCancelled, "the operation was cancelled") }
    }
}
