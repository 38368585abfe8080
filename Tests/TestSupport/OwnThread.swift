import Foundation

/// Runs `body` on a new thread and waits for it without holding a cooperative thread.
///
/// For a test that calls a blocking API as its real callers do (a FUSE worker owns its thread), or that must
/// act while another part of the test holds the cooperative pool: on two cores the pool has two threads, and a
/// blocked one is half of it.
public func onThreadOfItsOwn<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async -> Result<R, any Error> {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: Result { try body() }) }
    }
}
