import FileIO
import Foundation
import LMDBKit
import Synchronization
import ZstdKit

/// An open store: its directory, LMDB environment, databases, writer, codecs and layout. Storage only: the
/// services this process runs on it live in its ``Engine``, which holds it.
final class Store: Sendable {
    let path: String
    let tmpPath: String
    let environment: Environment
    let dbs: Databases
    let writer: Writer
    let layout: ChunkLayout
    let maxSize: Int64
    let compressionLevel: Int32
    let codecs: CodecPool
    /// The free space to keep that `meta` recorded when the store opened; -1 for none (the default).
    let recordedMinFree: Int64
    /// Where the store's engine reports failures it cannot throw: standard error, unless a test gave a sink.
    let diagnostics: Diagnostics
    /// This process's lease on the pending manifests it writes, taken at its first ingest.
    private let lease = Mutex<WriterLease?>(nil)

    /// 3 adds delta chunks and the `bases` database (<doc:Contract#14-Chunk-encodings>); 4 adds fills (the `fills`
    /// database and manifest entries that name them). Older formats have the same records and neither: they are
    /// migrated by recording 4 when opened, which an older chunkcache then refuses cleanly.
    static let formatVersion: UInt64 = 4
    static let formatBeforeDeltas: UInt64 = 2
    /// Format 3 had no fills (``FillFiles``): it opens as format 4 unchanged, since it has none to read.
    static let formatBeforeFills: UInt64 = 3

    private init(
        path: String, environment: Environment, dbs: Databases, layout: ChunkLayout, maxSize: Int64, minFree: Int64,
        level: Int32, afterEachTransaction: (@Sendable () -> Void)?, diagnostics: Diagnostics
    ) {
        self.path = path
        self.diagnostics = diagnostics
        self.tmpPath = path + "/tmp"
        self.environment = environment
        self.dbs = dbs
        writer = Writer(environment: environment, afterEachTransaction: afterEachTransaction)
        codecs = CodecPool(chunkSize: layout.chunkSize, level: level)
        self.layout = layout
        self.maxSize = maxSize
        self.recordedMinFree = minFree
        self.compressionLevel = level
    }

    /// LMDB's map for a store bounded at `maxSize`: the bound less the largest space reserve it may have and
    /// 256 KiB for `lock.mdb` (64 KiB with LMDB's 126 reader slots) and the writers' leases (a page each), so
    /// that `data.mdb` can never grow past what leaves room for the other files, even while readers keep
    /// freed pages from being reused. In whole 64 KiB.
    static func mapSize(forBound maxSize: Int64) -> Int64 {
        let others = largestReserve(maxSize: maxSize) + (256 << 10)
        return max(64 << 10, (maxSize - others) / (64 << 10) * (64 << 10))
    }

    /// The largest space reserve (the `reserve` file, a few MiB held back for fetches on a full disk) a
    /// store bounded at `maxSize` keeps, on any filesystem.
    static func largestReserve(maxSize: Int64) -> Int64 { min(32 << 20, maxSize / 32) }

    /// Where writers keep their lease files (``WriterLease``).
    var writersPath: String { path + "/writers" }
    /// The staging area: where a moving import renames the directory it takes over, to walk it there
    /// (<doc:Catalogue>); one folder per import under way, gone when it finishes.
    var importsPath: String { path + "/imports" }

    /// The token pending manifests of this process are recorded under; the lease is taken on first use and
    /// kept while the store is open.
    func writerToken() throws(CacheError) -> WriterToken {
        try lease.withLock { (lease) throws(CacheError) -> WriterToken in
            if let lease { return lease.token }
            let acquired = try WriterLease.acquire(in: writersPath)
            lease = acquired
            return acquired.token
        }
    }

    /// The store directory to use: `explicit`, else `$CHUNKCACHE_STORE`, else `$XDG_CACHE_HOME/chunkcache`,
    /// else `~/.cache/chunkcache`.
    static func resolvePath(_ explicit: String?) -> String {
        let env = ProcessInfo.processInfo.environment
        if let explicit, !explicit.isEmpty { return explicit }
        if let store = env["CHUNKCACHE_STORE"], !store.isEmpty { return store }
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty { return xdg + "/chunkcache" }
        return (env["HOME"] ?? NSHomeDirectory()) + "/.cache/chunkcache"
    }

    /// Whether an open asking for `layout` and `maxSize` may share this store.
    func check(layout: ChunkLayout?, maxSize: Int64?) throws(CacheError) {
        if let layout, layout != self.layout {
            throw CacheError(
                .invalidArgument,
                "the store at \(path) has \(self.layout) chunks, not \(layout); the chunk size is fixed when a store is created: use another --store"
            )
        }
        if let maxSize, maxSize != self.maxSize {
            throw CacheError(
                .transient,
                "the store at \(path) is open elsewhere in this process with a maximum size of \(self.maxSize) bytes; --max-size \(maxSize) can change it only once the other users have closed it: retry then"
            )
        }
    }

    /// Opens the store in `path`, a directory ``prepareDirectory(_:)`` made ready, creating its data file when
    /// it has none. Use ``Engine/open(at:layout:maxSize:level:probes:)``, which keeps one store per directory.
    ///
    /// - Parameters:
    ///   - layout: The chunk size to create with (default 64 KiB); for an existing store, a different one
    ///     is `invalidArgument`.
    ///   - maxSize: The size bound to create with (default 1 TiB); for an existing store it is applied, but
    ///     only while no one else in this process has the store open: LMDB may resize a map only while no
    ///     transaction of the process is active, which this open cannot know of another user's. Then a
    ///     different size is `transient`, to retry once the others have closed it.
    ///   - level: The zstd level for new chunks; a store already open keeps the level it was opened with.
    ///   - afterEachTransaction: A test's probe the writer runs after each transaction; nil in the product.
    ///   - diagnostics: Where failures that cannot be thrown are reported.
    static func open(
        directory path: String, layout: ChunkLayout?, maxSize: Int64?, level: Int32,
        afterEachTransaction: (@Sendable () -> Void)?, diagnostics: Diagnostics
    ) throws -> Store {
        let settings = StoreSettings(
            layout: layout ?? StoreSettings.standard.layout, maxSize: maxSize ?? StoreSettings.standard.maxSize,
            compressionLevel: level)
        let (environment, isNew) = try withCreationLock(path) { directory throws -> (Environment, Bool) in
            // A new store only where no data.mdb exists: LMDB takes an empty file for a new one too, and would
            // give it its default 1 MiB map.
            try removeKilledCreation(in: path)
            let isNew = try checkDataFile(path + "/data.mdb", store: path)
            if isNew { try createDataFile(in: path, directory: directory, settings: settings) }
            do {
                return (
                    try Environment.open(
                        directory: path, maxDatabases: Databases.names.count + 2,
                        mapSize: isNew ? Int(Self.mapSize(forBound: settings.maxSize)) : nil), isNew
                )
            } catch {
                throw CacheError.wrap(error, store: path, doing: "opening")
            }
        }
        if let maxSize, !isNew, Int64(environment.mapSize) != Self.mapSize(forBound: maxSize) {
            guard Self.mapSize(forBound: maxSize) >= Int64(environment.usedBytes) else {
                throw CacheError(
                    .invalidArgument,
                    "--max-size \(maxSize) is smaller than the \(environment.usedBytes) bytes the store at \(path) already uses beside room for its other files; give a larger size"
                )
            }
            do { try environment.setMapSize(Int(Self.mapSize(forBound: maxSize))) } catch LMDBError.busy {
                // A store of this path is still closing in this process and holds the environment.
                throw CacheError(
                    .transient,
                    "the store at \(path) is still being closed in this process, so --max-size \(maxSize) cannot be applied yet; retry"
                )
            } catch {
                throw CacheError.lmdb(error, store: path, doing: "resizing")
            }
        }
        do {
            return try environment.write { txn in
                let dbs = try Databases.open(in: &txn, storePath: path)
                let storedShift = try txn.counter(dbs, MetaKey.chunkShift)
                if storedShift == 0 {
                    // Only a data file an older chunkcache began and never finished has no chunk size.
                    try initialize(&txn, dbs, settings: settings)
                } else if let layout, storedShift != UInt64(layout.shift) {
                    throw CacheError(
                        .invalidArgument,
                        "the store at \(path) has \(ChunkLayout(uncheckedShift: Int(storedShift))) chunks, not \(layout); the chunk size is fixed when a store is created: use another --store"
                    )
                }
                var format = try txn.counter(dbs, MetaKey.format)
                if format == formatBeforeDeltas || format == formatBeforeFills {
                    try txn.setCounter(dbs, MetaKey.format, formatVersion)
                    format = formatVersion
                }
                guard format == formatVersion else {
                    throw CacheError(
                        .featureUnsupported,
                        "the store at \(path) has format \(format); this chunkcache reads format \(formatVersion): use a matching version"
                    )
                }
                let shift = Int(try txn.counter(dbs, MetaKey.chunkShift))
                guard ChunkLayout.shifts.contains(shift) else {
                    throw CacheError(
                        .corruptData, "the store at \(path) records an impossible chunk size; re-create it")
                }
                if try txn.counter(dbs, MetaKey.storeID) == 0 {
                    try txn.setCounter(dbs, MetaKey.storeID, UInt64.random(in: 1...UInt64.max))
                }
                if try txn.counter(dbs, MetaKey.catalogueFormat) == 0 {
                    try txn.indexCatalogue(dbs)
                    try txn.setCounter(dbs, MetaKey.catalogueFormat, 1)
                }
                // The bound is recorded in `meta`; LMDB's map is a little less (``mapSize(forBound:)``).
                // A store from before has none recorded but its map, which was its bound.
                let recorded = Int64(try txn.counter(dbs, MetaKey.maxSize))
                let maxSize =
                    maxSize ?? (isNew ? settings.maxSize : recorded > 0 ? recorded : Int64(environment.mapSize))
                if recorded != maxSize {
                    try txn.setCounter(dbs, MetaKey.maxSize, UInt64(maxSize))
                }
                let minFree =
                    try txn.contains(dbs.meta, key: Keys.meta(MetaKey.minFree))
                    ? Int64(try txn.counter(dbs, MetaKey.minFree)) : -1
                return Store(
                    path: path, environment: environment, dbs: dbs, layout: ChunkLayout(uncheckedShift: shift),
                    maxSize: maxSize, minFree: minFree, level: settings.compressionLevel,
                    afterEachTransaction: afterEachTransaction, diagnostics: diagnostics)
            }
        } catch {
            throw CacheError.wrap(error, store: path, doing: "opening")
        }
    }

    /// Records a new store's format, chunk size and identity.
    private static func initialize(_ txn: inout WriteTransaction, _ dbs: Databases, settings: StoreSettings) throws {
        try txn.setCounter(dbs, MetaKey.format, formatVersion)
        try txn.setCounter(dbs, MetaKey.chunkShift, UInt64(settings.layout.shift))
        try txn.setCounter(dbs, MetaKey.nextManifestID, 1)
    }

    /// Makes a new store's `data.mdb` whole or not at all: LMDB creates the file empty and writes its first
    /// pages later, so a process killed in between would leave an empty `data.mdb` that no open can tell
    /// from a damaged one. The file is made and initialized in `tmp/`, synced, then renamed into place.
    private static func createDataFile(in path: String, directory: FileDescriptor, settings: StoreSettings) throws {
        let staging = creationPath(in: path)
        do {
            try FileSystem.makeDirectory(staging, mode: 0o700)
        } catch {
            throw CacheError.file(error, path: staging, doing: "creating the new store's data file")
        }
        do {
            let environment = try Environment.open(
                directory: staging, maxDatabases: Databases.names.count + 2,
                mapSize: Int(Self.mapSize(forBound: settings.maxSize)))
            // The commit syncs the file before it is renamed; the environment closes at the end of this scope.
            try environment.write { txn in
                try initialize(&txn, try Databases.open(in: &txn, storePath: path), settings: settings)
            }
        } catch {
            throw CacheError.wrap(error, store: path, doing: "creating")
        }
        do {
            try FileSystem.rename(staging + "/data.mdb", to: path + "/data.mdb", options: .noReplace)
            try directory.sync()
            try FileSystem.removeTree(staging)
        } catch {
            throw CacheError.file(error, path: path + "/data.mdb", doing: "creating the store's data file")
        }
    }

    /// Where ``createDataFile(in:directory:settings:)`` makes a new store's data file.
    private static func creationPath(in path: String) -> String { path + "/tmp/new-store" }

    /// Removes what a creation killed before it finished left in `tmp/`: never a store, only its scratch.
    private static func removeKilledCreation(in path: String) throws {
        do {
            try FileSystem.removeTree(creationPath(in: path))
        } catch  where error == .noSuchFile {
        } catch {
            throw CacheError.file(
                error, path: creationPath(in: path), doing: "removing a store creation that was killed")
        }
    }

    /// Runs `body` holding an exclusive `flock(2)` on the store directory (whose descriptor it is given), so
    /// that no other process creates `data.mdb` while `body` decides whether the store is new.
    private static func withCreationLock<R>(_ path: String, _ body: (FileDescriptor) throws -> R) throws -> R {
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.open(path, O_RDONLY | O_DIRECTORY)
        } catch {
            throw CacheError.file(error, path: path, doing: "opening the store directory")
        }
        return try directory.closeAfter {  // closing releases the lock
            // Where the filesystem has no flock (ENOLCK, EOPNOTSUPP), go on unlocked: the lock only narrows
            // the window of two first opens at once, and LMDB's own lock still orders their writes.
            try? directory.lock(.exclusive)
            return try body(directory)
        }
    }

    /// Whether `dataFile` is missing (a new store). An existing file must start with an LMDB meta page.
    /// - Throws: `corruptData` naming the file when it is empty or not LMDB.
    private static func checkDataFile(_ dataFile: String, store path: String) throws -> Bool {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(dataFile, O_RDONLY)
        } catch {
            if error == .noSuchFile { return true }
            throw CacheError.file(error, path: dataFile, doing: "opening the store")
        }
        // lmdb.h: page 0 is a meta page; its MDB_meta starts after the 16-byte page header with mm_magic.
        var header = [UInt8](repeating: 0, count: 20)
        let count: Int
        do {
            count = try file.closeAfter {
                try header.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: 0, into: $0) }
            }
        } catch {
            throw CacheError.wrap(error, store: path, doing: "reading its data file \(dataFile)")
        }
        let magic = header[16..<20].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard count == header.count, magic == lmdbMagic else {
            let what = count == 0 ? "is empty" : "is not an LMDB file"
            throw CacheError(
                .corruptData,
                "the store at \(path) is damaged: its data file \(dataFile) \(what); move data.mdb aside (or remove it, losing the store's contents) to re-create the store, or pick another --store"
            )
        }
        return false
    }

    /// `MDB_MAGIC` of lmdb.h, stored little-endian on the machines LMDB runs on here.
    private static let lmdbMagic: UInt32 = 0xBEEF_C0DE

    /// Creates the store directory (0700, with any missing parents) and its `tmp/`, returning the canonical path.
    static func prepareDirectory(_ rawPath: String) throws -> String {
        switch kind(of: rawPath) {
        case .directory?:
            break
        case nil:
            // The nearest existing ancestor must be a directory, or no store can be made below it.
            var missing = [rawPath]
            var ancestor = URL(fileURLWithPath: rawPath).deletingLastPathComponent()
            while kind(of: ancestor.path) == nil && ancestor.path != "/" {
                missing.append(ancestor.path)
                ancestor.deleteLastPathComponent()
            }
            guard kind(of: ancestor.path) == .directory else {
                throw CacheError(
                    .invalidArgument,
                    "cannot create the store at \(rawPath): \(ancestor.path) is a file, not a directory; pick another --store"
                )
            }
            for folder in missing.reversed() {
                do {
                    try FileSystem.makeDirectory(folder, mode: 0o700)
                } catch  where error == .fileExists {
                    continue  // another process made it meanwhile
                } catch {
                    throw CacheError.file(error, path: folder, doing: "creating the store directory")
                }
            }
        case _?:
            throw CacheError(
                .invalidArgument, "the store path \(rawPath) is a file, not a directory; give a directory with --store")
        }
        let path: String
        do {
            path = try FileSystem.canonicalPath(rawPath)
        } catch {
            throw CacheError.file(error, path: rawPath, doing: "resolving the store path")
        }
        do {
            try FileSystem.makeDirectory(path + "/tmp", mode: 0o700)
        } catch {
            // An existing tmp/ is an existing store's.
            guard error == .fileExists else {
                throw CacheError.file(error, path: path + "/tmp", doing: "creating the store's tmp directory")
            }
        }
        do {
            try FileSystem.checkAccess(path, for: .write)
        } catch {
            throw CacheError(
                .noPermission,
                "the store directory \(path) is not writable (\(error)); fix its permissions or pick another --store",
                underlying: error)
        }
        return path
    }

    /// The kind of what `path` names, following symlinks; `nil` when nothing is there (or it cannot be told).
    private static func kind(of path: String) -> FileKind? {
        (try? FileSystem.status(path)).map { FileKind(mode: $0.st_mode) }
    }
}
