import Foundation

/// The hot tier's setting and counters in `meta`.
enum HotMeta {
    /// `init --hot-size`, once set.
    static let size = "hotSize"
    /// Raw bytes of the chunks stored `.hot` (`stat`'s `hotBytes`).
    static let bytes = "hotBytes"
    /// Chunks stored `.hot` (`stat`'s `hotChunks`).
    static let chunks = "hotChunks"
    static let candidates = "hotCandidates"
    static let clock = "hotClock"
    static let generation = "hotGeneration"
    static let samples = "hotSamples"
}
