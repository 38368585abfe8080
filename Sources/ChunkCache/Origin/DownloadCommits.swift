import LMDBKit
import Synchronization

/// The commits of downloaded chunks, gathered: while one transaction commits, the batches that arrive wait,
/// and the next transaction records them all (group commit).
///
/// Why: each commit of downloads flushes the data file once (`.deferMeta`, about 3 ms on this machine's disk),
/// and the writer does one at a time. A prefetch of a database's scattered pages ends dozens of downloads at
/// once, each with a small last batch: one flush apiece made the writer the bottleneck, and the chunks'
/// flights (which end at their commit) waited in its queue. Gathered, they cost one flush per round.
///
/// What holds:
/// - A batch's records are committed exactly as alone: each body acts only on the transaction, in the order
///   the batches came.
/// - A failure is a batch's own: when a gathered transaction fails, each of its batches is tried again in a
///   transaction of its own, so one batch that cannot be stored (a failing probe, a full store) fails no
///   other.
/// - No batch waits for more than the transaction before it.
final class DownloadCommits: Sendable {
    /// One batch's records and its waiter.
    private struct Batch: Sendable {
        let bytes: Int64
        let body: @Sendable (inout WriteTransaction) throws -> Void
        let done: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiting: [Batch] = []
        var committing = false
    }

    private let state = Mutex<State>(State())

    /// Records a batch of downloaded chunks in a write transaction, with the batches that come while the one
    /// before commits; `bytes` is what it adds (eviction makes room first, <doc:Contract#12-A-bounded-cache>).
    func commit(
        on writer: Writer, reserving bytes: Int64, _ body: @escaping @Sendable (inout WriteTransaction) throws -> Void
    ) async throws {
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            let starts = state.withLock { state in
                state.waiting.append(Batch(bytes: bytes, body: body, done: done))
                defer { state.committing = true }
                return !state.committing
            }
            if starts { commitWaiting(on: writer) }
        }
    }

    /// Commits every batch waiting in one transaction, then the ones that came meanwhile, until none is left.
    private func commitWaiting(on writer: Writer) {
        let batches = state.withLock { state in
            defer { state.waiting.removeAll() }
            if state.waiting.isEmpty { state.committing = false }
            return state.waiting
        }
        guard !batches.isEmpty else { return }
        writer.writeLater(
            durability: .deferMeta, reserving: batches.reduce(0) { $0 + $1.bytes }, doing: "storing downloaded chunks",
            { txn in
                for batch in batches { try batch.body(&txn) }
            },
            completion: { result in
                switch result {
                case .success:
                    for batch in batches { batch.done.resume() }
                case .failure(let error) where batches.count == 1:
                    batches[0].done.resume(throwing: error)
                case .failure:
                    // Each on its own: the failure is one batch's, the others' records stand.
                    for batch in batches { self.commitAlone(batch, on: writer) }
                }
                self.commitWaiting(on: writer)
            })
    }

    /// One batch in a transaction of its own, queued on the writer behind what is there.
    private func commitAlone(_ batch: Batch, on writer: Writer) {
        writer.writeLater(
            durability: .deferMeta, reserving: batch.bytes, doing: "storing downloaded chunks", batch.body,
            completion: { batch.done.resume(with: $0) })
    }
}
