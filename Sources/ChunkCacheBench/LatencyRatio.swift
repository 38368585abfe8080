import FileIO

/// One latency summary divided by another at each percentile (see ``LatencySummary/ratio(to:)``).
public struct LatencyRatio: Sendable, Hashable {
    /// The ratio of the medians.
    public var p50: Double
    /// The ratio of the 90th percentiles.
    public var p90: Double
    /// The ratio of the 99th percentiles.
    public var p99: Double
}
