import LMDBKit

// The table of versions, `versions`: item key + content version → ``VersionRecord``.

extension WriteTransaction {
    /// Writes a version record of the item whose key is `itemKey`, under its content version.
    @available(*, noasync)
    mutating func saveVersion(_ version: VersionRecord, ofItemKey itemKey: [UInt8], _ dbs: Databases) throws {
        try put(
            dbs.versions, key: Keys.version(itemKey: itemKey, contentVersion: version.contentVersion),
            value: version.encoded())
    }

    /// Removes one version: its record, its manifest (releasing its chunks) and its bytes from `logicalBytes`.
    @available(*, noasync)
    mutating func dropVersion(key: [UInt8], _ version: VersionRecord, _ dbs: Databases) throws {
        try dropManifest(version.manifestID, dbs)
        try delete(dbs.versions, key: key)
        try addToCounter(dbs, MetaKey.logicalBytes, -version.size)
    }

    /// Removes every version whose key starts with `prefix` (an item's key, or a domain's); returns how many.
    @available(*, noasync)
    @discardableResult
    mutating func dropVersions(under prefix: [UInt8], _ dbs: Databases) throws -> Int {
        var versions: [(key: [UInt8], record: VersionRecord)] = []
        try scan(dbs.versions, prefix: prefix) { key, value in
            versions.append(
                (Array(key), try VersionRecord(decoding: value, name: RecordNames.version(key: key, in: self, dbs))))
            return true
        }
        for version in versions { try dropVersion(key: version.key, version.record, dbs) }
        return versions.count
    }
}
