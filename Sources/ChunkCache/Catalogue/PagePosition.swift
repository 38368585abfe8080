import Foundation

/// What a page token says: the listing of `container` in `sort` order that began at domain version
/// `version` continues after `position` (a ``ListingIndex`` position).
package struct PagePosition: Hashable {
    var store: UInt64
    var epoch: UInt64
    var container: [UInt8]
    var sort: ListingIndex.Sort
    var version: UInt64
    var position: [UInt8]

    static let tag: UInt8 = 0xB1

    package var page: EnumerationPage {
        var w = ByteWriter()
        w.append(Self.tag)
        w.append(store)
        w.append(epoch)
        w.append(raw: container)
        w.append(sort.rawValue)
        w.append(version)
        w.appendPrefixed(position)
        return EnumerationPage(rawValue: Data(TokenSeal.sealed(w.bytes, maxLength: 500)))
    }

    init(store: UInt64, epoch: UInt64, container: [UInt8], sort: ListingIndex.Sort, version: UInt64, position: [UInt8])
    {
        self.store = store
        self.epoch = epoch
        self.container = container
        self.sort = sort
        self.version = version
        self.position = position
    }

    /// The position a token names, or nil when it is malformed or damaged.
    package init?(_ page: EnumerationPage) {
        // F1: no token is longer than 500 bytes, and one that is could not be written back.
        guard page.rawValue.count <= 500, let body = TokenSeal.open(Array(page.rawValue)), body.first == Self.tag else {
            return nil
        }
        let fields: PagePosition? = body.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            r.offset = 1
            guard let store = try? r.read(UInt64.self), let epoch = try? r.read(UInt64.self),
                let container = try? r.readBytes(8), let sortByte = try? r.read(UInt8.self),
                let sort = ListingIndex.Sort(rawValue: sortByte), sort != .lastUse,
                let version = try? r.read(UInt64.self), let position = try? r.readPrefixed(),
                r.offset == raw.count, position.count >= ListingIndex.hashLength
            else { return nil }
            return PagePosition(
                store: store, epoch: epoch, container: container, sort: sort, version: version, position: position)
        }
        guard let fields else { return nil }
        self = fields
    }
}
