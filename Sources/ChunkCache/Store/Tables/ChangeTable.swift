import LMDBKit

// The change log's table, `changes`: (domain, domain version, index) → ``ChangeRecord``. How changes are made and
// the log compacted is the catalogue's (``DomainChanges``).

/// One change to one item: its identifier and where it was before (nil: it did not exist). Where it is
/// after is the next record's `before`, or the item as it is now.
package struct ChangeRecord: StoreRecord {
    var identifier: String
    var before: Placement?
    var time: Double

    package static let remedy =
        "run `chunkcache verify` to list the damage; clients following the domain's changes must list it again"

    package func write(to w: inout ByteWriter) {
        w.append(time)
        w.appendPrefixed(identifier)
        w.append(UInt8(before == nil ? 0 : 1))
        before?.write(to: &w)
    }
}

extension ChangeRecord {
    package init(reading r: inout ByteReader) throws(RecordDamage) {
        time = try r.readDouble()
        identifier = try r.readPrefixedString()
        before = try r.read(UInt8.self) == 1 ? try Placement(reading: &r) : nil
    }
}

extension Keys {
    /// A key of `changes`: the domain, then the version and the record's index in it, big-endian so the log
    /// reads in order.
    package static func change(domain: [UInt8], version: UInt64, index: UInt32) -> [UInt8] {
        var w = ByteWriter()
        w.append(raw: domain)
        w.appendBigEndian(version)
        w.appendBigEndian(index)
        return w.bytes
    }

    /// The version and index of a key of `changes` under `domain`, or nil when it is not one.
    package static func parseChange(_ key: UnsafeRawBufferPointer, domainLength: Int) -> (
        version: UInt64, index: UInt32
    )? {
        guard key.count == domainLength + 12 else { return nil }
        var version: UInt64 = 0
        var index: UInt32 = 0
        for byte in key[domainLength..<(domainLength + 8)] { version = version << 8 | UInt64(byte) }
        for byte in key[(domainLength + 8)...] { index = index << 8 | UInt32(byte) }
        return (version, index)
    }
}
