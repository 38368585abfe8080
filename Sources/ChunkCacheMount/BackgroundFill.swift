import ChunkCache
import Synchronization

/// Hydrates the files programs read at random, in the background (the Mount article's "Files read at
/// random"): a program that reads a file at random (a database, an archive's index) waits a round trip for
/// each read that misses, and none once the bytes around its reads are in the store.
///
/// - A file at most ``MountOptions/fillBelow`` bytes opened while not all cached is downloaded whole, in
///   extents of ``ChunkCache/ChunkCache/prefetchExtentBytes`` with several in flight
///   (``ChunkCache/ChunkCache/prefetch(_:version:range:progress:)``), stored as fills. rclone's mount does the
///   same with its read chunks.
/// - A larger file is hydrated around its misses, once they repeat: each ``regionBytes`` of the file counts the
///   misses that land in it far from the one before (a sequential reader's are the read-ahead's business). The
///   first downloads only what was read, so a sparse reader's single random read stays one request; the second
///   hydrates the ``firstExtentBytes`` around it, and each one after that twice as much, up to the region.
///
/// - A file a learned trace predicts for the program that opened it is not hydrated whole: the trace's
///   prefetch brings what the program read last time, and hydrating the rest would download what it does not
///   read (a database's pages it never touches).
///
/// Either way the program's own reads go first: a prefetch holds at most half the domain's pipeline depth, and
/// a read of a chunk a prefetch is bringing takes its bytes as they arrive.
final class BackgroundFill: Sendable {
    private let cache: ChunkCache
    /// Files at most this large are hydrated whole; 0 hydrates none, and no file around its misses either.
    private let limit: Int64
    /// The whole-file hydrations under way, by item and version: one per file however often it is opened.
    private let running = Mutex<Set<String>>([])
    /// The misses of each large file seen so far, by item and version.
    private let misses = Mutex<[String: MissHistory]>([:])

    /// The part of a large file whose misses count together.
    static let regionBytes: Int64 = 8 << 20
    /// What the second miss in a region hydrates around itself.
    static let firstExtentBytes: Int64 = 512 << 10
    /// Misses at most this far after the one before (or a request's length before it) are a sequential
    /// reader's: the kernel reads ahead 4 MiB, in requests that may arrive out of order.
    static let sequentialBytes: Int64 = 4 << 20
    /// Files whose misses are remembered; past it the history starts over.
    static let rememberedFiles = 1024

    init(_ cache: ChunkCache, limit: Int64) {
        self.cache = cache
        self.limit = limit
    }

    /// Starts hydrating `file` whole unless it is too large, already cached, being hydrated, or predicted by
    /// a trace of its opener.
    func start(_ file: OpenFile, cachedBytes: Int64) {
        guard file.size <= limit, cachedBytes < file.size else { return }
        let key = Self.key(file)
        guard running.withLock({ $0.insert(key).inserted }) else { return }
        hydrate(file, ByteRange(location: 0, length: file.size), unlessPredicted: true) { [self] in
            _ = running.withLock { $0.remove(key) }
        }
    }

    /// Notes a read of `range` of `file` the store could not serve; hydrates around it when the file is
    /// larger than ``limit`` and its misses repeat (``MissHistory``).
    func missed(_ file: OpenFile, _ range: Range<Int64>) {
        guard limit > 0, file.size > limit else { return }
        let key = Self.key(file)
        let extent = misses.withLock { histories -> ByteRange? in
            if histories[key] == nil, histories.count >= Self.rememberedFiles { histories.removeAll() }
            return histories[key, default: MissHistory()].note(range)
        }
        if let extent { hydrate(file, extent) }
    }

    /// Prefetches `range` of `file` in a task of its own; a failure (the origin gone, the version replaced)
    /// ends it quietly: the program's reads report their own.
    private func hydrate(
        _ file: OpenFile, _ range: ByteRange, unlessPredicted: Bool = false,
        then done: @escaping @Sendable () -> Void = {}
    ) {
        Task.detached(priority: .background) { [cache] in
            defer { done() }
            if unlessPredicted, let opener = file.opener, await cache.tracePredicts(file.item, by: opener) { return }
            try? await cache.prefetch(file.item, version: file.version, range: range)
        }
    }

    private static func key(_ file: OpenFile) -> String {
        file.item.domain + "\u{0}" + file.item.rawValue + "\u{0}" + file.version.contentVersionString
    }
}

/// The random misses of one large file, counted by region, and the extent each hydrates
/// (``BackgroundFill``).
struct MissHistory: Sendable {
    private var perRegion: [Int64: Int] = [:]
    private var lastEnd: Int64 = -1

    /// Counts a miss of `range`: the extent to hydrate around it, nil for a first miss in its region or one
    /// that continues the last (sequential).
    mutating func note(_ range: Range<Int64>) -> ByteRange? {
        defer { lastEnd = range.upperBound }
        if lastEnd >= 0, range.lowerBound >= lastEnd - Int64(MountedDomain.maxRead),
            range.lowerBound <= lastEnd + BackgroundFill.sequentialBytes
        {
            return nil
        }
        let region = range.lowerBound / BackgroundFill.regionBytes
        let count = perRegion[region, default: 0] + 1
        perRegion[region] = count
        guard count >= 2 else { return nil }
        let size = min(BackgroundFill.regionBytes, BackgroundFill.firstExtentBytes << min(count - 2, 16))
        return ByteRange(location: range.lowerBound / size * size, length: size)
    }
}
