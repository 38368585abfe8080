/// The extent lists of traces: reads noted in the order they came, bounded, and turned into what a prefetch
/// asks for.
enum TraceExtents {
    /// Adds `range` to `extents`, kept in first-read order: a read that touches or continues an extent grows it
    /// (a sequential reader leaves one extent), any other is appended. Past ``TraceRecord/maxExtents`` the two
    /// extents nearest each other (by offset) are joined, so the list stays bounded and covers every read.
    static func note(_ range: TraceExtent, in extents: inout [TraceExtent]) {
        guard range.length > 0 else { return }
        if let index = extents.firstIndex(where: { $0.offset <= range.end && range.offset <= $0.end }) {
            extents[index] = joined(extents[index], range)
            return
        }
        extents.append(range)
        if extents.count > TraceRecord.maxExtents { joinNearest(&extents) }
    }

    /// Joins the two extents with the smallest gap between them, keeping the earlier one's place.
    private static func joinNearest(_ extents: inout [TraceExtent]) {
        let byOffset = extents.indices.sorted { extents[$0].offset < extents[$1].offset }
        var best = (gap: Int64.max, first: 0, second: 0)
        for (a, b) in zip(byOffset, byOffset.dropFirst()) {
            let gap = max(0, extents[b].offset - extents[a].end)
            if gap < best.gap { best = (gap, min(a, b), max(a, b)) }
        }
        extents[best.first] = joined(extents[best.first], extents[best.second])
        extents.remove(at: best.second)
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
