import Testing
import ZstdKit

/// The sizes every round trip runs over: empty, one byte, a page, a default chunk, the largest chunk / 4.
let roundTripSizes = [0, 1, 4 << 10, 64 << 10, 1 << 20]

@Suite struct CompressorTests {
    @Test(arguments: Payload.allCases, roundTripSizes)
    func aFrameDecompressesToTheSameBytes(payload: Payload, count: Int) throws {
        let original = payload.bytes(count: count)
        let frame = try Compressor().frame(of: original)
        #expect(frame.count <= Compressor.bound(for: count))
        #expect(Decompressor.contentSize(of: frame) == count)
        #expect(try Decompressor().bytes(of: frame, count: count) == original)
    }

    @Test(arguments: roundTripSizes.filter { $0 >= 4 << 10 })
    func compressibleBytesShrinkAndRandomBytesDoNot(count: Int) throws {
        let compressor = Compressor()
        let small = try compressor.frame(of: Payload.compressible.bytes(count: count))
        let large = try compressor.frame(of: Payload.random.bytes(count: count))
        #expect(small.count < count / 8)
        #expect(large.count > count)  // raw blocks plus header and checksum
    }

    @Test func oneCompressorMakesManyIndependentFrames() throws {
        let compressor = Compressor()
        let decompressor = Decompressor()
        let inputs = (0..<8).map { Payload.allCases[$0 % 2].bytes(count: 1000 * ($0 + 1)) }
        let frames = try inputs.map { try compressor.frame(of: $0) }
        for (input, frame) in zip(inputs, frames).reversed() {
            #expect(try decompressor.bytes(of: frame, count: input.count) == input)
        }
        #expect(try compressor.frame(of: inputs[3]) == frames[3])  // deterministic
    }

    @Test func compressReturnsNilWhenTheFrameDoesNotFitAndTheContextStaysUsable() throws {
        let compressor = Compressor()
        let random = Payload.random.bytes(count: 4 << 10)
        #expect(try compressor.frame(of: random, capacity: 1 << 10) == nil)
        #expect(try compressor.frame(of: random, capacity: 0) == nil)

        let text = Payload.compressible.bytes(count: 64 << 10)
        let frame = try compressor.frame(of: text)
        #expect(try compressor.frame(of: text, capacity: frame.count - 1) == nil)
        // zstd wants a few bytes of slack past the frame (three with 1.5.4), far less than the bound.
        #expect(try compressor.frame(of: text, capacity: frame.count + 64) == frame)
        #expect(try Decompressor().bytes(of: frame, count: text.count) == text)
    }

    @Test(arguments: [1, 3, 19])
    func everyLevelRoundTrips(level: Int32) throws {
        let text = Payload.compressible.bytes(count: 64 << 10)
        let frame = try Compressor(level: level).frame(of: text)
        #expect(try Decompressor().bytes(of: frame, count: text.count) == text)
    }
}

@Suite struct DecompressorTests {
    @Test(arguments: Payload.allCases)
    func aChangedChecksumByteFailsTheChecksum(payload: Payload) throws {
        let original = payload.bytes(count: 4 << 10)
        var frame = try Compressor().frame(of: original)
        frame[frame.count - 1] ^= 0x01  // the frame ends with 4 bytes of XXH64
        #expect(throws: ZstdError.checksumWrong) {
            try Decompressor().bytes(of: frame, count: original.count)
        }
    }

    @Test(arguments: Payload.allCases)
    func aFlippedByteAnywhereInTheFrameNeverYieldsOtherBytes(payload: Payload) throws {
        let original = payload.bytes(count: 4 << 10)
        let frame = try Compressor().frame(of: original)
        let decompressor = Decompressor()
        var unnoticed: [Int] = []
        var wrongBytes: [Int] = []
        for position in frame.indices {
            var damaged = frame
            damaged[position] ^= 0x10
            do {
                // A flip may land on a bit the format ignores (byte 4 holds the descriptor's unused bit):
                // then the bytes must still be the original ones.
                if try decompressor.bytes(of: damaged, count: original.count) != original {
                    wrongBytes.append(position)
                }
                unnoticed.append(position)
            } catch is ZstdError {
                // Expected: the damage is reported. The context must still decode sound frames afterwards.
            }
        }
        #expect(wrongBytes == [], "flips at \(wrongBytes) of a \(frame.count)-byte frame gave other bytes")
        #expect(unnoticed.count * 10 < frame.count, "flips at \(unnoticed) went unnoticed")
        #expect(try decompressor.bytes(of: frame, count: original.count) == original)
    }

    @Test func aFlippedByteInTheCompressedBodyIsCaughtAsCorruptionOrChecksum() throws {
        let original = Payload.compressible.bytes(count: 64 << 10)
        var frame = try Compressor().frame(of: original)
        frame[frame.count / 2] ^= 0xFF
        let error = try #require(throws: ZstdError.self) {
            try Decompressor().bytes(of: frame, count: original.count)
        }
        #expect([ZstdError.checksumWrong, .corruptionDetected].contains(error), "\(error)")
    }

    @Test func aTruncatedFrameThrows() throws {
        let original = Payload.random.bytes(count: 4 << 10)
        let frame = try Compressor().frame(of: original)
        for cut in [1, 4, 5, frame.count / 2] {
            #expect(throws: ZstdError.self, "frame cut by \(cut) bytes") {
                try Decompressor().bytes(of: Array(frame.dropLast(cut)), count: original.count)
            }
        }
    }

    @Test(arguments: [-1, 1, 4096])
    func aBufferOfTheWrongSizeThrowsSizeMismatch(difference: Int) throws {
        let original = Payload.compressible.bytes(count: 8 << 10)
        let frame = try Compressor().frame(of: original)
        #expect(throws: ZstdError.sizeMismatch) {
            try Decompressor().bytes(of: frame, count: original.count + difference)
        }
    }

    @Test func contentSizeIsTheDeclaredSizeAndNilForWhatIsNotAFrame() throws {
        let compressor = Compressor()
        for count in [0, 1, 255, 256, 65_535, 65_536, 65_792, 1 << 20] {
            let frame = try compressor.frame(of: Payload.compressible.bytes(count: count))
            #expect(Decompressor.contentSize(of: frame) == count)
        }
        #expect(Decompressor.contentSize(of: []) == nil)
        #expect(Decompressor.contentSize(of: Array("not a zstd frame".utf8)) == nil)
        #expect(Decompressor.contentSize(of: Payload.random.bytes(count: 64)) == nil)
    }

    /// A frame header (magic, descriptor with an 8-byte content size, window descriptor) declaring `size`,
    /// followed by an empty last raw block.
    static func frame(declaring size: UInt64) -> [UInt8] {
        [0x28, 0xB5, 0x2F, 0xFD, 0xC0, 0x00]
            + (0..<8).map { UInt8(truncatingIfNeeded: size >> ($0 * 8)) }
            + [0x01, 0x00, 0x00]
    }

    @Test func aDeclaredSizeBeyondIntIsNilNotATrap() throws {
        #expect(Decompressor.contentSize(of: Self.frame(declaring: 1 << 40)) == 1 << 40)
        #expect(Decompressor.contentSize(of: Self.frame(declaring: UInt64(Int.max))) == Int.max)
        #expect(Decompressor.contentSize(of: Self.frame(declaring: 1 << 63)) == nil)
        #expect(Decompressor.contentSize(of: Self.frame(declaring: UInt64.max - 2)) == nil)
        #expect(throws: ZstdError.sizeMismatch) {
            try Decompressor().bytes(of: Self.frame(declaring: 1 << 63), count: 0)
        }
    }

    @Test func aFrameThatLiesAboutItsSizeThrows() throws {
        // The header says 16 bytes, the only block holds none.
        #expect(throws: ZstdError.self) {
            try Decompressor().bytes(of: Self.frame(declaring: 16), count: 16)
        }
    }
}

@Suite struct ZstdErrorTests {
    @Test func descriptionIsZstdsOwnName() {
        #expect(ZstdError.checksumWrong.description.lowercased().contains("checksum"))
        #expect(ZstdError.destinationTooSmall.description.lowercased().contains("destination buffer is too small"))
        #expect(ZstdError.corruptionDetected.description.lowercased().contains("corrupt"))
    }

    @Test func patternsMatchOnlyTheirOwnCode() {
        #expect(ZstdError.checksumWrong ~= ZstdError.checksumWrong as any Error)
        #expect(!(ZstdError.checksumWrong ~= ZstdError.corruptionDetected as any Error))
        struct Other: Error {}
        #expect(!(ZstdError.sizeMismatch ~= Other() as any Error))
        #expect(
            Set([ZstdError.checksumWrong, .destinationTooSmall, .corruptionDetected, .sizeMismatch].map(\.rawValue))
                .count == 4)
    }
}
