import Foundation
import LMDBKit

extension ChunkCache {
    /// Changes an item's favorite rank, tag, shared flag or last-use date (`mark`). Changes the metadata
    /// version, never the content version (<doc:FileProviderRules#D3>, <doc:FileProviderRules#D4>), and bumps the
    /// domain version, unless nothing changes.
    /// - Throws: `noSuchItem` for an unknown domain or item; `invalidArgument` for a container or a tag
    ///   beyond ``MetadataEdit/maxTagBytes``.
    public func setMetadata(_ edit: MetadataEdit, of item: ItemIdentifier) async throws -> ItemChange {
        try await applyEdit(item, doing: "marking") { txn, changes in
            try txn.mark(item.rawValue, edit, in: &changes, self.store.dbs)
        }
    }

    /// Moves an item to the trash (`rm`): it is listed in ``Item/trashContainer`` and stays in the working
    /// set; a folder's contents stay in it and leave the working set (<doc:FileProviderRules#F11>).
    public func trashItem(_ item: ItemIdentifier) async throws -> ItemChange {
        try await applyEdit(item, doing: "trashing") { txn, changes in
            try txn.trash(item.rawValue, in: &changes, self.store.dbs)
        }
    }

    /// Moves an item under `parent` (``Item/rootContainer`` or a folder; ``Item/trashContainer`` trashes
    /// it), renamed to `name` when given (`mv`). A trashed item moved out of the trash is restored.
    /// - Throws: `noSuchItem` (item or parent), `invalidArgument` (a parent that is not a folder or lies
    ///   inside the item, a bad name), `fileExists` (the parent holds that name).
    public func moveItem(_ item: ItemIdentifier, to parent: String, renamingTo name: String? = nil) async throws
        -> ItemChange
    {
        try Records.validate(domain: item.domain, item: parent)
        return try await applyEdit(item, doing: "moving") { txn, changes in
            try txn.move(item.rawValue, to: parent, name: name, in: &changes, self.store.dbs)
        }
    }

    /// Deletes an item for good with its versions, a folder with everything in it (`rm --permanently`).
    public func deleteItem(_ item: ItemIdentifier) async throws -> ItemChange {
        try Records.validate(domain: item.domain, item: item.rawValue)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                var changes = try txn.beginChanges(to: item.domain, dbs)
                let record = try txn.editableItem(item.rawValue, in: changes, dbs)
                let asItWas = try CatalogueReader.publicItem(
                    record, domain: item.domain, itemKey: Keys.item(domain: item.domain, id: item.rawValue), in: txn,
                    dbs)
                let deleted = try txn.deletePermanently(item.rawValue, in: &changes, dbs)
                try txn.finish(changes, dbs)
                return ItemChange(item: asItWas, domainVersion: changes.version, changed: true, deleted: deleted)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "deleting \(item)")
        }
    }

    /// Runs one edit in a write transaction: the domain version is bumped only when it changed something.
    /// `what` is the edit's gerund for the error message ("marking").
    func applyEdit(
        _ item: ItemIdentifier, doing what: String,
        _ body: @escaping @Sendable (inout WriteTransaction, inout DomainChanges) throws -> (ItemRecord, Bool)
    ) async throws -> ItemChange {
        try Records.validate(domain: item.domain, item: item.rawValue)
        let dbs = store.dbs
        do {
            return try await store.writer.write { txn in
                var changes = try txn.beginChanges(to: item.domain, dbs)
                let (record, changed) = try body(&txn, &changes)
                if changed { try txn.finish(changes, dbs) }
                let itemKey = Keys.item(domain: item.domain, id: item.rawValue)
                return ItemChange(
                    item: try CatalogueReader.publicItem(record, domain: item.domain, itemKey: itemKey, in: txn, dbs),
                    domainVersion: changed ? changes.version : DomainVersion(rawValue: changes.version.rawValue - 1),
                    changed: changed)
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "\(what) \(item)")
        }
    }
}
