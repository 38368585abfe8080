/// What one run read, as a trace session saw it: the items in the order they were first read, and the bytes of
/// each in the order they were first read (<doc:Contract#15-Learned-prefetch>).
struct TraceRun: Sendable {
    let leader: String
    private(set) var order: [String] = []
    private(set) var reads: [String: [TraceExtent]] = [:]

    init(leader: String) { self.leader = leader }

    /// Notes a read of `range` of `item`; past ``TraceRecord/maxMembers`` items, new ones are not noted.
    mutating func note(_ item: String, _ range: TraceExtent) {
        if reads[item] == nil {
            guard order.count < TraceRecord.maxMembers else { return }
            order.append(item)
        }
        TraceExtents.note(range, in: &reads[item, default: []])
    }

    var isEmpty: Bool { order.isEmpty }

    var members: [TraceRecord.Member] { order.map { TraceRecord.Member(item: $0, extents: reads[$0] ?? []) } }
}

extension TraceRecord {
    /// The largest record a trace may take; past it the last items go.
    static let maxBytes = 256 << 10

    /// A new trace of what `run` read.
    init(learning run: TraceRun, at now: Double) {
        self.init(leader: run.leader, members: run.members, usedAt: now)
        trimmed()
    }

    /// The trace after another run (`run`) of its leader: what the run read first, in its order, each item
    /// keeping the extents earlier runs read of it that this run read again (so a reader whose bytes change
    /// from run to run, a random one, predicts only its last run's, never the union of all of them); then the
    /// items earlier runs read and this one did not. An
    /// item that was prefetched for this run (`predicted`) and not read counts a miss; at ``maxMisses`` in a
    /// row it leaves the trace; an item that is no longer a file (`gone`) leaves it at once. Returns nil when
    /// nothing is left.
    func merging(_ run: TraceRun, predicted: Set<String>, gone: Set<String> = [], at now: Double) -> TraceRecord? {
        let old = Dictionary(members.map { ($0.item, $0) }, uniquingKeysWith: { first, _ in first })
        var merged = run.members
        for index in merged.indices {
            let read = merged[index].extents
            for extent in old[merged[index].item]?.extents ?? [] where TraceExtents.overlap([extent], read) > 0 {
                TraceExtents.note(extent, in: &merged[index].extents)
            }
        }
        for var member in members where run.reads[member.item] == nil && !gone.contains(member.item) {
            if predicted.contains(member.item) { member.misses += 1 }
            if member.misses < Self.maxMisses { merged.append(member) }
        }
        guard !merged.isEmpty else { return nil }
        var next = self
        next.members = merged
        next.runs &+= 1
        if !predicted.isEmpty { next.uses &+= 1 }
        next.usedAt = now
        next.trimmed()
        return next
    }

    /// This trace with `other`'s items (a trace brought in from elsewhere) added: the items of both, this one's
    /// first, each with the bytes either read.
    func joining(_ other: TraceRecord, at now: Double) -> TraceRecord {
        var next = self
        var position = Dictionary(members.indices.map { (members[$0].item, $0) }, uniquingKeysWith: { a, _ in a })
        for member in other.members {
            if let index = position[member.item] {
                for extent in member.extents { TraceExtents.note(extent, in: &next.members[index].extents) }
            } else {
                position[member.item] = next.members.count
                next.members.append(member)
            }
        }
        next.runs = max(runs, other.runs)
        next.uses = max(uses, other.uses)
        next.usedAt = now
        next.trimmed()
        return next
    }

    /// Drops the last items until the trace fits ``maxMembers`` and ``maxBytes``.
    private mutating func trimmed() {
        if members.count > Self.maxMembers { members.removeLast(members.count - Self.maxMembers) }
        while members.count > 1, encoded().count > Self.maxBytes { members.removeLast(max(1, members.count / 10)) }
    }

    /// The bytes the trace predicts: what its items' extents cover.
    var describedBytes: Int64 { members.reduce(0) { $0 + TraceExtents.bytes($1.extents) } }
}
