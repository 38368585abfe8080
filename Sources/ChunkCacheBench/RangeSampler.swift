import ChunkCache
import SeededRandom

/// Draws `length`-byte ranges that start on `alignment` boundaries and lie inside a file of `size` bytes,
/// uniformly over the possible starts, from a seeded generator.
///
/// The generator is seeded with `seed ^ length`, so the benchmark suite and `chunkcache-bench` draw the
/// same ranges for the same arguments.
public struct RangeSampler: Sendable {
    /// The file's size.
    public let size: Int64
    /// Every range's length.
    public let length: Int64
    /// Every range's start is a multiple of this.
    public let alignment: Int64
    private var generator: SplitMix64

    /// A sampler of ranges in a file of `size` bytes.
    ///
    /// - Parameters:
    ///   - size: The file's size, at least `length`.
    ///   - length: The length of every range, at least 1.
    ///   - alignment: The start alignment, at least 1 (a power of two for fetches, though any value works).
    ///   - seed: The same seed (with the same length) draws the same ranges.
    public init(size: Int64, length: Int64, alignment: Int64 = 4096, seed: UInt64) {
        // Callers check these against the user's input first; here they are programming errors.
        precondition(length >= 1 && length <= size, "the range must fit in the file")
        precondition(alignment >= 1, "the alignment must be positive")
        self.size = size
        self.length = length
        self.alignment = alignment
        generator = SplitMix64(seed: seed ^ UInt64(length))
    }

    /// The next range's start.
    public mutating func nextLocation() -> Int64 {
        let slots = UInt64((size - length) / alignment + 1)
        return Int64(generator.next() % slots) * alignment
    }

    /// The next range.
    public mutating func next() -> ByteRange { ByteRange(location: nextLocation(), length: length) }

    /// The next `count` ranges, in order.
    public mutating func next(_ count: Int) -> [ByteRange] { (0..<count).map { _ in next() } }
}
