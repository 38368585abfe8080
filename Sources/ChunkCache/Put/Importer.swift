import FileIO
import Foundation
import LMDBKit

/// What an import (``ChunkCache/import(_:fromDirectoryAt:copy:)``) or a reimport took in.
public struct ImportResult: Sendable, Hashable {
    public var domain: String
    /// Regular files, folders and symlinks recorded as items.
    public var files: Int, folders: Int, symlinks: Int
    /// The sum of the files' sizes.
    public var logicalBytes: Int64
    /// Chunks the store did not have before.
    public var newChunks: Int
    /// The new domain's version.
    public var domainVersion: DomainVersion
    /// Whether the source directory is gone from the user's side: it was moved into the store and all of
    /// it imported (false with `copy`, or when something of it was not imported).
    public var sourceRemoved: Bool
    /// Where what was not imported of a moved directory is now, and what to do: it goes back to the
    /// directory's path (``failures`` says why each entry failed), or stays in the store's staging area
    /// when that path exists again. `nil` when everything was imported or `copy` kept the directory. The
    /// domain holds what was imported either way.
    public var sourceRemovalError: String?
    /// Files already in the store with the same parent, name, size and modification time (the item's, or
    /// the time an earlier reimport found the file holding the same bytes): not read (<doc:FileProviderRules#G1>).
    public var matchedFiles: Int = 0
    /// The import's epoch finished (false when a reimport joined it and another process runs it).
    public var finished: Bool = true
    /// The entries that could not be taken in (a file replaced, unreadable or changed while it was read),
    /// each also announced through ``ChunkCache/observeImportFailures(_:)`` as it happened. The rest of
    /// the import went on: a failed entry never undoes the domain.
    public var failures: [ImportFailure] = []
}

/// An entry an import could not take in, or the error that stopped an import as a whole.
public struct ImportFailure: Sendable, Hashable, CustomStringConvertible {
    /// The domain imported into.
    public var domain: String
    /// The entry's path relative to the imported directory; nil when the import as a whole stopped (it
    /// resumes on the next open, or with ``ChunkCache/resumeImports()``).
    public var path: String?
    /// Why, naming the file.
    public var error: CacheError

    public static func == (a: ImportFailure, b: ImportFailure) -> Bool {
        a.domain == b.domain && a.path == b.path && a.error.code == b.error.code && a.error.message == b.error.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(domain)
        hasher.combine(path)
        hasher.combine(error.message)
    }

    public var description: String { "\(path ?? "the import of domain \"\(domain)\""): \(error)" }
}

/// An import whose domain exists: what ``ChunkCache/import(_:fromDirectoryAt:copy:)`` returns, at the
/// moment the seed's completion handler runs. The directory is the store's by then (moved into its staging
/// area, unless `copy`); its items are taken in in the background, to `importDidFinish`.
public final class ImportOperation: Sendable {
    /// The new domain.
    public let domain: String
    private let task: Task<ImportResult, any Error>

    init(domain: String, task: Task<ImportResult, any Error>) {
        self.domain = domain
        self.task = task
    }

    /// Waits for the end of the import: every item in (or reported in ``ImportResult/failures``) and
    /// `importDidFinish` recorded. Cancelling the wait does not stop the import.
    /// - Throws: The error that stopped the import as a whole (a store that cannot be written, a tree that
    ///   cannot be listed): the domain keeps what was published, and the import resumes on the next open or
    ///   with ``ChunkCache/resumeImports()``.
    public func result() async throws -> ImportResult { try await task.value }
}

/// One entry of a directory tree, by its path relative to the root.
struct TreeEntry: Sendable {
    var relativePath: String
    var kind: ItemKind
    var symlinkTarget = ""
    /// The modification time `lstat` listed.
    var modificationDate: Double = 0
    /// A regular file's size when listed.
    var size: Int64 = 0
    /// A regular file's identity when listed: the file read later must still be this one.
    var identity: FileIdentity?

    var parent: String {
        guard let slash = relativePath.lastIndex(of: "/") else { return Item.rootContainer }
        return String(relativePath[..<slash])
    }

    var filename: String { String(relativePath.split(separator: "/").last ?? Substring(relativePath)) }

    /// Lists `root`'s tree depth first without following symlinks, folders before their contents.
    ///
    /// Each folder is opened with `O_NOFOLLOW` and checked to be the folder `lstat` listed, so a folder
    /// swapped for a symlink during the walk cannot lead it outside the tree. A folder or file that is part
    /// of the store is refused before anything is read.
    static func walk(_ root: String, rootIdentity: FileIdentity, refusing store: StoreFootprint) throws -> [TreeEntry] {
        var entries: [TreeEntry] = []
        var pending: [(relative: String, identity: FileIdentity)] = [("", rootIdentity)]
        while let (relative, identity) = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            for (name, status) in try listFolder(directory, identity: identity) {
                let child = relative.isEmpty ? name : relative + "/" + name
                let childIdentity = FileIdentity(status)
                let modified = modificationTime(of: status)
                try store.refuse(childIdentity, at: root + "/" + child, importing: root)
                switch status.st_mode & S_IFMT {
                case S_IFDIR:
                    entries.append(TreeEntry(relativePath: child, kind: .folder, modificationDate: modified))
                    pending.append((child, childIdentity))
                case S_IFREG:
                    entries.append(
                        TreeEntry(
                            relativePath: child, kind: .file, modificationDate: modified, size: Int64(status.st_size),
                            identity: childIdentity))
                case S_IFLNK:
                    // Recorded as a link; never followed, so nothing outside the tree is read.
                    let target: String
                    do {
                        target = try FileSystem.symlinkTarget(root + "/" + child)
                    } catch {
                        throw CacheError.file(error, path: root + "/" + child, doing: "reading the symlink to import")
                    }
                    entries.append(
                        TreeEntry(
                            relativePath: child, kind: .symlink, symlinkTarget: target, modificationDate: modified))
                default:
                    continue  // sockets, FIFOs and devices have no contents to cache
                }
            }
        }
        return entries
    }

    /// The names in `directory` with their `lstat`, once `directory` is checked to be the folder listed as
    /// `identity`. The folder is opened with `O_NOFOLLOW`, checked with `fstat`, and listed through that
    /// descriptor, so the names are the checked folder's even if its path is swapped meanwhile.
    private static func listFolder(_ directory: String, identity: FileIdentity) throws -> [(String, stat)] {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
        } catch {
            if error.rawValue == ELOOP || error == .notDirectory {
                throw CacheError(
                    .invalidArgument,
                    "\(directory) was replaced by a symlink or a file while it was listed; nothing was imported: import again when nothing changes it",
                    underlying: error)
            }
            throw CacheError.file(error, path: directory, doing: "listing the folder to import")
        }
        return try file.closeAfter {
            guard let status = try? file.status(), FileIdentity(status) == identity else {
                throw CacheError(
                    .invalidArgument,
                    "\(directory) was replaced by another folder while it was listed; nothing was imported: import again when nothing changes it"
                )
            }
            var names: [String] = []
            do {
                try file.forEachEntry { names.append($0.name) }
            } catch {
                throw CacheError.file(
                    error as? Errno ?? Errno(rawValue: EIO), path: directory, doing: "listing the folder to import")
            }
            var children: [(String, stat)] = []
            for name in names {
                let path = directory + "/" + name
                do throws(Errno) {
                    children.append((name, try FileSystem.status(path, symlinks: .doNotFollow)))
                } catch {
                    throw CacheError.file(error, path: path, doing: "reading the tree to import")
                }
            }
            return children
        }
    }
}

/// The store's directory and the files in it, which no import may read or remove.
///
/// Paths are compared after `realpath`, and identities (device and inode) on every folder and file of the
/// walk, so neither a symlinked path nor a bind mount of the store inside the tree slips through.
struct StoreFootprint {
    let path: String
    /// The store's folder.
    let directory: FileIdentity?
    /// The store's folder, its `tmp/`, `data.mdb` and `lock.mdb`.
    let identities: Set<FileIdentity>

    init(_ store: Store) {
        path = store.path
        directory = FileIdentity(ofPath: store.path)
        identities = Set(
            [store.path, store.tmpPath, store.path + "/data.mdb", store.path + "/lock.mdb"].compactMap {
                FileIdentity(ofPath: $0)
            })
    }

    /// Refuses a tree whose canonical path `root` contains the store or lies inside it.
    func refuse(root: String, identity: FileIdentity) throws(CacheError) {
        let rootPrefix = root.hasSuffix("/") ? root : root + "/"
        if root == path || path.hasPrefix(rootPrefix) || identity == directory {
            throw CacheError(
                .invalidArgument,
                "\(root) holds the store \(path): importing it would read the store into itself and then remove it; import a directory outside the store, or use another --store"
            )
        }
        if root.hasPrefix(path + "/") || identities.contains(identity) {
            throw CacheError(
                .invalidArgument, "\(root) is inside the store \(path); import a directory outside the store")
        }
    }

    /// Refuses an entry of the walk that is the store's folder or one of its files, whatever path leads there.
    func refuse(_ identity: FileIdentity, at entry: String, importing root: String) throws(CacheError) {
        guard identities.contains(identity) else { return }
        throw CacheError(
            .invalidArgument,
            "\(root) holds the store \(path) (as \(entry)): importing it would read the store into itself and then remove it; import a directory outside the store, or use another --store"
        )
    }
}

/// Points inside an import where tests act between its steps, so races are reproduced without sleeps.
struct ImportHooks: Sendable {
    /// Runs after the walk, before any file is read, with the tree's root.
    var afterWalk: @Sendable (String) -> Void = { _ in }
    /// Runs once the new domain exists and the directory is the store's, before the import is handed back
    /// and any file is taken in; a throw undoes the import (the directory goes back).
    var domainCreated: @Sendable () throws -> Void = {}
}

extension CacheError {
    /// A moving import of a directory on another filesystem than the store.
    static func otherFilesystem(_ root: String, store: String) -> CacheError {
        CacheError(
            .invalidArgument,
            "\(root) is on another filesystem than the store \(store), so it cannot be moved in at once; import it with --copy (it stays where it is: remove it yourself once imported), or move it onto the store's filesystem first"
        )
    }
}
