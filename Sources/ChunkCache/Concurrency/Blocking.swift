import Dispatch
import Foundation

/// Runs blocking work (system calls, LMDB, zstd) on a dispatch queue, not the cooperative pool, turning
/// task cancellation into a flag the work checks between steps. Every error leaves as a ``CacheError``.
func runBlocking<R: Sendable>(_ body: @escaping @Sendable (CancellationFlag) throws -> R) async throws -> R {
    let cancellation = CancellationFlag()
    if Task.isCancelled { throw CacheError(.userCancelled, "the operation was cancelled") }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    do { return try body(cancellation) } catch { throw CacheError.wrap(error, store: "", doing: "the operation") }
                })
            }
        }
    } onCancel: {
        cancellation.cancel()
    }
}

func runBlocking<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await runBlocking { (_: CancellationFlag) in try body() }
}
