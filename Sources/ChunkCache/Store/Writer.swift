import Dispatch
import FileIO
import Foundation
import LMDBKit
import Synchronization

/// The store's one writer in this process: a serial queue on which every write transaction begins and
/// commits, so LMDB's rule that a write transaction stays on its thread holds and async callers never
/// block the cooperative pool (GRDB's `DispatchQueueActor` pattern).
///
/// What it guarantees:
/// - **One at a time, in order.** Transactions and queued work run one after another on one serial queue, in
///   the order they were submitted; a `writeLater` completion runs on the queue right after its
///   transaction, before the next one starts.
/// - **Who may call what.** ``write(durability:reserving:doing:_:)``, ``onQueue(_:)`` and
///   ``writeLater(durability:reserving:evicting:doing:_:completion:)`` from anywhere;
///   ``writeAndWait(durability:reserving:_:)`` only from a blocking thread that is not the writer queue (it
///   waits for the queue, which would wait for itself), never from a task.
/// - **Cancellation.** None: a submitted transaction runs and commits even if the task that waits for it is
///   cancelled; callers check their cancellation before submitting.
/// - The writer never waits for the ``BlockingPool`` (pool jobs may wait for it), so the two cannot deadlock.
///
/// A storage type, so it stays in Store/ (the store keeps its writer); its coordination is the dispatch
/// queue itself.
final class Writer: Sendable {
    private let queue = DispatchQueue(label: "chunkcache.writer", qos: .userInitiated)
    let environment: Environment
    /// A test's probe run on the writer queue after each transaction, committed or not,
    /// given when the store opened; nil in the product.
    private let afterEachTransaction: (@Sendable () -> Void)?

    /// The store's bound (<doc:Contract#12-A-bounded-cache>), consulted around commits; set once when the store opens.
    private let bound = Mutex<(any WriteBound)?>(nil)

    init(environment: Environment, afterEachTransaction: (@Sendable () -> Void)?) {
        self.environment = environment
        self.afterEachTransaction = afterEachTransaction
    }

    /// Pauses between attempts of a download's commit that found the map full: readers' snapshots end in
    /// milliseconds, and with them the hold on the pages eviction freed. On a machine loaded several times
    /// over (the soak test beside a build), a snapshot can last a quarter of a second: the last pauses let
    /// those end too, rather than fail a download that would fit.
    static let mapFullRetries: [Duration] = [
        .milliseconds(2), .milliseconds(10), .milliseconds(50), .milliseconds(200), .milliseconds(500), .seconds(1),
    ]

    /// Keeps the store within `bound` from now on: eviction after commits that pass its high-water mark.
    func bind(_ bound: any WriteBound) { self.bound.withLock { $0 = bound } }

    /// Who hears of commits that logged changes; set once when the store opens.
    private let changeSignal = Mutex<(any CommitSignal)?>(nil)

    /// Wakes the waiters of changes through `signal` after each commit that logged one.
    func signalChanges(through signal: any CommitSignal) { changeSignal.withLock { $0 = signal } }

    /// Runs `work` on the writer queue, outside any transaction (it may run its own), and returns its result.
    func onQueue<R: Sendable>(_ work: @escaping @Sendable () throws -> R) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Runs `work` on the writer queue after what is queued there (an eviction between two writes).
    func enqueue(_ work: @escaping @Sendable () -> Void) { queue.async(execute: work) }

    /// Runs `body` in one write transaction on the writer queue, committing when it returns.
    ///
    /// - Parameter durability: `.deferMeta` for writes that can be made again (chunks downloaded from an
    ///   origin): one flush per commit instead of two; a system crash may undo the transaction, never damage
    ///   the store.
    /// - Parameter reserving: About how many bytes the transaction adds. When they would pass the store's
    ///   bound, eviction makes room first (<doc:Contract#12-A-bounded-cache>), or the write is `insufficientQuota`
    ///   before it begins. A `.deferMeta` write that still finds LMDB's map full makes room and runs once more: its
    ///   `body` must only act on the transaction.
    func write<R: Sendable>(
        durability: Environment.Durability = .full, reserving: Int64 = 0, doing what: String = "writing",
        _ body: @escaping @Sendable (inout WriteTransaction) throws -> R
    ) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(
                    with: Result {
                        try self.transaction(durability: durability, reserving: reserving, doing: what, body)
                    })
            }
        }
    }

    /// Runs `body` in one write transaction from synchronous code, waiting for the writer queue; `durability` and
    /// `reserving` as for ``write(durability:reserving:doing:_:)``.
    @available(*, noasync)
    func writeAndWait<R>(
        durability: Environment.Durability = .full, reserving: Int64 = 0, _ body: (inout WriteTransaction) throws -> R
    ) throws -> R {
        try queue.sync { try transaction(durability: durability, reserving: reserving, body) }
    }

    /// Starts `body` in a write transaction and calls `completion` with its outcome on the writer queue.
    /// `durability` and `reserving` as for ``write(durability:reserving:doing:_:)``; with `evicting` false, no
    /// eviction makes room for it nor follows its commit (a put that could not fit once everything evictable
    /// went must not empty the cache before it fails: the space bound's `couldFit`).
    func writeLater<R: Sendable>(
        durability: Environment.Durability = .full, reserving: Int64 = 0, evicting: Bool = true,
        doing what: String = "writing",
        _ body: @escaping @Sendable (inout WriteTransaction) throws -> R,
        completion: @escaping @Sendable (Result<R, any Error>) -> Void
    ) {
        queue.async {
            completion(
                Result {
                    try self.transaction(
                        durability: durability, reserving: reserving, evicting: evicting, doing: what, body)
                })
        }
    }

    /// One transaction, on the writer queue.
    @available(*, noasync)
    private func transaction<R>(
        durability: Environment.Durability = .full, reserving: Int64 = 0, evicting: Bool = true,
        doing what: String = "writing",
        _ body: (inout WriteTransaction) throws -> R
    ) throws -> R {
        defer { afterEachTransaction?() }
        let bound = self.bound.withLock { $0 }
        let changeSignal = self.changeSignal.withLock { $0 }
        changeSignal?.clearMark()
        if reserving > 0, let bound { try bound.makeRoom(for: reserving, doing: what, evicting: evicting) }
        let result: R
        do {
            result = try environment.write(durability: durability, body)
        } catch let error as LMDBError where error == .mapFull && durability == .deferMeta && bound != nil {
            // The map is full though the live pages left room: pages freed while readers still see older
            // snapshots cannot be reused until those end (a fetch holds one for milliseconds). Evict well
            // below the mark, give the readers a moment, and try again, a few times.
            var attempt = 0
            while true {
                try bound!.makeRoomAfterMapFull(for: max(reserving, 1 << 20), doing: what)
                do {
                    result = try environment.write(durability: durability, body)
                    break
                } catch let again as LMDBError where again == .mapFull && attempt < Self.mapFullRetries.count {
                    ThisProcess.sleepBlocking(for: Self.mapFullRetries[attempt])  // on the writer queue, not a task
                    attempt += 1
                }
            }
        }
        changeSignal?.postIfMarked()
        if evicting { bound?.afterCommit() }
        return result
    }
}
