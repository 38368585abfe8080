import LMDBKit

/// Where an attempt's plan comes from: planned in the attempt's snapshot (a warm fetch, the first attempt of
/// a cold one), or carried from a miss through its fill (``ColdPlan``), which is only checked.
enum PlanSource: Sendable {
    case planning([UInt8]?)
    /// A plan of the fetch of `requested` made in an earlier snapshot (a completion-handler fetch plans on
    /// the caller's thread): written when the store still holds its range, else planned again here.
    case planned(FetchPlan, requested: [UInt8]?)
    case serving(ColdPlan)

    /// The version asked for, when this plans.
    private var requested: [UInt8]? {
        switch self {
        case .planning(let version), .planned(_, let version): version
        case .serving(let cold): cold.version.contentVersion
        }
    }

    /// Runs `body` with the plan in one snapshot, or returns what is missing.
    ///
    /// A plan made here runs in ``ChunkCache/inFreshSnapshots(of:fetching:_:)``; a carried plan is checked
    /// against the snapshot (``FetchPlanner/holding(_:in:_:)``), and a chunk that left the store since the
    /// fill, even from a parallel worker's newer snapshot (``ChunkVanished``), is returned missing for its one
    /// refill.
    func inSnapshot<R>(
        engine: Engine, item: ItemIdentifier, minimal: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, _ body: (FetchPlan, borrowing ReadTransaction) throws -> FetchOutcome<R>?
    ) throws -> FetchOutcome<R>? {
        let store = engine.store
        switch self {
        case .planning, .planned:
            return try ChunkCache.inFreshSnapshots(of: store, fetching: item) { txn -> FetchOutcome<R>? in
                if case .planned(let plan, _) = self, try FetchPlanner.stillHolds(plan, in: txn, store.dbs) {
                    return try body(plan, txn)
                }
                switch try FetchPlanner.plan(
                    engine: engine, domain: item.domain, item: item.rawValue, requested: requested, minimal: minimal,
                    alignment: alignment, options: options, request: request, in: txn)
                {
                case .serve(let plan): return try body(plan, txn)
                case .miss(let absence): return .missing(absence)
                }
            }
        case .serving(let cold):
            do {
                return try store.environment.read { txn -> FetchOutcome<R>? in
                    guard let plan = try FetchPlanner.holding(cold, in: txn, store.dbs) else {
                        return .missing(.chunks(cold))
                    }
                    return try body(plan, txn)
                }
            } catch is ChunkVanished {
                return .missing(.chunks(cold))
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
            }
        }
    }
}
