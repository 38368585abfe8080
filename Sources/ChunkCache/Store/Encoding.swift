/// Appends fixed-width little-endian integers and length-prefixed byte strings: the store's record format.
package struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Big-endian, so keys sort by the number.
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.bigEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ value: Double) { append(value.bitPattern) }

    /// A 16-bit length, then the bytes. Keys built from these never collide: each part says where it ends.
    mutating func appendPrefixed(_ value: some Collection<UInt8>) {
        append(UInt16(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func appendPrefixed(_ value: String) { appendPrefixed(Array(value.utf8)) }

    mutating func append(raw value: some Sequence<UInt8>) { bytes.append(contentsOf: value) }

    /// The bytes followed by their ``Seal``: the form every record value takes in the store.
    consuming func sealed() -> [UInt8] {
        Seal.append(to: &bytes)
        return bytes
    }
}

/// The check every record value carries: the XXH3-64 of its bytes, appended little-endian.
///
/// A flipped bit in a manifest page or a version's size would otherwise serve wrong bytes without a sound;
/// XXH3 is the hash chunks already use, cheap enough to check on every read.
package enum Seal {
    static let size = 8

    /// Appends the seal of `bytes` to them.
    package static func append(to bytes: inout [UInt8]) {
        let seal = bytes.withUnsafeBytes { ChunkCodec.checksum($0) }
        withUnsafeBytes(of: seal.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// The bytes a sealed value holds, borrowed from it, or nil when they fail their seal.
    static func open(_ value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard value.count >= size else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: value[..<(value.count - size)])
        let seal = UInt64(littleEndian: value.loadUnaligned(fromByteOffset: body.count, as: UInt64.self))
        return ChunkCodec.checksum(body) == seal ? body : nil
    }
}

/// Why a record's bytes cannot be trusted. Decoding throws it; the caller, which knows the record's name,
/// turns it into `corruptData` (see ``StoreRecord``).
package struct RecordDamage: Error {
    /// What is wrong, completing "the store's record of X …".
    let problem: String

    static let failsSeal = RecordDamage(problem: "fails its check")
    static let truncated = RecordDamage(problem: "is truncated")
}

/// A value of one of the store's databases. Its encoding is always sealed and its decoding always checks the
/// seal first, so no record type can skip the check.
package protocol StoreRecord {
    /// What the user can do when a record of this type is damaged.
    static var remedy: String { get }
    /// Writes the record's fields; ``encoded()`` seals them.
    func write(to writer: inout ByteWriter)
    /// Reads the fields ``write(to:)`` wrote, from bytes whose seal has been checked.
    init(reading reader: inout ByteReader) throws(RecordDamage)
}

extension StoreRecord {
    /// The record as stored: its fields and their seal.
    package func encoded() -> [UInt8] {
        var writer = ByteWriter(capacity: 96)
        write(to: &writer)
        return writer.sealed()
    }

    /// Checks and decodes a stored record.
    ///
    /// - Parameter name: The record, as ``RecordNames`` spells it; built only when the record is damaged.
    /// - Throws: `corruptData` naming the record and saying what to do when it fails its seal or its fields
    ///   are impossible.
    init(decoding value: UnsafeRawBufferPointer, name: @autoclosure () -> String) throws(CacheError) {
        do {
            var reader = try ByteReader(sealed: value)
            try self.init(reading: &reader)
        } catch {
            throw CacheError(.corruptData, "the store's record of \(name()) \(error.problem); \(Self.remedy)")
        }
    }

    /// Checks and decodes a stored record, or nil when it is damaged: for `verify`, which reports damage
    /// itself, and for naming records in errors.
    package init?(ifIntact value: UnsafeRawBufferPointer) {
        guard var reader = try? ByteReader(sealed: value), let record = try? Self(reading: &reader) else { return nil }
        self = record
    }
}

/// Reads what ``ByteWriter`` wrote; every read checks the bounds and a short record throws ``RecordDamage``.
package struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    /// Reads unsealed bytes: a key.
    package init(_ buffer: UnsafeRawBufferPointer) { self.buffer = buffer }

    /// Reads the bytes of a sealed value once they pass their seal.
    init(sealed value: UnsafeRawBufferPointer) throws(RecordDamage) {
        guard let body = Seal.open(value) else { throw .failsSeal }
        buffer = body
    }

    private func need(_ count: Int) throws(RecordDamage) {
        guard count >= 0, offset + count <= buffer.count else { throw .truncated }
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) throws(RecordDamage) -> T {
        try need(MemoryLayout<T>.size)
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
        return T(littleEndian: value)
    }

    mutating func readDouble() throws(RecordDamage) -> Double { Double(bitPattern: try read(UInt64.self)) }

    mutating func readBytes(_ count: Int) throws(RecordDamage) -> [UInt8] {
        try need(count)
        defer { offset += count }
        return Array(buffer[offset..<offset + count])
    }

    mutating func readPrefixed() throws(RecordDamage) -> [UInt8] {
        try readBytes(Int(try read(UInt16.self)))
    }

    mutating func readPrefixedString() throws(RecordDamage) -> String {
        String(decoding: try readPrefixed(), as: UTF8.self)
    }
}
