import Benchmark
import ChunkCache
import Dispatch
import FileIO
import Foundation

// Every engine figure has its floors measured in the same run, under names that sort next to it:
//
//   partial <range> <data>: engine fetch | engine fetch, completion handler (64KiB) | floor decode zstd-3 |
//                           floor raw pread+pwrite | floor raw pread+pwrite, chunk-rounded
//   partial overhead:       the async hop the engine's API makes, alone
//   full <size> binaries:   engine fetchContents | floor copy_file_range | floor decode 1 thread | …
//   ingest <size> binaries: engine put | floor SHA-256+zstd-3 <n> threads | floor zstd -3 -T0 CLI process
//
// Setup (data sets, stores, compressed frames, warming the page cache) runs in the setup closures or before
// `startMeasurement()`, never in the measured region. Run `Benchmarks/run.sh` (or `--smoke` for a quick
// check). Data and stores live under /tmp/chunkcache-bench, never in the repository.
let benchmarks: @Sendable () -> Void = {
    let settings = BenchSettings.current

    // MARK: - Warm partial fetch: 64 KiB chunks, 4 KiB alignment, a random aligned range per iteration.

    for dataset in [Dataset.text, .random] {
        for length in [4 << 10, 64 << 10, 1 << 20] {
            let group = "partial \(sizeLabel(Int64(length))) \(dataset.rawValue)"

            // The engine: fetchPartialContents, then unlink the hand-off file (the unlink is measured, as the
            // floors measure theirs).
            Benchmark("\(group): engine fetch", configuration: settings.partialFetch) { benchmark, state in
                try await state.iterate(benchmark)
            } setup: {
                try PartialFetch(store: try await PreparedStore.open(dataset), length: length)
            }

            // The File Provider-shaped completion-handler API, for the 64 KiB case: the same fetch behind a
            // Task and a Progress. Wall clock also includes waking this benchmark's thread; "to completion"
            // stops when the completion handler has unlinked the file.
            if length == 64 << 10 {
                Benchmark("\(group): engine fetch, completion handler", configuration: settings.partialFetchCompletion) { benchmark, state in
                    try state.iterateWithCompletionHandler(benchmark)
                } setup: {
                    try PartialFetch(store: try await PreparedStore.open(dataset), length: length)
                }
            }

            Benchmark("\(group): floor raw pread+pwrite", configuration: settings.partialFetch) { benchmark, state in
                try state.iterate(benchmark)
            } setup: {
                try RawCopyFloor(store: try await PreparedStore.open(dataset), length: length)
            }

            Benchmark("\(group): floor raw pread+pwrite, chunk-rounded", configuration: settings.partialFetch) { benchmark, state in
                try state.iterate(benchmark)
            } setup: {
                try RawCopyFloor(store: try await PreparedStore.open(dataset), length: length, roundingToChunks: true)
            }

            Benchmark("\(group): floor decode zstd-3", configuration: settings.partialFetch) { benchmark, state in
                try state.iterate(benchmark)
            } setup: {
                try DecodeFloor(store: try await PreparedStore.open(dataset), length: length)
            }
        }
    }

    // What the engine's async API costs before any work: the hop its `runBlocking` makes from the calling
    // task to a Dispatch global queue and back (a checked continuation resumed from the queue).
    Benchmark("partial overhead: async hop Task to DispatchQueue.global and back", configuration: settings.partialFetch) { benchmark in
        benchmark.startMeasurement()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global(qos: .userInitiated).async { continuation.resume() }
        }
        benchmark.stopMeasurement()
    }

    // MARK: - Full fetch of the large data set.

    let large = "\(sizeLabel(Dataset.binaries.size)) binaries"

    Benchmark("full \(large): engine fetchContents", configuration: settings.bulk()) { benchmark, state in
        try await state.iterate(benchmark)
    } setup: {
        try FullFetch(store: try await PreparedStore.open(.binaries))
    }

    Benchmark("full \(large): floor copy_file_range", configuration: settings.bulk()) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try CopyRangeFloor(store: try await PreparedStore.open(.binaries))
    }

    Benchmark("full \(large): floor decode 1 thread", configuration: settings.bulk()) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try WholeFileDecodeFloor(store: try await PreparedStore.open(.binaries), writing: false)
    }

    Benchmark("full \(large): floor decode+pwrite 1 thread", configuration: settings.bulk()) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try WholeFileDecodeFloor(store: try await PreparedStore.open(.binaries), writing: true)
    }

    // MARK: - Ingest (put) of the large data set into a fresh store each iteration.

    Benchmark("ingest \(large): engine put", configuration: settings.bulk(extraMetrics: [.storedMegabytes])) { benchmark, state in
        try await state.iterate(benchmark)
    } setup: {
        try Ingest(dataset: .binaries)
    }

    let cores = ProcessInfo.processInfo.activeProcessorCount
    Benchmark("ingest \(large): floor SHA-256+zstd-3 \(cores) threads", configuration: settings.bulk(extraMetrics: [.storedMegabytes])) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try HashCompressFloor(dataset: .binaries)
    }

    Benchmark("ingest \(large): floor zstd -3 -T0 CLI process", configuration: settings.bulk()) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try ZstdCommandFloor(dataset: .binaries)
    }
}

// MARK: - Engine benchmarks

/// `fetchPartialContents` of a random 4 KiB-aligned range of a warm store, then `unlink` of the hand-off file.
final class PartialFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: PreparedStore
    let length: Int64
    var ranges: RangeSequence

    init(store: PreparedStore, length: Int) throws {
        self.store = store
        self.length = Int64(length)
        ranges = RangeSequence(size: store.dataset.size, length: Int64(length), seed: partialSeed(store.dataset))
        try store.warm()
    }

    func iterate(_ benchmark: Benchmark) async throws {
        let range = ByteRange(location: ranges.next(), length: length)
        benchmark.startMeasurement()
        let result = try await store.cache.fetchPartialContents(
            for: store.item, version: store.version, minimalRange: range, aligningTo: 4096)
        result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        benchmark.stopMeasurement()
    }
}

extension PartialFetch {
    /// The completion-handler `fetchPartialContents`: waits for the handler, which unlinks the file and notes
    /// the time, recorded as ``BenchmarkMetric/microsecondsToCompletion``.
    func iterateWithCompletionHandler(_ benchmark: Benchmark) throws {
        let range = ByteRange(location: ranges.next(), length: length)
        let outcome = CompletionOutcome()
        benchmark.startMeasurement()
        let start = ContinuousClock.now
        store.cache.fetchPartialContents(
            for: store.item, version: store.version, request: FetchRequest(), minimalRange: range, aligningTo: 4096,
            options: []
        ) { url, _, _, _, error in
            url?.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
            outcome.finish(error: error)
        }
        outcome.done.wait()
        benchmark.stopMeasurement()
        if let error = outcome.error { throw error }
        let elapsed = start.duration(to: outcome.finished)
        benchmark.measurement(.microsecondsToCompletion, Int(elapsed / .microseconds(1)))
    }
}

/// What a completion handler reports, handed to the waiting benchmark thread by the semaphore.
final class CompletionOutcome: @unchecked Sendable {  // written before `done.signal()`, read after `done.wait()`
    let done = DispatchSemaphore(value: 0)
    private(set) var finished = ContinuousClock.now
    private(set) var error: (any Error)?

    func finish(error: (any Error)?) {
        finished = .now
        self.error = error
        done.signal()
    }
}

/// `fetchContents` of the whole large item, then `unlink` of the hand-off file.
final class FullFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: PreparedStore

    init(store: PreparedStore) throws {
        self.store = store
        try store.warm()
    }

    func iterate(_ benchmark: Benchmark) async throws {
        try await benchmark.measureBulk(bytes: store.dataset.size) {
            let result = try await store.cache.fetchContents(for: store.item, version: store.version)
            result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        }
    }
}

/// `put` of the large data set into a new, empty store (opened before the measurement, deleted after it), so
/// every iteration hashes, compresses and commits every chunk.
final class Ingest: @unchecked Sendable {  // used by one iteration at a time
    let dataset: Dataset
    let path: String

    init(dataset: Dataset) throws {
        self.dataset = dataset
        path = try dataset.prepare()
        try createDirectory(BenchSettings.current.workDirectory)
        try warmPageCache(path)
    }

    func iterate(_ benchmark: Benchmark) async throws {
        let directory = "\(BenchSettings.current.workDirectory)/ingest-\(getpid())-\(benchmark.currentIteration)"
        try? FileManager.default.removeItem(atPath: directory)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var cache: ChunkCache? = try await ChunkCache.open(at: directory, creatingWith: .standard)
        var put: ChunkCache.PutResult?
        try await benchmark.measureBulk(bytes: dataset.size) {
            put = try await cache!.put(fileAt: path, as: ItemIdentifier(domain: "bench", "ingest"))
        }
        cache = nil  // closes the environment (and unmaps data.mdb) before its directory goes
        guard let put, put.item.documentSize == dataset.size else {
            throw BenchmarkSetupError("put stored \(put?.item.documentSize ?? 0) bytes, not \(dataset.size)")
        }
        benchmark.measurement(.storedMegabytes, Int(put.storedBytes / 1_000_000))
    }
}
