import Benchmark
import ChunkCache
import ChunkCacheBench
import Foundation

// Warm partial fetch over every combination of range length × alignment × data × chunk size, and its floors
// on the same ranges. The floors are ChunkCacheBench's (the ones `chunkcache-bench read-latency` measures),
// given the case's chunk size and alignment.

/// One combination of the warm partial-fetch matrix.
struct PartialCase: Sendable {
    let dataset: Dataset
    let length: Int64
    /// The `aligningTo:` of the fetch: the retrieved range is rounded out to `max(alignment, chunkSize)`.
    let alignment: Int64
    let chunkShift: Int

    var chunkSize: Int64 { Int64(1) << chunkShift }

    /// Whether this is the combination the README and the goals speak of (64 KiB chunks, 4 KiB alignment):
    /// it gets the longer run.
    var isDefault: Bool { chunkShift == 16 && alignment == 4096 }

    /// package-benchmark appends these to the name as `(align: …, chunk: …, data: …, range: …)`.
    var tags: [String: String] {
        [
            "range": sizeLabel(length), "align": sizeLabel(alignment), "chunk": sizeLabel(chunkSize),
            "data": dataset.rawValue,
        ]
    }

    /// The tags of the floor that does not depend on the chunk size or the alignment.
    var requestedRangeTags: [String: String] { ["range": sizeLabel(length), "data": dataset.rawValue] }

    /// The range starts: random, 4 KiB-aligned, the same sequence for every benchmark of one range length and
    /// data set, whatever the chunk size and alignment.
    func ranges() -> RangeSampler {
        RangeSampler(size: dataset.size, length: length, seed: partialSeed(dataset))
    }

    /// The most bytes a retrieved range can span: a range starting 4 KiB short of a unit's end, rounded out
    /// to whole units of `max(alignment, chunkSize)`.
    var largestRetrieved: Int {
        let unit = max(alignment, chunkSize)
        return Int(min(dataset.size, (unit - 4096 + length + unit - 1) / unit * unit))
    }

    /// Whether a fetch of this case can retrieve enough to be shared with a helper thread (the engine's
    /// `FetchThresholds.parallelBytes`, 256 KiB, for compressed chunks).
    var mayShareWork: Bool { dataset == .text && largestRetrieved >= 256 << 10 }

    static let chunkShifts = [14, 16, 18]
    static let lengths: [Int64] = [4 << 10, 64 << 10, 1 << 20]
    static let alignments: [Int64] = [4 << 10, 1 << 20]

    /// Every combination, in the order the tables print them.
    static var all: [PartialCase] {
        var cases: [PartialCase] = []
        for length in lengths {
            for dataset in [Dataset.text, .random] {
                for shift in chunkShifts {
                    for alignment in alignments {
                        cases.append(
                            PartialCase(dataset: dataset, length: length, alignment: alignment, chunkShift: shift))
                    }
                }
            }
        }
        return cases
    }
}

extension PreparedStore {
    /// The store of `dataset` with `chunkShift`-sized chunks (``PreparedStore/open(_:)`` for 64 KiB).
    static func open(_ dataset: Dataset, chunkShift: Int) async throws -> PreparedStore {
        if chunkShift == 16 { return try await open(dataset) }
        let layout = try ChunkLayout(chunkSize: 1 << chunkShift)
        let settings = StoreSettings(layout: layout, maxSize: StoreSettings.standard.maxSize)
        return try await open(
            dataset,
            directory:
                "\(BenchSettings.current.storesDirectory)/\(dataset.rawValue)-\(dataset.size)-c\(sizeLabel(Int64(1) << chunkShift))",
            settings: settings)
    }
}

// MARK: - Engine

/// `fetchPartialContents(…, aligningTo:)` of a random range of a warm store, then `unlink` of the hand-off
/// file; checks outside the measurement that the engine retrieved the range the floors copy.
final class PartialCaseFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: PreparedStore
    let partial: PartialCase
    var ranges: RangeSampler
    /// The unmeasured ranges fetched before each measured one (drawn apart, so `ranges` stays the floors').
    var primers: RangeSampler

    init(_ partial: PartialCase) async throws {
        store = try await PreparedStore.open(partial.dataset, chunkShift: partial.chunkShift)
        guard store.cache.layout.chunkSize == Int(partial.chunkSize) else {
            throw BenchmarkSetupError(
                "the store at \(store.cache.path) has \(store.cache.layout.chunkSize)-byte chunks, not \(partial.chunkSize)"
            )
        }
        self.partial = partial
        ranges = partial.ranges()
        primers = RangeSampler(size: partial.dataset.size, length: partial.length, seed: ~partialSeed(partial.dataset))
        try store.warm()
    }

    func iterate(_ benchmark: Benchmark) async throws {
        try await store.cache.prime(
            store.item, version: store.version,
            range: ByteRange(location: primers.nextLocation(), length: partial.length),
            alignment: Int(partial.alignment))
        let range = ByteRange(location: ranges.nextLocation(), length: partial.length)
        let faults = minorPageFaultCount()
        benchmark.startMeasurement()
        let result = try await store.cache.fetchPartialContents(
            for: store.item, version: store.version, minimalRange: range, aligningTo: Int(partial.alignment))
        result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        benchmark.stopMeasurement()
        benchmark.measurement(.minorPageFaults, minorPageFaultCount() - faults)
        let expected = store.cache.layout.retrievedRange(
            for: range, aligningTo: partial.alignment, length: partial.dataset.size)
        guard result.retrievedRange == expected else {
            throw BenchmarkSetupError(
                "the engine retrieved \(result.retrievedRange) for \(range), the floors \(expected)")
        }
    }
}

extension ChunkCache {
    /// One unmeasured fetch of `range`, its file unlinked, right before a measured one.
    ///
    /// package-benchmark runs each iteration of an async benchmark in a new Task behind a Dispatch hop, so a
    /// measured fetch would start on a just-woken thread with cold caches while the floors loop hot on one
    /// thread. Fetching another range on this thread first puts both on the same footing.
    func prime(_ item: ItemIdentifier, version: ItemVersion?, range: ByteRange, alignment: Int) async throws {
        try await fetchPartialContents(for: item, version: version, minimalRange: range, aligningTo: alignment)
            .url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
    }
}

// MARK: - Floors

/// Raw floor on a partial case (ChunkCacheBench's ``RawCopyFloor``): temp file (`O_CREAT | O_EXCL`) in the
/// store's temp directory, `ftruncate` to the item size, `pread` from the page-cached uncompressed data file,
/// `pwrite` at the same offset, `close`, `unlink`. Of the requested range (what the caller needs: depends on
/// neither chunk size nor alignment), or of the range the engine retrieves (the same bytes the engine writes).
final class PartialRawFloor: @unchecked Sendable {  // used by one iteration at a time
    let partial: PartialCase
    let floor: RawCopyFloor
    var ranges: RangeSampler

    init(_ partial: PartialCase, retrieved: Bool) async throws {
        let store = try await PreparedStore.open(partial.dataset, chunkShift: retrieved ? partial.chunkShift : 16)
        self.partial = partial
        floor = try RawCopyFloor(
            file: partial.dataset.path, layout: store.cache.layout, temporaryDirectory: store.temporaryDirectory,
            maximumLength: Int(partial.length), roundingToChunks: retrieved, aligningTo: Int(partial.alignment))
        ranges = partial.ranges()
        try PageCache.warm(fileAt: partial.dataset.path)
    }

    func iterate(_ benchmark: Benchmark) throws {
        let minimal = ByteRange(location: ranges.nextLocation(), length: partial.length)
        benchmark.startMeasurement()
        try floor.fetch(minimal)
        benchmark.stopMeasurement()
    }
}

/// Decode floor on a partial case (ChunkCacheBench's ``DecodeFloor``): the raw floor's temp file, then
/// one-thread zstd decoding (one reused context) of the level-3 frames, held in memory, of every chunk of the
/// range the engine retrieves (every chunk decoded, whether or not compression paid), and one `pwritev` of
/// that whole range.
final class PartialDecodeFloor: @unchecked Sendable {  // used by one iteration at a time
    let partial: PartialCase
    let floor: DecodeFloor
    var ranges: RangeSampler

    init(_ partial: PartialCase) async throws {
        let store = try await PreparedStore.open(partial.dataset, chunkShift: partial.chunkShift)
        self.partial = partial
        floor = try DecodeFloor(
            file: partial.dataset.path, layout: store.cache.layout, temporaryDirectory: store.temporaryDirectory,
            maximumLength: Int(partial.length), level: 3, keepingIncompressibleChunksRaw: false, roundingToChunks: true,
            aligningTo: Int(partial.alignment))
        try floor.prepareWholeFile()
        ranges = partial.ranges()
    }

    func iterate(_ benchmark: Benchmark) throws {
        let minimal = ByteRange(location: ranges.nextLocation(), length: partial.length)
        benchmark.startMeasurement()
        try floor.fetch(minimal)
        benchmark.stopMeasurement()
    }
}
