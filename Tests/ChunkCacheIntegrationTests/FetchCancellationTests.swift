import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChunkCache

/// A16 on every path: Task cancellation stops an inline (small) fetch and a handed-over (large) one.
@Suite struct FetchCancellationTests {
    /// Starts a fetch of `range` whose first chunk cancels the fetch's own task, then checks that the fetch
    /// stops with `userCancelled` and leaves no temp file. No sleeps and no waits: the store's probe
    /// (``EngineProbes/beforeChunk``) cancels at a known point once the fetch's task is known, and the
    /// cancellation handler sets the flag the assembler checks right after the probe.
    static func cancelMidFetch(range: ByteRange, size: Int) async throws {
        try await withTemporaryDirectory { dir in
            let handle = Mutex<Task<FetchResult, any Error>?>(nil)
            let hooked = Atomic(0)
            let cache = try await makeCache(
                dir,
                probes: EngineProbes(beforeChunk: { _ in
                    guard let task = handle.withLock({ $0 }) else { return }  // not the fetch's chunks yet
                    if hooked.wrappingAdd(1, ordering: .relaxed).oldValue == 0 { task.cancel() }
                }))
            let id = ItemIdentifier(domain: "d", "file")
            try await put(cache, TestData.text(count: size, seed: 5), as: id, in: dir)
            let (published, publish) = AsyncStream<Void>.makeStream()
            let task = Task {
                for await _ in published { break }  // the probe needs the handle
                return try await cache.fetch(
                    id, version: nil, minimalRange: range, alignment: 4096, options: [], request: FetchRequest(),
                    destination: .handOff)
            }
            handle.withLock { $0 = task }
            publish.yield()
            #expect(await errorCode { _ = try await task.value } == .userCancelled)
            #expect(hooked.load(ordering: .relaxed) >= 1, "the fetch reached its chunks before it was cancelled")
            #expect(try FileManager.default.contentsOfDirectory(atPath: cache.temporaryDirectoryURL.path).isEmpty)
        }
    }

    @Test(
        "A16: cancelling the Task of a small fetch that runs inline stops it with userCancelled and no file",
        arguments: [64 << 10, 1 << 20])
    func smallInlineFetch(length: Int) async throws {
        #expect(Int64(length) <= FetchThresholds.inlineBytes, "the range runs on the caller's thread")
        try await Self.cancelMidFetch(range: ByteRange(location: 0, length: Int64(length)), size: 2 << 20)
    }

    @Test(
        "A16: cancelling the Task of a large fetch handed to the blocking pool stops it with userCancelled and no file")
    func largeHandedOverFetch() async throws {
        try await Self.cancelMidFetch(range: ByteRange(location: 0, length: 6 << 20), size: 6 << 20)
    }
}
