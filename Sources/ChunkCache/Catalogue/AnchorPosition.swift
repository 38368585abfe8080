import Foundation

/// What an anchor says: all changes of a domain up to (`version`, `index`) were delivered. `index` is the
/// number of records of `version` delivered, ``wholeVersion`` for all of them.
package struct AnchorPosition: Hashable {
    var store: UInt64
    var epoch: UInt64
    var version: UInt64
    var index: UInt32

    static let wholeVersion = UInt32.max
    static let tag: UInt8 = 0xA1

    package var anchor: SyncAnchor {
        var w = ByteWriter()
        w.append(Self.tag)
        w.append(store)
        w.append(epoch)
        w.append(version)
        w.append(index)
        return SyncAnchor(rawValue: Data(TokenSeal.sealed(w.bytes, maxLength: 500)))
    }

    /// The position an anchor names, or nil when it is malformed or damaged.
    package init?(_ anchor: SyncAnchor) {
        guard let body = TokenSeal.open(Array(anchor.rawValue)), body.count == 29, body[0] == Self.tag else {
            return nil
        }
        let fields: AnchorPosition? = body.withUnsafeBytes { raw in
            var r = ByteReader(raw)
            r.offset = 1
            guard let store = try? r.read(UInt64.self), let epoch = try? r.read(UInt64.self),
                let version = try? r.read(UInt64.self), let index = try? r.read(UInt32.self)
            else { return nil }
            return AnchorPosition(store: store, epoch: epoch, version: version, index: index)
        }
        guard let fields else { return nil }
        self = fields
    }

    /// The key of `changes` the first record not yet delivered would have.
    func firstUnreadKey(domain domainKey: [UInt8]) -> [UInt8] {
        index == Self.wholeVersion
            ? Keys.change(domain: domainKey, version: version + 1, index: 0)
            : Keys.change(domain: domainKey, version: version, index: index)
    }

    init(store: UInt64, epoch: UInt64, version: UInt64, index: UInt32) {
        self.store = store
        self.epoch = epoch
        self.version = version
        self.index = index
    }
}
