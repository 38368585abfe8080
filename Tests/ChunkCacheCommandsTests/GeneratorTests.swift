import ChunkCacheBench
import TestSupport
import Testing

/// `chunkcache-bench` and the tests draw from two copies of SplitMix64 (the low-level test targets must not
/// link the engine): they must stay the same generator.
@Suite struct GeneratorTests {
    @Test("ChunkCacheBench's SplitMix64Generator and TestSupport's SplitMix64 draw the same numbers")
    func copiesAgree() {
        for seed: UInt64 in [0, 1, 0x5EED, .max] {
            var bench = SplitMix64Generator(seed: seed)
            var tests = SplitMix64(seed: seed)
            for _ in 0..<1000 { #expect(bench.next() == tests.next(), "seed \(seed)") }
        }
    }
}
