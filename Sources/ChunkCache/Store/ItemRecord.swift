/// An item's identity and metadata; its contents are in ``VersionRecord``s.
package struct ItemRecord: StoreRecord, Sendable, Equatable {
    var identifier: String
    var parent: String
    var filename: String
    var kind: ItemKind
    var metadataVersion: [UInt8]
    var symlinkTarget: String = ""
    var createdAt: Double
    /// The File Provider metadata of <doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>, appended
    /// after `symlinkTarget`.
    var contentModificationDate: Double = 0
    var lastUsedDate: Double?
    /// Empty when the item has no tag.
    var tagData: [UInt8] = []
    var favoriteRank: UInt64?
    var flags: ItemFlags = []

    package static let remedy = "run `chunkcache verify` to list the damage; put the file again under a new identifier"

    package func write(to w: inout ByteWriter) {
        w.append(kind.rawValue)
        w.append(createdAt)
        w.appendPrefixed(identifier)
        w.appendPrefixed(parent)
        w.appendPrefixed(filename)
        w.appendPrefixed(metadataVersion)
        w.appendPrefixed(symlinkTarget)
        w.append(contentModificationDate)
        w.append(UInt8(lastUsedDate == nil ? 0 : 1))
        w.append(lastUsedDate ?? 0)
        w.appendPrefixed(tagData)
        w.append(UInt8(favoriteRank == nil ? 0 : 1))
        w.append(favoriteRank ?? 0)
        w.append(flags.rawValue)
    }
}

extension ItemRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        guard let kind = ItemKind(rawValue: try r.read()) else { throw RecordDamage(problem: "has an unknown type") }
        self.kind = kind
        createdAt = try r.readDouble()
        identifier = try r.readPrefixedString()
        parent = try r.readPrefixedString()
        filename = try r.readPrefixedString()
        metadataVersion = try r.readPrefixed()
        symlinkTarget = try r.readPrefixedString()
        guard r.offset < r.buffer.count else {  // written before the metadata of §11
            contentModificationDate = createdAt
            return
        }
        contentModificationDate = try r.readDouble()
        let hasLastUse = try r.read(UInt8.self)
        let lastUse = try r.readDouble()
        lastUsedDate = hasLastUse == 1 ? lastUse : nil
        tagData = try r.readPrefixed()
        let hasRank = try r.read(UInt8.self)
        let rank = try r.read(UInt64.self)
        favoriteRank = hasRank == 1 ? rank : nil
        flags = ItemFlags(rawValue: try r.read())
    }
}

/// Flags of an item's metadata.
struct ItemFlags: OptionSet, Sendable, Hashable {
    let rawValue: UInt8
    static let shared = ItemFlags(rawValue: 1)
    static let trashed = ItemFlags(rawValue: 2)
    static let pinned = ItemFlags(rawValue: 4)
    /// A folder above it is trashed: it stays listed in that folder and leaves the working set
    /// (<doc:FileProviderRules#F11>).
    static let inTrashedFolder = ItemFlags(rawValue: 8)
    /// In the working set as of its last change (``ItemRecord/refreshWorkingSet(now:)``).
    static let inWorkingSet = ItemFlags(rawValue: 16)
}
