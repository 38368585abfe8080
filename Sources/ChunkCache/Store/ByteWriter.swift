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
