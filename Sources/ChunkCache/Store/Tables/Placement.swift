import Foundation

/// Where an item is listed and whether it is in the working set: what the change log remembers of an item
/// before each change, so a page or a change batch can tell where the item was when a listing began or an
/// anchor was taken (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>).
struct Placement: Hashable, Sendable {
    /// The container listing it: its parent, or ``Item/trashContainer`` when trashed.
    var container: String
    var filename: String
    var modificationDate: Double
    var inWorkingSet: Bool
    var lastUsedDate: Double?

    func write(to w: inout ByteWriter) {
        w.appendPrefixed(container)
        w.appendPrefixed(filename)
        w.append(modificationDate)
        w.append(UInt8((inWorkingSet ? 1 : 0) | (lastUsedDate == nil ? 0 : 2)))
        w.append(lastUsedDate ?? 0)
    }

    init(container: String, filename: String, modificationDate: Double, inWorkingSet: Bool, lastUsedDate: Double?) {
        self.container = container
        self.filename = filename
        self.modificationDate = modificationDate
        self.inWorkingSet = inWorkingSet
        self.lastUsedDate = lastUsedDate
    }

    init(reading r: inout ByteReader) throws(RecordDamage) {
        container = try r.readPrefixedString()
        filename = try r.readPrefixedString()
        modificationDate = try r.readDouble()
        let bits = try r.read(UInt8.self)
        let lastUse = try r.readDouble()
        inWorkingSet = bits & 1 != 0
        lastUsedDate = bits & 2 != 0 ? lastUse : nil
    }
}

extension ItemRecord {
    /// Where the item is listed now.
    var placement: Placement {
        Placement(
            container: flags.contains(.trashed) ? Item.trashContainer : parent, filename: filename,
            modificationDate: contentModificationDate, inWorkingSet: flags.contains(.inWorkingSet),
            lastUsedDate: lastUsedDate)
    }
}
