import FileIO
import Foundation
import LMDBKit

/// Runs a domain's import job to its end (<doc:Contract#8-Import>): walks each tree, matches every entry against the
/// item already in its folder by name, size and modification time before reading anything (<doc:FileProviderRules#G1>),
/// ingests the rest, and publishes in batches, each one transaction of changes. A crash loses at most the batch in
/// flight (its pending manifests roll back on the next open); the resumed job matches what was published
/// and goes on, so every file is taken in exactly once.
struct ImportRunner {
    let engine: Engine
    let store: Store
    let domain: String
    let writer: WriterToken
    let cancellation: CancellationFlag
    let hooks: ImportHooks
    private(set) var tally = ImportTally()
    /// The first tree's listing when the import's start already walked it (before moving it into the staging
    /// area): the tree keeps its entries' identities through the rename, so it is not walked again.
    private var listing: TreeListing?

    /// Items published per transaction, and ingested bytes per transaction.
    static let batchItems = 512
    static let batchBytes: Int64 = 64 << 20

    init(
        engine: Engine, domain: String, writer: WriterToken, cancellation: CancellationFlag, hooks: ImportHooks,
        listing: TreeListing? = nil
    ) {
        self.engine = engine
        self.store = engine.store
        self.domain = domain
        self.writer = writer
        self.cancellation = cancellation
        self.hooks = hooks
        self.listing = listing
    }

    /// Runs the job until it is gone; returns whether this run recorded `importDidFinish`, and why the
    /// source is still there when removing it failed.
    @available(*, noasync)
    ///
    /// The caller holds the domain's claim in ``Engine/runningImports``: one runner per job per process.
    mutating func run() throws -> (finished: Bool, removalError: String?) {
        var finished = false
        var removalError: String?
        while let job = try store.environment.read({ txn in try txn.importJob(domain, store.dbs) }) {
            guard job.writer == writer else {
                throw CacheError(
                    .transient,
                    "the import of domain \"\(domain)\" is run by another process; wait for it, or retry `import --resume` if that process died"
                )
            }
            switch job.phase {
            case .importing where job.done < job.sources.count:
                if job.done == 0 { try ensureStaged(job) }
                // The first tree of a first import goes into an empty domain: nothing there to delete.
                try take(job.sources[job.done], deletingUnseen: job.epoch > 1 || job.done > 0)
                try store.writer.writeAndWait { txn in
                    guard var current = try txn.importJob(domain, store.dbs), current.writer == writer else { return }
                    current.done += 1
                    try txn.saveImportJob(current, of: domain, store.dbs)
                }
            case .importing:
                finished =
                    try store.writer.writeAndWait { txn in
                        guard var current = try txn.importJob(domain, store.dbs), current.done == current.sources.count
                        else { return false }
                        let recorded = try txn.finishImport(domain, epoch: current.epoch, store.dbs)
                        if current.copy {
                            try txn.deleteImportJob(of: domain, store.dbs)
                        } else {
                            current.phase = .removingSource
                            try txn.saveImportJob(current, of: domain, store.dbs)
                        }
                        return recorded
                    } || finished
            case .removingSource:
                removalError = try removeImported(job.sources[0], original: job.original)
                try store.writer.writeAndWait { txn in try txn.deleteImportJob(of: domain, store.dbs) }
            }
        }
        return (finished, removalError)
    }

    // MARK: - One tree

    /// What a batch publishes.
    private enum Step {
        case folder(ItemRecord)
        case symlink(ItemRecord, replacing: ItemRecord?)
        case file(id: String, parent: String, name: String, modified: Double, content: IngestedContent)
        /// A file of at most ``smallFileLimit`` bytes, read and encoded whole: stored by the batch's own
        /// transaction, with no pending manifest (and no flush) of its own.
        case smallFile(
            id: String, parent: String, name: String, modified: Double, length: Int64, root: ChunkDigest,
            chunks: [DownloadedChunk])
    }

    /// Files up to this size are taken in whole by their batch's transaction: a directory of many small
    /// files costs a flush per batch, not several per file.
    static let smallFileLimit: Int64 = 1 << 20

    /// Takes in one tree: every entry matched, created or given a new version; for a reimport, the items
    /// below its item that the tree no longer has are deleted.
    @available(*, noasync)
    private mutating func take(_ source: ImportJobRecord.Source, deletingUnseen: Bool) throws {
        let (root, identity) = try Self.checkTree(source.root)
        let entries: [TreeEntry]
        if let listing, listing.root == identity {
            entries = listing.entries
            self.listing = nil
        } else {
            do {
                entries = try TreeEntry.walk(root, rootIdentity: identity, refusing: StoreFootprint(store))
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "listing \(root) to import")
            }
        }
        hooks.afterWalk(root)
        var seen: Set<String> = []
        var steps: [Step] = []
        var batchBytes: Int64 = 0
        do {
            try takeEntries(entries, of: source, root: root, steps: &steps, batchBytes: &batchBytes, seen: &seen)
            tally.newChunks += try publish(steps)
        } catch {
            // Ingested, not yet published: their pending manifests go now (a crash leaves them to the next open).
            let dbs = store.dbs
            store.diagnostics.attempt("roll back the pending manifests of an import batch of domain \"\(domain)\"") {
                try store.writer.writeAndWait { txn in
                    for case .file(_, _, _, _, let content) in steps { try txn.dropManifest(content.manifestID, dbs) }
                }
            }
            throw error
        }
        if deletingUnseen { try deleteUnseen(below: source.below, seen: seen) }
    }

    /// Matches or ingests each entry of a walked tree, publishing a batch whenever it is full.
    @available(*, noasync)
    private mutating func takeEntries(
        _ entries: [TreeEntry], of source: ImportJobRecord.Source, root: String, steps: inout [Step],
        batchBytes: inout Int64,
        seen: inout Set<String>
    ) throws {
        var folderIDs = ["": source.below]
        var newFolders: Set<String> = []
        for entry in entries {
            try cancellation.check()
            let parentPath = entry.relativePath.contains("/") ? entry.parent : ""
            guard let parentID = folderIDs[parentPath] else { continue }
            let existing = newFolders.contains(parentPath) ? nil : try child(named: entry.filename, of: parentID)
            switch entry.kind {
            case .folder:
                tally.folders += 1
                if let existing, existing.kind == .folder {
                    folderIDs[entry.relativePath] = existing.identifier
                    seen.insert(existing.identifier)
                    continue
                }
                let id = try freshIdentifier(source.below, entry.relativePath, taken: seen)
                var folder = ItemRecord(
                    identifier: id, parent: parentID, filename: entry.filename, kind: .folder, metadataVersion: [],
                    createdAt: 0)
                folder.contentModificationDate = entry.modificationDate
                steps.append(.folder(folder))
                folderIDs[entry.relativePath] = id
                newFolders.insert(entry.relativePath)
                seen.insert(id)
            case .symlink:
                tally.symlinks += 1
                if let existing, existing.kind == .symlink, existing.symlinkTarget == entry.symlinkTarget {
                    seen.insert(existing.identifier)
                    continue
                }
                let id =
                    existing?.kind == .symlink
                    ? existing!.identifier : try freshIdentifier(source.below, entry.relativePath, taken: seen)
                var link =
                    existing?.kind == .symlink
                    ? existing!
                    : ItemRecord(
                        identifier: id, parent: parentID, filename: entry.filename, kind: .symlink, metadataVersion: [],
                        createdAt: 0)
                link.symlinkTarget = entry.symlinkTarget
                link.contentModificationDate = entry.modificationDate
                steps.append(.symlink(link, replacing: existing?.kind == .symlink ? existing : nil))
                seen.insert(id)
            case .file:
                let size = entry.size
                if let existing, existing.kind == .file,
                    try matches(existing, size: size, modified: entry.modificationDate)
                {
                    tally.files += 1
                    tally.matched += 1  // G1: same parent, name, size and time: nothing is read
                    tally.logicalBytes += size
                    seen.insert(existing.identifier)
                    continue
                }
                let id =
                    existing?.kind == .file
                    ? existing!.identifier : try freshIdentifier(source.below, entry.relativePath, taken: seen)
                let length: Int64
                do {
                    length = try takeFile(
                        entry, root: root, id: id, parent: parentID, existing: existing, steps: &steps)
                } catch let error as CacheError where Self.failsOnlyItsEntry(error) {
                    // The entry's failure, not the import's: reported, and the rest goes on (seed 002).
                    fail(entry, error)
                    if existing?.kind == .file { seen.insert(id) }  // unread is not gone: a reimport keeps it
                    continue
                }
                tally.files += 1
                seen.insert(id)
                tally.logicalBytes += length
                batchBytes += length
            }
            if steps.count >= Self.batchItems || batchBytes >= Self.batchBytes {
                tally.newChunks += try publish(steps)
                steps = []
                batchBytes = 0
            }
        }
    }

    /// Whether an error taking in one file is that file's alone: anything but a cancel or a damaged store.
    private static func failsOnlyItsEntry(_ error: CacheError) -> Bool {
        error.code != .userCancelled && error.code != .corruptData
    }

    /// Records and announces that `entry` could not be taken in.
    private mutating func fail(_ entry: TreeEntry, _ error: CacheError) {
        let failure = ImportFailure(domain: domain, path: entry.relativePath, error: error)
        tally.failures.append(failure)
        engine.importEvents.post(failure)
    }

    /// Reads or ingests one listed file as the step that publishes it; returns its length.
    @available(*, noasync)
    private mutating func takeFile(
        _ entry: TreeEntry, root: String, id: String, parent parentID: String, existing: ItemRecord?,
        steps: inout [Step]
    ) throws -> Int64 {
        let path = root + "/" + entry.relativePath
        let file = try openRegularFile(path, listedAs: entry.identity)
        return try file.closeAfter { () throws -> Int64 in
            let length = Int64(try file.status().st_size)
            if length <= Self.smallFileLimit {
                let (root, chunks) = try encodeWhole(file, length: length, path: path)
                steps.append(
                    .smallFile(
                        id: id, parent: parentID, name: entry.filename, modified: entry.modificationDate,
                        length: length, root: root, chunks: chunks))
            } else {
                let previous =
                    existing?.kind == .file
                    ? try Ingestor.previousVersion(of: id, domain: domain, store: store) : nil
                let content = try Ingestor(engine: engine, cancellation: cancellation).ingest(
                    file, length: length, path: path, previous: previous)
                steps.append(
                    .file(
                        id: id, parent: parentID, name: entry.filename, modified: entry.modificationDate,
                        content: content))
                tally.newChunks += content.counts.newChunks
            }
            return length
        }
    }

    /// Publishes a batch as one transaction of changes; returns how many of its small files' chunks were new
    /// to the store. On failure nothing is published and the batch's pending manifests stay for the caller
    /// to drop.
    @available(*, noasync)
    private func publish(_ steps: [Step]) throws -> Int {
        guard !steps.isEmpty else { return 0 }
        let dbs = store.dbs
        let layout = store.layout
        let domain = self.domain
        return try store.writer.writeAndWait { txn in
            var inserted = 0
            var changes = try txn.beginChanges(to: domain, dbs)
            for step in steps {
                switch step {
                case .folder(var folder):
                    folder.createdAt = changes.now
                    try txn.commit(folder, replacing: nil, in: &changes, dbs)
                case .symlink(var link, let replacing):
                    if replacing == nil { link.createdAt = changes.now }
                    try txn.commit(link, replacing: replacing, in: &changes, dbs)
                case .file(let id, let parent, let name, let modified, let content):
                    _ = try txn.publish(
                        content, item: id, contentVersion: nil, layout: layout, parent: parent, filename: name,
                        modificationDate: modified, in: &changes, dbs)
                case .smallFile(let id, let parent, let name, let modified, let length, let root, let chunks):
                    let manifestID = try txn.takeManifestID(dbs)
                    try txn.writeAbsentManifest(manifestID, chunkCount: layout.chunkCount(forLength: length), dbs)
                    inserted += try txn.storeDownloaded(chunks, manifestID: manifestID, dbs)
                    let content = IngestedContent(
                        manifestID: manifestID, length: length, root: root,
                        counts: IngestCounts(chunks: chunks.count, zeroChunks: chunks.count { $0.digest == nil }))
                    _ = try txn.publish(
                        content, item: id, contentVersion: nil, layout: layout, parent: parent, filename: name,
                        modificationDate: modified, in: &changes, dbs)
                }
            }
            // Files read again but holding their current bytes change nothing: no domain version (E1).
            if changes.count > 0 { try txn.finish(changes, dbs) }
            return inserted
        }
    }

    /// Reads a small file whole and encodes its chunks; returns its root and chunks.
    @available(*, noasync)
    private func encodeWhole(_ file: FileDescriptor, length: Int64, path: String) throws -> (
        ChunkDigest, [DownloadedChunk]
    ) {
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let read: Int
        do {
            read = try bytes.withUnsafeMutableBytes { try file.readAll(fromAbsoluteOffset: 0, into: $0) }
        } catch {
            throw CacheError.file(
                error as? Errno ?? Errno(rawValue: EIO), path: path, doing: "reading the file to import")
        }
        guard read == bytes.count else {
            throw CacheError(
                .invalidArgument,
                "\(path) shrank while it was imported; nothing was imported: import again when nothing changes it")
        }
        let layout = store.layout
        var encoder = ChunkEncoder(store: store, largest: min(Int(length), layout.chunkSize))
        var hasher = RootHasher(length: length)
        var chunks: [DownloadedChunk] = []
        try bytes.withUnsafeBytes { raw in
            for index in 0..<layout.chunkCount(forLength: length) {
                let range = layout.range(ofChunk: index, length: length)
                let chunk = try encoder.encode(
                    UnsafeRawBufferPointer(rebasing: raw[Int(range.location)..<Int(range.end)]), index: index)
                hasher.add(chunk.digest)
                chunks.append(chunk)
            }
        }
        return (hasher.finalize(), chunks)
    }

    /// Deletes the items listed below `below` (deepest first) that the tree walked no longer has.
    @available(*, noasync)
    private func deleteUnseen(below: String, seen: Set<String>) throws {
        let domain = self.domain
        let dbs = store.dbs
        try store.writer.writeAndWait { txn in
            var changes = try txn.beginChanges(to: domain, dbs)
            var pending = [below]
            var gone: [ItemRecord] = []
            while let folder = pending.popLast() {
                for child in try txn.listed(in: folder, domain: domain, dbs) {
                    if !seen.contains(child.identifier) {
                        gone.append(child)
                    } else if child.kind == .folder {
                        pending.append(child.identifier)
                    }
                }
            }
            for item in gone where try txn.contains(dbs.items, key: Keys.item(domain: domain, id: item.identifier)) {
                _ = try txn.deletePermanently(item.identifier, in: &changes, dbs)
            }
            if changes.count > 0 { try txn.finish(changes, dbs) }
        }
    }

    // MARK: - Matching

    /// The item named `name` in folder `parent`, if any.
    private func child(named name: String, of parent: String) throws -> ItemRecord? {
        try store.environment.read { txn in try txn.items(named: name, in: parent, domain: domain, store.dbs).first }
    }

    /// Whether a file item's newest version has `size` bytes and was modified at `modified`
    /// (<doc:FileProviderRules#G1>): the item's time, or the time of a file last found to hold the same bytes
    /// (``VersionRecord/matchedModificationDate``).
    private func matches(_ item: ItemRecord, size: Int64, modified: Double) throws -> Bool {
        guard
            let newest = try store.environment.read({ txn in
                try Records.versions(ofItem: item.identifier, domain: domain, in: txn, store.dbs).first
            })
        else { return false }
        return newest.size == size
            && (item.contentModificationDate == modified || newest.matchedModificationDate == modified)
    }

    /// An identifier for a new item at `relative` below `below`: its path, unless an item has it already or
    /// this tree took it (`taken`, which holds every identifier of the batch not yet published).
    private func freshIdentifier(_ below: String, _ relative: String, taken: Set<String>) throws -> String {
        let path = below == Item.rootContainer ? relative : below + "/" + relative
        func isStored(_ id: String) throws -> Bool {
            try store.environment.read { txn in
                try txn.contains(store.dbs.items, key: Keys.item(domain: domain, id: id))
            }
        }
        var candidate = path
        var suffix = 1
        while try taken.contains(candidate) || ItemNames.isContainer(candidate) || isStored(candidate) {
            suffix += 1
            candidate = "\(path)~\(suffix)"
        }
        return candidate
    }

    // MARK: - The source

    /// The canonical path and identity of a tree to walk.
    static func checkTree(_ path: String) throws -> (String, FileIdentity) {
        let root: String
        do { root = try FileSystem.canonicalPath(path) } catch {
            if error == .noSuchFile {
                throw CacheError(.invalidArgument, "\(path) does not exist; give the directory to import")
            }
            throw CacheError.file(error, path: path, doing: "resolving the directory to import")
        }
        let status: stat
        do { status = try FileSystem.status(root, symlinks: .doNotFollow) } catch {
            throw CacheError.file(error, path: root, doing: "reading the directory to import")
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw CacheError(
                .invalidArgument, "\(path) is not a directory; `import` takes a directory, `put` takes a file")
        }
        return (root, FileIdentity(status))
    }

    /// A moving import whose process died between recording its job and moving its directory: moves it
    /// into the staging area now. Nothing to do once it is there.
    @available(*, noasync)
    private func ensureStaged(_ job: ImportJobRecord) throws {
        let staging = job.sources[0].root
        guard let original = job.original, FileIdentity(ofPath: staging) == nil else { return }
        guard FileIdentity(ofPath: original) != nil else {
            throw CacheError(
                .invalidArgument,
                "\(original), which domain \"\(domain)\" was importing, is gone and was never moved into the store; remove the domain (`chunkcache domain rm`) and import the directory again"
            )
        }
        try ChunkCache.moveIntoStaging(original, to: staging, store: store)
    }

    /// Removes from the source what the domain holds of it: the files it matches (so a file added after the
    /// walk, or changed since, stays), the folders left empty, then the root. For a moving import the
    /// source is the staging area, and what is left of it (entries that failed) goes back to `original`.
    /// Returns where what was not removed is and why, or nil.
    @available(*, noasync)
    private func removeImported(_ source: ImportJobRecord.Source, original: String?) throws -> String? {
        guard let (root, identity) = try? Self.checkTree(source.root) else { return nil }  // already gone
        guard let entries = try? TreeEntry.walk(root, rootIdentity: identity, refusing: StoreFootprint(store)) else {
            return "could not list \(root) to remove it; the domain holds what was imported, so remove it yourself"
        }
        var folderIDs = ["": source.below]
        var imported: [TreeEntry] = []
        for entry in entries {
            let parentPath = entry.relativePath.contains("/") ? entry.parent : ""
            guard let parentID = folderIDs[parentPath], let item = try child(named: entry.filename, of: parentID) else {
                continue
            }
            switch entry.kind {
            case .folder where item.kind == .folder:
                folderIDs[entry.relativePath] = item.identifier
                imported.append(entry)
            case .file where item.kind == .file:
                if try matches(item, size: entry.size, modified: entry.modificationDate) { imported.append(entry) }
            case .symlink where item.kind == .symlink && item.symlinkTarget == entry.symlinkTarget:
                imported.append(entry)
            default:
                continue
            }
        }
        let failure = ChunkCache.removeImported(imported, root: root)
        guard let original else {
            return failure.map {
                "could not remove \($0); the domain holds what was imported, so remove the rest of \(root) yourself"
            }
        }
        guard FileIdentity(ofPath: root) != nil else { return nil }  // all of it was imported
        let why = failure.map { "; could not remove \($0)" } ?? ""
        do {
            try FileSystem.rename(root, to: original, options: .noReplace)
            // Named where the user finds them now.
            return
                "what the store did not take in, or could not remove, is back at \(original) (the domain holds the rest)\(why.replacingOccurrences(of: root, with: original)): see the import's failures, then `put` or reimport it"
        } catch {
            return
                "what the store did not take in, or could not remove, is kept at \(root), since \(original) exists again (\(error))\(why): move it out of the store yourself"
        }
    }
}
