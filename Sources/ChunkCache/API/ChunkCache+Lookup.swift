import Foundation
import LMDBKit

extension ChunkCache {
    /// The first offset at or after `offset` where `target` begins in version `version` of `identifier`, read
    /// on the calling thread as ``status(of:)``: the answer to `lseek(2)` with `SEEK_DATA` or `SEEK_HOLE`.
    ///
    /// Holes are the version's zero chunks (the store never stores them) and the end of the file; whatever
    /// the store has not seen yet counts as data, so a file of an origin domain shows its holes as its
    /// chunks are downloaded. Costs one manifest entry per chunk skipped.
    ///
    /// - Returns: The offset, or nil when there is none: no data at or after `offset`, or `offset` at or
    ///   past the end (`ENXIO`).
    /// - Throws: `versionNoLongerAvailable` when the store no longer has the version.
    @available(*, noasync, message: "a blocking read of the store")
    public func seek(_ target: SeekTarget, in identifier: ItemIdentifier, version: ItemVersion, from offset: Int64)
        throws -> Int64?
    {
        try Records.validate(domain: identifier.domain, item: identifier.rawValue)
        let dbs = store.dbs
        return try store.environment.read { txn in
            guard
                let record = try Records.version(
                    version.contentVersion, ofItem: identifier.rawValue, domain: identifier.domain, in: txn, dbs)
            else {
                throw CacheError(
                    .versionNoLongerAvailable,
                    "item \"\(identifier.rawValue)\" of domain \"\(identifier.domain)\" no longer has the version being read; open it again"
                )
            }
            return try Self.seek(target, in: record, from: offset, txn, dbs)
        }
    }

    private static func seek<T: TransactionReading & ~Copyable>(
        _ target: SeekTarget, in version: VersionRecord, from offset: Int64, _ txn: borrowing T, _ dbs: Databases
    ) throws -> Int64? {
        guard offset >= 0, offset < version.size else { return nil }
        let layout = version.layout
        var cursor = ManifestCursor(manifestID: version.manifestID, dbs: dbs)
        let count = layout.chunkCount(forLength: version.size)
        var index = offset >> layout.shift
        while index < count {
            let isHole = try cursor.entry(index, in: txn) == .zero
            if isHole == (target == .hole) { return max(offset, index << layout.shift) }
            index += 1
        }
        return target == .hole ? version.size : nil
    }

    /// The item `identifier` of `domain` and how much of it is cached, read from the store on the calling
    /// thread: for callers that own their thread and cannot await (a FUSE session thread). One read
    /// transaction; nothing is asked of the origin.
    ///
    /// The root container (``Item/rootContainer``) is given as a folder with no dates.
    ///
    /// - Returns: `nil` when the catalogue has no such item.
    /// - Throws: `noSuchItem` for a domain that does not exist, `corruptData` for a damaged record.
    @available(*, noasync, message: "use versions(of:) in a task")
    public func status(of identifier: ItemIdentifier) throws -> ItemStatus? {
        try Records.validate(domain: identifier.domain, item: identifier.rawValue)
        return try store.environment.read { txn in
            _ = try Records.domain(identifier.domain, in: txn, store.dbs)
            if identifier.rawValue == Item.rootContainer {
                let root = Item(
                    domain: identifier.domain, identifier: Item.rootContainer, parentIdentifier: Item.rootContainer,
                    filename: "", kind: .folder, itemVersion: ItemVersion(contentVersion: [], metadataVersion: []),
                    documentSize: 0)
                return ItemStatus(item: root, cachedBytes: 0)
            }
            return try status(of: identifier, in: txn)
        }
    }

    /// The item `container` lists under `filename`, on the calling thread as ``status(of:)``. Names need
    /// not be unique in a folder; of several items with one name, the one with the smallest identifier is
    /// given, so every caller sees the same one.
    ///
    /// - Returns: `nil` when the folder lists nothing of that name.
    /// - Throws: `noSuchItem` for a domain that does not exist, `corruptData` for a damaged record.
    @available(*, noasync, message: "use an enumerator in a task")
    public func child(named filename: String, in container: String, domain: String) throws -> ItemStatus? {
        try Records.validate(domain: domain, item: nil)
        return try store.environment.read { txn in
            _ = try Records.domain(domain, in: txn, store.dbs)
            let found = try txn.items(named: filename, in: container, domain: domain, store.dbs)
            guard let record = found.min(by: { $0.identifier < $1.identifier }) else { return nil }
            return try status(
                of: record, domain: domain, itemKey: Keys.item(domain: domain, id: record.identifier), in: txn)
        }
    }

    /// One page of the folder `container`'s items sorted by name, with how much of each is cached, on the
    /// calling thread as ``status(of:)``: what a FUSE `READDIRPLUS` lists.
    ///
    /// - Parameters:
    ///   - container: The folder's identifier (``Item/rootContainer`` for the root).
    ///   - domain: The domain.
    ///   - page: Where to start: ``EnumerationPage/initialPageSortedByName`` or a page this returned.
    ///   - pageSize: At most this many items.
    /// - Throws: `pageExpired` for a stale page, `noSuchItem` for a domain that does not exist.
    @available(*, noasync, message: "use an enumerator in a task")
    public func listing(
        of container: String, in domain: String, startingAt page: EnumerationPage, pageSize: Int
    ) throws -> (items: [ItemStatus], nextPage: EnumerationPage?) {
        try Records.validate(domain: domain, item: nil)
        let store = self.store
        return try store.environment.read { txn in
            let listed = try CatalogueReader.page(
                domain: domain, container: .folder(container), from: page, pageSize: pageSize, in: txn, store.dbs)
            let statuses = try listed.items.map { item in
                ItemStatus(
                    item: item,
                    cachedBytes: try newestVersion(
                        of: item.kind, itemKey: Keys.item(domain: domain, id: item.identifier), in: txn
                    ).map { try cachedBytes(of: $0, in: txn, store.dbs) } ?? 0)
            }
            return (statuses, listed.nextPage)
        }
    }

    /// Item `identifier` and how much of it is cached, read in `txn`; nil when the catalogue has no such item.
    func status<T: TransactionReading & ~Copyable>(of identifier: ItemIdentifier, in txn: borrowing T) throws
        -> ItemStatus?
    {
        let key = Keys.item(domain: identifier.domain, id: identifier.rawValue)
        guard let record = try txn.itemRecord(identifier.rawValue, domain: identifier.domain, key: key, store.dbs)
        else { return nil }
        return try status(of: record, domain: identifier.domain, itemKey: key, in: txn)
    }

    private func status<T: TransactionReading & ~Copyable>(
        of record: ItemRecord, domain: String, itemKey: [UInt8], in txn: borrowing T
    ) throws -> ItemStatus {
        let version = try newestVersion(of: record.kind, itemKey: itemKey, in: txn)
        return ItemStatus(
            item: Records.publicItem(record, domain: domain, version: version),
            cachedBytes: try version.map { try cachedBytes(of: $0, in: txn, store.dbs) } ?? 0)
    }

    /// A file's newest version; nil for a folder or link.
    private func newestVersion<T: TransactionReading & ~Copyable>(
        of kind: ItemKind, itemKey: [UInt8], in txn: borrowing T
    ) throws -> VersionRecord? {
        kind == .file ? try Records.versions(ofItemKey: itemKey, in: txn, store.dbs).first : nil
    }
}
