import SeededRandom
import TestSupport
import Testing

@testable import ChunkCache

/// The alignment arithmetic of §3, checked on thousands of drawn cases against A1–A4 and A15.
@Suite struct FetchRangeRuleTests {
    struct Case: CustomStringConvertible {
        let location: Int64, length: Int64, alignment: Int64, chunkSize: Int64, size: Int64
        var description: String { "range \(location):\(length) align \(alignment) chunk \(chunkSize) size \(size)" }
    }

    static func drawCases(count: Int) -> [Case] {
        var rng = SplitMix64(seed: 0xC0FFEE)
        return (0..<count).map { _ in
            let chunkSize = Int64(1) << Int64.random(in: 12...22, using: &rng)
            let alignment = Int64(1) << Int64.random(in: 0...30, using: &rng)
            let size: Int64 =
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: 0
                case 1: chunkSize * Int64.random(in: 1...64, using: &rng)
                default: Int64.random(in: 1...(1 << 34), using: &rng)
                }
            let location: Int64 =
                Bool.random(using: &rng)
                ? Int64.random(in: 0...(size + size / 4 + 10), using: &rng)
                : Int64.random(in: 0...(1 << 40), using: &rng)
            let length = Int64.random(in: 0...(1 << Int64.random(in: 0...36, using: &rng)), using: &rng)
            return Case(location: location, length: length, alignment: alignment, chunkSize: chunkSize, size: size)
        }
    }

    @Test("A1 A2 A3 A4 A15: retrieved ranges are aligned, end aligned or at EOF, cover the clamped request")
    func drawnCasesObeyTheRules() {
        for c in Self.drawCases(count: 20_000) {
            let r = FetchPlanner.retrievedRange(
                for: ByteRange(location: c.location, length: c.length), alignment: c.alignment, chunkSize: c.chunkSize,
                size: c.size)
            #expect(r.location % c.alignment == 0, "A1 \(c) → \(r)")
            #expect(r.length % c.alignment == 0 || r.end == c.size, "A2 \(c) → \(r)")
            let start = min(c.location, c.size)
            let end = min(c.location + c.length, c.size)
            #expect(r.location <= start && r.end >= end, "A3 \(c) → \(r)")
            #expect(r.location >= 0 && r.length >= 0 && r.end <= c.size, "A15 \(c) → \(r)")
            // A4: a request covering the whole file gets exactly the whole file back.
            if start == 0 && end == c.size { #expect(r == ByteRange(location: 0, length: c.size), "A4 \(c)") }
        }
    }

    @Test("the start rounds down and the end rounds up to max(alignment, chunk size)")
    func roundsToTheLargerUnit() {
        let r = FetchPlanner.retrievedRange(
            for: ByteRange(location: 70_000, length: 10), alignment: 4096, chunkSize: 65536, size: 1 << 20)
        #expect(r == ByteRange(location: 65536, length: 65536))
        let wide = FetchPlanner.retrievedRange(
            for: ByteRange(location: 70_000, length: 10), alignment: 1 << 20, chunkSize: 65536, size: 3 << 20)
        #expect(wide == ByteRange(location: 0, length: 1 << 20))
    }

    @Test("A14: a zero-length file gives {0, 0}")
    func zeroLengthFile() {
        #expect(
            FetchPlanner.retrievedRange(
                for: ByteRange(location: 5, length: 100), alignment: 4096, chunkSize: 65536, size: 0)
                == ByteRange(location: 0, length: 0))
    }

    @Test("A15: a range far past EOF or overflowing Int64 is clamped, never an error")
    func pastEndIsClamped() {
        let r = FetchPlanner.retrievedRange(
            for: ByteRange(location: .max - 5, length: .max), alignment: 4096, chunkSize: 65536, size: 100_000)
        #expect(r == ByteRange(location: 65536, length: 100_000 - 65536))
    }

    @Test(
        "alignments that are not powers of two from 1 to 2^30 are invalidArgument",
        arguments: [0, -4096, 3, 4095, 1 << 31, 6144])
    func badAlignments(alignment: Int) {
        #expect { try FetchPlanner.validate(alignment: alignment) } throws: {
            ($0 as? CacheError)?.code == .invalidArgument
        }
    }

    @Test("every power of two from 1 to 2^30 is a valid alignment")
    func goodAlignments() throws {
        for shift in 0...30 { try FetchPlanner.validate(alignment: 1 << shift) }
    }
}
