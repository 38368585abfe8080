import TestSupport
import Testing
import ZstdKit

extension Compressor {
    /// Compresses `source` against `prefix` into a buffer of `capacity` bytes (default the bound); `nil` when the
    /// frame does not fit.
    func deltaFrame(of source: [UInt8], against prefix: [UInt8], capacity: Int? = nil) throws -> [UInt8]? {
        var destination = [UInt8](repeating: 0, count: capacity ?? Compressor.bound(for: source.count))
        let length = try source.withUnsafeBytes { src in
            try prefix.withUnsafeBytes { base in
                try destination.withUnsafeMutableBytes { dst in try compress(src, against: base, into: dst) }
            }
        }
        guard let length else { return nil }
        destination.removeSubrange(length...)
        return destination
    }
}

extension Decompressor {
    /// Decompresses the delta `frame` against `prefix` into a buffer of `count` bytes.
    func bytes(of frame: [UInt8], against prefix: [UInt8], count: Int) throws -> [UInt8] {
        var destination = [UInt8](repeating: 0, count: count)
        let written = try frame.withUnsafeBytes { src in
            try prefix.withUnsafeBytes { base in
                try destination.withUnsafeMutableBytes { dst in try decompress(src, against: base, into: dst) }
            }
        }
        #expect(written == count, "decompress reports every byte of the buffer as written")
        return destination
    }
}

/// A base and a new chunk made from it as a new version makes one: the base's bytes from `shift` on (an insertion
/// of `shift` bytes before the chunk moved them), with a few bytes edited.
func editedCopy(of base: [UInt8], shift: Int, count: Int) -> [UInt8] {
    var chunk = Array(base[shift..<(shift + count)])
    for position in stride(from: 1000, to: count, by: count / 5) { chunk[position] ^= 0x5A }
    return chunk
}

/// CONTRACT §14: a delta frame is a zstd frame made against a base of raw bytes, read back only against
/// the same bytes.
@Suite("§14 delta frames")
struct DeltaFrameTests {
    @Test(
        "§14: a delta frame decodes against its prefix to the same bytes, byte for byte",
        arguments: Payload.allCases, [(0, 0), (1, 100), (4 << 10, 64 << 10), (64 << 10, 128 << 10), (1 << 20, 3000)])
    func roundTrip(payload: Payload, sizes: (source: Int, prefix: Int)) throws {
        let prefix = TestData.random(count: sizes.prefix, seed: 3)
        let source = payload.bytes(count: sizes.source)
        let frame = try #require(try Compressor().deltaFrame(of: source, against: prefix))
        #expect(Decompressor.contentSize(of: frame) == source.count)
        #expect(try Decompressor().bytes(of: frame, against: prefix, count: source.count) == source)
    }

    @Test(
        "§14: a chunk against a base holding its bytes a few hundred bytes later, with edits, is far smaller than its plain frame",
        arguments: [Payload.random, .compressible])
    func similarBaseShrinksTheFrame(payload: Payload) throws {
        let base =
            payload == .random ? TestData.random(count: 128 << 10, seed: 5) : TestData.text(count: 128 << 10, seed: 5)
        let chunk = editedCopy(of: base, shift: 300, count: 64 << 10)
        let compressor = Compressor()
        let plain = try compressor.frame(of: chunk)
        let delta = try #require(try compressor.deltaFrame(of: chunk, against: base))
        #expect(delta.count * 20 < plain.count, "delta \(delta.count) bytes, plain \(plain.count)")
        #expect(try Decompressor().bytes(of: delta, against: base, count: chunk.count) == chunk)
    }

    @Test("§14: the end of a 4 MiB chunk still reaches the start of its 8 MiB base")
    func windowCoversTheWholePrefix() throws {
        // zstd keeps a prefix in reach for the first window's worth of the chunk only (level 3's window is 2 MiB):
        // here the chunk's last megabyte is the base's first. Zeros elsewhere, so that zstd's hash table, sized
        // for the level, still holds the positions of those bytes.
        let head = TestData.random(count: 1 << 20, seed: 7)
        let base = head + [UInt8](repeating: 0, count: 7 << 20)
        let chunk = [UInt8](repeating: 0, count: 3 << 20) + head
        let delta = try #require(try Compressor().deltaFrame(of: chunk, against: base))
        #expect(delta.count < head.count / 100, "delta \(delta.count) bytes of a \(chunk.count)-byte chunk")
        let decoded = try Decompressor().bytes(of: delta, against: base, count: chunk.count)
        #expect(decoded.count == chunk.count && decoded.elementsEqual(chunk))
        #expect(Compressor.deltaWindowLog(prefixCount: base.count, sourceCount: chunk.count) == 24)
        #expect(Compressor.deltaWindowLog(prefixCount: 8 << 20, sourceCount: 512 << 10) == 24)
        #expect(Compressor.deltaWindowLog(prefixCount: 0, sourceCount: 0) == 10)
        #expect(Compressor.deltaWindowLog(prefixCount: 128 << 10, sourceCount: 64 << 10) == 18)
        #expect(Compressor.deltaWindowLog(prefixCount: Int.max, sourceCount: 1) == Compressor.maxDeltaWindowLog)
    }

    @Test("§14: decoding against another base, a damaged one, a shorter one or none throws, never other bytes")
    func wrongPrefixThrows() throws {
        // Random bytes: every byte of the base's part the chunk came from is referenced, so a damaged one matters.
        let base = TestData.random(count: 128 << 10, seed: 9)
        let chunk = editedCopy(of: base, shift: 500, count: 64 << 10)
        let delta = try #require(try Compressor().deltaFrame(of: chunk, against: base))
        var damaged = base
        damaged[40_000] ^= 0x01
        let other = TestData.random(count: 128 << 10, seed: 10)
        let decompressor = Decompressor()
        for (name, prefix) in [
            ("other", other), ("damaged", damaged), ("shorter", Array(base.dropLast(10))), ("none", []),
        ] {
            let error = try #require(throws: ZstdError.self, "\(name) base") {
                try decompressor.bytes(of: delta, against: prefix, count: chunk.count)
            }
            #expect([ZstdError.checksumWrong, .corruptionDetected].contains(error), "\(name) base: \(error)")
        }
        #expect(throws: ZstdError.self) { try decompressor.bytes(of: delta, count: chunk.count) }
        // The context is left sound: the right base still decodes.
        #expect(try decompressor.bytes(of: delta, against: base, count: chunk.count) == chunk)
    }

    @Test("§14: a delta frame whose checksum flag is cleared is refused, as its base could not be checked")
    func frameWithoutChecksumIsRefused() throws {
        let base = TestData.random(count: 64 << 10, seed: 11)
        let chunk = editedCopy(of: base, shift: 200, count: 32 << 10)
        var delta = try #require(try Compressor().deltaFrame(of: chunk, against: base))
        #expect(delta.withUnsafeBytes { Decompressor.hasContentChecksum($0) })
        delta[4] &= ~0x04
        #expect(throws: ZstdError.frameParameterUnsupported) {
            try Decompressor().bytes(of: delta, against: base, count: chunk.count)
        }
        #expect(throws: ZstdError.frameParameterUnsupported) {
            try Decompressor().bytes(of: [], against: base, count: 0)
        }
    }

    @Test("§14: an empty base gives a frame that decodes against an empty base and as a plain frame")
    func emptyPrefix() throws {
        let chunk = Payload.compressible.bytes(count: 64 << 10)
        let delta = try #require(try Compressor().deltaFrame(of: chunk, against: []))
        #expect(try Decompressor().bytes(of: delta, against: [], count: chunk.count) == chunk)
        #expect(try Decompressor().bytes(of: delta, count: chunk.count) == chunk)
    }

    @Test("§14: a delta that does not fit returns nil, and the contexts make and read plain frames as before")
    func contextsStayPlainAfterADelta() throws {
        let base = TestData.random(count: 128 << 10, seed: 13)
        let chunk = editedCopy(of: base, shift: 700, count: 64 << 10)
        let text = Payload.compressible.bytes(count: 256 << 10)
        let fresh = try Compressor().frame(of: text)
        let compressor = Compressor()
        #expect(try compressor.deltaFrame(of: chunk, against: base, capacity: 16) == nil)
        #expect(try compressor.frame(of: text) == fresh, "a plain frame after a delta that did not fit")
        let delta = try #require(try compressor.deltaFrame(of: chunk, against: base))
        #expect(try compressor.frame(of: text) == fresh, "a plain frame after a delta: no prefix, the level's window")
        let decompressor = Decompressor()
        #expect(try decompressor.bytes(of: delta, against: base, count: chunk.count) == chunk)
        #expect(try decompressor.bytes(of: fresh, count: text.count) == text)
        #expect(throws: ZstdError.sizeMismatch) {
            try decompressor.bytes(of: delta, against: base, count: chunk.count + 1)
        }
        // A refused frame left no prefix behind: the delta does not decode without its base.
        #expect(throws: ZstdError.self) { try decompressor.bytes(of: delta, count: chunk.count) }
    }
}
