import DeltaKit
import TestSupport
import Testing

/// An index of `version`, appended in pieces of `piece` bytes (the last one shorter).
func index(of version: [UInt8], blockSize: Int = BaseIndex.defaultBlockSize, piece: Int = 64 << 10) -> BaseIndex {
    var index = BaseIndex(blockSize: blockSize)
    var start = 0
    while start < version.count {
        let end = min(start + piece, version.count)
        version[start..<end].withUnsafeBytes { index.append($0) }
        start = end
    }
    return index
}

extension BaseIndex {
    /// The base of the new version's chunk at `offset` (up to 64 KiB), with a base of up to two chunks.
    func findBase(in version: [UInt8], at offset: Int, chunkSize: Int = 64 << 10) -> BaseMatch? {
        let chunk = version[offset..<min(offset + chunkSize, version.count)]
        return chunk.withUnsafeBytes { findBase(for: $0, at: Int64(offset), maxLength: 2 * chunkSize) }
    }
}

/// `bytes` with `inserted` put before position `at`.
func inserting(_ inserted: [UInt8], into bytes: [UInt8], at position: Int) -> [UInt8] {
    Array(bytes[..<position]) + inserted + Array(bytes[position...])
}

/// The kinds of earlier version the matcher runs over.
enum Content: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case random, text

    func bytes(count: Int, seed: UInt64) -> [UInt8] {
        self == .random ? TestData.random(count: count, seed: seed) : TestData.text(count: count, seed: seed)
    }

    var testDescription: String { rawValue }
}

/// CONTRACT §14: a new chunk's base is found in the earlier version where a rolling match places its
/// bytes, so an insertion that shifts the rest of a file still finds it.
@Suite("§14 the rolling matcher")
struct BaseIndexTests {
    @Test(
        "§14: an insertion of a few hundred bytes before the chunk is found at the bytes' old position",
        arguments: Content.allCases, [256, 1 << 10, 4 << 10])
    func insertionBeforeTheChunk(content: Content, blockSize: Int) throws {
        let old = content.bytes(count: 1 << 20, seed: 21)
        let new = inserting(TestData.random(count: 300, seed: 22), into: old, at: 200_000)
        let match = try #require(index(of: old, blockSize: blockSize).findBase(in: new, at: 512 << 10))
        #expect(
            match
                == BaseMatch(
                    offset: (512 << 10) - 300, length: 128 << 10, shift: -300, matchedBytes: match.matchedBytes))
        // Every whole block of the earlier version inside the chunk's bytes there is found.
        #expect(match.matchedBytes >= (64 << 10) - 2 * blockSize, "\(match)")
    }

    @Test("§14: an insertion inside the chunk gives a base holding the bytes on both sides of it")
    func insertionInsideTheChunk() throws {
        let old = TestData.random(count: 1 << 20, seed: 23)
        let new = inserting(TestData.random(count: 500, seed: 24), into: old, at: (512 << 10) + 20_000)
        let match = try #require(index(of: old).findBase(in: new, at: 512 << 10))
        // Most bytes moved by the 500 inserted; the first 20,000 are where they were, and the base starts there.
        #expect(match.shift == -500, "\(match)")
        #expect(match.offset == (512 << 10) - 500 && match.length == 128 << 10, "\(match)")
        #expect(match.offset + Int64(match.length) >= (576 << 10) - 500)
    }

    @Test("§14: a chunk of fresh random bytes has no base", arguments: Content.allCases)
    func freshBytesHaveNoBase(content: Content) throws {
        let old = content.bytes(count: 1 << 20, seed: 25)
        let fresh = TestData.random(count: 64 << 10, seed: 26)
        let index = index(of: old)
        #expect(fresh.withUnsafeBytes { index.findBase(for: $0, at: 0, maxLength: 128 << 10) } == nil)
        #expect(fresh.withUnsafeBytes { index.findBase(for: $0, at: 512 << 10, maxLength: 128 << 10) } == nil)
    }

    @Test("§14: the same offset is preferred when its blocks match, though the bytes also occur elsewhere")
    func sameOffsetPreferred() throws {
        let half = TestData.random(count: 256 << 10, seed: 27)
        let old = half + half
        var new = old
        new[(320 << 10) + 5000] ^= 0xFF  // an edit in place
        let index = index(of: old)
        let match = try #require(index.findBase(in: new, at: 320 << 10))
        #expect(match.offset == 320 << 10 && match.shift == 0, "\(match)")
        #expect(match.matchedBytes == (64 << 10) - BaseIndex.defaultBlockSize)
        // The first copy is found at its own offset too.
        #expect(try #require(index.findBase(in: new, at: 64 << 10)).shift == 0)
    }

    @Test("§14: among shifts that match as many bytes, the smallest wins, and the base holds both")
    func smallestShiftWinsATie() throws {
        let (first, second) = (TestData.random(count: 16 << 10, seed: 28), TestData.random(count: 16 << 10, seed: 29))
        // The chunk (at 102,400) holds `first` then `second`; the earlier version has `first` 100 bytes before the
        // chunk's place and `second` 25,000 bytes after its place: 15 whole blocks of each.
        let old =
            TestData.random(count: 102_300, seed: 30) + first + TestData.random(count: 25_100, seed: 31)
            + second + TestData.random(count: 100_000, seed: 32)
        let chunk = first + second + TestData.random(count: 32 << 10, seed: 33)
        let match = try #require(
            chunk.withUnsafeBytes {
                index(of: old, blockSize: 1 << 10).findBase(for: $0, at: 102_400, maxLength: 128 << 10)
            })
        #expect(match == BaseMatch(offset: 102_300, length: 128 << 10, shift: -100, matchedBytes: 15 << 10))
    }

    @Test(
        "§14: the likely shift (the previous chunk's) is tried before a roll, and wins when its blocks match")
    func likelyShiftWins() throws {
        let copy = TestData.random(count: 128 << 10, seed: 60)
        // The copy is at 100,000 and at 281,072 in the earlier version; the chunk, at 200,000, holds its start.
        let old =
            TestData.random(count: 100_000, seed: 61) + copy + TestData.random(count: 50_000, seed: 62) + copy
            + TestData.random(count: 10_000, seed: 63)
        let chunk = Array(copy[..<(64 << 10)])
        let index = index(of: old)
        let rolled = try #require(chunk.withUnsafeBytes { index.findBase(for: $0, at: 200_000, maxLength: 128 << 10) })
        #expect(rolled.shift == 81_072, "\(rolled)")
        let hinted = try #require(
            chunk.withUnsafeBytes { index.findBase(for: $0, at: 200_000, maxLength: 128 << 10, likelyShift: -100_000) })
        #expect(
            hinted == BaseMatch(offset: 100_000, length: 128 << 10, shift: -100_000, matchedBytes: hinted.matchedBytes))
        #expect(hinted.matchedBytes >= (64 << 10) - 2 * BaseIndex.defaultBlockSize)
        // A likely shift whose blocks do not match, or that overflows, falls back to the roll.
        #expect(
            chunk.withUnsafeBytes { index.findBase(for: $0, at: 200_000, maxLength: 128 << 10, likelyShift: 7) }
                == rolled)
        #expect(
            chunk.withUnsafeBytes { index.findBase(for: $0, at: 200_000, maxLength: 128 << 10, likelyShift: .max) }
                == rolled)
    }

    @Test("§14: an empty or tiny earlier version, and an empty or tiny chunk, have no base")
    func tinyAndEmptyVersions() throws {
        let empty = BaseIndex()
        #expect(empty.length == 0 && empty.blockCount == 0)
        let chunk = TestData.random(count: 64 << 10, seed: 33)
        #expect(chunk.withUnsafeBytes { empty.findBase(for: $0, at: 0, maxLength: 128 << 10) } == nil)

        let tinyVersion = Array(chunk[..<100])
        let tiny = index(of: tinyVersion)
        #expect(tiny.length == 100 && tiny.blockCount == 0)
        #expect(chunk.withUnsafeBytes { tiny.findBase(for: $0, at: 0, maxLength: 128 << 10) } == nil)

        let full = index(of: chunk)
        #expect(tinyVersion.withUnsafeBytes { full.findBase(for: $0, at: 0, maxLength: 128 << 10) } == nil)
        #expect([UInt8]().withUnsafeBytes { full.findBase(for: $0, at: 0, maxLength: 128 << 10) } == nil)
        #expect(chunk.withUnsafeBytes { full.findBase(for: $0, at: -1, maxLength: 128 << 10) } == nil)
        #expect(chunk.withUnsafeBytes { full.findBase(for: $0, at: 0, maxLength: 0) } == nil)
        // A version of exactly one block: the chunk holding it finds it.
        let oneBlock = index(of: Array(chunk[..<BaseIndex.defaultBlockSize]))
        let found = try #require(chunk.withUnsafeBytes { oneBlock.findBase(for: $0, at: 0, maxLength: 128 << 10) })
        let block = BaseIndex.defaultBlockSize
        #expect(found == BaseMatch(offset: 0, length: block, shift: 0, matchedBytes: block))
    }

    @Test(
        "§14: the last, short chunk of a file longer than the earlier one gets a base inside the earlier one")
    func chunkAtTheEndOfAShorterFile() throws {
        let old = TestData.random(count: 100_000, seed: 34)
        let new = inserting(TestData.random(count: 300, seed: 35), into: old, at: 10_000)
        let match = try #require(index(of: old).findBase(in: new, at: 64 << 10))
        #expect(match == BaseMatch(offset: 0, length: 100_000, shift: -300, matchedBytes: match.matchedBytes))
        #expect(match.matchedBytes >= 100_000 - (64 << 10) - 300 - 2 * BaseIndex.defaultBlockSize)

        // A longer earlier version: the base is two chunks, ending at the earlier version's end.
        let longer = TestData.random(count: 150_000, seed: 36)
        let grown = inserting(TestData.random(count: 300, seed: 37), into: longer, at: 10_000)
        let tail = try #require(index(of: longer).findBase(in: grown, at: 128 << 10))
        #expect(
            tail
                == BaseMatch(
                    offset: 150_000 - (128 << 10), length: 128 << 10, shift: -300, matchedBytes: tail.matchedBytes))
    }

    @Test("§14: pieces of any size build the same index", arguments: [1, 7, 1000, 1024, 65_537, 1 << 20])
    func piecesOfAnySize(piece: Int) throws {
        let old = TestData.text(count: 300_000, seed: 38)
        let new = inserting(TestData.random(count: 333, seed: 39), into: old, at: 100_000)
        let whole = index(of: old, piece: old.count)
        let pieces = index(of: old, piece: piece)
        #expect(pieces.length == 300_000 && pieces.blockCount == 300_000 / BaseIndex.defaultBlockSize)
        for offset in stride(from: 0, to: new.count, by: 64 << 10) {
            #expect(pieces.findBase(in: new, at: offset) == whole.findBase(in: new, at: offset), "chunk at \(offset)")
        }
        #expect(try #require(pieces.findBase(in: new, at: 128 << 10)).shift == -333)
    }
}

@Suite("§14 the weak rolling checksum")
struct RollingChecksumTests {
    @Test(
        "§14: the checksum rolled one byte on equals the checksum of the window there", arguments: [64, 1024])
    func rollingEqualsFresh(window: Int) {
        let bytes = TestData.text(count: 5000, seed: 40) + TestData.random(count: 3000, seed: 41)
        bytes.withUnsafeBytes { buffer in
            var rolling = RollingChecksum(UnsafeRawBufferPointer(rebasing: buffer[..<window]))
            var mismatches = 0
            for start in 1...(bytes.count - window) {
                rolling.roll(leaving: bytes[start - 1], entering: bytes[start + window - 1])
                let fresh = RollingChecksum(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + window)]))
                if rolling != fresh || rolling.value != fresh.value { mismatches += 1 }
            }
            #expect(mismatches == 0)
        }
    }

    @Test("§14: windows of different bytes rarely share a checksum")
    func fewCollisions() {
        let bytes = TestData.text(count: 1 << 20, seed: 42)
        var values = Set<UInt32>()
        bytes.withUnsafeBytes { buffer in
            for start in stride(from: 0, to: bytes.count - 1024, by: 64) {
                values.insert(RollingChecksum(UnsafeRawBufferPointer(rebasing: buffer[start..<(start + 1024)])).value)
            }
        }
        let windows = (bytes.count - 1024 + 63) / 64
        #expect(values.count >= windows - 2, "\(windows - values.count) collisions among \(windows) windows")
    }
}
