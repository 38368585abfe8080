import SeededRandom
import Testing

/// The benchmarks and the tests replay their cases from seeds, so the one generator they share must draw
/// SplitMix64's own sequence, the same on every run and every machine.
@Suite struct SplitMix64Tests {
    @Test("SplitMix64 draws the reference sequence of Vigna's splitmix64.c for a seed")
    func drawsTheReferenceSequence() {
        var generator = SplitMix64(seed: 1_234_567)
        let drawn = (0..<5).map { _ in generator.next() }
        #expect(
            drawn == [
                6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423,
                4_593_380_528_125_082_431, 16_408_922_859_458_223_821,
            ])
    }

    @Test("SplitMix64 from seed 0 starts 0xE220A8397B1DCDAF, and its state advances by the golden-ratio step")
    func advancesByTheGoldenRatio() {
        var generator = SplitMix64(seed: 0)
        #expect(generator.next() == 0xE220_A839_7B1D_CDAF)
        #expect(generator.state == 0x9E37_79B9_7F4A_7C15)
        #expect(generator.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(generator.state == 0x9E37_79B9_7F4A_7C15 &* 2)
    }

    @Test("two SplitMix64 of one seed draw the same numbers, and the maximal seed wraps without trapping")
    func sameSeedSameNumbers() {
        for seed: UInt64 in [0, 1, 0x5EED, .max] {
            var first = SplitMix64(seed: seed)
            var second = SplitMix64(seed: seed)
            for _ in 0..<1000 { #expect(first.next() == second.next(), "seed \(seed)") }
        }
    }
}
