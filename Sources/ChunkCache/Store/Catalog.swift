import Foundation
import LMDBKit

/// Reads and writes domains, items and versions: the store's catalog.
enum Catalog {
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
            throw MissingItem.confirm(id, domain: domain, authority: MissingItem.authority(of: try Catalog.domain(domain, in: txn, dbs)))
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
    /// False when the same bytes were already stored under that version: nothing changed.
    let created: Bool
}

extension WriteTransaction {
    /// Loads a domain for a change, creating it (version 0, bumped to 1 by the change) when `create`.
    @available(*, noasync)
    mutating func domainForChange(_ name: String, create: Bool, _ dbs: Databases) throws -> DomainRecord {
        if let raw = try get(dbs.domains, key: Keys.domain(name)) { return try DomainRecord(decoding: raw, name: RecordNames.domain(name)) }
        guard create else { return try Catalog.domain(name, in: self, dbs) }
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
    /// as one of `changes`. Re-publishing the same bytes under an existing version changes nothing
    /// (`created` is false: do not ``finish(_:_:)`` the changes); other bytes under an existing version are
    /// `invalidArgument` (content versions are immutable). Either way the pending manifest is consumed.
    ///
    /// - Parameters:
    ///   - parent: The parent of a new item (default the root).
    ///   - modificationDate: The content's modification time (default now).
    @available(*, noasync)
    mutating func publish(
        _ content: IngestedContent, item id: String, contentVersion requested: [UInt8]?, layout: ChunkLayout,
        parent: String? = nil, modificationDate: Double? = nil, in changes: inout DomainChanges, _ dbs: Databases
    ) throws -> PublishedVersion {
        let name = changes.name
        let contentVersion = requested ?? Array(content.root.description.utf8)
        let itemKey = Keys.item(domain: name, id: id)
        var existing: ItemRecord?
        if let raw = try get(dbs.items, key: itemKey) {
            let record = try ItemRecord(decoding: raw, name: RecordNames.item(id, domain: name))
            guard record.kind == .file else {
                try dropManifest(content.manifestID, dbs)
                throw CacheError(.invalidArgument, "item \"\(id)\" in domain \"\(name)\" is a \(record.kind), not a file; pick another identifier")
            }
            existing = record
        }
        let versionKey = Keys.version(itemKey: itemKey, contentVersion: contentVersion)
        if let raw = try get(dbs.versions, key: versionKey) {
            let version = try VersionRecord(
                decoding: raw, name: RecordNames.version(contentVersion, of: RecordNames.item(id, domain: name)))
            try dropManifest(content.manifestID, dbs)
            guard version.root == content.root else {
                throw CacheError(.invalidArgument,
                    "version \"\(String(decoding: contentVersion, as: UTF8.self))\" of item \"\(id)\" already holds other bytes; content versions are immutable: give a new --version or none")
            }
            let record = existing ?? ItemRecord(identifier: id, parent: Item.rootContainer, filename: id, kind: .file, metadataVersion: [], createdAt: 0)
            return PublishedVersion(item: Catalog.publicItem(record, domain: name, version: version),
                                    domainVersion: DomainVersion(rawValue: changes.version.rawValue - 1), created: false)
        }
        try delete(dbs.pending, key: Keys.manifest(content.manifestID))
        var record = existing ?? ItemRecord(
            identifier: id, parent: parent ?? Item.rootContainer,
            filename: String(id.split(separator: "/").last ?? Substring(id)), kind: .file, metadataVersion: [], createdAt: changes.now)
        record.contentModificationDate = modificationDate ?? changes.now
        let written = try commit(record, replacing: existing, in: &changes, dbs)!
        let version = VersionRecord(
            contentVersion: contentVersion, manifestID: content.manifestID, size: content.length, chunkShift: layout.shift,
            sequence: changes.version.rawValue, createdAt: changes.now, root: content.root)
        try put(dbs.versions, key: versionKey, value: version.encoded())
        try addToCounter(dbs, MetaKey.logicalBytes, content.length)
        return PublishedVersion(item: Catalog.publicItem(written, domain: name, version: version), domainVersion: changes.version, created: true)
    }
}
