/// The extent lists of traces: reads noted in the order they came, bounded, and turned into what a prefetch
/// asks for.
enum TraceExtents {
    /// Adds `range` to `extents`, kept in first-read order: a read that touches or continues an extent grows it
    /// (a sequential reader leaves one extent), any other is appended. Past ``TraceRecord/maxExtents`` the list
    /// is compacted (``compact(_:)``), so it stays bounded and covers every read.
    static func note(_ range: TraceExtent, in extents: inout [TraceExtent]) {
        guard range.length > 0 else { return }
        let touches = { (extent: TraceExtent) in extent.offset <= range.end && range.offset <= extent.end }
        // A sequential reader continues the last extent: no scan.
        if let last = extents.last, touches(last) {
            extents[extents.count - 1] = joined(last, range)
            return
        }
        if let index = extents.firstIndex(where: touches) {
            extents[index] = joined(extents[index], range)
            return
        }
        extents.append(range)
        if extents.count > TraceRecord.maxExtents { compact(&extents) }
    }

    /// Joins the extents nearest each other until half of ``TraceRecord/maxExtents`` are left: in offset order,
    /// the smallest gaps between neighbours are closed first. The list is then in offset order (a prefetch asks
    /// in that order anyway); halving keeps the cost of a long run of scattered reads at one sort per half-list
    /// of reads.
    private static func compact(_ extents: inout [TraceExtent]) {
        let sorted = requests(extents, size: .max, gap: 0)
        let target = TraceRecord.maxExtents / 2
        guard sorted.count > target else {
            extents = sorted
            return
        }
        let gaps = sorted.indices.dropLast().map { sorted[$0 + 1].offset - sorted[$0].end }
        var closes = [Bool](repeating: false, count: gaps.count)
        for index in gaps.indices.sorted(by: { gaps[$0] < gaps[$1] }).prefix(sorted.count - target) {
            closes[index] = true
        }
        var compacted: [TraceExtent] = [sorted[0]]
        for index in sorted.indices.dropFirst() {
            if closes[index - 1] {
                compacted[compacted.count - 1] = joined(compacted[compacted.count - 1], sorted[index])
            } else {
                compacted.append(sorted[index])
            }
        }
        extents = compacted
    }

    static func joined(_ a: TraceExtent, _ b: TraceExtent) -> TraceExtent {
        let start = min(a.offset, b.offset)
        return TraceExtent(offset: start, length: max(a.end, b.end) - start)
    }

    /// `extents` in offset order, clamped to `size`, with extents at most `gap` apart joined: the ranges a
    /// prefetch asks for (one request for what one read would ask for in several).
    static func requests(_ extents: [TraceExtent], size: Int64, gap: Int64) -> [TraceExtent] {
        var out: [TraceExtent] = []
        for extent in extents.sorted(by: { $0.offset < $1.offset }) {
            let end = min(extent.end, size)
            guard extent.offset < end else { continue }
            let clamped = TraceExtent(offset: extent.offset, length: end - extent.offset)
            if let last = out.last, clamped.offset <= last.end + gap {
                out[out.count - 1] = joined(last, clamped)
            } else {
                out.append(clamped)
            }
        }
        return out
    }

    /// The bytes `a` and `b` have in common, each list first reduced to disjoint extents.
    static func overlap(_ a: [TraceExtent], _ b: [TraceExtent]) -> Int64 {
        let x = requests(a, size: .max, gap: 0)
        let y = requests(b, size: .max, gap: 0)
        var (i, j, total) = (0, 0, Int64(0))
        while i < x.count, j < y.count {
            total += max(0, min(x[i].end, y[j].end) - max(x[i].offset, y[j].offset))
            if x[i].end < y[j].end { i += 1 } else { j += 1 }
        }
        return total
    }

    /// The bytes the extents cover, overlaps counted once.
    static func bytes(_ extents: [TraceExtent]) -> Int64 {
        requests(extents, size: .max, gap: 0).reduce(0) { $0 + $1.length }
    }
}
