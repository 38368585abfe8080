import FileIO

/// The keys of the `fills` database and what they hold.
enum FillKeys {
    /// The key of the fill of chunk `index` of `manifestID`.
    static func fill(_ manifestID: UInt64, _ index: Int64) -> [UInt8] { Keys.manifestPage(manifestID, page: index) }

    /// The key that holds the bytes the version's fill file takes: after every chunk index.
    static func file(_ manifestID: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifestID)
        w.appendBigEndian(UInt64.max)
        return w.bytes
    }

    /// A fill's record: its length (4 bytes, little-endian), then the hash its manifest knew, if any.
    static func record(length: Int, expected: ChunkDigest?) -> [UInt8] {
        var w = ByteWriter()
        w.append(UInt32(length))
        if let expected { w.append(raw: expected.bytes) }
        return w.bytes
    }

    /// The length and known hash of a fill's record; nil when it is neither 4 nor 36 bytes long.
    static func parseRecord(_ value: UnsafeRawBufferPointer) -> (length: Int, expected: ChunkDigest?)? {
        guard value.count == 4 || value.count == 36 else { return nil }
        let length = Int(UInt32(littleEndian: value.loadUnaligned(as: UInt32.self)))
        return (length, value.count == 36 ? ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: value[4...])) : nil)
    }

    /// The manifest id and chunk index of a fill key; nil for a file key or a damaged key.
    static func parse(_ key: UnsafeRawBufferPointer) -> (manifestID: UInt64, index: Int64)? {
        guard let (manifest, index) = Keys.parseManifestPage(key) else { return nil }
        return (manifest, index)
    }

    /// The manifest id of a key that holds a fill file's byte count (``file(_:)``), else nil.
    static func manifestID(ofFileKey key: UnsafeRawBufferPointer) -> UInt64? {
        guard key.count == 16, key.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == UInt64.max else { return nil }
        return UInt64(bigEndian: key.loadUnaligned(as: UInt64.self))
    }

    /// The bytes a fill file takes, as its count (under ``file(_:)``) holds them; nil when it is not 8 bytes long.
    static func parseFileBytes(_ value: UnsafeRawBufferPointer) -> Int64? {
        value.count == 8 ? Int64(littleEndian: value.loadUnaligned(as: Int64.self)) : nil
    }
}
