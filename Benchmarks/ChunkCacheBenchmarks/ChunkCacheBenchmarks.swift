import Benchmark
import ChunkCache
import ChunkCacheBench
import Dispatch
import FileIO
import Foundation

// Every engine figure has its floors measured in the same run, under names that sort next to it:
//
//   partial: <role> (align: A, chunk: C, data: D, range: R)   warm partial fetch, every combination of
//       range 4KiB/64KiB/1MiB × alignment 4KiB/1MiB × data text/random × chunk 16KiB/64KiB/256KiB;
//       roles: engine fetch | engine fetch, completion handler (64KiB chunks, 4KiB alignment, 64KiB range) |
//       floor raw pread+pwrite, retrieved range | floor decode zstd-3 (the same chunks, one thread);
//   partial: floor raw pread+pwrite (data: D, range: R)       the requested bytes only (chunk and alignment
//       do not matter to it)
//   partial overhead:       the async hop the engine's API makes, alone
//   full <size> binaries:   engine fetchContents | floor copy_file_range | floor decode 1 thread | …
//   ingest <size> binaries: engine put | floor SHA-256+zstd-3 <n> threads | floor zstd -3 -T0 CLI process
//   destination <range> text <fs>: engine hand-off | engine clone (<strategy>)   64KiB range or whole file
//   store <size>: engine fetch 64KiB <text|random>            the same probe items in stores of 0.1/1/10 GiB
//
// Setup (data sets, stores, compressed frames, warming the page cache) runs in the setup closures or before
// `startMeasurement()`, never in the measured region. Run `Benchmarks/run.sh` (or `--smoke` for a quick
// check). Data and stores live under /tmp/chunkcache-bench, never in the repository.
let benchmarks: @Sendable () -> Void = {
    let settings = BenchSettings.current

    // MARK: - Warm partial fetch: a random 4 KiB-aligned range per iteration, fetched with `aligningTo:`.

    for partial in PartialCase.all {
        let base = partial.isDefault ? settings.partialFetch : settings.partialFetchVariant
        var configuration = settings.engineFetch(base, sharesWork: partial.mayShareWork)
        configuration.tags = partial.tags

        // The engine: fetchPartialContents, then unlink the hand-off file (the unlink is measured, as the
        // floors measure theirs).
        Benchmark("partial: engine fetch", configuration: configuration) { benchmark, state in
            try await state.iterate(benchmark)
        } setup: {
            try await PartialCaseFetch(partial)
        }

        // The File Provider-shaped completion-handler API, for the 64 KiB case: the same fetch behind a Task
        // and a Progress. Wall clock also includes waking this benchmark's thread; "to completion" stops when
        // the completion handler has unlinked the file.
        if partial.isDefault && partial.length == 64 << 10 {
            var completion = settings.engineFetch(settings.partialFetchCompletion)
            completion.tags = partial.tags
            Benchmark("partial: engine fetch, completion handler", configuration: completion) { benchmark, state in
                try state.iterateWithCompletionHandler(benchmark)
            } setup: {
                try PartialFetch(store: try await PreparedStore.open(partial.dataset), length: Int(partial.length))
            }
        }

        var floor = base
        floor.tags = partial.tags
        Benchmark("partial: floor raw pread+pwrite, retrieved range", configuration: floor) { benchmark, state in
            try state.iterate(benchmark)
        } setup: {
            try await PartialRawFloor(partial, retrieved: true)
        }

        Benchmark("partial: floor decode zstd-3", configuration: floor) { benchmark, state in
            try state.iterate(benchmark)
        } setup: {
            try await PartialDecodeFloor(partial)
        }

        // The requested bytes alone, once per range length and data set.
        if partial.isDefault {
            var requested = settings.partialFetch
            requested.tags = partial.requestedRangeTags
            Benchmark("partial: floor raw pread+pwrite", configuration: requested) { benchmark, state in
                try state.iterate(benchmark)
            } setup: {
                try await PartialRawFloor(partial, retrieved: false)
            }
        }
    }

    // What the engine's async API costs before any work: the hop its `runBlocking` makes from the calling
    // task to a Dispatch global queue and back (a checked continuation resumed from the queue).
    Benchmark("partial overhead: async hop Task to DispatchQueue.global and back", configuration: settings.partialFetch)
    { benchmark in
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

    Benchmark("ingest \(large): engine put", configuration: settings.bulk(extraMetrics: [.storedMegabytes])) {
        benchmark, state in
        try await state.iterate(benchmark)
    } setup: {
        try Ingest(dataset: .binaries)
    }

    let cores = ProcessInfo.processInfo.activeProcessorCount
    Benchmark(
        "ingest \(large): floor SHA-256+zstd-3 \(cores) threads",
        configuration: settings.bulk(extraMetrics: [.storedMegabytes])
    ) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try HashCompressFloor(dataset: .binaries)
    }

    Benchmark("ingest \(large): floor zstd -3 -T0 CLI process", configuration: settings.bulk()) { benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try ZstdCommandFloor(dataset: .binaries)
    }

    // MARK: - Hand-off versus clone to a destination, on each filesystem at hand.

    for filesystem in CloneFilesystem.available() {
        for length in [Int64(64 << 10), nil] {
            let label = length.map(sizeLabel) ?? "whole \(sizeLabel(Dataset.text.size))"
            let group = "destination \(label) text \(filesystem.label)"
            let configuration = settings.destinationFetch(whole: length == nil)
            Benchmark("\(group): engine hand-off", configuration: configuration) { benchmark, state in
                try await state.iterate(benchmark)
            } setup: {
                try await DestinationFetch(filesystem: filesystem, length: length, clone: false)
            }
            Benchmark("\(group): engine clone (\(filesystem.strategy.rawValue))", configuration: configuration) {
                benchmark, state in
                try await state.iterate(benchmark)
            } setup: {
                try await DestinationFetch(filesystem: filesystem, length: length, clone: true)
            }
        }
    }

    // MARK: - The cold path: bytes from an origin (nginx on loopback, and 20 ms away through a proxy).

    registerColdBenchmarks(settings)

    // MARK: - The catalogue: pages, changes, and what recording last use costs a fetch.

    registerCatalogueBenchmarks(settings)

    // MARK: - Fetch latency against the store's size (64 KiB range, 64 KiB chunks, warm).

    for (label, bytes) in settings.scaleSizes {
        for probe in ScaleProbe.allCases {
            Benchmark("store \(label): engine fetch 64KiB \(probe.rawValue)", configuration: settings.scaleFetch) {
                benchmark, state in
                try await state.iterate(benchmark)
            } setup: {
                try await ScaleFetch(totalSize: bytes, probe: probe)
            }
        }
    }
}

// MARK: - Engine benchmarks

/// The completion-handler `fetchPartialContents` of a random 4 KiB-aligned range of a warm store.
final class PartialFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: PreparedStore
    let length: Int64
    var ranges: RangeSampler

    init(store: PreparedStore, length: Int) throws {
        self.store = store
        self.length = Int64(length)
        ranges = RangeSampler(size: store.dataset.size, length: Int64(length), seed: partialSeed(store.dataset))
        try store.warm()
    }

}

extension PartialFetch {
    /// The completion-handler `fetchPartialContents`: waits for the handler, which unlinks the file and notes
    /// the time, recorded as ``BenchmarkMetric/microsecondsToCompletion``.
    func iterateWithCompletionHandler(_ benchmark: Benchmark) throws {
        let range = ByteRange(location: ranges.nextLocation(), length: length)
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
        try PageCache.warm(fileAt: path)
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
