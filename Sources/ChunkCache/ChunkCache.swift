import Dispatch
import FileIO
import Foundation
import LMDBKit

/// How a clone reached its destination: reflink, kernel copy, or reads and writes.
public typealias CloneStrategy = FileIO.CloneStrategy

/// Names an item: its domain and its identifier there (for imported files, the relative path).
public struct ItemIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// The domain the item belongs to.
    public var domain: String
    /// The identifier inside the domain.
    public var rawValue: String

    public init(domain: String, _ rawValue: String) {
        self.domain = domain
        self.rawValue = rawValue
    }

    public var description: String { "\(domain)/\(rawValue)" }
}

/// A content-addressed chunk cache: one store directory holding files split into aligned chunks named by
/// SHA-256, zstd-compressed in LMDB, listed per (domain, item, content version).
///
/// Open one per store and share it: every method is safe to call from many tasks at once, and several
/// processes may use one store. Fetches return sparse files holding the requested bytes at their own
/// offsets, handed off to the caller or cloned where the caller asks.
///
/// ```swift
/// let cache = try await ChunkCache.open(at: "/var/cache/chunkcache")
/// let put = try await cache.put(fileAt: "/data/movie.mp4", as: ItemIdentifier(domain: "media", "movie.mp4"))
/// let result = try await cache.fetchPartialContents(
///     for: put.item.identifierInDomain, version: put.item.itemVersion, request: FetchRequest(),
///     minimalRange: ByteRange(location: 1 << 20, length: 65536), aligningTo: 4096, options: [])
/// // result.url holds the bytes at their offsets; the caller owns the file and deletes it.
/// ```
public final class ChunkCache: Sendable {
    let store: Store
    /// How old a leftover hand-off file must be before a sweep deletes it.
    public let handOffGracePeriod: TimeInterval

    /// Hand-off files that opening the store swept.
    public let sweptAtOpen: Int

    init(store: Store, handOffGracePeriod: TimeInterval, sweptAtOpen: Int) {
        self.store = store
        self.handOffGracePeriod = handOffGracePeriod
        self.sweptAtOpen = sweptAtOpen
    }

    /// Opens the store at `path` (by default `$CHUNKCACHE_STORE`, `$XDG_CACHE_HOME/chunkcache` or
    /// `~/.cache/chunkcache`), creating it when missing. Opening rolls back ingests whose process died and
    /// deletes hand-off files older than `handOffGracePeriod` (B5).
    ///
    /// - Parameters:
    ///   - settings: Settings for a new store. For an existing store a different chunk size is
    ///     `invalidArgument`; a different maximum size is applied.
    ///   - handOffGracePeriod: Seconds a leftover hand-off file is kept (default one hour).
    /// - Throws: `invalidArgument` (bad path or settings), `noPermission` (unwritable), `corruptData`
    ///   (a damaged `data.mdb`).
    public static func open(
        at path: String? = nil, creatingWith settings: StoreSettings? = nil, handOffGracePeriod: TimeInterval = 3600
    ) async throws -> ChunkCache {
        try await open(at: path, chunkSize: settings?.layout, maxSize: settings?.maxSize,
                       compressionLevel: settings?.compressionLevel ?? 3, handOffGracePeriod: handOffGracePeriod)
    }

    /// Opens the store at `path` as ``open(at:creatingWith:handOffGracePeriod:)`` does, with each setting
    /// optional: a `nil` chunk size accepts the store's own, a `nil` maximum size keeps the store's.
    public static func open(
        at path: String?, chunkSize: ChunkLayout?, maxSize: Int64?, compressionLevel: Int32 = 3,
        handOffGracePeriod: TimeInterval = 3600
    ) async throws -> ChunkCache {
        try await runBlocking {
            let store = try Store.open(at: Store.resolvePath(path), layout: chunkSize, maxSize: maxSize, level: compressionLevel)
            // Reader slots of crashed processes pin old snapshots, so LMDB could never reuse their pages.
            store.environment.clearStaleReaders()
            do { _ = try store.rollBackAbandonedManifests() } catch {
                throw CacheError.wrap(error, store: store.path, doing: "rolling back interrupted ingests")
            }
            let swept = store.sweepHandOffFiles(olderThan: handOffGracePeriod)
            return ChunkCache(store: store, handOffGracePeriod: handOffGracePeriod, sweptAtOpen: swept)
        }
    }

    /// The store's canonical directory.
    public var path: String { store.path }
    /// The store's chunk size.
    public var layout: ChunkLayout { store.layout }
    /// The most bytes the store's data file may take.
    public var maxSize: Int64 { store.maxSize }
    /// The directory hand-off files are created in (on the store's volume, B1).
    public var temporaryDirectoryURL: URL { URL(fileURLWithPath: store.tmpPath, isDirectory: true) }

    // MARK: - Put

    /// What ``put(fileAt:as:contentVersion:)`` stored.
    public struct PutResult: Sendable {
        /// The item, with the content version the bytes were stored under.
        public var item: Item
        /// Chunks in the file, new chunks stored, all-zero chunks (never stored).
        public var chunks: Int, newChunks: Int, zeroChunks: Int
        /// Payload bytes this put added to the store.
        public var storedBytes: Int64
        /// The domain's version after the put (unchanged when the bytes were already there).
        public var domainVersion: DomainVersion
    }

    /// Stores the file at `path` as a content version of `item`, creating the domain and item when missing.
    ///
    /// Streams the file with memory independent of its size, skipping holes; hashes and compresses on
    /// every core. The version is published in one transaction with the domain-version bump, and nothing is
    /// visible before it; a failure leaves the store as it was.
    ///
    /// - Parameter contentVersion: The version's name (≤ 128 bytes); `nil` derives it from the bytes, so the
    ///   same bytes give the same version.
    /// - Throws: `invalidArgument` (missing file, a directory, an existing version holding other bytes, a bad
    ///   identifier), `insufficientQuota` (the store is full), `noPermission`.
    public func put(fileAt path: String, as item: ItemIdentifier, contentVersion: String? = nil) async throws -> PutResult {
        try Catalog.validate(domain: item.domain, item: item.rawValue)
        let version = contentVersion.map { Array($0.utf8) }
        if let version { try Catalog.validate(contentVersion: version) }
        let store = self.store
        return try await runBlocking { cancellation in
            let file = try openRegularFile(path)
            return try file.closeAfter {
                let length = Int64(try file.status().st_size)
                let content = try Ingestor(store: store, cancellation: cancellation).ingest(file, length: length, path: path)
                let published: PublishedVersion
                do {
                    published = try store.writer.writeAndWait { txn in
                        try txn.publish(content, domain: item.domain, item: item.rawValue, contentVersion: version,
                                        layout: store.layout, store.dbs)
                    }
                } catch {
                    // The publishing transaction aborted, so the pending manifest is still there: drop it.
                    try? store.writer.writeAndWait { txn in try txn.dropManifest(content.manifestID, store.dbs) }
                    throw CacheError.wrap(error, store: store.path, doing: "publishing \(path)")
                }
                let counts = published.created ? content.counts : IngestCounts(chunks: content.counts.chunks, zeroChunks: content.counts.zeroChunks)
                return PutResult(item: published.item, chunks: counts.chunks, newChunks: counts.newChunks,
                                 zeroChunks: counts.zeroChunks, storedBytes: counts.storedBytes,
                                 domainVersion: published.domainVersion)
            }
        }
    }

    // MARK: - Fetch

    /// Returns a file holding at least `minimalRange` of the item, as `fetchPartialContents` (CONTRACT §3).
    ///
    /// The retrieved range starts at `minimalRange`'s start rounded down to `max(alignment, chunkSize)` and
    /// ends at its end rounded up, or at EOF; both ends are clamped to the file first, so a range past EOF
    /// is never an error. The file has the item's full length with the retrieved bytes at their own offsets
    /// and no holes inside the range, except when the range is the whole file: then zero chunks stay holes
    /// and `knownSparseRanges` is set.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest. Without `.strictVersioning` a version that
    ///     is gone is replaced by the newest that can serve the range, and the result says which.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - minimalRange: The bytes needed.
    ///   - alignment: A power of two from 1 to 2^30.
    ///   - destination: A hand-off file (default) or a clone at a path.
    /// - Throws: `invalidArgument`, `noSuchItem`, `versionNoLongerAvailable`, `noPermission`, `corruptData`,
    ///   `userCancelled`, `fileExists` (clone destination).
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try FetchPlanner.validate(alignment: alignment)
        guard minimalRange.location >= 0, minimalRange.length >= 0 else {
            throw CacheError(.invalidArgument, "range \(minimalRange) of item \"\(item.rawValue)\" has a negative start or length; give START:LENGTH with both ≥ 0")
        }
        return try await fetch(item, version: version?.contentVersion, minimalRange: minimalRange, alignment: alignment,
                               options: options, request: request, destination: destination)
    }

    /// Returns a file holding the whole item, as `fetchContents` (CONTRACT §4): zero chunks are holes and
    /// `knownSparseRanges` says so.
    ///
    /// - Parameter version: The version asked for; `nil` for the newest.
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion? = nil, request: FetchRequest = FetchRequest(),
        options: FetchOptions = [], destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try await fetch(item, version: version?.contentVersion, minimalRange: nil, alignment: 1, options: options,
                        request: request, destination: destination)
    }

    /// Which strategies a clone may use; tests narrow it to exercise each fallback.
    static let cloneStrategies = Set(CloneStrategy.allCases)

    func fetch(
        _ item: ItemIdentifier, version: [UInt8]?, minimalRange: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, destination: FetchDestination, strategies: Set<CloneStrategy> = cloneStrategies,
        inspectClone: (@Sendable (FileDescriptor) -> Void)? = nil
    ) async throws -> FetchResult {
        try Catalog.validate(domain: item.domain, item: item.rawValue)
        if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(item) was cancelled") }
        let store = self.store
        // Plan, and for hand-offs up to a few MiB assemble too, in one snapshot on this thread: a hop to a
        // dispatch thread and back costs ~50 µs here (two wake-ups), as much as a warm 64 KiB fetch.
        // Clones and large ranges go to the blocking pool, off the cooperative threads.
        let outcome: InlineOutcome
        do {
            outcome = try store.environment.read { txn in
                let plan = try FetchPlanner.plan(
                    store: store, domain: item.domain, item: item.rawValue, requested: version, minimal: minimalRange,
                    alignment: alignment, options: options, request: request, in: txn)
                guard destination == .handOff && plan.retrieved.length <= RangeAssembler.inlineLimit else { return .handOver(plan) }
                return .done(try Self.materialize(plan, of: item, store: store, destination: destination,
                                                     cancellation: CancellationFlag(), strategies: strategies,
                                                     inspectClone: inspectClone, in: txn))
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
        }
        switch outcome {
        case .done(let result):
            return result
        case .handOver(let plan):
            return try await runBlocking { cancellation in
                try store.environment.read { txn in
                    try Self.materialize(plan, of: item, store: store, destination: destination, cancellation: cancellation,
                                         strategies: strategies, inspectClone: inspectClone, in: txn)
                }
            }
        }
    }

    /// What the caller's thread made of a fetch: the result, or a plan for the blocking pool.
    private enum InlineOutcome {
        case done(FetchResult)
        case handOver(FetchPlan)
    }

    /// Writes a planned fetch into a new temp file and hands it off or clones it to its destination.
    private static func materialize<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, of item: ItemIdentifier, store: Store, destination: FetchDestination, cancellation: CancellationFlag,
        strategies: Set<CloneStrategy>, inspectClone: (@Sendable (FileDescriptor) -> Void)?, in txn: borrowing T
    ) throws -> FetchResult {
        let (file, path) = try HandOff.createUniqueFile(in: store.tmpPath, prefix: "fetch-")
        var keep = false
        defer {
            try? file.close()
            if !keep { unlink(path) }
        }
        do {
            try file.resize(to: plan.version.size)
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "sizing the temp file \(path)")
        }
        try RangeAssembler.assemble(plan, store: store, into: file, cancellation: cancellation, in: txn)
        var result = FetchResult(
            url: URL(fileURLWithPath: path, isDirectory: false), item: Catalog.publicItem(plan.item, domain: item.domain, version: plan.version),
            retrievedRange: plan.retrieved,
            flags: plan.wholeFile && plan.hasZeroChunks ? .knownSparseRanges : [],
            owner: .caller, domainVersion: plan.domainVersion, cloneStrategy: nil)
        switch destination {
        case .handOff:
            keep = true
        case .clone(let target, let replaceExisting):
            result.cloneStrategy = try HandOff.clone(
                file, length: plan.version.size, to: target, replaceExisting: replaceExisting, strategies: strategies,
                inspect: inspectClone)
            result.url = URL(fileURLWithPath: target, isDirectory: false)
            result.owner = .destination
        }
        return result
    }

    // MARK: - Catalog

    /// One content version of an item, as `versions` lists it.
    public struct VersionInfo: Sendable, Hashable {
        public var contentVersion: String
        public var size: Int64
        public var createdAt: Date
        /// Bytes of this version the cache holds (zero chunks count as held).
        public var cachedBytes: Int64
    }

    /// The item (at its newest version) and all its versions, newest first.
    /// - Throws: `noSuchItem` for an unknown domain or item.
    public func versions(of item: ItemIdentifier) async throws -> (item: Item, versions: [VersionInfo]) {
        try Catalog.validate(domain: item.domain, item: item.rawValue)
        let store = self.store
        return try await runBlocking { _ in
            try store.environment.read { txn in
                _ = try Catalog.domain(item.domain, in: txn, store.dbs)
                let record = try Catalog.item(item.rawValue, domain: item.domain, in: txn, store.dbs)
                let versions = try Catalog.versions(ofItem: item.rawValue, domain: item.domain, in: txn, store.dbs)
                let infos = try versions.map { version in
                    VersionInfo(contentVersion: String(decoding: version.contentVersion, as: UTF8.self), size: version.size,
                                createdAt: Date(timeIntervalSince1970: version.createdAt),
                                cachedBytes: try cachedBytes(of: version, in: txn, store.dbs))
                }
                return (Catalog.publicItem(record, domain: item.domain, version: versions.first), infos)
            }
        }
    }

    /// Says which processes may not materialize the domain's files (exact, case-sensitive names); their
    /// fetches get `noPermission` and download nothing. Bumps the domain version.
    public func setNonMaterializingProcesses(_ names: [String], forDomain domain: String) async throws -> DomainVersion {
        try Catalog.validate(domain: domain, item: nil)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                var record = try txn.domainForChange(domain, create: false, dbs)
                record.nonMaterializingProcesses = names
                return try txn.bump(&record, named: domain, dbs)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "updating domain \"\(domain)\"")
        }
    }

    /// The domain's current version.
    /// - Throws: `noSuchItem` for an unknown domain.
    public func domainVersion(of domain: String) throws -> DomainVersion {
        do {
            return try store.environment.read { txn in
                DomainVersion(rawValue: try Catalog.domain(domain, in: txn, store.dbs).version)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "reading domain \"\(domain)\"")
        }
    }

    // MARK: - Maintenance

    /// The size of the regular file at `path`, checked as ``put(fileAt:as:contentVersion:)`` checks its input.
    /// - Throws: `invalidArgument` (missing, a directory, not a regular file), `noPermission` (unreadable).
    public static func inputFileSize(at path: String) throws -> Int64 {
        let file = try openRegularFile(path)
        return try file.closeAfter {
            do throws(Errno) { return Int64(try file.status().st_size) } catch { throw CacheError.file(error, path: path, doing: "examining") }
        }
    }

    /// Deletes leftover hand-off files: those older than the grace period, or all of them with `all`.
    /// - Returns: How many files this call removed.
    public func sweep(all: Bool = false) async -> Int {
        let store = self.store
        let grace = handOffGracePeriod
        return (try? await runBlocking { _ in store.sweepHandOffFiles(olderThan: all ? nil : grace) }) ?? 0
    }
}

/// Opens `path` for reading, insisting on a regular file.
func openRegularFile(_ path: String) throws -> FileDescriptor {
    let file: FileDescriptor
    do {
        file = try FileDescriptor.open(path, O_RDONLY)
    } catch {
        throw CacheError.file(error, path: path, doing: "opening")
    }
    let mode = (try? file.status().st_mode) ?? 0
    guard mode & S_IFMT == S_IFREG else {
        try? file.close()
        let what = mode & S_IFMT == S_IFDIR ? "a directory" : "not a regular file"
        throw CacheError(.invalidArgument, "\(path) is \(what); give a regular file")
    }
    return file
}

/// Bytes of `version` the store holds: all but its absent chunks.
func cachedBytes<T: TransactionReading & ~Copyable>(of version: VersionRecord, in txn: borrowing T, _ dbs: Databases) throws -> Int64 {
    let layout = version.layout
    var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
    var missing: Int64 = 0
    for index in 0..<layout.chunkCount(forLength: version.size) {
        if case .absent = try cursor.entry(index, in: txn) {
            missing += layout.range(ofChunk: index, length: version.size).length
        }
    }
    return version.size - missing
}

/// Runs blocking work (system calls, LMDB, zstd) on a dispatch queue, not the cooperative pool, turning
/// task cancellation into a flag the work checks between steps. Every error leaves as a ``CacheError``.
func runBlocking<R: Sendable>(_ body: @escaping @Sendable (CancellationFlag) throws -> R) async throws -> R {
    let cancellation = CancellationFlag()
    if Task.isCancelled { throw CacheError(.userCancelled, "the operation was cancelled") }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result {
                    do { return try body(cancellation) } catch { throw CacheError.wrap(error, store: "", doing: "the operation") }
                })
            }
        }
    } onCancel: {
        cancellation.cancel()
    }
}

func runBlocking<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await runBlocking { (_: CancellationFlag) in try body() }
}
