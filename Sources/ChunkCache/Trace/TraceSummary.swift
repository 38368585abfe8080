import Foundation

/// One learned trace, as `chunkcache trace ls` shows it (<doc:Contract#15-Learned-prefetch>).
public struct TraceSummary: Sendable, Hashable {
    /// The domain whose items it lists.
    public var domain: String
    /// The item whose open starts its prefetch.
    public var leader: String
    /// The items it predicts, in the order they were read.
    public var items: Int
    /// Bytes of those items it predicts.
    public var describedBytes: Int64
    /// Bytes its record takes in the store.
    public var bytes: Int
    /// Runs it learned from.
    public var runs: Int
    /// Prefetches made from it.
    public var uses: Int
    /// When it last learned or predicted.
    public var usedAt: Date
}
