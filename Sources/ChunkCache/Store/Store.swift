import Foundation
import FileIO
import LMDBKit
import Synchronization
import ZstdKit

/// Settings fixed when a store is created.
public struct StoreSettings: Sendable, Hashable {
    /// The chunk size.
    public var layout: ChunkLayout
    /// The most bytes the store's data file may take: LMDB's map size.
    public var maxSize: Int64
    /// The zstd level for new chunks (1…19).
    public var compressionLevel: Int32

    /// 64 KiB chunks, a 1 TiB bound (address space only: the file grows as needed), zstd level 3.
    public static let standard = StoreSettings(layout: .standard, maxSize: 1 << 40, compressionLevel: 3)

    public init(layout: ChunkLayout, maxSize: Int64, compressionLevel: Int32 = 3) {
        self.layout = layout
        self.maxSize = maxSize
        self.compressionLevel = compressionLevel
    }
}

/// An open store: its directory, LMDB environment, databases and writer. Shared by every part of the engine.
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

    static let formatVersion: UInt64 = 2

    private init(path: String, environment: Environment, dbs: Databases, layout: ChunkLayout, maxSize: Int64, level: Int32) {
        self.path = path
        self.tmpPath = path + "/tmp"
        self.environment = environment
        self.dbs = dbs
        self.writer = Writer(environment: environment)
        self.layout = layout
        self.maxSize = maxSize
        self.compressionLevel = level
        self.codecs = CodecPool(chunkSize: layout.chunkSize, level: level)
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

    /// Opens the store at `path`, creating it (mode 0700) when it does not exist.
    ///
    /// - Parameters:
    ///   - layout: The chunk size to create with (default 64 KiB); for an existing store, a different one
    ///     is `invalidArgument`.
    ///   - maxSize: The size bound to create with (default 1 TiB); for an existing store it is applied.
    static func open(at rawPath: String, layout: ChunkLayout?, maxSize: Int64?, level: Int32 = 3) throws -> Store {
        let path = try prepareDirectory(rawPath)
        let isNew = access(path + "/data.mdb", F_OK) != 0
        let settings = StoreSettings(
            layout: layout ?? StoreSettings.standard.layout, maxSize: maxSize ?? StoreSettings.standard.maxSize,
            compressionLevel: level)
        let environment: Environment
        do {
            environment = try Environment.open(
                directory: path, maxDatabases: Databases.names.count + 2,
                mapSize: isNew ? Int(settings.maxSize) : nil)
        } catch {
            throw CacheError.lmdb(error, store: path, doing: "opening")
        }
        if let maxSize, !isNew, Int64(environment.mapSize) != maxSize {
            guard maxSize >= Int64(environment.usedBytes) else {
                throw CacheError(.invalidArgument,
                    "--max-size \(maxSize) is smaller than the \(environment.usedBytes) bytes the store at \(path) already uses; give a larger size")
            }
            do { try environment.setMapSize(Int(maxSize)) } catch {
                throw CacheError.lmdb(error, store: path, doing: "resizing")
            }
        }
        do {
            return try environment.write { txn in
                let dbs = try Databases.open(in: &txn)
                let storedShift = try txn.counter(dbs, MetaKey.chunkShift)
                if storedShift == 0 {
                    try txn.setCounter(dbs, MetaKey.format, formatVersion)
                    try txn.setCounter(dbs, MetaKey.chunkShift, UInt64(settings.layout.shift))
                    try txn.setCounter(dbs, MetaKey.nextManifestID, 1)
                } else if let layout, storedShift != UInt64(layout.shift) {
                    throw CacheError(.invalidArgument,
                        "the store at \(path) has \(ChunkLayout(uncheckedShift: Int(storedShift))) chunks, not \(layout); the chunk size is fixed when a store is created: use another --store")
                }
                let format = try txn.counter(dbs, MetaKey.format)
                guard format == formatVersion else {
                    throw CacheError(.featureUnsupported,
                        "the store at \(path) has format \(format); this chunkcache reads format \(formatVersion): use a matching version")
                }
                let shift = Int(try txn.counter(dbs, MetaKey.chunkShift))
                guard ChunkLayout.shifts.contains(shift) else {
                    throw CacheError(.corruptData, "the store at \(path) records an impossible chunk size; re-create it")
                }
                let maxSize = Int64(environment.mapSize)
                if try txn.counter(dbs, MetaKey.maxSize) != UInt64(maxSize) {
                    try txn.setCounter(dbs, MetaKey.maxSize, UInt64(maxSize))
                }
                return Store(path: path, environment: environment, dbs: dbs, layout: ChunkLayout(uncheckedShift: shift),
                             maxSize: maxSize, level: settings.compressionLevel)
            }
        } catch {
            throw CacheError.wrap(error, store: path, doing: "opening")
        }
    }

    /// Creates the store directory (0700) and its `tmp/`, returning the canonical path.
    private static func prepareDirectory(_ rawPath: String) throws -> String {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: rawPath, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CacheError(.invalidArgument, "the store path \(rawPath) is a file, not a directory; give a directory with --store")
            }
        } else {
            // The nearest existing ancestor must be a directory, or no store can be made below it.
            var ancestor = URL(fileURLWithPath: rawPath).deletingLastPathComponent()
            while !FileManager.default.fileExists(atPath: ancestor.path, isDirectory: &isDirectory) && ancestor.path != "/" {
                ancestor.deleteLastPathComponent()
            }
            guard isDirectory.boolValue else {
                throw CacheError(.invalidArgument, "cannot create the store at \(rawPath): \(ancestor.path) is a file, not a directory; pick another --store")
            }
            do {
                try FileManager.default.createDirectory(atPath: rawPath, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw CacheError(.noPermission, "cannot create the store directory \(rawPath) (\(error.localizedDescription)); pick a writable --store")
            }
        }
        guard let resolved = realpath(rawPath, nil) else {
            throw CacheError.file(Errno.current, path: rawPath, doing: "resolving the store path")
        }
        defer { free(resolved) }
        let path = String(cString: resolved)
        if mkdir(path + "/tmp", 0o700) != 0 && errno != EEXIST {
            throw CacheError.file(Errno.current, path: path + "/tmp", doing: "creating the store's tmp directory")
        }
        guard access(path, W_OK) == 0 else {
            throw CacheError(.noPermission, "the store directory \(path) is not writable; fix its permissions or pick another --store")
        }
        return path
    }
}
