/// Sequential read-ahead of one item (<doc:Contract#10-Origins-the-cold-path>, <doc:FileProviderRules#A19>): while
/// fetches arrive in order, the bytes after them are downloaded ahead in a window that starts at a quarter of the limit
/// (or the fetch's length) and doubles up to the limit; a fetch out of order resets it, so a random fetch downloads
/// only its range.
///
/// A fetch is in order when it starts no earlier than the last one started and no later than it ended, and
/// reaches past that end (aligned ranges of a sequential reader overlap by up to a chunk). The first fetch of
/// an item opens no window, whatever its offset: a read at offset 0 is no more sequential than any other, and
/// one that starts before the last one, such as a read from 0 after reads in the middle, is out of order.
///
/// The window is topped up only when less than half of it is left ahead of the reader, so a long sequential
/// read costs one request per half window, not one per fetch.
///
/// The state outlives the process (``ReadPositions``): a script that reads a file in order, one `fetch`
/// command per range, sees the window grow as a long-lived reader does.
package struct ReadAhead: Sendable, Equatable {
    /// Where the next sequential fetch starts: the end of the last one.
    private var expected: Int64 = -1
    /// Where the last fetch started.
    private var previousStart: Int64 = 0
    private var window: Int64 = 0
    /// How far ahead downloads were started.
    private var frontier: Int64 = 0

    /// Records a fetch of `range` (chunk-aligned) of an item of `size` bytes and returns the bytes to
    /// download after it, if any.
    package mutating func advance(fetching range: Range<Int64>, size: Int64, limit: Int64) -> Range<Int64>? {
        // The same bytes again (concurrent readers of one range, a retry) neither advance nor break a sequence.
        if expected > 0 && range.upperBound <= expected && range.lowerBound >= previousStart { return nil }
        defer {
            expected = range.upperBound
            previousStart = range.lowerBound
        }
        let sequential =
            expected > 0 && previousStart <= range.lowerBound && range.lowerBound <= expected
            && expected < range.upperBound
        guard sequential, limit > 0 else {
            window = 0
            frontier = range.upperBound
            return nil
        }
        frontier = max(frontier, range.upperBound)
        if window == 0 {
            window = min(limit, max(Int64(range.count), limit / 4))
        } else if frontier - range.upperBound >= window / 2 {
            return nil
        } else {
            window = min(limit, window * 2)
        }
        let end = min(size, range.upperBound + window)
        guard end > frontier else { return nil }
        defer { frontier = end }
        return frontier..<end
    }
}

extension ReadAhead {
    /// The state as the store keeps it: four big-endian 64-bit integers.
    package var stored: [UInt8] {
        var w = ByteWriter()
        for value in [expected, previousStart, window, frontier] { w.appendBigEndian(UInt64(bitPattern: value)) }
        return w.bytes
    }

    /// The state kept in the store, or nil when the bytes are not one. Offsets past the largest item are
    /// refused, so a damaged value can never make the window's arithmetic overflow.
    package init?(stored value: UnsafeRawBufferPointer) {
        guard value.count == 32 else { return nil }
        let fields = (0..<4).map {
            Int64(bitPattern: UInt64(bigEndian: value.loadUnaligned(fromByteOffset: 8 * $0, as: UInt64.self)))
        }
        let limit = ChunkLayout.maxItemLength
        guard (-1...limit).contains(fields[0]), fields.dropFirst().allSatisfy({ (0...limit).contains($0) }) else {
            return nil
        }
        (expected, previousStart, window, frontier) = (fields[0], fields[1], fields[2], fields[3])
    }
}
