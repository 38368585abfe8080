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
    /// Whether the source directory was removed (it stays with `copy`).
    public var sourceRemoved: Bool
}

/// One entry of a directory tree, by its path relative to the root.
struct TreeEntry {
    var relativePath: String
    var kind: ItemKind
    var symlinkTarget = ""

    var parent: String {
        guard let slash = relativePath.lastIndex(of: "/") else { return Item.rootContainer }
        return String(relativePath[..<slash])
    }

    var filename: String { String(relativePath.split(separator: "/").last ?? Substring(relativePath)) }

    /// Lists `root`'s tree depth first without following symlinks (`lstat`), folders before their contents.
    static func walk(_ root: String) throws -> [TreeEntry] {
        var entries: [TreeEntry] = []
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            guard let dir = opendir(directory) else {
                throw CacheError.file(Errno.current, path: directory, doing: "listing the folder to import")
            }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
                }
                if name == "." || name == ".." { continue }
                let child = relative.isEmpty ? name : relative + "/" + name
                var st = stat()
                guard lstat(root + "/" + child, &st) == 0 else {
                    throw CacheError.file(Errno.current, path: root + "/" + child, doing: "reading the tree to import")
                }
                switch st.st_mode & S_IFMT {
                case S_IFDIR:
                    entries.append(TreeEntry(relativePath: child, kind: .folder))
                    pending.append(child)
                case S_IFREG:
                    entries.append(TreeEntry(relativePath: child, kind: .file))
                case S_IFLNK:
                    // Recorded as a link; never followed, so nothing outside the tree is read.
                    let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/" + child)) ?? ""
                    entries.append(TreeEntry(relativePath: child, kind: .symlink, symlinkTarget: target))
                default:
                    continue  // sockets, FIFOs and devices have no contents to cache
                }
            }
        }
        return entries
    }
}

extension ChunkCache {
    /// Creates the domain `domain` from the directory hierarchy at `url`, as `import(_:fromDirectoryAt:)`.
    ///
    /// Each regular file becomes a file item identified by its relative path, each folder a folder item,
    /// each symlink a symlink item (never followed). Nothing is visible until the whole tree is stored; then
    /// the domain appears in one transaction. By default the directory is then removed (the store owns the
    /// data now); with `copy` it stays. On any error the store and the directory are left as they were.
    ///
    /// - Throws: `fileExists` when the domain exists (the directory is untouched), `invalidArgument` when
    ///   `url` is not a directory, `noPermission` when it could not be removed afterwards.
    public func `import`(_ domain: String, fromDirectoryAt url: URL, copy: Bool = false) async throws -> ImportResult {
        try Catalog.validate(domain: domain, item: nil)
        let store = self.store
        let root = url.standardizedFileURL.path
        return try await runBlocking { cancellation in
            try Self.checkImportable(domain, root: root, removing: !copy, store: store)
            let entries = try TreeEntry.walk(root)
            var ingested: [(TreeEntry, IngestedContent)] = []
            var logicalBytes: Int64 = 0
            var newChunks = 0
            do {
                for entry in entries where entry.kind == .file {
                    let path = root + "/" + entry.relativePath
                    let file = try openRegularFile(path)
                    let content = try file.closeAfter {
                        try Ingestor(store: store, cancellation: cancellation)
                            .ingest(file, length: Int64(try file.status().st_size), path: path)
                    }
                    ingested.append((entry, content))
                    logicalBytes += content.length
                    newChunks += content.counts.newChunks
                }
                let domainVersion = try store.writer.writeAndWait { txn in
                    try Self.publishTree(domain, entries: entries, files: ingested, store: store, into: &txn)
                }
                let removed = !copy && (try? FileManager.default.removeItem(atPath: root)) != nil
                return ImportResult(
                    domain: domain, files: ingested.count, folders: entries.count { $0.kind == .folder },
                    symlinks: entries.count { $0.kind == .symlink }, logicalBytes: logicalBytes, newChunks: newChunks,
                    domainVersion: domainVersion, sourceRemoved: removed)
            } catch {
                Diagnostics.attempt("roll back the pending manifests of the import of \(root)") { try store.writer.writeAndWait { txn in
                    for (_, content) in ingested { try txn.dropManifest(content.manifestID, store.dbs) }
                } }
                throw error
            }
        }
    }

    private static func checkImportable(_ domain: String, root: String, removing: Bool, store: Store) throws {
        let exists = try store.environment.read { txn in try txn.get(store.dbs.domains, key: Keys.domain(domain)) != nil }
        if exists {
            throw CacheError(.fileExists, "domain \"\(domain)\" already exists; import into a new domain name")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
            throw CacheError(.invalidArgument, "\(root) does not exist; give the directory to import")
        }
        guard isDirectory.boolValue else {
            throw CacheError(.invalidArgument, "\(root) is not a directory; `import` takes a directory, `put` takes a file")
        }
        let parent = URL(fileURLWithPath: root).deletingLastPathComponent().path
        if removing && access(parent, W_OK) != 0 {
            throw CacheError(.noPermission, "\(root) cannot be moved into the store: its folder \(parent) is not writable; pass --copy to leave it in place")
        }
    }

    /// Writes the new domain and every item in one transaction; returns the domain's version.
    @available(*, noasync)
    private static func publishTree(
        _ domain: String, entries: [TreeEntry], files: [(TreeEntry, IngestedContent)], store: Store,
        into txn: inout WriteTransaction
    ) throws -> DomainVersion {
        let dbs = store.dbs
        if try txn.get(dbs.domains, key: Keys.domain(domain)) != nil {
            throw CacheError(.fileExists, "domain \"\(domain)\" was created by someone else during the import; import into a new domain name")
        }
        var record = DomainRecord(version: 0, createdAt: Date().timeIntervalSince1970)
        let version = try txn.bump(&record, named: domain, dbs)
        let now = Date().timeIntervalSince1970
        for entry in entries where entry.kind != .file {
            let item = ItemRecord(
                identifier: entry.relativePath, parent: entry.parent, filename: entry.filename, kind: entry.kind,
                metadataVersion: Array(String(version.rawValue).utf8), symlinkTarget: entry.symlinkTarget, createdAt: now)
            try txn.put(dbs.items, key: Keys.item(domain: domain, id: entry.relativePath), value: item.encoded())
        }
        for (entry, content) in files {
            _ = try txn.publish(content, domain: domain, item: entry.relativePath, contentVersion: nil, layout: store.layout,
                                parent: entry.parent, bumpDomain: false, dbs)
        }
        return version
    }
}
