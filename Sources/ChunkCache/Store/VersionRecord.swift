/// One content version of an item: where its manifest is and what it holds.
package struct VersionRecord: StoreRecord, Sendable {
    var contentVersion: [UInt8]
    var manifestID: UInt64
    var size: Int64
    var chunkShift: Int
    /// The domain version that published it: orders versions, newest first.
    var sequence: UInt64
    var createdAt: Double
    /// Hash over the length and chunk digests (``RootHasher``): equal exactly when the bytes are equal.
    var root: ChunkDigest
    /// The modification time of a file last found to hold these bytes although its time differed from the
    /// item's: a reimport matches that time too (<doc:FileProviderRules#G1>), so an unchanged file is not read again.
    /// Not metadata the item publishes; appended after `contentVersion`.
    var matchedModificationDate: Double?

    package static let remedy =
        "run `chunkcache verify` to list the damage, then put the file again under a new --version"

    package func write(to w: inout ByteWriter) {
        w.append(manifestID)
        w.append(size)
        w.append(UInt8(chunkShift))
        w.append(sequence)
        w.append(createdAt)
        w.append(raw: root.bytes)
        w.appendPrefixed(contentVersion)
        if let matchedModificationDate { w.append(matchedModificationDate) }
    }

    var layout: ChunkLayout { ChunkLayout(uncheckedShift: chunkShift) }
}

extension VersionRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        manifestID = try r.read()
        size = try r.read()
        chunkShift = Int(try r.read(UInt8.self))
        sequence = try r.read()
        createdAt = try r.readDouble()
        guard let root = ChunkDigest(bytes: try r.readBytes(32)) else { throw .truncated }
        self.root = root
        contentVersion = try r.readPrefixed()
        matchedModificationDate = r.offset < r.buffer.count ? try r.readDouble() : nil
        guard ChunkLayout.shifts.contains(chunkShift), (0...ChunkLayout.maxItemLength).contains(size) else {
            throw RecordDamage(problem: "has an impossible size or chunk size")
        }
    }
}
