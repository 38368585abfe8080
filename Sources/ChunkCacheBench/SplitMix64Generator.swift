import ChunkCache

/// SplitMix64 (Steele, Lea and Flood 2014): a tiny seeded generator, so the engine and its floors visit the
/// same ranges in the same order, run after run.
///
/// The same algorithm and constants as TestSupport's `SplitMix64`, kept apart so the low-level test targets
/// need not link the engine; a seed draws the same numbers in both.
public struct SplitMix64Generator: RandomNumberGenerator, Sendable {
    /// The whole state: the seed, advanced by a fixed odd constant per draw.
    public var state: UInt64

    /// A generator that draws the same sequence for the same `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 pseudo-random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
