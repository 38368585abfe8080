import Dispatch

extension ChunkCache {
    /// The synchronous form of ``throughOrigin(_:version:firstMiss:_:)``, for callers that own their thread: each fill
    /// runs as a task the thread waits for.
    @available(*, noasync)
    func throughOriginBlocking<R: ServedBytes & Sendable>(
        _ request: ColdRequest, version: [UInt8]?, _ attempt: ([UInt8]?) throws -> R
    ) throws -> R {
        var version = version
        var readAheadDone = false
        var rounds = ColdRounds(item: request.item)
        // Eviction spares what this fetch downloads until it has read it (PolicyProtection); a warm fetch holds nothing.
        defer { if rounds.wentToOrigin { request.claim.end() } }
        while true {
            do {
                let served = try attempt(version)
                if !readAheadDone { readAhead(after: served, request.item) }
                return served
            } catch var cold as ColdMiss {
                while true {
                    try rounds.count(cold)
                    let step = try Self.waitFor { [readAheadDone, cold] in
                        var done = readAheadDone
                        let step = try await self.coldFill(cold, request, readAheadDone: &done)
                        return (step, done)
                    }
                    readAheadDone = step.1
                    if case .serve(let discovered) = step.0 { version = discovered }
                    precondition({ if case .handOver = step.0 { return false } else { return true } }(), "a blocking fetch asks for no hand-over")
                    guard case .moveOn = step.0 else { break }
                    cold = .discover(pinned: nil, range: request.minimal, refresh: true)
                }
            }
        }
    }

    /// Runs `body` as a task and waits for it on the calling thread, which is not a Swift concurrency thread.
    @available(*, noasync)
    private static func waitFor<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) throws -> R {
        let done = DispatchSemaphore(value: 0)
        let outcome = ResultBox<R>()
        Task {
            outcome.set(await Result { try await body() })
            done.signal()
        }
        done.wait()
        return try outcome.get()
    }
}

/// A result handed from a task to a waiting thread (set once, read after a semaphore: `@unchecked Sendable`).
private final class ResultBox<R>: @unchecked Sendable {
    private var result: Result<R, any Error>?
    func set(_ result: Result<R, any Error>) { self.result = result }
    func get() throws -> R { try result!.get() }
}

extension Result where Failure == any Error {
    init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
