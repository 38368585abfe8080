import Synchronization

/// Whether the write transaction under way bumped a domain's version (or removed a domain): set by
/// ``WriteTransaction/finish(_:_:)`` and ``WriteTransaction/bump(_:named:_:)``, read by the writer once the
/// transaction commits. Set and taken on the writer queue only, one transaction at a time, so a relaxed
/// atomic orders enough; a mark of a transaction that did not commit is cleared before the next.
final class ChangeMarks: Sendable {
    private let marked = Atomic<Bool>(false)

    func mark() { marked.store(true, ordering: .relaxed) }

    /// Whether a change was marked since the last call; clears the mark.
    func take() -> Bool { marked.exchange(false, ordering: .relaxed) }
}
