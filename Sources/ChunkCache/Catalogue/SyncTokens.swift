import Foundation

/// Opaque bytes handed to a client and given back (an anchor, a page token), printed and parsed as unpadded
/// base64url; bytes that are not base64url become an empty value, which the engine refuses as expired.
public protocol OpaqueToken: Hashable, Sendable, Codable, CustomStringConvertible {
    var rawValue: Data { get }
    init(rawValue: Data)
}

extension OpaqueToken {
    /// Parses the CLI's form; nil when it is not base64url.
    public init?(_ text: String) {
        guard let data = Base64URL.decode(text) else { return nil }
        self.init(rawValue: data)
    }

    public var description: String { Base64URL.encode(rawValue) }
}

/// A point in a domain's change log, as `NSFileProviderSyncAnchor`: opaque bytes (at most 500,
/// <doc:FileProviderRules#F1>) that a new process can resume from (<doc:FileProviderRules#F4>,
/// <doc:FileProviderRules#F5>).
public struct SyncAnchor: OpaqueToken {
    public let rawValue: Data

    public init(rawValue: Data) { self.rawValue = rawValue }
}

/// Where a listing continues, as `NSFileProviderPage`: opaque bytes (at most 500, <doc:FileProviderRules#F1>), or one
/// of the two initial pages.
public struct EnumerationPage: OpaqueToken {
    public let rawValue: Data

    public init(rawValue: Data) { self.rawValue = rawValue }

    /// The first page, items sorted by filename (bytewise).
    public static let initialPageSortedByName = EnumerationPage(rawValue: Data([0x6E]))
    /// The first page, items sorted by content modification date, newest first.
    public static let initialPageSortedByDate = EnumerationPage(rawValue: Data([0x64]))
}

/// Unpadded base64url: anchors and tokens travel in URLs, JSON and command lines unescaped.
enum Base64URL {
    static func encode(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String) -> Data? {
        guard text.utf8.count <= 1024, text.utf8.allSatisfy({ $0 != UInt8(ascii: "=") }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

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

/// A short check on anchors and tokens, so one altered or truncated is told apart from a real one and
/// expires instead of resuming at a wrong place.
enum TokenSeal {
    static func sealed(_ body: [UInt8], maxLength: Int) -> [UInt8] {
        var bytes = body
        Seal.append(to: &bytes)
        precondition(bytes.count <= maxLength, "F1: an anchor or page token must stay within \(maxLength) bytes")
        return bytes
    }

    static func open(_ bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBytes { raw in Seal.open(raw).map { Array($0) } }
    }
}
