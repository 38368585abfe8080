import Foundation
import LMDBKit

/// One fetch into a file (a hand-off file or a clone), as every path runs it: plans it in one snapshot and
/// writes the planned range from the store. Synchronous, blocking work (LMDB, zstd, `pwrite`): run on the
/// calling thread when the range is small or the caller owns its thread, else on the blocking pool.
struct FetchJob: Sendable {
    let item: ItemIdentifier
    let minimalRange: ByteRange?
    let alignment: Int
    let options: FetchOptions
    let request: FetchRequest
    let destination: FetchDestination

    /// The fetch may be served from the bytes it downloads, before they are stored (``DirectBytes``): a
    /// hand-off of a range (a clone and a whole file read the store).
    var servesFromDownload: Bool { minimalRange != nil && destination == .handOff }

    /// Plans and writes the fetch of `version` in one snapshot, on the calling thread.
    func attempt(_ version: [UInt8]?, engine: Engine, cancellation: CancellationFlag) throws -> FetchOutcome<
        FetchResult
    > {
        try run(.planning(version), engine: engine, cancellation: cancellation, within: nil)!  // no limit: never nil
    }

    /// Writes `cold`, the plan a miss carried through its fill, in one snapshot, without planning again; what
    /// left the store since the fill is `.missing(.chunks(cold))` (refilled once), a damaged chunk
    /// `.missing(.damaged)`.
    func serve(_ cold: ColdPlan, engine: Engine, cancellation: CancellationFlag) throws -> FetchOutcome<FetchResult> {
        try run(.serving(cold), engine: engine, cancellation: cancellation, within: nil)!  // no limit: never nil
    }

    /// One attempt from `source` (``PlanSource``), in one snapshot. With a `limit`, the bounded work a caller
    /// may do on its own thread: nil, with nothing done but the plan, for a clone or a range longer than
    /// `limit`, which the caller moves to the blocking pool. A carried plan's reads are not hits for eviction:
    /// the fetch just downloaded them.
    func run(_ source: PlanSource, engine: Engine, cancellation: CancellationFlag, within limit: Int64?) throws
        -> FetchOutcome<FetchResult>?
    {
        let readsAreHits = if case .serving = source { false } else { true }
        let checkpoint = ChunkCheckpoint(cancellation: cancellation, beforeChunk: engine.probes.beforeChunk)
        // A full disk must not stop a fetch of what the store holds: the attempt runs once more after the
        // store's space reserve is released (``SpaceReserve``).
        var reserveReleased = false
        while true {
            do {
                return try source.inSnapshot(
                    engine: engine, item: item, minimal: minimalRange, alignment: alignment, options: options,
                    request: request
                ) { plan, txn -> FetchOutcome<FetchResult>? in
                    if let limit, destination != .handOff || plan.retrieved.length > limit { return nil }
                    return try write(plan, engine: engine, checkpoint: checkpoint, readsAreHits: readsAreHits, in: txn)
                }
            } catch let error as CacheError
                where error.code == .insufficientQuota && !reserveReleased && engine.reserve.release()
            {
                reserveReleased = true
            }
        }
    }

    /// Writes a planned fetch into a new hand-off file (``HandOff/make(size:in:fill:)``) or into its
    /// destination. On any throw, cancellation included, no file is left behind; a damaged chunk leaves none
    /// either and is returned as missing.
    private func write<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, engine: Engine, checkpoint: ChunkCheckpoint, readsAreHits: Bool, in txn: borrowing T
    ) throws -> FetchOutcome<FetchResult> {
        let store = engine.store
        var result = FetchResult(
            url: URL(fileURLWithPath: "/"),
            item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
            retrievedRange: plan.retrieved,
            flags: plan.wholeFile && plan.hasZeroChunks ? .knownSparseRanges : [],
            owner: .caller, domainVersion: plan.domainVersion, cloneStrategy: nil)
        result.fromOriginDomain = plan.fromOrigin
        switch destination {
        case .handOff:
            let made = try HandOff.make(size: plan.version.size, in: store.tmpPath) { file in
                try RangeAssembler.assemble(plan, store: store, into: file, checkpoint: checkpoint, in: txn)
            }
            switch made {
            case .file(let path): result.url = URL(fileURLWithPath: path, isDirectory: false)
            case .damaged(let chunk): return .missing(.damaged(plan.cold, chunk))
            }
        case .clone(let target, let replaceExisting):
            let written = try Destination(path: target, replaceExisting: replaceExisting).write(
                size: plan.version.size, scratch: store.tmpPath, strategies: engine.probes.cloneStrategies,
                faults: engine.probes.destination, inspect: engine.probes.inspectClone
            ) { file in
                try RangeAssembler.assemble(plan, store: store, into: file, checkpoint: checkpoint, in: txn)
            }
            switch written {
            case .placed(let strategy): result.cloneStrategy = strategy
            case .damaged(let chunk): return .missing(.damaged(plan.cold, chunk))
            }
            result.url = URL(fileURLWithPath: target, isDirectory: false)
            result.owner = .destination
        }
        engine.usage.noteUse(
            of: item, recorded: plan.item.lastUsedDate, reads: readsAreHits ? plan.policyReads : nil,
            served: plan.servedChunks, engine: engine)
        return .served(result)
    }
}
