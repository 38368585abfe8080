/// Appends fixed-width little-endian integers and length-prefixed byte strings: the store's record format.
struct ByteWriter {
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
}

/// Reads what ``ByteWriter`` wrote; every read checks the bounds and a short record throws `corruptData`.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0
    let what: String

    init(_ buffer: UnsafeRawBufferPointer, what: String) {
        self.buffer = buffer
        self.what = what
    }

    private func need(_ count: Int) throws(CacheError) {
        guard count >= 0, offset + count <= buffer.count else {
            throw CacheError(.corruptData, "the \(what) record is truncated; run `chunkcache verify`")
        }
    }

    mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) throws(CacheError) -> T {
        try need(MemoryLayout<T>.size)
        let value = buffer.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += MemoryLayout<T>.size
        return T(littleEndian: value)
    }

    mutating func readDouble() throws(CacheError) -> Double { Double(bitPattern: try read(UInt64.self)) }

    mutating func readBytes(_ count: Int) throws(CacheError) -> [UInt8] {
        try need(count)
        defer { offset += count }
        return Array(buffer[offset..<offset + count])
    }

    mutating func readPrefixed() throws(CacheError) -> [UInt8] {
        try readBytes(Int(try read(UInt16.self)))
    }

    mutating func readPrefixedString() throws(CacheError) -> String {
        String(decoding: try readPrefixed(), as: UTF8.self)
    }
}
