import Dispatch
import LMDBKit
import Synchronization

/// The store's one writer in this process: a serial queue on which every write transaction begins and
/// commits, so LMDB's rule that a write transaction stays on its thread holds and async callers never
/// block the cooperative pool (GRDB's `DispatchQueueActor` pattern).
final class Writer: Sendable {
    private let queue = DispatchQueue(label: "chunkcache.writer", qos: .userInitiated)
    let environment: Environment
    /// A test hook run on the writer queue after each transaction, committed or not: a test pauses writes
    /// there, between two transactions of an ingest, to act while its pending manifest is on disk.
    let afterEachTransaction = Mutex<(@Sendable () -> Void)?>(nil)

    init(environment: Environment) { self.environment = environment }

    /// Runs `body` in one write transaction on the writer queue, committing when it returns.
    ///
    /// - Parameter durability: `.deferMeta` for writes that can be made again (chunks downloaded from an
    ///   origin): one flush per commit instead of two; a system crash may undo the transaction, never damage
    ///   the store.
    func write<R: Sendable>(
        durability: Environment.Durability = .full, _ body: @escaping @Sendable (inout WriteTransaction) throws -> R
    ) async throws -> R {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.transaction(durability: durability, body) })
            }
        }
    }

    /// Runs `body` in one write transaction from synchronous code, waiting for the writer queue.
    @available(*, noasync)
    func writeAndWait<R>(_ body: (inout WriteTransaction) throws -> R) throws -> R {
        try queue.sync { try transaction(body) }
    }

    /// Starts `body` in a write transaction and calls `completion` with its outcome on the writer queue.
    func writeLater(_ body: @escaping @Sendable (inout WriteTransaction) throws -> Void,
                    completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        queue.async { completion(Result { try self.transaction(body) }) }
    }

    /// One transaction, on the writer queue.
    @available(*, noasync)
    private func transaction<R>(durability: Environment.Durability = .full, _ body: (inout WriteTransaction) throws -> R) throws -> R {
        defer { afterEachTransaction.withLock { $0 }?() }
        return try environment.write(durability: durability, body)
    }
}
