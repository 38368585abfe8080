import Foundation
import LMDBKit

/// An item as a file system shows it: the item at its newest version, and how much of that version the
/// store holds.
public struct ItemStatus: Sendable, Hashable {
    /// The item, at its newest version.
    public var item: Item
    /// Bytes of that version held in the store (zero chunks count as held); a folder's or link's is 0.
    public var cachedBytes: Int64
}

extension ChunkCache {
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
            let key = Keys.item(domain: identifier.domain, id: identifier.rawValue)
            let record = try txn.withValue(store.dbs.items, key: key) {
                try ItemRecord(decoding: $0, name: RecordNames.item(identifier.rawValue, domain: identifier.domain))
            }
            guard let record else { return nil }
            return try status(of: record, domain: identifier.domain, itemKey: key, in: txn)
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
                let key = Keys.item(domain: domain, id: item.identifier)
                let version = item.kind == .file ? try Records.versions(ofItemKey: key, in: txn, store.dbs).first : nil
                return ItemStatus(
                    item: item, cachedBytes: try version.map { try cachedBytes(of: $0, in: txn, store.dbs) } ?? 0)
            }
            return (statuses, listed.nextPage)
        }
    }

    private func status<T: TransactionReading & ~Copyable>(
        of record: ItemRecord, domain: String, itemKey: [UInt8], in txn: borrowing T
    ) throws -> ItemStatus {
        let version = record.kind == .file ? try Records.versions(ofItemKey: itemKey, in: txn, store.dbs).first : nil
        return ItemStatus(
            item: Records.publicItem(record, domain: domain, version: version),
            cachedBytes: try version.map { try cachedBytes(of: $0, in: txn, store.dbs) } ?? 0)
    }
}
