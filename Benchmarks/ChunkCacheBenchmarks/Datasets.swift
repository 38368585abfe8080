import ChunkCache
import ChunkCacheBench
import FileIO
import Foundation
import SeededRandom

/// A benchmark failure outside the engine: a data set that cannot be built, bytes that do not match.
struct BenchmarkSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The data sets, built once under `data/` from files already on the machine and reused by later runs.
enum Dataset: String, CaseIterable, Sendable {
    /// Compressible: C headers, Swift module interfaces and package documentation.
    case text
    /// Incompressible: seeded pseudo-random bytes.
    case random
    /// Real binaries: toolchain libraries and the system's shared libraries.
    case binaries

    var size: Int64 {
        let settings = BenchSettings.current
        switch self {
        case .text: return settings.textSize
        case .random: return settings.randomSize
        case .binaries: return settings.binariesSize
        }
    }

    /// The data file: named by its size too, so a smaller or larger run never reuses the wrong one.
    var path: String { "\(BenchSettings.current.dataDirectory)/\(rawValue)-\(size).dat" }

    /// Where each source tree's files come from, taken in turn so the data set mixes them.
    private var sources: [(root: String, keep: @Sendable (String) -> Bool)] {
        let compressed = [".gz", ".xz", ".bz2", ".zst", ".zip", ".png", ".jpg", ".gif", ".pdf"]
        switch self {
        case .text:
            return [
                ("/usr/include", { _ in true }),
                ("/opt/swift/usr/lib/swift", { $0.hasSuffix(".swiftinterface") }),
                ("/usr/share/doc", { name in !compressed.contains { name.hasSuffix($0) } }),
            ]
        case .binaries:
            return [("/opt/swift/usr/lib", { _ in true }), ("/usr/lib/x86_64-linux-gnu", { _ in true })]
        case .random:
            return []
        }
    }

    /// Returns the data file, building it first when it is missing or has another size.
    @discardableResult
    func prepare() throws -> String {
        var st = stat()
        if stat(path, &st) == 0, Int64(st.st_size) == size { return path }
        try createDirectory(BenchSettings.current.dataDirectory)
        let partial = path + ".partial"
        unlink(partial)
        let output = try FileDescriptor.open(partial, O_WRONLY | O_CREAT | O_TRUNC, mode: 0o644)
        try output.closeAfter {
            if self == .random {
                try writeRandom(to: output)
            } else {
                try concatenate(into: output)
            }
        }
        guard rename(partial, path) == 0 else {
            throw BenchmarkSetupError("cannot rename \(partial): \(Errno.current)")
        }
        return path
    }

    /// Writes `size` bytes of SplitMix64 output, 1 MiB at a time.
    private func writeRandom(to output: FileDescriptor) throws {
        var generator = SplitMix64(seed: 0xC0FF_EE00_5EED)
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 8)
        defer { block.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let words = block.bindMemory(to: UInt64.self)
            for i in words.indices { words[i] = generator.next() }
            let count = Int(min(Int64(block.count), size - offset))
            try output.writeAll(toAbsoluteOffset: offset, UnsafeRawBufferPointer(rebasing: block[..<count]))
            offset += Int64(count)
        }
    }

    /// Copies files from the source trees, one from each tree in turn (sorted by path, so the same machine
    /// image gives the same bytes), until `size` bytes; the last file is cut short.
    private func concatenate(into output: FileDescriptor) throws {
        let lists = sources.map { regularFiles(under: $0.root, keeping: $0.keep) }
        let longest = lists.map(\.count).max() ?? 0
        var order: [String] = []
        for i in 0..<longest {
            for list in lists where i < list.count { order.append(list[i]) }
        }
        guard !order.isEmpty else { throw BenchmarkSetupError("no source files for the \(rawValue) data set") }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        var written: Int64 = 0
        // Cycle through the files again only if the machine has fewer bytes than the data set needs.
        var index = 0
        while written < size {
            let source = order[index % order.count]
            index += 1
            guard let input = try? FileDescriptor.open(source, O_RDONLY) else { continue }
            try input.closeAfter {
                var offset: Int64 = 0
                while written < size {
                    let want = Int(min(Int64(buffer.count), size - written))
                    let n = try input.read(
                        fromAbsoluteOffset: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]))
                    if n == 0 { break }
                    try output.writeAll(toAbsoluteOffset: written, UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                    offset += Int64(n)
                    written += Int64(n)
                }
            }
        }
    }
}

/// Regular files (not symbolic links, not empty) under `root`, sorted by path.
func regularFiles(under root: String, keeping keep: (String) -> Bool) -> [String] {
    guard let enumerator = FileManager.default.enumerator(atPath: root) else { return [] }
    var files: [String] = []
    while let relative = enumerator.nextObject() as? String {
        let path = root + "/" + relative
        var st = stat()
        guard lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_size > 0, keep(relative) else { continue }
        files.append(path)
    }
    return files.sorted()
}

func createDirectory(_ path: String) throws {
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

// MARK: - Stores

/// A store holding one data set as one item, ingested once per run (the run script deletes `stores/` first,
/// so a changed engine never serves from an old store format) and reused by every benchmark of that run.
struct PreparedStore: @unchecked Sendable {  // ChunkCache is Sendable; the rest are values.
    let cache: ChunkCache
    let item: ItemIdentifier
    let version: ItemVersion
    let dataset: Dataset

    /// The directory hand-off files are made in: the floors make their temp files there too.
    var temporaryDirectory: String { cache.temporaryDirectoryURL.path }

    static func open(_ dataset: Dataset) async throws -> PreparedStore {
        try await open(
            dataset, directory: "\(BenchSettings.current.storesDirectory)/\(dataset.rawValue)-\(dataset.size)",
            settings: .standard)
    }

    /// The store of `dataset` at `directory`, made with `settings` when it has to be built, its item just used:
    /// fetches record no last use for a minute, as in steady use (what recording costs is the `usage:`
    /// benchmark's figure), and no background write of one lands in a measurement.
    static func open(_ dataset: Dataset, directory: String, settings: StoreSettings) async throws -> PreparedStore {
        let store = try await openOrBuild(dataset, directory: directory, settings: settings)
        _ = try await store.cache.setMetadata(MetadataEdit(markUsed: true), of: store.item)
        return store
    }

    private static func openOrBuild(_ dataset: Dataset, directory: String, settings: StoreSettings) async throws
        -> PreparedStore
    {
        let source = try dataset.prepare()
        let marker = directory + ".ready"
        let item = ItemIdentifier(domain: "bench", dataset.rawValue)
        if FileManager.default.fileExists(atPath: marker) {
            do {
                let cache = try await ChunkCache.open(at: directory)
                let (current, _) = try await cache.versions(of: item)
                let store = PreparedStore(cache: cache, item: item, version: current.itemVersion, dataset: dataset)
                guard current.documentSize == dataset.size, cache.layout == settings.layout else {
                    throw BenchmarkSetupError("stale store")
                }
                try await store.checkSamples(against: source)
                return store
            } catch {
                // A store from another engine version or a damaged one: build it again.
                print("rebuilding the \(dataset.rawValue) store at \(directory): \(error)")
            }
        }
        try? FileManager.default.removeItem(atPath: marker)
        try? FileManager.default.removeItem(atPath: directory)
        try createDirectory((directory as NSString).deletingLastPathComponent)
        let cache = try await ChunkCache.open(at: directory, creatingWith: settings)
        let put = try await cache.put(fileAt: source, as: item)
        let store = PreparedStore(cache: cache, item: item, version: put.item.itemVersion, dataset: dataset)
        try await store.checkSamples(against: source)
        guard FileManager.default.createFile(atPath: marker, contents: Data()) else {
            throw BenchmarkSetupError("cannot create \(marker)")
        }
        return store
    }

    /// Fetches a few ranges (start, middle, end) and compares them with the source: a benchmark of wrong
    /// bytes measures nothing.
    func checkSamples(against source: String) async throws {
        let size = dataset.size
        let length = min(Int64(1) << 20, size)
        for location in [0, (size / 2) & ~4095, size - length] {
            let result = try await cache.fetchPartialContents(
                for: item, version: version, minimalRange: ByteRange(location: location, length: length),
                aligningTo: 4096)
            defer { unlink(result.url.path) }
            guard result.retrievedRange.contains(ByteRange(location: location, length: length)) else {
                throw BenchmarkSetupError("fetch of \(location):\(length) retrieved only \(result.retrievedRange)")
            }
            guard
                try readBytes(result.url.path, at: location, count: Int(length))
                    == readBytes(source, at: location, count: Int(length))
            else {
                throw BenchmarkSetupError(
                    "fetch of \(location):\(length) of \(dataset.rawValue) returned other bytes than the source")
            }
        }
    }

    /// Puts the store's data file and the source in the page cache.
    func warm() throws {
        try PageCache.warm(fileAt: dataset.path)
        try PageCache.warm(fileAt: cache.path + "/data.mdb")
    }
}

func readBytes(_ path: String, at offset: Int64, count: Int) throws -> [UInt8] {
    let file = try FileDescriptor.open(path, O_RDONLY)
    return try file.closeAfter {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try bytes.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: offset, into: $0) }
        return Array(bytes[..<n])
    }
}
