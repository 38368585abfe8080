import Foundation

/// A list of ranges a multi-range read cannot take: the caller's fault, thrown before any request is sent.
public struct RangeListError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
}

/// The ranges of a multi-range read: checked, then worked off as the bytes come (CONTRACT §10).
enum RangeList {
    /// Throws unless `ranges` is non-empty, each range non-empty and at or after byte 0, and each one after
    /// the one before it (touching is fine, overlapping is not).
    static func check(_ ranges: [Range<Int64>], of item: String) throws {
        func refuse(_ fault: String) -> RangeListError {
            RangeListError(
                description: "the ranges to read of \(item) must be non-empty, sorted and disjoint: \(fault); "
                    + "sort them and merge the ones that overlap")
        }
        guard let first = ranges.first else { throw refuse("no range was given") }
        guard first.lowerBound >= 0 else { throw refuse("\(first) starts before byte 0") }
        var previous: Range<Int64>?
        for range in ranges {
            guard !range.isEmpty else { throw refuse("\(range) is empty") }
            if let previous, range.lowerBound < previous.upperBound {
                throw refuse("\(range) comes after \(previous) but does not start at or past its end")
            }
            previous = range
        }
    }

    /// The `Range` header's value for `ranges`: `bytes=a-b,c-d` (an empty range asks for its first byte).
    static func header(_ ranges: [Range<Int64>]) -> String {
        "bytes=" + ranges.map { "\($0.lowerBound)-\(max($0.lowerBound, $0.upperBound - 1))" }.joined(separator: ",")
    }

    /// The most ranges one request asks for: nginx's default `large_client_header_buffers` allow 8 KiB a
    /// header line, and servers may refuse long lists.
    static let mostPerRequest = 64
    /// The longest `Range` header one request sends, in bytes.
    static let longestHeader = 4000
}

/// The asked bytes of a multi-range read not yet delivered, in order: which bytes to ask for next, and which
/// of the bytes a response sends may be delivered (only those at the first missing byte: deliveries go in
/// ascending order without gaps).
struct MissingRanges {
    private var ranges: [Range<Int64>]
    /// The first range still missing; those before it were delivered or clamped away.
    private var index = 0
    /// The bytes still missing.
    private(set) var count: Int64

    init(_ ranges: [Range<Int64>]) {
        self.ranges = ranges
        count = ranges.reduce(0) { $0 + Int64($1.count) }
    }

    var isEmpty: Bool { index == ranges.count }

    /// The first byte not yet delivered.
    var next: Int64? { isEmpty ? nil : ranges[index].lowerBound }

    /// Every missing range, in order.
    var remaining: ArraySlice<Range<Int64>> { ranges[index...] }

    /// Drops the bytes at or past `size`, the item's end.
    mutating func clamp(to size: Int64) {
        while ranges.count > index, let last = ranges.last, last.upperBound > size {
            count -= last.upperBound - max(last.lowerBound, size)
            ranges.removeLast()
            if last.lowerBound < size { ranges.append(last.lowerBound..<size) }
        }
    }

    /// The ranges of the next request: the first missing ones, touching ones joined, within `most` ranges and
    /// ``RangeList/longestHeader``.
    func batch(most: Int) -> [Range<Int64>] {
        var batch: [Range<Int64>] = []
        var length = "bytes=".count
        for range in remaining {
            if let last = batch.last, last.upperBound == range.lowerBound {
                batch[batch.count - 1] = last.lowerBound..<range.upperBound
                continue
            }
            let spelled = RangeList.header([range]).count - "bytes=".count + 1
            guard batch.count < most, batch.isEmpty || length + spelled <= RangeList.longestHeader else { break }
            batch.append(range)
            length += spelled
        }
        return batch
    }

    /// Takes the bytes of `count` bytes at item offset `offset` that may be delivered now: for each piece, its
    /// item offset, where it starts among the given bytes, and its length. Bytes outside the missing ranges
    /// are passed over; so are bytes past a gap (a server that reordered its parts), to be asked again.
    mutating func take(at offset: Int64, count: Int) -> [(offset: Int64, skip: Int, length: Int)] {
        let end = offset + Int64(count)
        var pieces: [(offset: Int64, skip: Int, length: Int)] = []
        while index < ranges.count {
            let first = ranges[index]
            // Deliverable only where the bytes reach the first missing byte: bytes that start past it leave a gap.
            guard first.lowerBound >= offset, first.lowerBound < end else { break }
            let stop = min(end, first.upperBound)
            pieces.append((first.lowerBound, Int(first.lowerBound - offset), Int(stop - first.lowerBound)))
            self.count -= stop - first.lowerBound
            if stop == first.upperBound {
                index += 1
            } else {
                ranges[index] = stop..<first.upperBound
            }
        }
        return pieces
    }
}
