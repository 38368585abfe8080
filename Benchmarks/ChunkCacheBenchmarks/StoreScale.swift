import Benchmark
import ChunkCache
import ChunkCacheBench
import FileIO
import Foundation
import SeededRandom

// Fetch latency against the store's size: the same two probe items (text and random) in stores of 0.1, 1 and
// 10 GiB of distinct data, 64 KiB chunks, a warm 64 KiB range each iteration. The stores are built once under
// `stores/scale-<bytes>` and kept by run.sh across runs (the 10 GiB one takes minutes); a store that no longer
// opens or serves the probes' bytes is built again.

/// The probe items every scale store holds: the first bytes of the text and random data sets.
enum ScaleProbe: String, CaseIterable, Sendable {
    case text
    case random

    var dataset: Dataset { self == .text ? .text : .random }
    var size: Int64 { BenchSettings.current.scaleProbeSize }
    var item: ItemIdentifier { ItemIdentifier(domain: "bench", "probe-\(rawValue)") }
    var path: String { "\(BenchSettings.current.dataDirectory)/probe-\(rawValue)-\(size).dat" }

    /// Returns the probe's data file, cutting it from its data set first when it is missing.
    func prepare() throws -> String {
        var st = stat()
        if stat(path, &st) == 0, Int64(st.st_size) == size { return path }
        let source = try dataset.prepare()
        let bytes = try readBytes(source, at: 0, count: Int(size))
        guard FileManager.default.createFile(atPath: path + ".partial", contents: Data(bytes)),
            rename(path + ".partial", path) == 0
        else { throw BenchmarkSetupError("cannot write \(path)") }
        return path
    }
}

/// A store holding the probes and `totalSize - probes` bytes of filler: distinct 64 KiB chunks, half
/// pseudo-random (stored raw), half real text stamped with the chunk's number every 4 KiB (compresses like
/// text, never dedups), so the index and the data file grow as with real distinct data.
struct ScaleStore: @unchecked Sendable {  // ChunkCache is Sendable; the rest are values.
    let cache: ChunkCache
    let totalSize: Int64
    let versions: [ScaleProbe: ItemVersion]

    static func directory(totalSize: Int64) -> String { "\(BenchSettings.current.storesDirectory)/scale-\(totalSize)" }

    static func open(totalSize: Int64) async throws -> ScaleStore {
        let directory = directory(totalSize: totalSize)
        let marker = directory + ".ready"
        let probes = try ScaleProbe.allCases.map { ($0, try $0.prepare()) }
        if FileManager.default.fileExists(atPath: marker) {
            do {
                let cache = try await ChunkCache.open(at: directory)
                var versions: [ScaleProbe: ItemVersion] = [:]
                for (probe, _) in probes {
                    let (current, _) = try await cache.versions(of: probe.item)
                    guard current.documentSize == probe.size else { throw BenchmarkSetupError("stale store") }
                    versions[probe] = current.itemVersion
                }
                let store = ScaleStore(cache: cache, totalSize: totalSize, versions: versions)
                try await store.checkProbes()
                return store
            } catch {
                print("rebuilding the scale store at \(directory): \(error)")
            }
        }
        try? FileManager.default.removeItem(atPath: marker)
        try? FileManager.default.removeItem(atPath: directory)
        try createDirectory(BenchSettings.current.storesDirectory)
        try createDirectory(BenchSettings.current.workDirectory)
        let start = ContinuousClock.now
        let cache = try await ChunkCache.open(at: directory, creatingWith: .standard)
        var versions: [ScaleProbe: ItemVersion] = [:]
        for (probe, path) in probes {
            versions[probe] = try await cache.put(fileAt: path, as: probe.item).item.itemVersion
        }
        var remaining = totalSize - probes.reduce(0) { $0 + $1.0.size }
        var part = 0
        let text = try FillerText()
        let partPath = "\(BenchSettings.current.workDirectory)/filler-\(getpid())"
        defer { unlink(partPath) }
        while remaining > 0 {
            let size = min(remaining, BenchSettings.current.scalePartSize)
            try text.writeFiller(to: partPath, size: size, part: part)
            let put = try await cache.put(fileAt: partPath, as: ItemIdentifier(domain: "bench", "filler-\(part)"))
            guard put.newChunks == put.chunks else {
                throw BenchmarkSetupError(
                    "filler part \(part) deduplicated \(put.chunks - put.newChunks) of \(put.chunks) chunks")
            }
            unlink(partPath)
            remaining -= size
            part += 1
            FileHandle.standardError.write(
                Data(
                    "scale store \(sizeLabel(totalSize)): \(sizeLabel(totalSize - remaining)) ingested (\(start.duration(to: .now)))\n"
                        .utf8))
        }
        let store = ScaleStore(cache: cache, totalSize: totalSize, versions: versions)
        try await store.checkProbes()
        guard FileManager.default.createFile(atPath: marker, contents: Data()) else {
            throw BenchmarkSetupError("cannot create \(marker)")
        }
        return store
    }

    /// Compares a few fetched ranges of each probe with its source.
    func checkProbes() async throws {
        for probe in ScaleProbe.allCases {
            let length = min(Int64(1) << 20, probe.size)
            for location in [0, (probe.size / 2) & ~4095, probe.size - length] {
                let result = try await cache.fetchPartialContents(
                    for: probe.item, version: versions[probe],
                    minimalRange: ByteRange(location: location, length: length),
                    aligningTo: 4096)
                defer { unlink(result.url.path) }
                guard
                    try readBytes(result.url.path, at: location, count: Int(length))
                        == readBytes(probe.path, at: location, count: Int(length))
                else {
                    throw BenchmarkSetupError(
                        "probe \(probe.rawValue) of \(cache.path) returned other bytes at \(location)")
                }
            }
        }
    }

    /// The bytes of the store's data file, in MB.
    var dataFileMegabytes: Int {
        var st = stat()
        return stat(cache.path + "/data.mdb", &st) == 0 ? Int(st.st_size / 1_000_000) : 0
    }
}

/// The text the filler's compressible chunks are cut from: the text data set, in memory.
struct FillerText {
    let bytes: [UInt8]

    init() throws {
        let dataset = Dataset.text
        bytes = try readBytes(try dataset.prepare(), at: 0, count: Int(dataset.size))
    }

    /// Writes `size` bytes of filler for part `part`: chunk `g` (counted over all parts) is random when a
    /// SplitMix64 draw says so, else the text at `g`'s place in the data set with `g` stamped every 4 KiB.
    func writeFiller(to path: String, size: Int64, part: Int) throws {
        let output = try FileDescriptor.open(path, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try output.closeAfter {
            let chunk = 1 << 16
            let block = touchedBuffer(1 << 20)
            defer { block.deallocate() }
            var offset: Int64 = 0
            let firstChunk = Int64(part) * (BenchSettings.current.scalePartSize >> 16)
            let textChunks = Int64(bytes.count / chunk)
            while offset < size {
                let count = Int(min(Int64(block.count), size - offset))
                for start in stride(from: 0, to: count, by: chunk) {
                    let g = firstChunk + (offset + Int64(start)) >> 16
                    var generator = SplitMix64(seed: 0xF111_E500 ^ UInt64(g) &* 0x9E37_79B9)
                    let piece = UnsafeMutableRawBufferPointer(rebasing: block[start..<min(count, start + chunk)])
                    if generator.next() & 1 == 0 {
                        let words = UnsafeMutableRawBufferPointer(rebasing: piece[..<(piece.count & ~7)]).bindMemory(
                            to: UInt64.self)
                        for i in words.indices { words[i] = generator.next() }
                    } else {
                        let from = Int(g % textChunks) * chunk
                        bytes.withUnsafeBytes { text in
                            piece.copyMemory(from: UnsafeRawBufferPointer(rebasing: text[from..<(from + piece.count)]))
                        }
                        for page in stride(from: 0, to: piece.count - 16, by: 4096) {
                            piece.storeBytes(of: UInt64(g).littleEndian, toByteOffset: page, as: UInt64.self)
                            piece.storeBytes(
                                of: UInt64(0x5CA1_E000 + page).littleEndian, toByteOffset: page + 8, as: UInt64.self)
                        }
                    }
                }
                try output.writeAll(toAbsoluteOffset: offset, UnsafeRawBufferPointer(rebasing: block[..<count]))
                offset += Int64(count)
            }
        }
    }
}

/// A warm 64 KiB fetch of a probe item from a scale store, then `unlink` of the hand-off file.
final class ScaleFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: ScaleStore
    let probe: ScaleProbe
    let length: Int64 = 64 << 10
    var ranges: RangeSampler
    /// The unmeasured ranges fetched before each measured one (see ``ChunkCache/prime(_:version:range:alignment:)``).
    var primers: RangeSampler

    init(totalSize: Int64, probe: ScaleProbe) async throws {
        store = try await ScaleStore.open(totalSize: totalSize)
        self.probe = probe
        ranges = RangeSampler(size: probe.size, length: length, seed: partialSeed(probe.dataset))
        primers = RangeSampler(size: probe.size, length: length, seed: ~partialSeed(probe.dataset))
        // Warm: the probe's source, and every chunk and index page of the probe through one whole-item fetch.
        try PageCache.warm(fileAt: probe.path)
        let result = try await store.cache.fetchContents(for: probe.item, version: store.versions[probe])
        unlink(result.url.path)
    }

    func iterate(_ benchmark: Benchmark) async throws {
        try await store.cache.prime(
            probe.item, version: store.versions[probe],
            range: ByteRange(location: primers.nextLocation(), length: length), alignment: 4096)
        let range = ByteRange(location: ranges.nextLocation(), length: length)
        let faults = minorPageFaultCount()
        benchmark.startMeasurement()
        let result = try await store.cache.fetchPartialContents(
            for: probe.item, version: store.versions[probe], minimalRange: range, aligningTo: 4096)
        result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        benchmark.stopMeasurement()
        benchmark.measurement(.minorPageFaults, minorPageFaultCount() - faults)
        benchmark.measurement(.storeDataFileMegabytes, store.dataFileMegabytes)
    }
}

extension BenchmarkMetric {
    /// The size of the store's `data.mdb`, in MB.
    static let storeDataFileMegabytes = BenchmarkMetric.custom(
        "store data.mdb MB", polarity: .prefersSmaller, useScalingFactor: false)
}
