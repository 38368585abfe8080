import Foundation
import LMDBKit

extension VersionRecord {
    /// The root of a version learned from an origin: its chunks' hashes are not all known when it is
    /// recorded, so its root is not either, and `verify` checks its pages and chunks only.
    static let unknownRoot = ChunkDigest(bytes: [UInt8](repeating: 0, count: 32))!
}

/// The catalogue changes of the cold path, each inside one write transaction on the writer.
extension WriteTransaction {
    /// Records what an origin said an item is: the item (created when missing) and a version whose manifest
    /// is all `absent`, in one transaction that bumps the domain version (<doc:Contract#10-Origins-the-cold-path>). A
    /// version already recorded is returned unchanged.
    @available(*, noasync)
    mutating func recordOriginVersion(
        domain name: String, item id: String, contentVersion: [UInt8], size: Int64, layout: ChunkLayout,
        modificationDate: Double? = nil, _ dbs: Databases
    ) throws -> RecordedVersion {
        let itemKey = Keys.item(domain: name, id: id)
        if let version = try Records.version(contentVersion, ofItem: id, domain: name, in: self, dbs) {
            let item = try Records.item(id, domain: name, key: itemKey, in: self, dbs)
            return RecordedVersion(
                item: item, version: version,
                domainVersion: DomainVersion(rawValue: try Records.domain(name, in: self, dbs).version))
        }
        var changes = try beginChanges(to: name, dbs)
        let existing = try itemRecord(id, domain: name, key: itemKey, dbs)
        let (record, version) = try addOriginVersion(
            contentVersion, size: size, of: id, existing: existing, layout: layout, modificationDate: modificationDate,
            in: &changes, dbs)
        try finish(changes, dbs)
        let domainVersion = changes.version
        return RecordedVersion(item: record, version: version, domainVersion: domainVersion)
    }

    /// Records a version an origin has of item `id` (created when `existing` is nil) as one of `changes`:
    /// the item's content modification date moves to `modificationDate` (default now), and the version's
    /// manifest is all `absent`.
    /// - Throws: `invalidArgument` when the store holds the identifier as a folder or symlink.
    @available(*, noasync)
    mutating func addOriginVersion(
        _ contentVersion: [UInt8], size: Int64, of id: String, existing: ItemRecord?, layout: ChunkLayout,
        parent: String = Item.rootContainer, modificationDate: Double?, in changes: inout DomainChanges,
        _ dbs: Databases
    ) throws -> (ItemRecord, VersionRecord) {
        if let existing, existing.kind != .file {
            throw CacheError(
                .invalidArgument,
                "item \"\(id)\" in domain \"\(changes.name)\" is a \(existing.kind) in the store but a file at the origin; remove it with `chunkcache rm --permanently`, then fetch again"
            )
        }
        try ChunkLayout.checkItemLength(size, of: "item \"\(id)\" at the origin of domain \"\(changes.name)\"")
        var record =
            existing
            ?? ItemRecord(
                identifier: id, parent: parent, filename: String(id.split(separator: "/").last ?? Substring(id)),
                kind: .file, metadataVersion: [], createdAt: changes.now)
        record.contentModificationDate = modificationDate ?? changes.now
        let manifestID = try takeManifestID(dbs)
        try writeAbsentManifest(manifestID, chunkCount: layout.chunkCount(forLength: size), dbs)
        record = try commit(record, replacing: existing, in: &changes, dbs)!
        let version = VersionRecord(
            contentVersion: contentVersion, manifestID: manifestID, size: size, chunkShift: layout.shift,
            sequence: changes.version.rawValue, createdAt: changes.now, root: VersionRecord.unknownRoot)
        let itemKey = Keys.item(domain: changes.name, id: id)
        try saveVersion(version, ofItemKey: itemKey, dbs)
        try addToCounter(dbs, MetaKey.logicalBytes, size)
        return (record, version)
    }

    /// Stores downloaded chunks of a manifest and sets their entries, deduplicated against the whole store.
    /// Only entries still `absent` change: a chunk another process stored meanwhile is left as it is, and a
    /// manifest that is gone (its version removed) takes nothing.
    ///
    /// - Parameter replacing: The chunks replace stored copies that failed their check: an entry `stored`
    ///   with the same digest has its chunk's bytes overwritten.
    @available(*, noasync)
    /// - Returns: How many chunks were new to the store.
    @discardableResult
    mutating func storeDownloaded(
        _ chunks: [DownloadedChunk], manifestID: UInt64, replacing: Bool = false, _ dbs: Databases
    ) throws -> Int {
        var replaced: [(digest: ChunkDigest, encoded: [UInt8])] = []
        var named: [(digest: ChunkDigest, chunk: DownloadedChunk)] = []
        try rewriteEntries(of: manifestID, at: chunks.map(\.index), dbs) { position, current in
            let chunk = chunks[position]
            if replacing, case .stored(let digest) = current, digest == chunk.digest {
                replaced.append((digest, chunk.encoded))
                return nil
            }
            guard case .absent = current else { return nil }
            guard let digest = chunk.digest else { return .zero }
            named.append((digest, chunk))
            return .stored(digest)
        }
        for (digest, encoded) in replaced { try replaceChunk(digest, encoded: encoded, dbs) }
        var inserted = 0
        for (digest, chunk) in named {
            guard try !retainChunk(digest, dbs) else { continue }
            try chunk.encoded.withUnsafeBytes { try insertChunk(digest, encoded: $0, rawLength: chunk.rawLength, dbs) }
            inserted += 1
        }
        return inserted
    }

    /// Overwrites the stored bytes of a chunk that failed its check with a good copy of the same content.
    @available(*, noasync)
    private mutating func replaceChunk(_ digest: ChunkDigest, encoded: [UInt8], _ dbs: Databases) throws {
        let stored = try digest.withUnsafeBytes { key in
            try withValue(dbs.refs, key: key) { try ChunkRef(decoding: $0, name: RecordNames.chunkReference(digest)) }
        }
        guard let ref = stored else { return }  // dropped meanwhile: nothing to mend
        try replaceEncoding(of: digest, with: encoded, ref: ref, dbs)
    }

    /// Removes an item the origin says is gone (404 or 410, <doc:FileProviderRules#C2>) with all its versions, bumping
    /// the domain version. Nothing happens when the store does not hold it.
    @available(*, noasync)
    mutating func removeGoneItem(domain name: String, item id: String, _ dbs: Databases) throws {
        guard let record = try itemRecord(id, domain: name, dbs) else { return }
        var changes = try beginChanges(to: name, dbs)
        try deleteItem(record, in: &changes, dbs)
        try finish(changes, dbs)
    }

    /// Deletes an item with all its versions, as one of `changes`; returns how many versions went.
    @available(*, noasync)
    @discardableResult
    mutating func deleteItem(_ record: ItemRecord, in changes: inout DomainChanges, _ dbs: Databases) throws -> Int {
        let dropped = try dropVersions(under: Keys.item(domain: changes.name, id: record.identifier), dbs)
        try commit(nil, replacing: record, in: &changes, dbs)
        return dropped
    }
}
