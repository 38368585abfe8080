import FileIO
import Foundation
import LMDBKit

extension ChunkCache {
    /// Creates the domain `domain` from the directory hierarchy at `url`, as `import(_:fromDirectoryAt:)`,
    /// and returns as soon as the domain exists, as the seed's completion handler runs.
    ///
    /// By default the directory is taken over first, as the seed's system "moves the provided directory
    /// into its local cache": one `rename(2)` into the store's staging area, so once this returns `url` is
    /// no longer valid and nothing the user writes there reaches the import. A directory on another
    /// filesystem than the store cannot be renamed in and is refused (`invalidArgument`, naming `--copy`):
    /// a copy-then-remove would read files the user can still write and leave half a tree on either side of
    /// a failure. With `copy` the directory is read in place and stays.
    ///
    /// Then, in the background, each regular file becomes a file item identified by its relative path, each
    /// folder a folder item, each symlink a symlink item (never followed), published in batches, each one
    /// transaction of changes (see `ImportRunner`), and `importDidFinish` is recorded when the last one is in
    /// (``observeImportsFinished(_:)``, ``ImportOperation/result()``). An entry that fails (a file swapped
    /// for a symlink, a FIFO or another file, or unreadable) is reported in ``ImportResult/failures`` and
    /// through ``observeImportFailures(_:)``, and the rest goes on: the domain is never undone once it
    /// exists. What was imported is removed from the staging area; what was not goes back to `url`. A crash
    /// at any point resumes on the next open, from the staging area.
    ///
    /// A tree that holds the store, or lies inside it, is refused before anything is read.
    ///
    /// - Returns: The import under way; ``ImportOperation/result()`` waits for its end.
    /// - Throws: `fileExists` when the domain exists (the directory is untouched); `invalidArgument` when
    ///   `url` is not a directory, holds the store, lies inside it, or (without `copy`) is on another
    ///   filesystem; `noPermission` when the directory cannot be moved (without `copy`). The store and the
    ///   directory are then as they were.
    public func `import`(_ domain: String, fromDirectoryAt url: URL, copy: Bool = false) async throws
        -> ImportOperation
    {
        try await startImport(domain, from: url, copy: copy, hooks: ImportHooks())
    }

    /// ``import(_:fromDirectoryAt:copy:)`` with `hooks` between its steps, to its end.
    func importTree(_ domain: String, from url: URL, copy: Bool, hooks: ImportHooks) async throws -> ImportResult {
        try await startImport(domain, from: url, copy: copy, hooks: hooks).result()
    }

    /// Creates the domain and takes the directory over, then runs the import in the background.
    func startImport(_ domain: String, from url: URL, copy: Bool, hooks: ImportHooks) async throws
        -> ImportOperation
    {
        try Records.validate(domain: domain, item: nil)
        let engine = self.engine
        let store = engine.store
        let path = url.standardizedFileURL.path
        let what = "importing \(path) as domain \"\(domain)\""
        let (writer, listing) = try await runBlocking(doing: what, store: store.path) { _ in
            try Self.beginImport(domain, path: path, copy: copy, hooks: hooks, engine: engine)
        }
        let task = Task.detached { () async throws -> ImportResult in
            defer { engine.runningImports.release(domain) }
            do {
                return try await runBlocking(doing: what, store: store.path) { cancellation in
                    var runner = ImportRunner(
                        engine: engine, domain: domain, writer: writer, cancellation: cancellation, hooks: hooks,
                        listing: listing)
                    let outcome = try runner.run()
                    return try Self.importResult(domain, runner.tally, outcome, copy: copy, engine: engine)
                }
            } catch {
                // The domain stays with what was published; the job resumes on the next open.
                engine.importEvents.post(
                    ImportFailure(
                        domain: domain, path: nil, error: CacheError.wrap(error, store: store.path, doing: what)))
                throw error
            }
        }
        return ImportOperation(domain: domain, task: task)
    }

    /// The first steps of an import, undone on any error: checks, the domain and its job in one transaction,
    /// the move into the staging area (without `copy`), then `hooks.domainCreated`. Returns the writer that
    /// runs the job, holding the domain's claim in ``Engine/runningImports`` for it, and the tree's listing.
    @available(*, noasync)
    private static func beginImport(_ domain: String, path: String, copy: Bool, hooks: ImportHooks, engine: Engine)
        throws -> (WriterToken, TreeListing)
    {
        let store = engine.store
        let (root, listing) = try checkImportable(domain, path: path, removing: !copy, store: store)
        let writer = try store.writerToken()
        guard engine.runningImports.claim(domain) else {
            throw CacheError(
                .fileExists,
                "domain \"\(domain)\" is being imported by this process already; import into a new domain name")
        }
        var staged: String?
        do {
            let staging = copy ? nil : try stagingPath(store)
            _ = try store.writer.writeAndWait { txn in
                try txn.beginImport(domain, from: root, staging: staging, writer: writer, store.dbs)
            }
            do {
                if let staging {
                    try moveIntoStaging(root, to: staging, store: store)
                    staged = staging
                }
                try hooks.domainCreated()
            } catch {
                // Before the domain was handed back: the import is undone, as if it never began.
                store.diagnostics.attempt("roll back the import of \(root) as domain \"\(domain)\"") {
                    if let staged { try FileSystem.rename(staged, to: root, options: .noReplace) }
                    try store.writer.writeAndWait { txn in
                        try txn.removeDomainRecords(domain, store.dbs)
                        try txn.deleteImportJob(of: domain, store.dbs)
                    }
                }
                throw error
            }
        } catch {
            engine.runningImports.release(domain)
            throw CacheError.wrap(error, store: store.path, doing: "importing \(root) as domain \"\(domain)\"")
        }
        return (writer, listing)
    }

    /// A new name in the store's staging area, which is made on first use.
    @available(*, noasync)
    private static func stagingPath(_ store: Store) throws -> String {
        do throws(Errno) {
            try FileSystem.makeDirectory(store.importsPath, mode: 0o700)
        } catch  where error == .fileExists {
        } catch {
            throw CacheError.file(error, path: store.importsPath, doing: "making the store's staging area for imports")
        }
        return store.importsPath + "/" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
    }

    /// Takes the tree at `root` over: one `rename(2)` to `staging`, so nothing written at `root` afterwards
    /// reaches the import (seed 002: the system moves the directory into its cache).
    @available(*, noasync)
    static func moveIntoStaging(_ root: String, to staging: String, store: Store) throws {
        do throws(Errno) {
            try FileSystem.rename(root, to: staging, options: .noReplace)
        } catch  where error.rawValue == EXDEV {
            throw CacheError.otherFilesystem(root, store: store.path)
        } catch  where error.rawValue == EACCES || error.rawValue == EPERM {
            throw CacheError(
                .noPermission,
                "\(root) cannot be moved into the store \(store.path) (\(error)): give write access to it and its folder, or pass --copy to leave it in place",
                underlying: error)
        } catch {
            throw CacheError.file(error, path: root, doing: "moving the directory to import into the store")
        }
    }

    /// The public form of an import run's outcome; announces `importDidFinish` when the run recorded it.
    @available(*, noasync)
    static func importResult(
        _ domain: String, _ tally: ImportTally, _ outcome: (finished: Bool, removalError: String?), copy: Bool,
        engine: Engine
    ) throws -> ImportResult {
        let store = engine.store
        let record = try store.environment.read { txn in try Records.domain(domain, in: txn, store.dbs) }
        if outcome.finished { engine.importEvents.post(domain) }
        return ImportResult(
            domain: domain, files: tally.files, folders: tally.folders, symlinks: tally.symlinks,
            logicalBytes: tally.logicalBytes,
            newChunks: tally.newChunks, domainVersion: DomainVersion(rawValue: record.version),
            sourceRemoved: !copy && outcome.removalError == nil, sourceRemovalError: outcome.removalError,
            matchedFiles: tally.matched, finished: record.importFinishedEpoch == record.importEpoch,
            failures: tally.failures)
    }

    /// Checks that `domain` is new and `path` a directory that can be imported (moved into the store when
    /// `removing`); returns its canonical path.
    @available(*, noasync)
    private static func checkImportable(_ domain: String, path: String, removing: Bool, store: Store) throws -> (
        root: String, listing: TreeListing
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
        // Listed before anything is made, so a tree that cannot be listed, or holds a file of the store (a
        // hard link of `data.mdb`, a bind mount), is refused while nothing needs undoing; the runner takes
        // this listing rather than walking the tree again.
        let listing = TreeListing(
            root: identity, entries: try TreeEntry.walk(root, rootIdentity: identity, refusing: StoreFootprint(store)))
        guard removing else { return (root, listing) }
        // A rename cannot cross filesystems: say so before anything is made (the rename's EXDEV stays the
        // judge, for bind mounts of one filesystem).
        if let storeFolder = FileIdentity(ofPath: store.path), storeFolder.device != identity.device {
            throw CacheError.otherFilesystem(root, store: store.path)
        }
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent().path
        if (try? FileSystem.checkAccess(parent, for: .write)) == nil {
            throw CacheError(
                .noPermission,
                "\(root) cannot be moved into the store: its folder \(parent) is not writable; pass --copy to leave it in place"
            )
        }
        return (root, listing)
    }

    /// Removes what the import took in, deepest first, then the root; anything that appeared in the tree
    /// since the walk stays (it is not in the store). Returns the first path that could not be removed with
    /// the system's reason, or `nil`.
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
        return firstFailure
    }
}
