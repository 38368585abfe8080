import FileIO
import Foundation
import LMDBKit

/// What ``ChunkCache/import(_:fromDirectoryAt:copy:)`` took in.
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
    /// Whether the source directory was removed (it stays with `copy`, or when removing it failed).
    public var sourceRemoved: Bool
    /// Why the source directory is still there although it was to be removed: the first path that could not
    /// be removed and the system's reason. `nil` when it was removed or `copy` kept it. The domain is
    /// imported either way.
    public var sourceRemovalError: String?
    /// Files already in the store with the same parent, name, size and modification time (the item's, or
    /// the time an earlier reimport found the file holding the same bytes): not read (G1).
    public var matchedFiles: Int = 0
    /// The import's epoch finished (false when a reimport joined it and another process runs it).
    public var finished: Bool = true
}

/// One entry of a directory tree, by its path relative to the root.
struct TreeEntry {
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
    /// Runs once the new domain exists, before any file is taken in; a throw undoes the import.
    var domainCreated: @Sendable () throws -> Void = {}
}

extension ChunkCache {
    /// Creates the domain `domain` from the directory hierarchy at `url`, as `import(_:fromDirectoryAt:)`.
    ///
    /// Each regular file becomes a file item identified by its relative path, each folder a folder item,
    /// each symlink a symlink item (never followed). The domain is created first (at domain version 0, its
    /// import unfinished), then the items are published in batches, each one transaction of changes (see
    /// `ImportRunner`), and `importDidFinish` is recorded when the last one is in. By default what was
    /// imported is then removed from the directory (the store owns the data now); with `copy` it stays. This
    /// method returns when all of that is done. On any error the import is undone: the store and the
    /// directory are left as they were (a crash instead resumes the import on the next open).
    ///
    /// Only the regular files listed by the walk are read, each checked to be the file listed (a file
    /// swapped for a symlink, a FIFO or another file meanwhile fails the import). A tree that holds the
    /// store, or lies inside it, is refused before anything is read.
    ///
    /// - Returns: What was imported; ``ImportResult/sourceRemovalError`` says why the directory is still
    ///   there when removing it failed after the domain was published.
    /// - Throws: `fileExists` when the domain exists (the directory is untouched); `invalidArgument` when
    ///   `url` is not a directory, holds the store or lies inside it, or a file changed during the import;
    ///   `noPermission` when the directory's folder is not writable (without `copy`).
    public func `import`(_ domain: String, fromDirectoryAt url: URL, copy: Bool = false) async throws -> ImportResult {
        try await importTree(domain, from: url, copy: copy, hooks: ImportHooks())
    }

    /// ``import(_:fromDirectoryAt:copy:)`` with `hooks` between its steps.
    func importTree(_ domain: String, from url: URL, copy: Bool, hooks: ImportHooks) async throws -> ImportResult {
        try Records.validate(domain: domain, item: nil)
        let store = self.store
        let path = url.standardizedFileURL.path
        return try await runBlocking(doing: "importing \(path) as domain \"\(domain)\"", store: store.path) {
            cancellation in
            let (root, _) = try Self.checkImportable(domain, path: path, removing: !copy, store: store)
            let writer = try store.writerToken()
            guard store.runningImports.claim(domain) else {
                throw CacheError(
                    .fileExists,
                    "domain \"\(domain)\" is being imported by this process already; import into a new domain name")
            }
            defer { store.runningImports.release(domain) }
            _ = try store.writer.writeAndWait { txn in
                try txn.beginImport(domain, from: root, copy: copy, writer: writer, store.dbs)
            }
            var runner = ImportRunner(
                store: store, domain: domain, writer: writer, cancellation: cancellation, hooks: hooks)
            do {
                try hooks.domainCreated()
                let outcome = try runner.run()
                return try Self.importResult(domain, runner.tally, outcome, copy: copy, store: store)
            } catch {
                // An error, not a crash: the import is undone, as if it never began (a crash resumes instead).
                Diagnostics.attempt("roll back the import of \(root) as domain \"\(domain)\"") {
                    try store.writer.writeAndWait { txn in
                        try txn.removeDomainRecords(domain, store.dbs)
                        try txn.deleteImportJob(of: domain, store.dbs)
                    }
                }
                throw CacheError.wrap(error, store: store.path, doing: "importing \(root) as domain \"\(domain)\"")
            }
        }
    }

    /// The public form of an import run's outcome; announces `importDidFinish` when the run recorded it.
    @available(*, noasync)
    static func importResult(
        _ domain: String, _ tally: ImportTally, _ outcome: (finished: Bool, removalError: String?), copy: Bool,
        store: Store
    ) throws -> ImportResult {
        let record = try store.environment.read { txn in try Records.domain(domain, in: txn, store.dbs) }
        if outcome.finished { store.importEvents.post(domain) }
        return ImportResult(
            domain: domain, files: tally.files, folders: tally.folders, symlinks: tally.symlinks,
            logicalBytes: tally.logicalBytes,
            newChunks: tally.newChunks, domainVersion: DomainVersion(rawValue: record.version),
            sourceRemoved: !copy && outcome.removalError == nil, sourceRemovalError: outcome.removalError,
            matchedFiles: tally.matched, finished: record.importFinishedEpoch == record.importEpoch)
    }

    /// Checks that `domain` is new and `path` a directory that can be imported; returns its canonical path
    /// and identity.
    private static func checkImportable(_ domain: String, path: String, removing: Bool, store: Store) throws -> (
        String, FileIdentity
    ) {
        let exists: Bool
        do {
            exists = try store.environment.read { txn in try txn.contains(store.dbs.domains, key: Keys.domain(domain)) }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "looking up domain \"\(domain)\"")
        }
        if exists {
            throw CacheError(.fileExists, "domain \"\(domain)\" already exists; import into a new domain name")
        }
        let (root, identity) = try ImportRunner.checkTree(path)
        try StoreFootprint(store).refuse(root: root, identity: identity)
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent().path
        if removing && (try? FileSystem.checkAccess(parent, for: .write)) == nil {
            throw CacheError(
                .noPermission,
                "\(root) cannot be moved into the store: its folder \(parent) is not writable; pass --copy to leave it in place"
            )
        }
        return (root, identity)
    }

    /// Removes what the import took in, deepest first, then the root; anything that appeared in the tree
    /// since the walk stays (it is not in the store). Returns why something could not be removed, or `nil`.
    static func removeImported(_ entries: [TreeEntry], root: String) -> String? {
        var firstFailure: String?
        let removals = entries.reversed().map { (path: root + "/" + $0.relativePath, isFolder: $0.kind == .folder) }
        for (path, isFolder) in removals + [(root, true)] {
            do {
                if isFolder { try FileSystem.removeDirectory(path) } else { try FileSystem.unlink(path) }
            } catch {
                firstFailure = firstFailure ?? "\(path): \(error)"
            }
        }
        return firstFailure.map {
            "could not remove \($0); the domain holds what was imported, so remove the rest of \(root) yourself"
        }
    }
}
