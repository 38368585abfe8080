import Benchmark
import ChunkCache
import ChunkCacheBench
import FileIO
import Foundation

// Hand-off versus clone: the same fetch delivered as a hand-off file in the store's `tmp/` or cloned to a
// destination path on the store's filesystem (`FetchDestination.clone(to:replaceExisting:)`), for a 64 KiB
// range and for the whole text data set. On the benchmark directory's own filesystem, and on an XFS loop
// mount made with `reflink=1` when run.sh could make one (root only; it passes the mount point in
// CHUNKCACHE_BENCH_XFS and unmounts it afterwards).

/// A filesystem the hand-off and clone benchmarks run on, and the clone strategy it gives.
struct CloneFilesystem: Sendable {
    /// `ext4`, `xfs`, `tmpfs`, … (from `statfs`), with `-reflink` when FICLONE works there.
    let label: String
    /// Where the store of the text data set lives.
    let storeDirectory: String
    /// Where clones go.
    let destinationDirectory: String
    /// What a clone between two files there uses: probed once, when the benchmarks are registered.
    let strategy: CloneStrategy

    /// The benchmark directory's filesystem, and the XFS mount when run.sh made one.
    static func available() -> [CloneFilesystem] {
        let settings = BenchSettings.current
        let text = "\(Dataset.text.rawValue)-\(Dataset.text.size)"
        var places = [(settings.storesDirectory + "/" + text, settings.workDirectory + "/dest")]
        if let xfs = settings.xfsMount { places.append(("\(xfs)/stores/\(text)", xfs + "/dest")) }
        return places.compactMap { try? probe(store: $0.0, destination: $0.1) }
    }

    /// Names the filesystem of `destination` and finds the strategy `FileCloner` picks between two files there.
    static func probe(store: String, destination: String) throws -> CloneFilesystem {
        try createDirectory(destination)
        let name = filesystemType(of: destination)
        let sourcePath = destination + "/probe-source-\(getpid())"
        let targetPath = destination + "/probe-target-\(getpid())"
        defer {
            unlink(sourcePath)
            unlink(targetPath)
        }
        let source = try FileDescriptor.open(sourcePath, O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
        let strategy = try source.closeAfter {
            let page = [UInt8](repeating: 0x5A, count: 4096)
            try page.withUnsafeBytes { try source.writeAll(toAbsoluteOffset: 0, $0) }
            let target = try FileDescriptor.open(targetPath, O_RDWR | O_CREAT | O_TRUNC, mode: 0o644)
            return try target.closeAfter { try FileCloner.clone(from: source, to: target, length: 4096) }
        }
        return CloneFilesystem(
            label: strategy == .reflink ? name + "-reflink" : name, storeDirectory: store,
            destinationDirectory: destination,
            strategy: strategy)
    }
}

/// The type of the filesystem `path` is on (`ext4`, `xfs`, …): the mount in `/proc/self/mounts` with the
/// longest mount point that is a prefix of the path (`statfs` is not in the Glibc module).
func filesystemType(of path: String) -> String {
    let real = (path as NSString).resolvingSymlinksInPath
    guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "unknown" }
    var best = (point: "", type: "unknown")
    for line in mounts.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count >= 3 else { continue }
        let point = fields[1].replacingOccurrences(of: "\\040", with: " ")
        let inside = point == "/" || real == point || real.hasPrefix(point + "/")
        if inside && point.count >= best.point.count { best = (point, String(fields[2])) }
    }
    return best.type
}

/// One fetch (a random 4 KiB-aligned 64 KiB range, or the whole item) of the text data set in a store on
/// `filesystem`, as a hand-off (then `unlink`) or a clone to `dest/` (then `unlink`), each unlink measured.
final class DestinationFetch: @unchecked Sendable {  // used by one iteration at a time
    let store: PreparedStore
    let filesystem: CloneFilesystem
    let clone: Bool
    let length: Int64?
    let destination: String
    var ranges: RangeSampler

    /// - Parameter length: The range's length; `nil` for the whole item.
    init(filesystem: CloneFilesystem, length: Int64?, clone: Bool) async throws {
        let dataset = Dataset.text
        store = try await PreparedStore.open(dataset, directory: filesystem.storeDirectory, settings: .standard)
        self.filesystem = filesystem
        self.clone = clone
        self.length = length
        destination = "\(filesystem.destinationDirectory)/fetch-\(getpid())"
        unlink(destination)
        ranges = RangeSampler(size: dataset.size, length: length ?? dataset.size, seed: partialSeed(dataset))
        try store.warm()
    }

    func iterate(_ benchmark: Benchmark) async throws {
        let target: FetchDestination = clone ? .clone(to: destination, replaceExisting: true) : .handOff
        let result: FetchResult
        let start = ContinuousClock.now
        if let length {
            let range = ByteRange(location: ranges.nextLocation(), length: length)
            benchmark.startMeasurement()
            result = try await store.cache.fetchPartialContents(
                for: store.item, version: store.version, minimalRange: range, aligningTo: 4096, destination: target)
        } else {
            benchmark.startMeasurement()
            result = try await store.cache.fetchContents(for: store.item, version: store.version, destination: target)
        }
        result.url.withUnsafeFileSystemRepresentation { _ = unlink($0!) }
        benchmark.stopMeasurement()
        let elapsed = start.duration(to: .now)
        if length == nil {
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            benchmark.measurement(.megabytesPerSecond, Int((Double(store.dataset.size) / seconds / 1e6).rounded()))
        }
        if clone, result.cloneStrategy != filesystem.strategy {
            throw BenchmarkSetupError(
                "the clone used \(result.cloneStrategy.map(\.rawValue) ?? "nothing"), the probe of \(filesystem.destinationDirectory) \(filesystem.strategy)"
            )
        }
    }
}
