import Benchmark
import Foundation
import Synchronization

/// Sizes and places for one run, read once from the environment.
///
/// - `CHUNKCACHE_BENCH_SMOKE=1` shrinks every data set to a few MiB and every benchmark to one iteration, so
///   CI can run the whole suite in a couple of minutes to keep it from rotting (no figures from it).
/// - `CHUNKCACHE_BENCH_DIR` moves the data sets and stores (default `/tmp/chunkcache-bench`; smoke runs use
///   its `smoke/` subdirectory so they never clobber the full-size data).
/// - `CHUNKCACHE_BENCH_XFS` names an XFS mount made with `reflink=1` (run.sh makes one on a loop device when
///   root): the hand-off and clone benchmarks run there too.
struct BenchSettings: Sendable {
    static let current = BenchSettings(environment: ProcessInfo.processInfo.environment)

    let smoke: Bool
    /// Holds `data/` (source files, built once and reused), `stores/` (ingested once per run) and `work/`.
    let root: String
    /// The compressible data set: real headers, Swift interfaces and documentation, concatenated.
    let textSize: Int64
    /// The incompressible data set: seeded pseudo-random bytes.
    let randomSize: Int64
    /// The large data set: real shared libraries and other toolchain files, concatenated.
    let binariesSize: Int64
    /// The logical sizes of the stores the latency-against-store-size benchmarks fetch from.
    let scaleSizes: [(label: String, bytes: Int64)]
    /// Each probe item of a scale store (text and random).
    let scaleProbeSize: Int64
    /// Filler is written and ingested in parts of this size.
    let scalePartSize: Int64
    /// An XFS mount with reflink, or `nil`.
    let xfsMount: String?

    init(environment: [String: String]) {
        smoke = ["1", "true", "yes"].contains(environment["CHUNKCACHE_BENCH_SMOKE"]?.lowercased() ?? "")
        let base = environment["CHUNKCACHE_BENCH_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp/chunkcache-bench"
        root = smoke ? base + "/smoke" : base
        textSize = smoke ? 4 << 20 : 64 << 20
        randomSize = smoke ? 4 << 20 : 64 << 20
        binariesSize = smoke ? 16 << 20 : 1 << 30
        scaleSizes =
            smoke
            ? [("8MiB", 8 << 20), ("16MiB", 16 << 20), ("32MiB", 32 << 20)]
            : [("0.1GiB", Int64(1 << 30) / 10), ("1GiB", 1 << 30), ("10GiB", 10 << 30)]
        scaleProbeSize = smoke ? 1 << 20 : 16 << 20
        scalePartSize = smoke ? 8 << 20 : 1 << 30
        xfsMount = environment["CHUNKCACHE_BENCH_XFS"].flatMap { $0.isEmpty ? nil : $0 }
    }

    var dataDirectory: String { root + "/data" }
    var storesDirectory: String { root + "/stores" }
    var workDirectory: String { root + "/work" }

    // MARK: - Configurations

    /// Warm partial fetches: many short iterations, so p50 and p99 mean something. The smoke run makes a few
    /// (after two warm-up ones): the malloc-count thresholds are checked on their p90.
    var partialFetch: Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: [.wallClock, .throughput, .mallocCountTotal, .readSyscalls, .writeSyscalls, .writeBytesLogical],
            timeUnits: .microseconds,
            warmupIterations: smoke ? 2 : 50,
            maxDuration: smoke ? .seconds(1) : .seconds(3),
            maxIterations: smoke ? 10 : 3_000)
    }

    /// ``partialFetch`` for the combinations other than 64 KiB chunks and 4 KiB alignment: shorter, so the
    /// 36-combination matrix stays a few minutes.
    var partialFetchVariant: Benchmark.Configuration {
        var configuration = partialFetch
        if !smoke {
            configuration.warmupIterations = 10
            configuration.maxDuration = .seconds(1)
            configuration.maxIterations = 1_000
        }
        return configuration
    }

    /// ``partialFetch`` or ``partialFetchVariant`` with the minor page faults and the malloc-count threshold of the engine's fetches:
    /// `Benchmarks/run.sh --update-thresholds` records their p90 (in a smoke run) under Benchmarks/Thresholds,
    /// and every smoke run checks it. Mallocs only: the timings are too noisy for a threshold.
    /// - Parameter sharesWork: The fetch may run on two threads, whose allocations depend on whether the
    ///   helper wakes in time: it gets ``sharedWorkMallocTolerance``.
    func engineFetch(_ configuration: Benchmark.Configuration, sharesWork: Bool = false) -> Benchmark.Configuration {
        var configuration = configuration
        configuration.metrics.append(.minorPageFaults)
        let tolerance = sharesWork ? Self.sharedWorkMallocTolerance : Self.mallocTolerance
        configuration.thresholds = [.mallocCountTotal: BenchmarkThresholds(absolute: [.p90: tolerance])]
        return configuration
    }

    /// How many more (or fewer) mallocs per fetch than the recorded p90 the check lets through.
    static let mallocTolerance = 2
    /// The same for fetches that may share their work with a helper thread.
    static let sharedWorkMallocTolerance = 5

    /// Fetch latency against store size: as ``partialFetch``, with the store's data file size.
    var scaleFetch: Benchmark.Configuration {
        var configuration = partialFetch
        configuration.metrics += [.minorPageFaults, .storeDataFileMegabytes]
        return configuration
    }

    /// Hand-off versus clone: a 64 KiB range like ``partialFetchVariant``, the whole file like ``bulk(extraMetrics:)``.
    func destinationFetch(whole: Bool) -> Benchmark.Configuration {
        guard whole else { return partialFetchVariant }
        return Benchmark.Configuration(
            metrics: [
                .wallClock, .megabytesPerSecond, .mallocCountTotal, .readSyscalls, .writeSyscalls, .writeBytesLogical,
            ],
            timeUnits: .milliseconds,
            warmupIterations: smoke ? 0 : 2,
            maxDuration: smoke ? .milliseconds(100) : .seconds(3),
            maxIterations: smoke ? 1 : 20)
    }

    /// ``partialFetch`` plus the time until the completion handler ran.
    var partialFetchCompletion: Benchmark.Configuration {
        var configuration = partialFetch
        configuration.metrics.append(.microsecondsToCompletion)
        return configuration
    }

    /// Whole-file fetches and ingests of the large data set: a few long iterations.
    func bulk(extraMetrics: [BenchmarkMetric] = []) -> Benchmark.Configuration {
        Benchmark.Configuration(
            metrics: [
                .wallClock, .megabytesPerSecond, .cpuTotal, .peakMemoryResident, .peakAnonymousMegabytes,
                .peakFileMegabytes, .mallocCountTotal, .readSyscalls, .writeSyscalls, .writeBytesLogical,
            ]
                + extraMetrics,
            timeUnits: .milliseconds,
            units: [.peakMemoryResident: .mega],
            warmupIterations: smoke ? 0 : 1,
            maxDuration: smoke ? .milliseconds(100) : .seconds(30),
            maxIterations: smoke ? 1 : 5)
    }
}

extension BenchmarkMetric {
    /// Bytes of the data set per second of the measured region, in MB (10^6 bytes) per second.
    static let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
    /// From the call to the end of the completion handler, in µs (the benchmark thread's wake-up excluded).
    static let microsecondsToCompletion = BenchmarkMetric.custom(
        "to completion (µs)", polarity: .prefersSmaller, useScalingFactor: false)
    /// The most anonymous memory resident during the measurement (`RssAnon`), in MB: heap and buffers.
    static let peakAnonymousMegabytes = BenchmarkMetric.custom(
        "peak RssAnon MB", polarity: .prefersSmaller, useScalingFactor: false)
    /// The most file-backed memory resident during the measurement (`RssFile`), in MB: mapped binaries and
    /// libraries, and the pages of LMDB's memory map the process has touched (clean page cache, shared).
    static let peakFileMegabytes = BenchmarkMetric.custom(
        "peak RssFile MB", polarity: .prefersSmaller, useScalingFactor: false)
    /// Minor page faults of the whole process during the measured region (`getrusage`): first touches of
    /// fresh memory and of LMDB's map.
    static let minorPageFaults = BenchmarkMetric.custom(
        "page faults (minor)", polarity: .prefersSmaller, useScalingFactor: false)
    /// Bytes the store (or the floor) keeps after compression, in MB.
    static let storedMegabytes = BenchmarkMetric.custom("stored MB", polarity: .prefersSmaller, useScalingFactor: false)
}

extension Benchmark {
    /// Measures one iteration of a bulk benchmark moving `bytes`: starts the measurement, times `body`, stops,
    /// and records MB/s and the peak anonymous and file-backed resident memory (package-benchmark's
    /// `peakMemoryResident` is their sum).
    func measureBulk(bytes: Int64, _ body: () throws -> Void) rethrows {
        let sampler = ResidentMemorySampler()
        sampler.start()
        startMeasurement()
        let start = ContinuousClock.now
        defer { sampler.stop() }
        try body()
        let elapsed = start.duration(to: .now)
        stopMeasurement()
        record(bytes: bytes, elapsed: elapsed, sampler: sampler)
    }

    /// ``measureBulk(bytes:_:)`` for the engine's async API.
    func measureBulk(bytes: Int64, _ body: () async throws -> Void) async rethrows {
        let sampler = ResidentMemorySampler()
        sampler.start()
        startMeasurement()
        let start = ContinuousClock.now
        defer { sampler.stop() }
        try await body()
        let elapsed = start.duration(to: .now)
        stopMeasurement()
        record(bytes: bytes, elapsed: elapsed, sampler: sampler)
    }

    private func record(bytes: Int64, elapsed: Duration, sampler: ResidentMemorySampler) {
        sampler.stop()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        if seconds > 0 { measurement(.megabytesPerSecond, Int((Double(bytes) / seconds / 1e6).rounded())) }
        measurement(.peakAnonymousMegabytes, sampler.peakAnonymousKiB * 1024 / 1_000_000)
        measurement(.peakFileMegabytes, sampler.peakFileKiB * 1024 / 1_000_000)
    }
}

/// "4KiB", "64KiB", "1MiB", "1GiB".
func sizeLabel(_ bytes: Int64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] where bytes >= Int64(1) << shift {
        let value = Double(bytes) / Double(Int64(1) << shift)
        return value == value.rounded() ? "\(Int(value))\(unit)" : String(format: "%.1f%@", value, unit)
    }
    return "\(bytes)B"
}

/// Samples `RssAnon` and `RssFile` of `/proc/self/status` every 5 ms on its own thread and keeps the peaks,
/// so a resident-memory figure can be split into heap and buffers versus mapped files (LMDB's map among
/// them). The sampling loop allocates nothing, so it does not disturb the malloc counts.
final class ResidentMemorySampler: @unchecked Sendable {  // the peaks are read only after `stop()` joins the thread
    private let running = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private var started = false
    private(set) var peakAnonymousKiB = 0
    private(set) var peakFileKiB = 0

    func start() {
        running.store(true, ordering: .sequentiallyConsistent)
        started = true
        let thread = Thread { [self] in
            let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 8192, alignment: 8)
            repeat {
                let n = fd >= 0 ? pread(fd, buffer.baseAddress, buffer.count, 0) : 0
                if n > 0 {
                    let text = UnsafeRawBufferPointer(rebasing: buffer[..<n])
                    peakAnonymousKiB = max(peakAnonymousKiB, Self.value(of: "RssAnon:", in: text))
                    peakFileKiB = max(peakFileKiB, Self.value(of: "RssFile:", in: text))
                }
                usleep(5_000)
            } while running.load(ordering: .sequentiallyConsistent)
            buffer.deallocate()
            if fd >= 0 { close(fd) }
            done.signal()
        }
        thread.start()
    }

    /// Stops sampling after one last sample and waits for the thread; safe to call more than once.
    func stop() {
        guard started else { return }
        started = false
        running.store(false, ordering: .sequentiallyConsistent)
        done.wait()
    }

    /// The number after `key` (in kB), scanning bytes so nothing is allocated.
    private static func value(of key: StaticString, in text: UnsafeRawBufferPointer) -> Int {
        let keyBytes = UnsafeRawBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        var i = 0
        while i + keyBytes.count <= text.count {
            if text[i] == keyBytes[0], memcmp(text.baseAddress! + i, keyBytes.baseAddress!, keyBytes.count) == 0 {
                var j = i + keyBytes.count
                var value = 0
                while j < text.count, text[j] == 0x20 || text[j] == 0x09 { j += 1 }
                while j < text.count, text[j] >= 0x30, text[j] <= 0x39 {
                    value = value * 10 + Int(text[j] - 0x30)
                    j += 1
                }
                return value
            }
            i += 1
        }
        return 0
    }
}

/// The process's minor page faults so far (`getrusage(RUSAGE_SELF)`).
func minorPageFaultCount() -> Int {
    var usage = rusage()
    return getrusage(RUSAGE_SELF.rawValue, &usage) == 0 ? usage.ru_minflt : 0
}
