/// What settling did (``ChunkCache/ChunkCache/settle()``).
public struct SettleResult: Sendable, Hashable, Codable {
    /// Fills named, checked and stored as chunks.
    public var settled: Int
    /// Their raw bytes.
    public var settledBytes: Int64
    /// Fills dropped because their bytes did not hash to what the manifest knew (the next read downloads them
    /// again).
    public var mismatched: Int
    /// Fills dropped because their bytes were lost (a system crash before the page cache reached the disk).
    public var lost: Int

    public init(settled: Int = 0, settledBytes: Int64 = 0, mismatched: Int = 0, lost: Int = 0) {
        self.settled = settled
        self.settledBytes = settledBytes
        self.mismatched = mismatched
        self.lost = lost
    }

    /// Fills this settled or dropped.
    var touched: Int { settled + mismatched + lost }

    mutating func add(_ other: SettleResult) {
        settled += other.settled
        settledBytes += other.settledBytes
        mismatched += other.mismatched
        lost += other.lost
    }
}
