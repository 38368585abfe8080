import Foundation
import LMDBKit

/// Checks names and places given for items.
enum ItemNames {
    /// Checks a filename given by a user: what a folder entry can be called.
    static func validate(filename: String) throws(CacheError) {
        guard !filename.isEmpty, filename.utf8.count <= 255, filename != ".", filename != "..",
            !filename.utf8.contains(UInt8(ascii: "/")), !filename.utf8.contains(0)
        else {
            throw CacheError(
                .invalidArgument,
                "\"\(filename.prefix(64))\" is not a filename: give 1 to 255 bytes without \"/\" or NUL, not \".\" or \"..\""
            )
        }
    }

    /// Whether `identifier` names one of the special containers rather than an item.
    static func isContainer(_ identifier: String) -> Bool {
        identifier == Item.rootContainer || identifier == Item.workingSetContainer || identifier == Item.trashContainer
    }
}

/// The edits of `mark`, `rm` and `mv`, each one of a transaction's ``DomainChanges``.
extension WriteTransaction {
    /// The item's record, `invalidArgument` for a container, `noSuchItem` for an unknown identifier.
    @available(*, noasync)
    func editableItem(_ id: String, in changes: DomainChanges, _ dbs: Databases) throws -> ItemRecord {
        guard !ItemNames.isContainer(id) else {
            throw CacheError(
                .invalidArgument, "\"\(id)\" is a container, not an item: it cannot be marked, removed or moved")
        }
        let record = try itemRecord(id, domain: changes.name, dbs)
        guard let record else {
            throw CacheError(
                .noSuchItem,
                "there is no item \"\(id)\" in domain \"\(changes.name)\"; `chunkcache ls --domain \(changes.name)` lists them"
            )
        }
        return record
    }

    /// Applies a metadata edit; returns the item, and whether anything changed.
    @available(*, noasync)
    mutating func mark(_ id: String, _ edit: MetadataEdit, in changes: inout DomainChanges, _ dbs: Databases) throws
        -> (ItemRecord, Bool)
    {
        let before = try editableItem(id, in: changes, dbs)
        var after = before
        switch edit.favoriteRank {
        case .set(let rank)?: after.favoriteRank = rank
        case .remove?: after.favoriteRank = nil
        case nil: break
        }
        switch edit.tagData {
        case .set(let tag)?:
            guard !tag.isEmpty, tag.count <= MetadataEdit.maxTagBytes else {
                throw CacheError(
                    .invalidArgument,
                    "a tag of \(tag.count) bytes is not 1 to \(MetadataEdit.maxTagBytes) bytes; give a shorter --tag, or --no-tag"
                )
            }
            after.tagData = Array(tag)
        case .remove?: after.tagData = []
        case nil: break
        }
        if let shared = edit.isShared {
            if shared { after.flags.insert(.shared) } else { after.flags.remove(.shared) }
        }
        if edit.markUsed { after.lastUsedDate = changes.now }
        return try commitIfChanged(after, replacing: before, in: &changes, dbs)
    }

    /// Pins an item (exempt from eviction, in the working set) or unpins it; returns it, and whether
    /// anything changed.
    @available(*, noasync)
    mutating func setPinned(_ id: String, _ pinned: Bool, in changes: inout DomainChanges, _ dbs: Databases) throws -> (
        ItemRecord, Bool
    ) {
        let before = try editableItem(id, in: changes, dbs)
        var after = before
        if pinned { after.flags.insert(.pinned) } else { after.flags.remove(.pinned) }
        let edit = try commitIfChanged(after, replacing: before, in: &changes, dbs)
        guard edit.1, changes.record.origin != nil else { return edit }
        // A pinned item's chunks leave the eviction policy; unpinned, they come back to it (CONTRACT §12).
        let itemKey = Keys.item(domain: changes.name, id: id)
        for version in try Records.versions(ofItemKey: itemKey, in: self, dbs) {
            if pinned {
                try policyForget(manifest: version.manifestID, dbs)
            } else {
                try policyAdopt(manifest: version.manifestID, itemKey: itemKey, dbs)
            }
        }
        return edit
    }

    /// Commits `after` unless, its working-set membership recomputed, it is `before`; returns the item as it
    /// is, and whether it changed.
    @available(*, noasync)
    private mutating func commitIfChanged(
        _ after: ItemRecord, replacing before: ItemRecord, in changes: inout DomainChanges, _ dbs: Databases
    ) throws -> (ItemRecord, Bool) {
        var after = after
        after.refreshWorkingSet(now: changes.now)
        guard after != before else { return (before, false) }
        return (try commit(after, replacing: before, in: &changes, dbs)!, true)
    }

    /// Moves an item to the trash (its folder's contents leave the working set, <doc:FileProviderRules#F11>); returns
    /// it, and whether anything changed (an item already in the trash stays as it is).
    @available(*, noasync)
    mutating func trash(_ id: String, in changes: inout DomainChanges, _ dbs: Databases) throws -> (ItemRecord, Bool) {
        let before = try editableItem(id, in: changes, dbs)
        guard !before.flags.contains(.trashed) else { return (before, false) }
        var after = before
        after.flags.insert(.trashed)
        after.flags.remove(.inTrashedFolder)
        let written = try commit(after, replacing: before, in: &changes, dbs)!
        if written.kind == .folder { try hideContents(of: id, hidden: true, in: &changes, dbs) }
        return (written, true)
    }

    /// Deletes an item for good, a folder with everything listed in it; returns the identifiers deleted,
    /// the item's first.
    @available(*, noasync)
    mutating func deletePermanently(_ id: String, in changes: inout DomainChanges, _ dbs: Databases) throws -> [String]
    {
        let record = try editableItem(id, in: changes, dbs)
        var deleted: [String] = []
        var pending = [record]
        while let item = pending.popLast() {
            if item.kind == .folder {
                pending += try listed(in: item.identifier, domain: changes.name, dbs)
            }
            try deleteItem(item, in: &changes, dbs)
            deleted.append(item.identifier)
        }
        return deleted
    }

    /// Moves an item under `parent` (``Item/rootContainer`` or a folder; ``Item/trashContainer`` trashes it),
    /// renaming it when `name` is given. A trashed item moved out of the trash is restored. Returns the item,
    /// and whether anything changed.
    /// - Throws: `invalidArgument` for a parent that is not a folder or lies inside the item, a bad name;
    ///   `noSuchItem` for an unknown item or parent; `fileExists` when the parent holds that name already.
    @available(*, noasync)
    mutating func move(
        _ id: String, to parent: String, name: String?, in changes: inout DomainChanges, _ dbs: Databases
    ) throws -> (ItemRecord, Bool) {
        if parent == Item.trashContainer && name == nil { return try trash(id, in: &changes, dbs) }
        let before = try editableItem(id, in: changes, dbs)
        if let name { try ItemNames.validate(filename: name) }
        guard parent != Item.workingSetContainer, parent != Item.trashContainer else {
            throw CacheError(
                .invalidArgument,
                "items cannot be moved into \(parent == Item.trashContainer ? "the trash under a new name" : "the working set"); give a folder, or root"
            )
        }
        var hidden = false
        if parent != Item.rootContainer {
            let folder = try itemRecord(parent, domain: changes.name, dbs)
            guard let folder else {
                throw CacheError(
                    .noSuchItem,
                    "there is no folder \"\(parent)\" in domain \"\(changes.name)\" to move \"\(id)\" into; give an existing folder, or root"
                )
            }
            guard folder.kind == .folder else {
                throw CacheError(
                    .invalidArgument,
                    "\"\(parent)\" is a \(folder.kind), not a folder; move \"\(id)\" into a folder, or root")
            }
            hidden = !folder.flags.isDisjoint(with: [.trashed, .inTrashedFolder])
            try refuseCycle(moving: id, under: folder, domain: changes.name, dbs)
        }
        var after = before
        after.parent = parent
        after.filename = name ?? before.filename
        after.flags.remove(.trashed)
        if hidden { after.flags.insert(.inTrashedFolder) } else { after.flags.remove(.inTrashedFolder) }
        if after.parent != before.parent || after.filename != before.filename || before.flags.contains(.trashed) {
            try refuseNameClash(after, domain: changes.name, dbs)
        }
        let (written, changed) = try commitIfChanged(after, replacing: before, in: &changes, dbs)
        let wasHiding = !before.flags.isDisjoint(with: [.trashed, .inTrashedFolder])
        if changed && written.kind == .folder && wasHiding != hidden {
            try hideContents(of: id, hidden: hidden, in: &changes, dbs)
        }
        return (written, changed)
    }

    /// Refuses to move `id` under `folder` when `folder` is `id` or lies inside it.
    @available(*, noasync)
    private func refuseCycle(moving id: String, under folder: ItemRecord, domain: String, _ dbs: Databases) throws {
        var current: ItemRecord? = folder
        var steps = 0
        while let item = current, steps < 10_000 {
            guard item.identifier != id else {
                throw CacheError(
                    .invalidArgument,
                    "\"\(folder.identifier)\" lies inside \"\(id)\": a folder cannot be moved into itself; give another parent"
                )
            }
            guard item.parent != Item.rootContainer else { return }
            guard
                let parent = try withValue(
                    dbs.items, key: Keys.item(domain: domain, id: item.parent), ItemRecord.init(ifIntact:))
            else { return }
            current = parent
            steps += 1
        }
    }

    /// Refuses a name another item of the same folder already has.
    @available(*, noasync)
    private func refuseNameClash(_ item: ItemRecord, domain: String, _ dbs: Databases) throws {
        let others = try items(named: item.filename, in: item.placement.container, domain: domain, dbs)
        if let clash = others.first(where: { $0.identifier != item.identifier }) {
            throw CacheError(
                .fileExists,
                "\(item.parent == Item.rootContainer ? "the root" : "folder \"\(item.parent)\"") already holds \"\(item.filename)\" (item \"\(clash.identifier)\"); pick another --name or parent"
            )
        }
    }

    /// Marks everything listed below folder `id` as inside a trashed folder (`hidden`) or not, so it leaves
    /// or rejoins the working set (<doc:FileProviderRules#F11>). A subtree already marked so is left as it is.
    @available(*, noasync)
    private mutating func hideContents(of id: String, hidden: Bool, in changes: inout DomainChanges, _ dbs: Databases)
        throws
    {
        var folders = [id]
        while let folder = folders.popLast() {
            for child in try listed(in: folder, domain: changes.name, dbs)
            where child.flags.contains(.inTrashedFolder) != hidden {
                var after = child
                if hidden { after.flags.insert(.inTrashedFolder) } else { after.flags.remove(.inTrashedFolder) }
                after.refreshWorkingSet(now: changes.now)
                try commit(after, replacing: child, in: &changes, dbs)
                if child.kind == .folder { folders.append(child.identifier) }
            }
        }
    }

    /// The items listed in folder `id` (its trashed children are in the trash, not here).
    @available(*, noasync)
    func listed(in id: String, domain: String, _ dbs: Databases) throws -> [ItemRecord] {
        let domainKey = Keys.domain(domain)
        var children: [ItemRecord] = []
        try scan(dbs.listing, prefix: ListingIndex.prefix(domain: domainKey, container: id, sort: .name)) { key, _ in
            let itemKey = domainKey + Array(key.suffix(ListingIndex.hashLength))
            guard
                let child = try withValue(
                    dbs.items, key: itemKey,
                    {
                        try ItemRecord(decoding: $0, name: "an item of \(RecordNames.domain(domain))")
                    })
            else { return true }
            if child.placement.container == id { children.append(child) }
            return true
        }
        return children
    }
}
