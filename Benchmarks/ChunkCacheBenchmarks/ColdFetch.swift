import Benchmark
import ChunkCache
import ChunkCacheBench
import FileIO
import Foundation
import OriginKit
import SeededRandom

// The cold path (CONTRACT §10): fetches whose bytes come from an origin, beside what the same bytes cost
// without the engine. run.sh serves `origin/cold/` with nginx on 127.0.0.1 and puts a delaying proxy in front
// of it (10 ms each way: 20 ms of round-trip time, as this kernel has no netem), and passes both URLs:
//
//   cold 64KiB <net>: engine fetch, cold range        a never-fetched 64 KiB range of a known item
//   cold 64KiB <net>: engine fetch, first fetch       the first 64 KiB of an item the store has never seen
//   cold 64KiB <net>: floor one Range GET             the same bytes in one ranged GET by the same client
//                                                     (AsyncHTTPClient through OriginKit) into a temp file
//   cold sequential <size> 20ms: engine 64KiB fetches (read-ahead R) | floor curl -o | naive 64KiB per request
//   cold full <size> loopback: engine fetchContents | floor curl -o | engine put (the ingest rate)

/// Where the origin is, read from the environment run.sh sets; nil when it set none (the cold benchmarks
/// are then left out, with a line on stderr).
struct ColdOrigin: Sendable {
    /// nginx on loopback, and the same through the delaying proxy.
    let loopback: String
    let delayed: String
    /// The directory nginx serves: `random.bin`, `full.bin`, `items/N.bin`.
    let directory: String

    static let current: ColdOrigin? = {
        let env = ProcessInfo.processInfo.environment
        guard let loopback = env["CHUNKCACHE_BENCH_ORIGIN"], let delayed = env["CHUNKCACHE_BENCH_ORIGIN_20MS"],
            let directory = env["CHUNKCACHE_BENCH_ORIGIN_DIR"]
        else {
            FileHandle.standardError.write(
                Data("cold benchmarks left out: run them through Benchmarks/run.sh, which starts the origin\n".utf8))
            return nil
        }
        return ColdOrigin(loopback: loopback, delayed: delayed, directory: directory)
    }()

    func url(_ net: Net) -> String { net == .loopback ? loopback : delayed }

    func size(of file: String) throws -> Int64 {
        Int64(try FileSystem.status(directory + "/" + file).st_size)
    }

    /// How many `items/N.bin` there are.
    func itemCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory + "/items").count) ?? 0
    }
}

enum Net: String, CaseIterable, Sendable {
    case loopback
    case delayed = "20ms"
}

/// A fresh store with an origin domain `web`, removed when the benchmark ends.
final class ColdStore: Sendable {
    let cache: ChunkCache
    let directory: String

    init(origin: String, readAhead: Int64 = DomainInfo.defaultReadAhead) async throws {
        directory = BenchSettings.current.workDirectory + "/cold-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        cache = try await ChunkCache.open(at: directory + "/store", creatingWith: .standard)
        _ = try await cache.addDomain("web", origin: try Origin(origin), readAhead: readAhead)
    }

    func item(_ name: String) -> ItemIdentifier { ItemIdentifier(domain: "web", name) }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// Never-fetched 64 KiB ranges of `random.bin`: even chunk indices in a seeded order, so no two fetches are
/// adjacent (adjacent ones would be a sequence, and read ahead).
struct ColdRanges {
    private var indices: [Int64]

    init(size: Int64, seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        indices = Array(stride(from: Int64(2), to: size >> 16, by: 2)).shuffled(using: &generator)
    }

    mutating func next() throws -> Int64 {
        guard let index = indices.popLast() else {
            throw BenchmarkSetupError("out of cold ranges: make random.bin larger")
        }
        return index << 16
    }
}

/// Each iteration fetches one cold 64 KiB range, or the start of an item never seen.
final class ColdRangeFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: ColdStore
    let firstFetch: Bool
    var ranges: ColdRanges
    var nextItem = 0

    init(_ origin: ColdOrigin, _ net: Net, firstFetch: Bool) async throws {
        store = try await ColdStore(origin: origin.url(net))
        self.firstFetch = firstFetch
        ranges = ColdRanges(size: try origin.size(of: "random.bin"), seed: 64)
        // The item is known before the cold-range iterations start: its discovery is another benchmark.
        let first = try await store.cache.fetchPartialContents(
            for: store.item("random.bin"), version: nil, minimalRange: ByteRange(location: 0, length: 1),
            aligningTo: 4096)
        unlink(first.url.path)
    }

    func iterate(_ benchmark: Benchmark) async throws {
        let item = firstFetch ? store.item("items/\(nextItem).bin") : store.item("random.bin")
        let location = firstFetch ? 0 : try ranges.next()
        nextItem += 1
        benchmark.startMeasurement()
        let result = try await store.cache.fetchPartialContents(
            for: item, version: nil, minimalRange: ByteRange(location: location, length: 65_536), aligningTo: 4096)
        result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        benchmark.stopMeasurement()
        guard result.originRequests >= 1 else {
            throw BenchmarkSetupError("a cold fetch made no request: it was not cold")
        }
    }
}

/// The floor of a cold 64 KiB fetch: one ranged GET of the same bytes by the same client into a new temp file
/// (created, written at its offset, closed, unlinked, as a hand-off is).
final class RangeGetFloor: @unchecked Sendable {  // used by one iteration at a time
    let origin: any RemoteOrigin
    let directory: String
    var ranges: ColdRanges

    init(_ cold: ColdOrigin, _ net: Net) throws {
        origin = OriginEndpoint(location: .http(base: cold.url(net))).makeOrigin()
        directory = BenchSettings.current.workDirectory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        ranges = ColdRanges(size: try cold.size(of: "random.bin"), seed: 65)
    }

    func iterate(_ benchmark: Benchmark) async throws {
        let location = try ranges.next()
        let path = directory + "/floor-\(getpid())"
        benchmark.startMeasurement()
        let file = try FileDescriptor.open(path, O_RDWR | O_CREAT | O_TRUNC, mode: 0o600)
        try await origin.read("random.bin", range: location..<(location + 65_536), version: nil, object: { _ in }) {
            offset, bytes in
            try bytes.withUnsafeBytes { try file.writeAll(toAbsoluteOffset: offset, $0) }
        }
        try file.close()
        unlink(path)
        benchmark.stopMeasurement()
    }
}

/// A whole file read through the engine with 64 KiB fetches in order (fresh store each iteration), with
/// curl and a naive client beside it.
final class ColdSequential: @unchecked Sendable {
    let cold: ColdOrigin
    let net: Net
    let readAhead: Int64
    let size: Int64

    init(_ cold: ColdOrigin, _ net: Net, readAhead: Int64) throws {
        self.cold = cold
        self.net = net
        self.readAhead = readAhead
        size = try cold.size(of: "random.bin")
    }

    func engine(_ benchmark: Benchmark) async throws {
        let store = try await ColdStore(origin: cold.url(net), readAhead: readAhead)
        let item = store.item("random.bin")
        try await benchmark.measureBulk(bytes: size) {
            var offset: Int64 = 0
            while offset < size {
                let result = try await store.cache.fetchPartialContents(
                    for: item, version: nil, minimalRange: ByteRange(location: offset, length: 65_536), aligningTo: 4096
                )
                unlink(result.url.path)
                offset += 65_536
            }
        }
    }

    /// Sequential ranged GETs of 64 KiB, one at a time: what a client without read-ahead or pipelining gets.
    /// Only the first 16 MiB, so a 20 ms run ends.
    func naive(_ benchmark: Benchmark) async throws {
        let origin = OriginEndpoint(location: .http(base: cold.url(net))).makeOrigin()
        let bytes = min(size, 16 << 20)
        try await benchmark.measureBulk(bytes: bytes) {
            var offset: Int64 = 0
            while offset < bytes {
                try await origin.read("random.bin", range: offset..<(offset + 65_536), version: nil, object: { _ in }) {
                    _, _ in
                }
                offset += 65_536
            }
        }
    }
}

/// `curl -s -o FILE URL`: what the same bytes cost the common downloader.
func curlFloor(_ benchmark: Benchmark, url: String, bytes: Int64) throws {
    let path = BenchSettings.current.workDirectory + "/curl-\(getpid())"
    defer { unlink(path) }
    try benchmark.measureBulk(bytes: bytes) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-f", "-o", path, url]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkSetupError("curl \(url) exited \(process.terminationStatus)")
        }
    }
}

/// The whole 1 GiB file: cold through the engine, by curl, and put from the origin's own disk (the ingest rate).
final class ColdFull: @unchecked Sendable {
    let cold: ColdOrigin
    let size: Int64

    init(_ cold: ColdOrigin) throws {
        self.cold = cold
        size = try cold.size(of: "full.bin")
    }

    func engine(_ benchmark: Benchmark) async throws {
        let store = try await ColdStore(origin: cold.loopback)
        try await benchmark.measureBulk(bytes: size) {
            let result = try await store.cache.fetchContents(for: store.item("full.bin"))
            unlink(result.url.path)
        }
    }

    func put(_ benchmark: Benchmark) async throws {
        let store = try await ColdStore(origin: cold.loopback)
        try await benchmark.measureBulk(bytes: size) {
            _ = try await store.cache.put(
                fileAt: cold.directory + "/full.bin", as: ItemIdentifier(domain: "local", "full.bin"))
        }
    }
}

/// Registers the cold benchmarks (when run.sh started the origin).
func registerColdBenchmarks(_ settings: BenchSettings) {
    guard let cold = ColdOrigin.current else { return }
    for net in Net.allCases {
        let configuration = Benchmark.Configuration(
            metrics: [.wallClock, .mallocCountTotal],
            timeUnits: .microseconds,
            warmupIterations: settings.smoke ? 0 : 3,
            maxDuration: settings.smoke ? .seconds(1) : .seconds(net == .loopback ? 5 : 15),
            maxIterations: settings.smoke ? 3 : min(600, cold.itemCount() - 5))
        let group = "cold 64KiB \(net.rawValue)"
        Benchmark("\(group): engine fetch, cold range", configuration: configuration) { benchmark, state in
            try await state.iterate(benchmark)
        } setup: {
            try await ColdRangeFetch(cold, net, firstFetch: false)
        }
        Benchmark("\(group): engine fetch, first fetch", configuration: configuration) { benchmark, state in
            try await state.iterate(benchmark)
        } setup: {
            try await ColdRangeFetch(cold, net, firstFetch: true)
        }
        Benchmark("\(group): floor one Range GET", configuration: configuration) { benchmark, state in
            try await state.iterate(benchmark)
        } setup: {
            try RangeGetFloor(cold, net)
        }
    }

    let sequentialSize = (try? cold.size(of: "random.bin")) ?? 0
    let sequential = "cold sequential \(sizeLabel(sequentialSize)) 20ms"
    var bulk = settings.bulk()
    bulk.maxIterations = settings.smoke ? 1 : 3
    bulk.warmupIterations = 0
    for readAhead in [DomainInfo.defaultReadAhead, 32 << 20] {
        Benchmark("\(sequential): engine 64KiB fetches (read-ahead \(sizeLabel(readAhead)))", configuration: bulk) {
            benchmark, state in
            try await state.engine(benchmark)
        } setup: {
            try ColdSequential(cold, .delayed, readAhead: readAhead)
        }
    }
    Benchmark("\(sequential): floor curl -o", configuration: bulk) { benchmark in
        try curlFloor(benchmark, url: cold.delayed + "random.bin", bytes: sequentialSize)
    }
    Benchmark("\(sequential): naive 64KiB per request (first 16MiB)", configuration: bulk) { benchmark, state in
        try await state.naive(benchmark)
    } setup: {
        try ColdSequential(cold, .delayed, readAhead: 0)
    }

    let fullSize = (try? cold.size(of: "full.bin")) ?? 0
    let full = "cold full \(sizeLabel(fullSize)) loopback"
    Benchmark("\(full): engine fetchContents", configuration: bulk) { benchmark, state in
        try await state.engine(benchmark)
    } setup: {
        try ColdFull(cold)
    }
    Benchmark("\(full): floor curl -o", configuration: bulk) { benchmark in
        try curlFloor(benchmark, url: cold.loopback + "full.bin", bytes: fullSize)
    }
    Benchmark("\(full): engine put (ingest from local disk)", configuration: bulk) { benchmark, state in
        try await state.put(benchmark)
    } setup: {
        try ColdFull(cold)
    }
}
