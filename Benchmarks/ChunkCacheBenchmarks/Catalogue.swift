import Benchmark
import ChunkCache
import ChunkCacheBench
import FileIO
import Foundation
import SeededRandom

// The catalogue (CONTRACT §11), each figure beside a floor measured in the same run:
//
//   catalogue ls <n>: engine page of 1000 (name)      `enumerateItems` of a folder of n items, page by page
//   catalogue ls <n>: engine page of 1000 (date)
//   catalogue changes <n>: engine batch of 1000       `enumerateChanges` over the n creations a reimport made
//   catalogue <n>: floor readdir+lstat 1000 entries   what listing (or scanning for changes) 1000 entries of
//                                                     the same folder on disk costs: getdents64 and fstatat
//   usage: engine fetch 64KiB, last use recorded and off, interleaved
//                                                     warm 64 KiB fetches of 2048 items, each iteration one
//                                                     with `lastUsedDate` recording and one without, in turn
//                                                     first: the metrics "recorded (ns)" and "off (ns)"
//                                                     (§11: the first ≤ 1.02× the second)
//
// The n-item folder (100,000; 2,000 in a smoke run) is written once under data/ and imported once into
// stores/catalogue-<n>; both are kept across runs.

func registerCatalogueBenchmarks(_ settings: BenchSettings) {
    let count = settings.smoke ? 2_000 : 100_000
    let label = settings.smoke ? "2k" : "100k"
    for sort in [EnumerationPage.initialPageSortedByName, .initialPageSortedByDate] {
        let name = sort == .initialPageSortedByName ? "name" : "date"
        Benchmark("catalogue ls \(label): engine page of 1000 (\(name))", configuration: settings.cataloguePage) {
            benchmark, state in
            try await state.iterate(benchmark)
        } setup: {
            try await CataloguePaging(try await CatalogueStore.open(count: count), first: sort)
        }
    }
    Benchmark("catalogue changes \(label): engine batch of 1000", configuration: settings.cataloguePage) {
        benchmark, state in
        try await state.iterate(benchmark)
    } setup: {
        try await ChangeFollowing(try await CatalogueStore.open(count: count))
    }
    Benchmark("catalogue \(label): floor readdir+lstat 1000 entries", configuration: settings.cataloguePage) {
        benchmark, state in
        try state.iterate(benchmark)
    } setup: {
        try DirectoryScan(try CatalogueStore.tree(count: count))
    }
    Benchmark("usage: engine fetch 64KiB, last use recorded and off, interleaved", configuration: settings.usageFetch) {
        benchmark, state in
        try await state.iterate(benchmark)
    } setup: {
        try await UsageFetch(items: settings.smoke ? 64 : 2048)
    }
}

extension BenchSettings {
    /// Warm 64 KiB fetches for long enough (5 s) that last-use notes are written (a second after the first)
    /// and the steady state, where each item's recorded use is recent, dominates.
    var usageFetch: Benchmark.Configuration {
        var configuration = partialFetch
        configuration.metrics = [.wallClock, .recordedNanoseconds, .offNanoseconds]
        if !smoke {
            configuration.maxDuration = .seconds(5)
            configuration.maxIterations = 100_000
        }
        return configuration
    }

    /// Pages and batches: a few hundred iterations of a millisecond or so.
    var cataloguePage: Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal, .readSyscalls],
            timeUnits: .microseconds,
            warmupIterations: smoke ? 1 : 5,
            maxDuration: smoke ? .milliseconds(500) : .seconds(5),
            maxIterations: smoke ? 5 : 500)
    }
}

/// The store holding domain `big`: a folder `folder` of `count` small files, imported from data/, and
/// domain `log`, which took the same tree in by a reimport after its anchor `start` was read.
struct CatalogueStore {
    let cache: ChunkCache
    let start: SyncAnchor

    /// The folder of `count` files (8 bytes each), written once.
    static func tree(count: Int) throws -> String {
        let root = BenchSettings.current.dataDirectory + "/catalogue-\(count)"
        let folder = root + "/folder"
        if FileManager.default.fileExists(atPath: root + "/.complete") { return folder }
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for index in 0..<count {
            let path = folder + String(format: "/item-%07d", (index &* 7919) % count)
            let file = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
            try withUnsafeBytes(of: UInt64(index)) { try file.writeAll($0) }
            try file.close()
        }
        _ = FileManager.default.createFile(atPath: root + "/.complete", contents: nil)
        return folder
    }

    static func open(count: Int) async throws -> CatalogueStore {
        let folder = try tree(count: count)
        let path = BenchSettings.current.storesDirectory + "/catalogue-\(count)"
        let anchorFile = path + ".anchor"
        if let saved = try? String(contentsOfFile: anchorFile, encoding: .utf8), let anchor = SyncAnchor(saved),
            let cache = try? await ChunkCache.open(at: path, chunkSize: nil, maxSize: nil, resumingImports: false),
            (try? await cache.domains().count) == 2
        {
            return CatalogueStore(cache: cache, start: anchor)
        }
        try? FileManager.default.removeItem(atPath: path)
        let cache = try await ChunkCache.open(at: path, chunkSize: nil, maxSize: nil, resumingImports: false)
        _ = try await cache.import(
            "big", fromDirectoryAt: URL(fileURLWithPath: folder).deletingLastPathComponent(), copy: true
        ).result()
        let empty = BenchSettings.current.workDirectory + "/empty-\(getpid())"
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        _ = try await cache.import("log", fromDirectoryAt: URL(fileURLWithPath: empty), copy: true).result()
        let start = try await cache.enumeratorOfAllItems(in: "log").currentSyncAnchor()
        _ = try await cache.reimportItems(in: "log", from: URL(fileURLWithPath: folder))
        try start.description.write(toFile: anchorFile, atomically: true, encoding: .utf8)
        return CatalogueStore(cache: cache, start: start)
    }
}

/// Pages through the folder 1000 items at a time, starting over at its end.
final class CataloguePaging: @unchecked Sendable {  // used by one iteration at a time
    let enumerator: ItemEnumerator
    let first: EnumerationPage
    var page: EnumerationPage

    init(_ store: CatalogueStore, first: EnumerationPage) async throws {
        enumerator = try await store.cache.enumerator(for: "folder", in: "big")
        self.first = first
        page = first
    }

    func iterate(_ benchmark: Benchmark) async throws {
        benchmark.startMeasurement()
        let result = try await enumerator.enumerateItems(startingAt: page, suggestedPageSize: 1000)
        benchmark.stopMeasurement()
        guard !result.items.isEmpty else { throw BenchmarkSetupError("an empty page of the catalogue folder") }
        page = result.nextPage ?? first
    }
}

/// Follows the reimport's changes 1000 at a time, starting over from its anchor at the end.
final class ChangeFollowing: @unchecked Sendable {  // used by one iteration at a time
    let enumerator: ItemEnumerator
    let start: SyncAnchor
    var anchor: SyncAnchor

    init(_ store: CatalogueStore) async throws {
        enumerator = try await store.cache.enumeratorOfAllItems(in: "log")
        start = store.start
        anchor = store.start
    }

    func iterate(_ benchmark: Benchmark) async throws {
        benchmark.startMeasurement()
        let batch = try await enumerator.enumerateChanges(from: anchor, suggestedBatchSize: 1000)
        benchmark.stopMeasurement()
        guard batch.updated.count + batch.deleted.count > 0 else {
            throw BenchmarkSetupError("an empty batch of changes")
        }
        anchor = batch.moreComing ? batch.nextAnchor : start
    }
}

/// The floor: 1000 entries of the same folder on disk, listed (getdents64) and stat'ed (fstatat), from a
/// rolling position.
final class DirectoryScan: @unchecked Sendable {  // used by one iteration at a time
    let folder: String
    var names: [String] = []
    var position = 0

    init(_ folder: String) throws {
        self.folder = folder
    }

    func iterate(_ benchmark: Benchmark) throws {
        benchmark.startMeasurement()
        if position == 0 || names.isEmpty {
            names.removeAll(keepingCapacity: true)
            try FileSystem.forEachEntry(in: folder) { names.append($0.name) }
        }
        let end = min(position + 1000, names.count)
        var bytes: Int64 = 0
        for name in names[position..<end] {
            bytes += Int64(try FileSystem.status(folder + "/" + name, symlinks: .doNotFollow).st_size)
        }
        benchmark.stopMeasurement()
        blackHole(bytes)
        position = end == names.count ? 0 : end
    }
}

/// Warm 64 KiB fetches cycling over `items` items, one with `lastUsedDate` recording and one without per
/// iteration (which goes first alternates), each timed on its own: both figures come from the same moments.
final class UsageFetch: @unchecked Sendable {  // used by one iteration at a time
    let cache: ChunkCache
    let directory: String
    let items: Int
    var next = 0

    init(items: Int) async throws {
        directory = BenchSettings.current.workDirectory + "/usage-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        cache = try await ChunkCache.open(
            at: directory + "/store", chunkSize: nil, maxSize: nil, resumingImports: false)
        self.items = items
        var generator = SplitMix64(seed: 11)
        for index in 0..<items {
            let path = directory + "/input"
            try Data((0..<65_536).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(
                to: URL(fileURLWithPath: path))
            _ = try await cache.put(fileAt: path, as: ItemIdentifier(domain: "d", "item\(index)"))
        }
    }

    func iterate(_ benchmark: Benchmark) async throws {
        next += 1
        let recordedFirst = next % 2 == 0
        var recorded = Duration.zero
        var off = Duration.zero
        for recording in recordedFirst ? [true, false] : [false, true] {
            cache.recordsLastUse = recording
            // Different items, half the cycle apart, so neither finds the other's pages hotter.
            let item = ItemIdentifier(domain: "d", "item\((next + (recording ? 0 : items / 2)) % items)")
            let start = ContinuousClock.now
            let result = try await cache.fetchPartialContents(
                for: item, version: nil, minimalRange: ByteRange(location: 0, length: 65_536), aligningTo: 4096)
            result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
            if recording { recorded = ContinuousClock.now - start } else { off = ContinuousClock.now - start }
        }
        benchmark.measurement(.recordedNanoseconds, Int(recorded / .nanoseconds(1)))
        benchmark.measurement(.offNanoseconds, Int(off / .nanoseconds(1)))
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

extension BenchmarkMetric {
    static let recordedNanoseconds = BenchmarkMetric.custom(
        "recorded (ns)", polarity: .prefersSmaller, useScalingFactor: false)
    static let offNanoseconds = BenchmarkMetric.custom("off (ns)", polarity: .prefersSmaller, useScalingFactor: false)
}
