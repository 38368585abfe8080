import Foundation

/// The policy's counters in `meta`.
enum PolicyMeta {
    static let clock = "policyClock"
    static let generation = "policyGeneration"
    static let samples = "policySamples"
    /// Chunks of origin domains served from the store (`stat`'s `hits`).
    static let hits = "hits"
    /// Chunks downloaded from an origin (`stat`'s `misses`).
    static let misses = "misses"
    /// Raw bytes of content eviction made absent (`stat`'s `evictedBytes`).
    static let evictedBytes = "evictedBytes"
}
