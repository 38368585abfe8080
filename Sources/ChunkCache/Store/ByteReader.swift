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
