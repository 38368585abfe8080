import Foundation
import LMDBKit

extension ChunkCache {
    /// Extents of a trace closer than this are asked for in one request: the gap costs less than a round trip.
    static let traceRequestGap: Int64 = 256 << 10
    /// Items of one trace's prefetch started at once; the origin session's prefetch lane (half its
    /// pipeline depth) decides how many requests are in flight.
    static let traceItemsStarted = 64
    /// The most bytes one request of scattered runs asks for: the 16 of a prefetch's lane at once move 16 MiB
    /// in a round trip, and a reader waiting on one of them waits for 1 MiB at most.
    static let traceBatchBytes: Int64 = 1 << 20
    /// The most runs one request asks for: its `Range` header stays under 2 KB, which every server takes.
    static let traceBatchRanges = 64

    /// An item a trace predicts and the store lacks some of: what to download, at its current version.
    struct PrefetchTarget: Sendable {
        let item: String
        let version: ItemVersion
        let size: Int64
        let extents: [TraceExtent]
    }

    /// Prefetches what `item`'s trace predicts (<doc:Contract#15-Learned-prefetch>), when it has one and its
    /// domain learns: each item of it at its current version (a trace learned on an earlier version maps onto
    /// this one by offset), coalesced, in the trace's order, through ``prefetch(_:version:range:progress:)`` so
    /// the reader's own requests go first. Items no longer files, or cached whole, are skipped; a failure ends
    /// one request quietly (the reader's fetches report their own).
    ///
    /// - Parameters:
    ///   - predicting: Given the items the trace predicts, and those it names that are no longer files, before
    ///     any is asked for.
    ///   - disabled: Called when the domain has no origin or learned prefetch is off for it.
    ///   - received: Given each piece downloaded: its item, its length and its offset.
    /// Reads the trace `item` leads and what the store lacks of each item it names, on the blocking pool;
    /// tells `predicting` the items predicted and gone, or `disabled` when the domain learns nothing.
    func traceTargets(
        of item: ItemIdentifier,
        predicting: @escaping @Sendable (_ predicted: Set<String>, _ gone: Set<String>) -> Void,
        disabled: @escaping @Sendable () -> Void
    ) async -> [PrefetchTarget] {
        let found: (predicted: Set<String>, gone: Set<String>, targets: [PrefetchTarget])?
        do {
            found = try await runBlocking(doing: "reading the trace of \(item)", store: store.path) {
                try self.prefetchTargets(of: item)
            }
        } catch {
            return []
        }
        guard let (predicted, gone, targets) = found else {
            disabled()
            return []
        }
        if !predicted.isEmpty || !gone.isEmpty { predicting(predicted, gone) }
        return targets
    }

    /// Downloads what `targets` predict, items in the trace's order; `received` hears of every byte.
    func prefetch(
        _ targets: [PrefetchTarget], of item: ItemIdentifier,
        received: @escaping @Sendable (String, Int, Int64) -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            var started = 0
            for target in targets {
                let member = ItemIdentifier(domain: item.domain, target.item)
                if started >= Self.traceItemsStarted { _ = await group.next() }
                group.addTask(priority: .utility) {
                    let progress = DownloadProgress { count, offset in received(target.item, count, offset) }
                    try? await self.prefetch(member, version: target.version, progress: progress) {
                        record, manyRanges in
                        Self.batches(
                            of: target.extents, size: record.size, chunkShift: record.layout.shift,
                            manyRanges: manyRanges)
                    }
                }
                started += 1
            }
        }
    }

    /// `extents` rounded out to whole chunks and clamped to `size`, as the requests of a prefetch, in pieces
    /// of at most ``prefetchExtentBytes``. Where the origin takes many ranges in one request (`manyRanges`),
    /// the extents go in the order given (a trace's: first read first, so the program's first reads come in
    /// the first answers), up to ``traceBatchBytes`` and ``traceBatchRanges`` a request, each request asking
    /// for its runs of chunks in offset order: a database's scattered pages cost a few requests and no byte
    /// between them. Elsewhere runs closer than ``traceRequestGap`` are joined (a round trip costs more than
    /// the bytes between them), in offset order.
    static func batches(of extents: [TraceExtent], size: Int64, chunkShift: Int, manyRanges: Bool) -> [[ByteRange]] {
        let chunk = Int64(1) << chunkShift
        let aligned = extents.compactMap { extent -> TraceExtent? in
            let end = min(size, extent.end)
            guard extent.offset >= 0, extent.offset < end else { return nil }
            let lower = (extent.offset >> chunkShift) << chunkShift
            let upper = min(size, ((end + chunk - 1) >> chunkShift) << chunkShift)
            return TraceExtent(offset: lower, length: upper - lower)
        }
        // In offset order, those `gap` apart joined (``TraceExtents/requests(_:size:gap:)``), in pieces.
        func runs(_ extents: [TraceExtent], gap: Int64) -> [ByteRange] {
            TraceExtents.requests(extents, size: size, gap: gap).flatMap {
                Self.extents(of: ByteRange(location: $0.offset, length: $0.length), size: size, chunkSize: chunk)
            }
        }
        guard manyRanges else { return runs(aligned, gap: traceRequestGap).map { [$0] } }
        var batches: [[ByteRange]] = []
        var pieces: [TraceExtent] = []
        var bytes: Int64 = 0
        for extent in aligned {
            for piece in Self.extents(
                of: ByteRange(location: extent.offset, length: extent.length), size: size, chunkSize: chunk)
            {
                if !pieces.isEmpty, bytes + piece.length > traceBatchBytes || pieces.count >= traceBatchRanges {
                    batches.append(runs(pieces, gap: 0))
                    pieces.removeAll()
                    bytes = 0
                }
                pieces.append(TraceExtent(offset: piece.location, length: piece.length))
                bytes += piece.length
            }
        }
        if !pieces.isEmpty { batches.append(runs(pieces, gap: 0)) }
        return batches
    }

    private func prefetchTargets(of item: ItemIdentifier) throws -> (
        predicted: Set<String>, gone: Set<String>, targets: [PrefetchTarget]
    )? {
        let store = self.store
        // One snapshot for the trace and every item it names.
        return try store.environment.read { txn in
            let domain = try Records.domain(item.domain, in: txn, store.dbs)
            guard domain.origin != nil, try txn.tracesEnabled(item.domain, store.dbs) else { return nil }
            var found: (predicted: Set<String>, gone: Set<String>, targets: [PrefetchTarget]) = ([], [], [])
            for member in try txn.trace(item.domain, leader: item.rawValue, store.dbs)?.members ?? [] {
                guard let status = try status(of: ItemIdentifier(domain: item.domain, member.item), in: txn),
                    status.item.kind == .file
                else {
                    found.gone.insert(member.item)
                    continue
                }
                found.predicted.insert(member.item)
                guard status.cachedBytes < status.item.documentSize else { continue }
                found.targets.append(
                    PrefetchTarget(
                        item: member.item, version: status.item.itemVersion, size: status.item.documentSize,
                        extents: member.extents))
            }
            return found
        }
    }

    /// Merges `run` into its leader's trace and counts what the session's prefetches downloaded (`prefetched`)
    /// and what of it was read (`hits`), in one write. A new trace ages its domain's others out
    /// (``TraceRecord/maxIdle``, ``TraceRecord/maxPerDomain``). Nothing happens when the domain is gone.
    func saveRun(
        _ run: TraceRun, in domain: String, predicted: Set<String>, gone: Set<String>, prefetched: Int64, hits: Int64
    ) async throws {
        let now = Date().timeIntervalSince1970
        let dbs = store.dbs
        try await store.writer.write(durability: .deferMeta, doing: "saving what a run read") { txn in
            guard try txn.withValue(dbs.domains, key: Keys.domain(domain), { _ in true }) != nil else { return }
            try txn.addToCounter(dbs, MetaKey.prefetchedBytes, prefetched)
            try txn.addToCounter(dbs, MetaKey.prefetchHitBytes, hits)
            guard !run.isEmpty else { return }
            if let old = try txn.trace(domain, leader: run.leader, dbs) {
                if let merged = old.merging(run, predicted: predicted, gone: gone, at: now) {
                    try txn.saveTrace(merged, in: domain, dbs)
                } else {
                    _ = try txn.deleteTrace(of: run.leader, in: domain, dbs)
                }
            } else {
                try txn.saveTrace(TraceRecord(learning: run, at: now), in: domain, dbs)
                try txn.ageTraces(of: domain, at: now, dbs)
            }
        }
    }
}

extension WriteTransaction {
    /// Removes `domain`'s traces unused for ``TraceRecord/maxIdle``, then the least recently used past
    /// ``TraceRecord/maxPerDomain``.
    @available(*, noasync)
    mutating func ageTraces(of domain: String, at now: Double, _ dbs: Databases) throws {
        let traces = try traces(of: domain, dbs).map(\.trace).sorted { $0.usedAt > $1.usedAt }
        for (rank, trace) in traces.enumerated()
        where rank >= TraceRecord.maxPerDomain || now - trace.usedAt > TraceRecord.maxIdle {
            _ = try deleteTrace(of: trace.leader, in: domain, dbs)
        }
    }
}
