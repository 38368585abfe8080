import LMDBKit

/// How errors and `verify` name a record: by what it belongs to, as the user knows it
/// (`version "v2" of item "doc" in domain "d"`), never by an internal number alone.
///
/// The functions that take a transaction recover from keys what the keys only hash or number (an item's
/// identifier, a manifest's version). They run only once a record is found damaged, so their lookups cost
/// nothing on the paths that read records; a lookup that fails (`try?`) leaves the name to the key, as naming
/// must never replace the error it is part of.
enum RecordNames {
    static func domain(_ name: String) -> String { "domain \"\(name)\"" }

    static func item(_ id: String, domain name: String) -> String { "item \"\(id)\" in \(domain(name))" }

    static func version(_ contentVersion: [UInt8], of itemName: String) -> String {
        "version \"\(String(decoding: contentVersion, as: UTF8.self))\" of \(itemName)"
    }

    static func chunkReference(_ digest: ChunkDigest) -> String { "the reference count of chunk \(digest)" }

    static func pending(_ manifest: UInt64) -> String { "pending manifest \(manifest)" }

    // MARK: - From keys

    /// The domain name a key of `domains`, `items` or `versions` starts with ("?" when unreadable).
    static func domainName(key: UnsafeRawBufferPointer) -> String {
        var reader = ByteReader(key)
        return (try? reader.readPrefixedString()) ?? "?"
    }

    /// A key of `domains`.
    static func domain(key: UnsafeRawBufferPointer) -> String {
        var reader = ByteReader(key)
        guard let name = try? reader.readPrefixedString() else { return "the domain under key \(hexString(key))" }
        return domain(name)
    }

    /// A key of `items` (``Keys/item(domain:id:)``): the identifier comes from the item's record, when intact.
    static func item<T: TransactionReading & ~Copyable>(
        key: UnsafeRawBufferPointer, in txn: borrowing T, _ dbs: Databases
    ) -> String {
        var reader = ByteReader(key)
        guard let domainName = try? reader.readPrefixedString() else { return "the item under key \(hexString(key))" }
        if let id = identifier(ofItemKey: key, in: txn, dbs) { return item(id, domain: domainName) }
        return "the item of \(domain(domainName)) whose identifier hashes to \(hexString(key[reader.offset...]))"
    }

    /// The identifier an item's record holds, or nil when the record is missing or damaged.
    static func identifier<T: TransactionReading & ~Copyable>(
        ofItemKey key: UnsafeRawBufferPointer, in txn: borrowing T, _ dbs: Databases
    ) -> String? {
        let identifier = try? txn.withValue(dbs.items, key: key) { ItemRecord(ifIntact: $0)?.identifier }
        return identifier ?? nil
    }

    /// A key of `versions` (``Keys/version(itemKey:contentVersion:)``).
    static func version<T: TransactionReading & ~Copyable>(
        key: UnsafeRawBufferPointer, in txn: borrowing T, _ dbs: Databases
    ) -> String {
        guard let parts = Keys.parseVersion(key) else { return "the version under key \(hexString(key))" }
        return version(parts.contentVersion, of: item(key: parts.itemKey, in: txn, dbs))
    }

    /// A manifest, by the version that publishes it (found by a scan of `versions`), else as pending or bare.
    static func manifest<T: TransactionReading & ~Copyable>(_ manifest: UInt64, in txn: borrowing T, _ dbs: Databases)
        -> String
    {
        var owner: String?
        try? txn.scan(dbs.versions, prefix: []) { key, value in
            guard let version = VersionRecord(ifIntact: value), version.manifestID == manifest else { return true }
            owner = "the manifest of " + self.version(key: key, in: txn, dbs)
            return false
        }
        if let owner { return owner }
        if (try? txn.contains(dbs.pending, key: Keys.manifest(manifest))) == true {
            return "the manifest of \(pending(manifest))"
        }
        return "manifest \(manifest), which no version publishes"
    }

    static func manifestPage<T: TransactionReading & ~Copyable>(
        _ manifest: UInt64, page: Int64, in txn: borrowing T, _ dbs: Databases
    ) -> String {
        "page \(page) of \(self.manifest(manifest, in: txn, dbs))"
    }
}
