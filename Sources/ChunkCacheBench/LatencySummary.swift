/// Percentiles of a set of latencies, in nanoseconds.
public struct LatencySummary: Sendable, Hashable {
    public let count: Int
    public let p50: UInt64
    public let p90: UInt64
    public let p99: UInt64

    /// Summarizes `samples` (any order); all zero when empty.
    public init(_ samples: [UInt64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func percentile(_ p: Double) -> UInt64 {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        p50 = percentile(0.50)
        p90 = percentile(0.90)
        p99 = percentile(0.99)
    }
}
