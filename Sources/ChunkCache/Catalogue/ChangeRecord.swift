import Foundation
import LMDBKit

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
