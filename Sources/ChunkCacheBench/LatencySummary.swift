import FileIO

/// Percentiles of a set of latencies, in nanoseconds.
///
/// Percentiles are nearest-rank: `p50` is the smallest sample at or above half of the samples, so every
/// reported figure is one that was measured, and `p50 ≤ p90 ≤ p99` always holds.
public struct LatencySummary: Sendable, Hashable {
    /// The median.
    public let p50: UInt64
    /// The 90th percentile.
    public let p90: UInt64
    /// The 99th percentile.
    public let p99: UInt64

    /// Summarizes `samples` (any order); all zero when empty.
    public init(_ samples: [UInt64]) {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> UInt64 {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        p50 = percentile(0.50)
        p90 = percentile(0.90)
        p99 = percentile(0.99)
    }

    /// `nanoseconds` in microseconds.
    public static func micros(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1000 }

    /// How many times slower this is than `floor`, percentile by percentile (`self / floor`); a floor of 0
    /// gives infinity.
    ///
    /// - Parameter floor: The latencies of the reference work, measured in the same run on the same ranges.
    /// - Returns: The ratios at p50, p90 and p99.
    public func ratio(to floor: LatencySummary) -> LatencyRatio {
        func divide(_ a: UInt64, _ b: UInt64) -> Double { b == 0 ? .infinity : Double(a) / Double(b) }
        return LatencyRatio(p50: divide(p50, floor.p50), p90: divide(p90, floor.p90), p99: divide(p99, floor.p99))
    }
}
