import Foundation
import LMDBKit

/// Reads the domain, item and version records of the catalogue, and checks the identifiers users give.
enum Records {
    /// The domain's record, or `noSuchItem` naming it.
    static func domain<T: TransactionReading & ~Copyable>(_ name: String, in txn: borrowing T, _ dbs: Databases) throws
        -> DomainRecord
    {
        let record = try txn.withValue(dbs.domains, key: Keys.domain(name)) {
            try DomainRecord(decoding: $0, name: RecordNames.domain(name))
        }
        guard let record else {
            throw CacheError(
                .noSuchItem,
                "there is no domain \"\(name)\" in this store; `chunkcache domain add \(name)`, `put --domain \(name) …` or `import` creates it"
            )
        }
        return record
    }

    /// The item's record, or the error ``MissingItem`` confirms for an item the catalogue lacks
    /// (<doc:FileProviderRules#C2>).
    static func item<T: TransactionReading & ~Copyable>(
        _ id: String, domain: String, key: [UInt8]? = nil, in txn: borrowing T, _ dbs: Databases
    ) throws -> ItemRecord {
        let record = try txn.itemRecord(id, domain: domain, key: key, dbs)
        guard let record else {
            throw MissingItem.confirm(
                id, domain: domain, authority: MissingItem.authority(of: try Records.domain(domain, in: txn, dbs)))
        }
        return record
    }

    /// The item's versions, newest first.
    static func versions<T: TransactionReading & ~Copyable>(
        ofItem id: String, domain: String, in txn: borrowing T, _ dbs: Databases
    ) throws -> [VersionRecord] {
        try versions(ofItemKey: Keys.item(domain: domain, id: id), in: txn, dbs)
    }

    /// Version `contentVersion` of item `id` of `domain`, or nil when the store does not have it.
    static func version<T: TransactionReading & ~Copyable>(
        _ contentVersion: [UInt8], ofItem id: String, domain: String, in txn: borrowing T, _ dbs: Databases
    ) throws -> VersionRecord? {
        let key = Keys.version(itemKey: Keys.item(domain: domain, id: id), contentVersion: contentVersion)
        return try txn.withValue(dbs.versions, key: key) {
            try VersionRecord(
                decoding: $0, name: RecordNames.version(contentVersion, of: RecordNames.item(id, domain: domain)))
        }
    }

    /// The versions of the item with key `itemKey` (``Keys/item(domain:id:)``), newest first.
    static func versions<T: TransactionReading & ~Copyable>(
        ofItemKey itemKey: [UInt8], in txn: borrowing T, _ dbs: Databases
    ) throws -> [VersionRecord] {
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
            itemVersion: ItemVersion(
                contentVersion: version?.contentVersion ?? [], metadataVersion: record.metadataVersion),
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
            throw CacheError(
                .invalidArgument,
                "domain name \"\(domain.prefix(64))\" must be 1 to 255 bytes without NUL; pick another name")
        }
        if let item {
            guard !item.isEmpty, item.utf8.count <= 4096, !item.utf8.contains(0) else {
                throw CacheError(
                    .invalidArgument,
                    "item identifier \"\(item.prefix(64))\" must be 1 to 4096 bytes without NUL; pick another identifier"
                )
            }
        }
    }

    /// Checks a content version given by a user (<doc:FileProviderRules#D1>: at most 128 bytes).
    static func validate(contentVersion: [UInt8]) throws(CacheError) {
        guard !contentVersion.isEmpty, contentVersion.count <= ItemVersion.maxComponentLength else {
            throw CacheError(
                .invalidArgument,
                "a content version must be 1 to 128 bytes, not \(contentVersion.count); give a shorter --version")
        }
    }
}
