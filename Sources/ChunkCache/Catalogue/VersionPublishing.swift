import Foundation
import LMDBKit

/// The outcome of publishing a content version.
struct PublishedVersion: Sendable {
    let item: Item
    let domainVersion: DomainVersion
    /// False when the item's current version already held these bytes: nothing changed, do not
    /// ``WriteTransaction/finish(_:_:)`` the changes for it.
    let changed: Bool
    /// True when a new version record keeps the ingested manifest; false when an existing version holds the
    /// bytes (the manifest was dropped, nothing was added to the store).
    let stored: Bool
}

extension WriteTransaction {
    /// Publishes an ingested manifest as a content version of a file item, creating the item when missing,
    /// as one of `changes`.
    ///
    /// Bytes the item already holds are not stored twice (<doc:FileProviderRules#D2>: the content version moves exactly
    /// when the bytes change): with no `requested` name, a version holding the same bytes is the one published, and
    /// a named existing version must hold them (content versions are immutable: other bytes are
    /// `invalidArgument`). If that version is the item's current one nothing changes (`changed` is false);
    /// if it is an older one it becomes current again, as a change of its own (a revert). A new name, or
    /// bytes the item never held, make a new version. Either way the pending manifest is consumed.
    ///
    /// - Parameters:
    ///   - parent: The parent of a new item (default the root).
    ///   - filename: The name of a new item (default the identifier's last component).
    ///   - modificationDate: The content's modification time (default now). When the bytes are the current
    ///     version's under another time, the time is remembered for matching (<doc:FileProviderRules#G1>), not
    ///     published.
    @available(*, noasync)
    mutating func publish(
        _ content: IngestedContent, item id: String, contentVersion requested: [UInt8]?, layout: ChunkLayout,
        parent: String? = nil, filename: String? = nil, modificationDate: Double? = nil,
        in changes: inout DomainChanges,
        _ dbs: Databases
    ) throws -> PublishedVersion {
        let name = changes.name
        let itemKey = Keys.item(domain: name, id: id)
        let existing: ItemRecord?
        let versions: [VersionRecord]  // newest first
        let held: VersionRecord?
        do {
            existing = try existingFile(id, key: itemKey, domain: name, dbs)
            versions = try Records.versions(ofItemKey: itemKey, in: self, dbs)
            held = try Self.heldVersion(
                of: versions, holding: content, named: requested, itemName: RecordNames.item(id, domain: name))
        } catch {
            try dropManifest(content.manifestID, dbs)
            throw error
        }
        if held != nil { try dropManifest(content.manifestID, dbs) }
        if var held, let existing, versions.first?.contentVersion == held.contentVersion {
            if let modificationDate, modificationDate != existing.contentModificationDate,
                modificationDate != held.matchedModificationDate
            {
                held.matchedModificationDate = modificationDate
                try saveVersion(held, ofItemKey: itemKey, dbs)
            }
            return PublishedVersion(
                item: Records.publicItem(existing, domain: name, version: held),
                domainVersion: DomainVersion(rawValue: changes.version.rawValue - 1), changed: false, stored: false)
        }
        var record =
            existing
            ?? ItemRecord(
                identifier: id, parent: parent ?? Item.rootContainer,
                filename: filename ?? String(id.split(separator: "/").last ?? Substring(id)), kind: .file,
                metadataVersion: [],
                createdAt: changes.now)
        record.contentModificationDate = modificationDate ?? changes.now
        let written = try commit(record, replacing: existing, in: &changes, dbs)!
        let version: VersionRecord
        if var held {
            held.sequence = changes.version.rawValue  // current again: versions are ordered by sequence
            version = held
        } else {
            try delete(dbs.pending, key: Keys.manifest(content.manifestID))
            version = VersionRecord(
                contentVersion: requested ?? Array(content.root.description.utf8), manifestID: content.manifestID,
                size: content.length, chunkShift: layout.shift, sequence: changes.version.rawValue,
                createdAt: changes.now,
                root: content.root)
            try addToCounter(dbs, MetaKey.logicalBytes, content.length)
        }
        try saveVersion(version, ofItemKey: itemKey, dbs)
        return PublishedVersion(
            item: Records.publicItem(written, domain: name, version: version), domainVersion: changes.version,
            changed: true, stored: held == nil)
    }

    /// The file item `id`, nil when there is none; `invalidArgument` when it is a folder or a symlink.
    @available(*, noasync)
    private func existingFile(_ id: String, key itemKey: [UInt8], domain: String, _ dbs: Databases) throws
        -> ItemRecord?
    {
        guard let record = try itemRecord(id, domain: domain, key: itemKey, dbs) else { return nil }
        guard record.kind == .file else {
            throw CacheError(
                .invalidArgument,
                "item \"\(id)\" in domain \"\(domain)\" is a \(record.kind), not a file; pick another identifier")
        }
        return record
    }

    /// Which of the item's `versions` (newest first) already holds `content`: the one `requested` names
    /// (which must hold these bytes, content versions being immutable), or with no name, the newest version
    /// with the same root (nil when none has it and its derived name is free).
    private static func heldVersion(
        of versions: [VersionRecord], holding content: IngestedContent, named requested: [UInt8]?,
        itemName: @autoclosure () -> String
    ) throws -> VersionRecord? {
        guard let requested else {
            if let same = versions.first(where: { $0.root == content.root }) { return same }
            return try heldVersion(
                of: versions, holding: content, named: Array(content.root.description.utf8), itemName: itemName())
        }
        guard let version = versions.first(where: { $0.contentVersion == requested }) else { return nil }
        guard version.root == content.root else {
            throw CacheError(
                .invalidArgument,
                "version \"\(String(decoding: requested, as: UTF8.self))\" of \(itemName()) already holds other bytes; content versions are immutable: give a new --version or none"
            )
        }
        return version
    }
}
