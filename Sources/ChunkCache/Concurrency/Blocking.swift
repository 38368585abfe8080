/// Runs blocking work (system calls, LMDB, zstd) on ``BlockingPool/shared``, not the cooperative pool, turning
/// task cancellation into a flag the work checks between steps. Every error leaves as a ``CacheError``
/// whose message names `what` was being done (built only when an error needs it) and the store at `storePath`.
func runBlocking<R: Sendable>(
    doing what: @escaping @Sendable @autoclosure () -> String, store storePath: String,
    _ body: @escaping @Sendable (CancellationFlag) throws -> R
) async throws -> R {
    let cancellation = CancellationFlag()
    if Task.isCancelled { throw CacheError(.userCancelled, "\(what()) was cancelled") }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            BlockingPool.shared.submit {
                let result = Result {
                    do {
                        return try body(cancellation)
                    } catch {
                        throw CacheError.wrap(error, store: storePath, doing: what())
                    }
                }
                // Consumed, so the pool thread holds nothing of the result (a store, say) once the caller runs.
                continuation.resume(with: consume result)
            }
        }
    } onCancel: {
        cancellation.cancel()
    }
}

func runBlocking<R: Sendable>(
    doing what: @escaping @Sendable @autoclosure () -> String, store storePath: String,
    _ body: @escaping @Sendable () throws -> R
) async throws -> R {
    try await runBlocking(doing: what(), store: storePath) { (_: CancellationFlag) in try body() }
}
