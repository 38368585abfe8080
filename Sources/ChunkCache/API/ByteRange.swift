/// A half-open byte range `[location, location + length)`.
public struct ByteRange: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The first byte.
    public var location: Int64
    /// The number of bytes.
    public var length: Int64

    public init(location: Int64, length: Int64) {
        self.location = location
        self.length = length
    }

    /// One past the last byte, saturating at `Int64`'s bounds (a range built from outside input may be huge).
    public var end: Int64 {
        let (sum, overflow) = location.addingReportingOverflow(length)
        guard overflow else { return sum }
        return length < 0 ? .min : .max
    }

    /// Whether `other` lies inside this range (an empty range lies inside any range that touches it).
    public func contains(_ other: ByteRange) -> Bool {
        other.location >= location && other.end <= end
    }

    public var description: String { "\(location):\(length)" }
}
