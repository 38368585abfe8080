import Foundation
import LMDBKit

/// Reads and writes domains, items and versions: the records of the catalogue.
enum Records {
    /// The domain's record, or `noSuchItem` naming it.
    static func domain<T: TransactionReading & ~Copyable>(_ name: String, in txn: borrowing T, _ dbs: Databases) throws -> DomainRecord {
        guard let raw = try txn.get(dbs.domains, key: Keys.domain(name)) else {
            throw CacheError(.noSuchItem, "there is no domain \"\(name)\" in this store; `chunkcache domain add \(name)`, `put --domain \(name) …` or `import` creates it")
        }
        return try DomainRecord(decoding: raw, name: RecordNames.domain(name))
    }

    /// The item's record, or the error ``MissingItem`` confirms for an item the catalogue lacks (C2).
    static func item<T: TransactionReading & ~Copyable>(
        _ id: String, domain: String, key: [UInt8]? = nil, in txn: borrowing T, _ dbs: Databases
    ) throws -> ItemRecord {
        guard let raw = try txn.get(dbs.items, key: key ?? Keys.item(domain: domain, id: id)) else {
            throw MissingItem.confirm(id, domain: domain, authority: MissingItem.authority(of: try Records.domain(domain, in: txn, dbs)))
        }
        return try ItemRecord(decoding: raw, name: RecordNames.item(id, domain: domain))
    }

    /// The item's versions, newest first.
    static func versions<T: TransactionReading & ~Copyable>(ofItem id: String, domain: String, in txn: borrowing T, _ dbs: Databases) throws -> [VersionRecord] {
        try versions(ofItemKey: Keys.item(domain: domain, id: id), in: txn, dbs)
    }

    /// The versions of the item with key `itemKey` (``Keys/item(domain:id:)``), newest first.
    static func versions<T: TransactionReading & ~Copyable>(ofItemKey itemKey: [UInt8], in txn: borrowing T, _ dbs: Databases) throws -> [VersionRecord] {
        var versions: [VersionRecord] = []
        try txn.scan(dbs.versions, prefix: itemKey) { key, value in
            versions.append(try VersionRecord(decoding: value, name: RecordNames.version(key: key, in: txn, dbs)))
            return true
        }
        return versions.sorted { $0.sequence > $1.sequence }
    }

    /// The public form of an item at one version.
    static func publicItem(_ record: ItemRecord, domain: String, version: VersionRecord?) -> Item {
        Item(
            domain: domain, identifier: record.identifier, parentIdentifier: record.parent, filename: record.filename,
            kind: record.kind,
            itemVersion: ItemVersion(contentVersion: version?.contentVersion ?? [], metadataVersion: record.metadataVersion),
            documentSize: version?.size ?? 0,
            symlinkTarget: record.kind == .symlink ? record.symlinkTarget : nil,
            creationDate: Date(timeIntervalSince1970: record.createdAt),
            contentModificationDate: Date(timeIntervalSince1970: record.contentModificationDate),
            lastUsedDate: record.lastUsedDate.map { Date(timeIntervalSince1970: $0) },
            tagData: record.tagData.isEmpty ? nil : Data(record.tagData), favoriteRank: record.favoriteRank,
            isShared: record.flags.contains(.shared), isTrashed: record.flags.contains(.trashed),
            isPinned: record.flags.contains(.pinned))
    }

    /// Checks an identifier given by a user.
    static func validate(domain: String, item: String?) throws(CacheError) {
        guard !domain.isEmpty, domain.utf8.count <= 255, !domain.utf8.contains(0) else {
            throw CacheError(.invalidArgument, "domain name \"\(domain.prefix(64))\" must be 1 to 255 bytes without NUL; pick another name")
        }
        if let item {
            guard !item.isEmpty, item.utf8.count <= 4096, !item.utf8.contains(0) else {
                throw CacheError(.invalidArgument, "item identifier \"\(item.prefix(64))\" must be 1 to 4096 bytes without NUL; pick another identifier")
            }
        }
    }

    /// Checks a content version given by a user (D1: at most 128 bytes).
    static func validate(contentVersion: [UInt8]) throws(CacheError) {
        guard !contentVersion.isEmpty, contentVersion.count <= ItemVersion.maxComponentLength else {
            throw CacheError(.invalidArgument, "a content version must be 1 to 128 bytes, not \(contentVersion.count); give a shorter --version")
        }
    }
}

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
    /// Loads a domain for a change, creating it (version 0, bumped to 1 by the change) when `create`.
    @available(*, noasync)
    mutating func domainForChange(_ name: String, create: Bool, _ dbs: Databases) throws -> DomainRecord {
        if let raw = try get(dbs.domains, key: Keys.domain(name)) { return try DomainRecord(decoding: raw, name: RecordNames.domain(name)) }
        guard create else { return try Records.domain(name, in: self, dbs) }
        return DomainRecord(version: 0, createdAt: Date().timeIntervalSince1970)
    }

    /// Bumps the domain's version and saves it: every change to a domain goes through here.
    @available(*, noasync)
    mutating func bump(_ domain: inout DomainRecord, named name: String, _ dbs: Databases) throws -> DomainVersion {
        domain.version += 1
        try put(dbs.domains, key: Keys.domain(name), value: domain.encoded())
        return DomainVersion(rawValue: domain.version)
    }

    /// Publishes an ingested manifest as a content version of a file item, creating the item when missing,
    /// as one of `changes`.
    ///
    /// Bytes the item already holds are not stored twice (D2: the content version moves exactly when the
    /// bytes change): with no `requested` name, a version holding the same bytes is the one published, and
    /// a named existing version must hold them (content versions are immutable: other bytes are
    /// `invalidArgument`). If that version is the item's current one nothing changes (`changed` is false);
    /// if it is an older one it becomes current again, as a change of its own (a revert). A new name, or
    /// bytes the item never held, make a new version. Either way the pending manifest is consumed.
    ///
    /// - Parameters:
    ///   - parent: The parent of a new item (default the root).
    ///   - filename: The name of a new item (default the identifier's last component).
    ///   - modificationDate: The content's modification time (default now). When the bytes are the current
    ///     version's under another time, the time is remembered for matching (G1), not published.
    @available(*, noasync)
    mutating func publish(
        _ content: IngestedContent, item id: String, contentVersion requested: [UInt8]?, layout: ChunkLayout,
        parent: String? = nil, filename: String? = nil, modificationDate: Double? = nil, in changes: inout DomainChanges,
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
            held = try Self.heldVersion(of: versions, holding: content, named: requested, itemName: RecordNames.item(id, domain: name))
        } catch {
            try dropManifest(content.manifestID, dbs)
            throw error
        }
        if held != nil { try dropManifest(content.manifestID, dbs) }
        if var held, let existing, versions.first?.contentVersion == held.contentVersion {
            if let modificationDate, modificationDate != existing.contentModificationDate, modificationDate != held.matchedModificationDate {
                held.matchedModificationDate = modificationDate
                try put(dbs.versions, key: Keys.version(itemKey: itemKey, contentVersion: held.contentVersion), value: held.encoded())
            }
            return PublishedVersion(item: Records.publicItem(existing, domain: name, version: held),
                                    domainVersion: DomainVersion(rawValue: changes.version.rawValue - 1), changed: false, stored: false)
        }
        var record = existing ?? ItemRecord(
            identifier: id, parent: parent ?? Item.rootContainer,
            filename: filename ?? String(id.split(separator: "/").last ?? Substring(id)), kind: .file, metadataVersion: [],
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
                size: content.length, chunkShift: layout.shift, sequence: changes.version.rawValue, createdAt: changes.now,
                root: content.root)
            try addToCounter(dbs, MetaKey.logicalBytes, content.length)
        }
        try put(dbs.versions, key: Keys.version(itemKey: itemKey, contentVersion: version.contentVersion), value: version.encoded())
        return PublishedVersion(item: Records.publicItem(written, domain: name, version: version), domainVersion: changes.version,
                                changed: true, stored: held == nil)
    }

    /// The file item `id`, nil when there is none; `invalidArgument` when it is a folder or a symlink.
    @available(*, noasync)
    private func existingFile(_ id: String, key itemKey: [UInt8], domain: String, _ dbs: Databases) throws -> ItemRecord? {
        guard let raw = try get(dbs.items, key: itemKey) else { return nil }
        let record = try ItemRecord(decoding: raw, name: RecordNames.item(id, domain: domain))
        guard record.kind == .file else {
            throw CacheError(.invalidArgument, "item \"\(id)\" in domain \"\(domain)\" is a \(record.kind), not a file; pick another identifier")
        }
        return record
    }

    /// Which of the item's `versions` (newest first) already holds `content`: the one `requested` names
    /// (which must hold these bytes, content versions being immutable), or with no name, the newest version
    /// with the same root (nil when none has it and its derived name is free).
    private static func heldVersion(
        of versions: [VersionRecord], holding content: IngestedContent, named requested: [UInt8]?, itemName: @autoclosure () -> String
    ) throws -> VersionRecord? {
        guard let requested else {
            if let same = versions.first(where: { $0.root == content.root }) { return same }
            return try heldVersion(of: versions, holding: content, named: Array(content.root.description.utf8), itemName: itemName())
        }
        guard let version = versions.first(where: { $0.contentVersion == requested }) else { return nil }
        guard version.root == content.root else {
            throw CacheError(.invalidArgument,
                "version \"\(String(decoding: requested, as: UTF8.self))\" of \(itemName()) already holds other bytes; content versions are immutable: give a new --version or none")
        }
        return version
    }
}
