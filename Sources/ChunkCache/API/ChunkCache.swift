import FileIO
import Foundation
import LMDBKit

/// How a clone reached its destination: reflink, kernel copy, or reads and writes.
public typealias CloneStrategy = FileIO.CloneStrategy

/// A content-addressed chunk cache: one store directory holding files split into aligned chunks named by
/// SHA-256, zstd-compressed in LMDB, listed per (domain, item, content version).
///
/// Open one per store and share it: every method is safe to call from many tasks at once, and several
/// processes may use one store. Fetches return sparse files holding the requested bytes at their own
/// offsets, handed off to the caller or cloned where the caller asks.
///
/// ```swift
/// let cache = try await ChunkCache.open(at: "/var/cache/chunkcache")
/// let movie = ItemIdentifier(domain: "media", "movie.mp4")
/// let put = try await cache.put(fileAt: "/data/movie.mp4", as: movie)
/// let result = try await cache.fetchPartialContents(
///     for: movie, version: put.item.itemVersion, request: FetchRequest(),
///     minimalRange: ByteRange(location: 1 << 20, length: 65536), aligningTo: 4096, options: [])
/// // result.url holds the bytes at their offsets; the caller owns the file and deletes it.
/// ```
public final class ChunkCache: Sendable {
    /// The store and the services this process runs on it, shared with every other cache of the directory.
    let engine: Engine
    /// The engine's store: what reads and writes the databases take.
    var store: Store { engine.store }
    /// How old a leftover hand-off file must be before a sweep deletes it.
    public let handOffGracePeriod: TimeInterval

    /// Hand-off files that opening the store swept.
    public let sweptAtOpen: Int

    /// Takes over one holder of `engine` (from ``Engine/open(at:layout:maxSize:level:probes:)``), released in
    /// `deinit`.
    init(engine: Engine, handOffGracePeriod: TimeInterval, sweptAtOpen: Int) {
        self.engine = engine
        self.handOffGracePeriod = handOffGracePeriod
        self.sweptAtOpen = sweptAtOpen
    }

    deinit {
        engine.release()
    }

    /// Opens the store at `path` (by default `$CHUNKCACHE_STORE`, `$XDG_CACHE_HOME/chunkcache` or
    /// `~/.cache/chunkcache`), creating it when missing. Opening rolls back ingests whose process died and
    /// deletes hand-off files older than `handOffGracePeriod` (<doc:FileProviderRules#B5>).
    ///
    /// - Parameters:
    ///   - path: The store directory; `nil` for the default above.
    ///   - settings: Settings for a new store. For an existing store a different chunk size is
    ///     `invalidArgument`; a different maximum size is applied.
    ///   - handOffGracePeriod: Seconds a leftover hand-off file is kept (default one hour).
    /// - Throws: `invalidArgument` (bad path or settings), `noPermission` (unwritable), `corruptData`
    ///   (a damaged `data.mdb`).
    public static func open(
        at path: String? = nil, creatingWith settings: StoreSettings? = nil, handOffGracePeriod: TimeInterval = 3600
    ) async throws -> ChunkCache {
        try await open(
            at: path, chunkSize: settings?.layout, maxSize: settings?.maxSize,
            compressionLevel: settings?.compressionLevel ?? 3, handOffGracePeriod: handOffGracePeriod)
    }

    /// Opens the store at `path` as ``open(at:creatingWith:handOffGracePeriod:)`` does, with each setting
    /// optional: a `nil` chunk size accepts the store's own, a `nil` maximum size keeps the store's.
    ///
    /// - Parameters:
    ///   - path: The store directory; `nil` for the default.
    ///   - chunkSize: The chunk size of a new store; for an existing one, `nil` or its own.
    ///   - maxSize: The bound on the store's disk use (<doc:Contract#12-A-bounded-cache>); `nil` keeps the store's, or
    ///     the default.
    ///   - compressionLevel: The zstd level for new chunks (1…19).
    ///   - handOffGracePeriod: Seconds a leftover hand-off file is kept (default one hour).
    ///   - resumingImports: Resume imports whose process died, in the background (the CLI passes
    ///     false: its commands are short, and `import --resume` does it in the foreground).
    public static func open(
        at path: String?, chunkSize: ChunkLayout?, maxSize: Int64?, compressionLevel: Int32 = 3,
        handOffGracePeriod: TimeInterval = 3600, resumingImports: Bool = true
    ) async throws -> ChunkCache {
        try await open(
            at: path, chunkSize: chunkSize, maxSize: maxSize, compressionLevel: compressionLevel,
            handOffGracePeriod: handOffGracePeriod, resumingImports: resumingImports, probes: .none)
    }

    /// Opens the store at `path` as ``open(at:chunkSize:maxSize:compressionLevel:handOffGracePeriod:resumingImports:)``
    /// does, with what a test injects (``EngineProbes``): they hold when this open starts the directory's engine
    /// in this process, and are ignored when another cache of the directory has it open already.
    static func open(
        at path: String?, chunkSize: ChunkLayout?, maxSize: Int64?, compressionLevel: Int32 = 3,
        handOffGracePeriod: TimeInterval = 3600, resumingImports: Bool = true, probes: EngineProbes
    ) async throws -> ChunkCache {
        let (cache, hasImportJobs) = try await runBlocking(doing: "opening", store: path ?? Store.resolvePath(path)) {
            let engine = try Engine.open(
                at: Store.resolvePath(path), layout: chunkSize, maxSize: maxSize, level: compressionLevel,
                probes: probes)
            let store = engine.store
            // Reader slots of crashed processes pin old snapshots, so LMDB could never reuse their pages.
            store.environment.clearStaleReaders()
            engine.reserve.ensure(keepFree: engine.space.minFree, maxSize: engine.space.maxSize)
            do { _ = try store.rollBackAbandonedManifests() } catch {
                engine.release()
                throw CacheError.wrap(error, store: store.path, doing: "rolling back interrupted ingests")
            }
            // A process killed inside the transaction that wrote fills leaves bytes no record names.
            do { try Settler.removeFilesWithoutFills(store) } catch {
                store.diagnostics.report("remove fill files no record names in \(store.path)", error)
            }
            let swept = store.sweepHandOffFiles(olderThan: handOffGracePeriod)
            let cache = ChunkCache(engine: engine, handOffGracePeriod: handOffGracePeriod, sweptAtOpen: swept)
            return (cache, resumingImports ? try cache.hasImportJobs() : false)
        }
        if hasImportJobs {
            // CONTRACT §8: an import a crash interrupted resumes on the next open, behind it.
            Task.detached {
                do { _ = try await cache.resumeImports() } catch {
                    cache.engine.diagnostics.report("resume an interrupted import", error)
                }
            }
        }
        return cache
    }

    /// Whether an import job exists (any: whether its process lives is for ``resumeImports()`` to find).
    @available(*, noasync)
    func hasImportJobs() throws -> Bool {
        try store.environment.read { txn in try !txn.importJobs(store.dbs).isEmpty }
    }

    /// The store's canonical directory.
    public var path: String { store.path }
    /// The store's chunk size.
    public var layout: ChunkLayout { store.layout }
    /// The most bytes the store's data file may take.
    public var maxSize: Int64 { store.maxSize }
    /// The directory hand-off files are created in (on the store's volume, <doc:FileProviderRules#B1>).
    public var temporaryDirectoryURL: URL { URL(fileURLWithPath: store.tmpPath, isDirectory: true) }

    // MARK: - Maintenance

    /// The size of the regular file at `path`, checked as ``put(fileAt:as:contentVersion:)`` checks its input.
    /// - Throws: `invalidArgument` (missing, a directory, not a regular file), `noPermission` (unreadable).
    public static func inputFileSize(at path: String) throws -> Int64 {
        let file = try openRegularFile(path)
        return try file.closeAfter {
            do throws(Errno) { return Int64(try file.status().st_size) } catch {
                throw CacheError.file(error, path: path, doing: "examining")
            }
        }
    }

    /// Deletes leftover hand-off files: those older than the grace period, or all of them with `all`.
    /// - Returns: How many files this call removed.
    public func sweep(all: Bool = false) async -> Int {
        let store = self.store
        let grace = handOffGracePeriod
        return
            (try? await runBlocking(doing: "sweeping hand-off files", store: store.path) { _ in
                store.sweepHandOffFiles(olderThan: all ? nil : grace)
            }) ?? 0
    }
}
