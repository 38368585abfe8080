import Crypto

/// How the store's keys are spelled.
package enum Keys {
    static func domain(_ name: String) -> [UInt8] {
        var w = ByteWriter()
        w.appendPrefixed(name)
        return w.bytes
    }

    static func item(domain: String, id: String) -> [UInt8] {
        var w = ByteWriter()
        w.appendPrefixed(domain)
        w.append(raw: itemHash(id))
        return w.bytes
    }

    /// The 16 bytes that end an item's key: its identifier's hash, the same in every domain.
    static func itemHash(_ id: String) -> [UInt8] { Array(SHA256.hash(data: Array(id.utf8)).prefix(16)) }

    static func version(itemKey: [UInt8], contentVersion: [UInt8]) -> [UInt8] {
        var w = ByteWriter()
        w.append(raw: itemKey)
        w.appendPrefixed(contentVersion)
        return w.bytes
    }

    package static func manifestPage(_ manifest: UInt64, page: Int64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifest)
        w.appendBigEndian(UInt64(page))
        return w.bytes
    }

    /// The manifest id and page of a `manifests` key (and of a `policy` key: manifest id and chunk index),
    /// or nil when it is not 16 bytes or its page is negative, which no writer writes (keys carry no seal:
    /// a damaged one must not become a page number that traps when the key is built again).
    package static func parseManifestPage(_ key: UnsafeRawBufferPointer) -> (manifest: UInt64, page: Int64)? {
        guard key.count == 16 else { return nil }
        let page = UInt64(bigEndian: key.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        guard page <= UInt64(Int64.max) else { return nil }
        return (UInt64(bigEndian: key.loadUnaligned(as: UInt64.self)), Int64(page))
    }

    static func manifest(_ manifest: UInt64) -> [UInt8] {
        var w = ByteWriter()
        w.appendBigEndian(manifest)
        return w.bytes
    }

    static func meta(_ name: String) -> [UInt8] { Array(name.utf8) }

    /// The parts of a key of `versions`, or nil when it is not one.
    package static func parseVersion(_ key: UnsafeRawBufferPointer) -> (
        domain: String, itemKey: UnsafeRawBufferPointer, contentVersion: [UInt8]
    )? {
        var reader = ByteReader(key)
        guard let domain = try? reader.readPrefixedString() else { return nil }
        let itemKeyLength = reader.offset + 16
        reader.offset = itemKeyLength
        guard itemKeyLength <= key.count, let contentVersion = try? reader.readPrefixed() else { return nil }
        return (domain, UnsafeRawBufferPointer(rebasing: key[..<itemKeyLength]), contentVersion)
    }
}
