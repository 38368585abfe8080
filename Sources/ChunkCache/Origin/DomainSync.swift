import Foundation
import LMDBKit
import OriginKit
import Synchronization

/// Gathers listing pages as they arrive.
final class ListingCollector: Sendable {
    private let collected = Mutex<[String: RemoteEntry]>([:])

    func add(_ page: [RemoteEntry]) {
        collected.withLock { entries in
            for entry in page where Self.isUsable(entry.item) { entries[entry.item] = entry }
        }
    }

    var entries: [String: RemoteEntry] { collected.withLock { $0 } }

    /// Keys that cannot be items here (empty path parts, `.` or `..`, NUL, too long) are skipped.
    private static func isUsable(_ item: String) -> Bool {
        guard !item.isEmpty, item.utf8.count <= 4096, !item.utf8.contains(0) else { return false }
        return item.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
            !$0.isEmpty && $0 != "." && $0 != ".."
        }
    }
}

extension WriteTransaction {
    /// Applies an origin's full listing to the domain's files and folders as one set of changes.
    @available(*, noasync)
    mutating func applyListing(
        _ listing: [String: RemoteEntry], domain name: String, layout: ChunkLayout, _ dbs: Databases
    ) throws -> SyncResult {
        var changes = try beginChanges(to: name, dbs)
        let domainKey = changes.key
        var existing: [String: ItemRecord] = [:]
        try scan(dbs.items, prefix: domainKey) { _, value in
            let item = try ItemRecord(decoding: value, name: "an item of \(RecordNames.domain(name))")
            existing[item.identifier] = item
            return true
        }
        var result = SyncResult(created: 0, modified: 0, deleted: 0, unchanged: 0, domainVersion: changes.version)
        // Folders every listed path implies.
        var folders: Set<String> = []
        for path in listing.keys {
            var parts = path.split(separator: "/").dropLast()
            while !parts.isEmpty {
                guard folders.insert(parts.joined(separator: "/")).inserted else { break }
                parts = parts.dropLast()
            }
        }
        for folder in folders.sorted() where existing[folder] == nil {  // parents before children
            let slash = folder.lastIndex(of: "/")
            var item = ItemRecord(
                identifier: folder, parent: slash.map { String(folder[..<$0]) } ?? Item.rootContainer,
                filename: String(folder[(slash.map { folder.index(after: $0) } ?? folder.startIndex)...]),
                kind: .folder, metadataVersion: [], createdAt: changes.now)
            item.contentModificationDate = changes.now
            existing[folder] = try commit(item, replacing: nil, in: &changes, dbs)
            result.created += 1
        }
        for (path, entry) in listing.sorted(by: { $0.key < $1.key }) {
            let current = existing[path]
            if let current, current.kind != .file { continue }  // a folder of the same name: keep the folder
            let version = Array(
                (entry.version ?? RemoteObject.fallbackVersion(lastModified: "listed", size: entry.size)).utf8)
            if current != nil {
                if try contains(
                    dbs.versions, key: Keys.version(itemKey: Keys.item(domain: name, id: path), contentVersion: version)
                ) {
                    result.unchanged += 1
                    continue
                }
            }
            guard entry.version != nil || current == nil else {
                // the listing does not say, and the store has a version: the next fetch checks it
                result.unchanged += 1
                continue
            }
            let slash = path.lastIndex(of: "/")
            _ = try addOriginVersion(
                version, size: entry.size, of: path, existing: current, layout: layout,
                parent: slash.map { String(path[..<$0]) } ?? Item.rootContainer,
                modificationDate: entry.modificationDate,
                in: &changes, dbs)
            if current == nil { result.created += 1 } else { result.modified += 1 }
        }
        // What the origin no longer has: files not listed, then folders no listed path needs, deepest first.
        for (id, item) in existing where item.kind == .file && listing[id] == nil {
            try deleteItem(item, in: &changes, dbs)
            result.deleted += 1
        }
        for (id, item) in existing.sorted(by: { $0.key.count > $1.key.count })
        where item.kind == .folder && !folders.contains(id) {
            guard try listed(in: id, domain: name, dbs).isEmpty else { continue }  // still holds a local item
            try deleteItem(item, in: &changes, dbs)
            result.deleted += 1
        }
        if changes.count > 0 {
            try finish(changes, dbs)
        } else {
            result.domainVersion = DomainVersion(rawValue: changes.version.rawValue - 1)
        }
        return result
    }
}

extension CacheError {
    /// The error a sync reports when the origin cannot list the domain.
    static func originListing(_ failure: OriginFailure, domain: String) -> CacheError {
        switch failure {
        case .notFound(let status):
            return CacheError(
                .invalidArgument,
                "the origin of domain \"\(domain)\" has no listing at its base (\(status)); check the origin URL, and that an nginx origin has `autoindex on; autoindex_format json;`"
            )
        case .invalidResponse(let detail):
            return CacheError(
                .invalidArgument,
                "the origin of domain \"\(domain)\" gave a listing that cannot be read (\(detail)); nothing was applied"
            )
        default:
            return .origin(failure, item: "the listing", domain: domain, strict: false)
        }
    }
}
