import DeltaKit
import ZstdKit

/// The delta encoding's decoders as fuzz targets (CONTRACT §14, issue 21): a stored delta frame read against its
/// base, and the rolling matcher over versions it did not choose.
///
/// Both targets split their input in two at a length its first two bytes give (little-endian, clipped to the
/// input): a base (or earlier version) and a frame (or new chunk).
enum DeltaFuzzing {
    /// The input's two parts: `first` of the length its first two bytes give, then `second`, the rest.
    static func split(_ bytes: UnsafeRawBufferPointer) -> (
        first: UnsafeRawBufferPointer, second: UnsafeRawBufferPointer
    )? {
        guard bytes.count >= 2 else { return nil }
        let length = min(Int(bytes[0]) | Int(bytes[1]) << 8, bytes.count - 2)
        return (
            UnsafeRawBufferPointer(rebasing: bytes[2..<(2 + length)]),
            UnsafeRawBufferPointer(rebasing: bytes[(2 + length)...])
        )
    }

    /// A stored delta frame decoded against a base: it throws or gives exactly its declared size; and the second
    /// part taken as a chunk round-trips as a delta against the base, and against the base with a byte changed
    /// decodes to the chunk or throws, never to other bytes.
    static func deltaFrame(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let (base, second) = split(bytes) else { return nil }
        let decompressor = Decompressor()
        if let declared = Decompressor.contentSize(of: second), declared <= 4 << 20 {
            let output = UnsafeMutableRawBufferPointer.allocate(byteCount: max(declared, 1), alignment: 16)
            defer { output.deallocate() }
            let destination = UnsafeMutableRawBufferPointer(rebasing: output[..<declared])
            if let written = try? decompressor.decompress(second, against: base, into: destination),
                written != declared
            {
                return "a delta frame decoded to \(written) bytes, not the \(declared) it declares"
            }
        }
        return roundTrip(second, against: base, decompressor: decompressor)
    }

    private static func roundTrip(
        _ chunk: UnsafeRawBufferPointer, against base: UnsafeRawBufferPointer, decompressor: Decompressor
    ) -> String? {
        let frame = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Compressor.bound(for: chunk.count), alignment: 16)
        let decoded = UnsafeMutableRawBufferPointer.allocate(byteCount: max(chunk.count, 1), alignment: 16)
        var changed = Array(base)
        defer {
            frame.deallocate()
            decoded.deallocate()
        }
        let output = UnsafeMutableRawBufferPointer(rebasing: decoded[..<chunk.count])
        guard let length = try? Compressor().compress(chunk, against: base, into: frame) else {
            return "a delta did not fit in the bound of its chunk"
        }
        let delta = UnsafeRawBufferPointer(rebasing: frame[..<length])
        guard (try? decompressor.decompress(delta, against: base, into: output)) == chunk.count,
            output.elementsEqual(chunk)
        else { return "a delta does not decode to its chunk against its own base" }
        guard !changed.isEmpty else { return nil }
        changed[changed.count / 2] ^= 0x01
        let other = changed.withUnsafeBytes { try? decompressor.decompress(delta, against: $0, into: output) }
        if other != nil && !output.elementsEqual(chunk) {
            return "a delta decoded against a changed base to other bytes than its chunk's"
        }
        return nil
    }

    /// The rolling matcher: the first part as the earlier version (indexed in 64-byte blocks, whole and in
    /// pieces of 7 bytes, which must agree), the second as a new chunk at an offset its first byte gives, with a
    /// likely shift its second byte gives. A base
    /// found lies inside the earlier version and within the length asked, and its shift is backed by at least one
    /// block whose bytes the chunk really holds.
    static func rollingMatch(_ bytes: UnsafeRawBufferPointer) -> String? {
        guard let (old, chunk) = split(bytes) else { return nil }
        let blockSize = 64
        var whole = BaseIndex(blockSize: blockSize)
        whole.append(old)
        var pieces = BaseIndex(blockSize: blockSize)
        var start = 0
        while start < old.count {
            pieces.append(UnsafeRawBufferPointer(rebasing: old[start..<min(start + 7, old.count)]))
            start += 7
        }
        let offset = Int64(chunk.first ?? 0) * 16
        let likelyShift = Int64(Int8(bitPattern: chunk.count > 1 ? chunk[1] : 0)) * 8
        let maxLength = 2 * max(chunk.count, 1)
        let match = whole.findBase(for: chunk, at: offset, maxLength: maxLength, likelyShift: likelyShift)
        guard pieces.findBase(for: chunk, at: offset, maxLength: maxLength, likelyShift: likelyShift) == match else {
            return "an index built in pieces finds another base than one built whole"
        }
        guard let match else { return nil }
        guard match.offset >= 0, match.length > 0, match.length <= maxLength,
            match.offset + Int64(match.length) <= Int64(old.count)
        else { return "base \(match) is not inside the earlier version's \(old.count) bytes and the length asked" }
        guard match.matchedBytes >= blockSize, match.matchedBytes % blockSize == 0, match.matchedBytes <= chunk.count
        else { return "base \(match) claims matched bytes that are not whole blocks of the chunk" }
        let backed = (0..<(old.count / blockSize)).contains { block in
            let position = Int64(block * blockSize) - offset - match.shift
            guard position >= 0, position + Int64(blockSize) <= Int64(chunk.count) else { return false }
            let (from, to) = (Int(position), block * blockSize)
            return chunk[from..<(from + blockSize)].elementsEqual(old[to..<(to + blockSize)])
        }
        return backed ? nil : "base \(match): no block of the earlier version holds the chunk's bytes at its shift"
    }
}
