import Foundation
import LMDBKit

extension ChunkCache {
    /// Notes that `opener` opened `item` (<doc:Contract#15-Learned-prefetch>).
    ///
    /// An opener's first open starts its run: what it reads in the next seconds (``noteRead(_:range:by:)``) is
    /// merged into the trace of the item it opened first, and that trace's predicted bytes are downloaded at
    /// once, in the background, behind the opener's own requests. A later open of an item that has a trace of
    /// its own starts that one too. Returns at once; costs a lock and a dictionary update.
    public func noteOpen(_ item: ItemIdentifier, by opener: TraceOpener) {
        engine.traces.opened(item, by: opener, cache: self)
    }

    /// Notes that `opener` read `range` of `item`: part of its run while it is in its first seconds after its
    /// first open (``noteOpen(_:by:)``), ignored after. Returns at once.
    public func noteRead(_ item: ItemIdentifier, range: ByteRange, by opener: TraceOpener) {
        engine.traces.read(item, TraceExtent(offset: range.location, length: range.length), by: opener)
    }

    /// Whether a learned trace predicts what `opener` reads of `item`: a trace its run looked up (for this
    /// item or one opened before it in the same run) names the item. Waits for those lookups, which read the
    /// store; false when the opener has no run (``noteOpen(_:by:)`` was not called within the window).
    ///
    /// A mount that downloads whole files on open leaves predicted ones to the trace's prefetch, which
    /// brings what the program read last time and no more (<doc:LearnedPrefetch>).
    public func tracePredicts(_ item: ItemIdentifier, by opener: TraceOpener) async -> Bool {
        await engine.traces.predicts(item, by: opener)
    }

    /// Ends every run now and saves what each taught, once its prefetches are done: call it before a mount
    /// unmounts or a process exits, then ``waitForDownloads()``.
    public func finishTraceSessions() async {
        await engine.traces.finishAll(self)
    }

    /// The learned traces of `domain`, or of every domain.
    public func traces(in domain: String? = nil) async throws -> [TraceSummary] {
        let store = self.store
        return try await runBlocking(doing: "listing traces", store: store.path) {
            try store.environment.read { txn in
                if let domain { _ = try Records.domain(domain, in: txn, store.dbs) }
                return try txn.traces(of: domain, store.dbs).map { domain, trace, bytes in
                    TraceSummary(
                        domain: domain, leader: trace.leader, items: trace.members.count,
                        describedBytes: trace.describedBytes, bytes: bytes, runs: Int(trace.runs),
                        uses: Int(trace.uses),
                        usedAt: Date(timeIntervalSince1970: trace.usedAt))
                }
            }
        }
    }

    /// The traces of `domain` as a JSON document another store can take in (``importTraces(_:into:)``): a
    /// trace learned on one machine primes another's store of the same origin.
    public func exportTraces(of domain: String) async throws -> Data {
        let store = self.store
        let (record, traces) = try await runBlocking(doing: "exporting traces", store: store.path) {
            try store.environment.read { txn in
                (try Records.domain(domain, in: txn, store.dbs), try txn.traces(of: domain, store.dbs).map(\.trace))
            }
        }
        return try TraceFile(domain: domain, origin: record.origin?.url, traces: traces).encoded()
    }

    /// Takes in traces ``exportTraces(of:)`` wrote, into `domain`: each joins the trace of its leader, or
    /// becomes it. Returns how many traces were taken in.
    ///
    /// - Throws: `invalidArgument` naming what is wrong with `data` (not a trace file, an impossible extent, an
    ///   identifier no item may have), or when `domain` has no origin (traces predict downloads); `noSuchDomain`.
    ///   Nothing is taken in unless all of it is.
    public func importTraces(_ data: Data, into domain: String) async throws -> Int {
        let traces = try TraceFile.decode(data).records()
        let now = Date().timeIntervalSince1970
        let dbs = store.dbs
        return try await store.writer.write(doing: "importing traces") { txn in
            guard try Records.domain(domain, in: txn, dbs).origin != nil else {
                throw CacheError(
                    .invalidArgument,
                    "domain \"\(domain)\" has no origin: traces predict downloads; import them into an origin domain")
            }
            for trace in traces {
                let joined = try txn.trace(domain, leader: trace.leader, dbs)?.joining(trace, at: now)
                try txn.saveTrace(joined ?? trace, in: domain, dbs)
            }
            try txn.ageTraces(of: domain, at: now, dbs)
            return traces.count
        }
    }

    /// Removes the traces of `domain` whose leaders are `leaders`, or all of them when nil; returns how many
    /// went.
    public func removeTraces(of domain: String, leaders: [String]? = nil) async throws -> Int {
        let dbs = store.dbs
        return try await store.writer.write(doing: "removing traces") { txn in
            _ = try Records.domain(domain, in: txn, dbs)
            guard let leaders else { return try txn.deleteTraces(of: domain, dbs) }
            return try leaders.reduce(0) { try txn.deleteTrace(of: $1, in: domain, dbs) ? $0 + 1 : $0 }
        }
    }

    /// Turns learned prefetch on or off for `domain` (on unless turned off): a domain with it off is neither
    /// traced nor prefetched, and keeps the traces it has.
    public func setLearnedPrefetch(_ enabled: Bool, for domain: String) async throws {
        let dbs = store.dbs
        try await store.writer.write(doing: "turning learned prefetch \(enabled ? "on" : "off")") { txn in
            _ = try Records.domain(domain, in: txn, dbs)
            try txn.setTracesEnabled(enabled, for: domain, dbs)
        }
    }

    /// Whether learned prefetch is on for `domain`.
    public func learnedPrefetch(for domain: String) async throws -> Bool {
        let store = self.store
        return try await runBlocking(doing: "reading a domain's settings", store: store.path) {
            try store.environment.read { txn in
                _ = try Records.domain(domain, in: txn, store.dbs)
                return try txn.tracesEnabled(domain, store.dbs)
            }
        }
    }
}
