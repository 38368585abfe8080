import Synchronization

/// A flag that cancellation sets and long loops check between steps.
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
