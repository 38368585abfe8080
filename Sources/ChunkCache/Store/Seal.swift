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
