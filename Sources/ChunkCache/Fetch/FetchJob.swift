import FileIO
import Foundation
import LMDBKit

/// What one attempt at a fetch from the store came to: served, or what the store lacks (an origin domain's
/// fetch only), for the cold path to fill before the next attempt.
enum FetchOutcome<Served: Sendable>: Sendable {
    case served(Served)
    case missing(Absence)
}

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

/// One read into a caller's buffer (``ChunkCache/read(_:version:at:into:options:request:)-yqvn``): plans it and
/// reads the planned bytes in one snapshot, on whichever thread runs it.
struct BufferReadJob: @unchecked Sendable {
    let item: ItemIdentifier
    let offset: Int64
    /// The caller's buffer: filled by one thread at a time, while the caller waits (`@unchecked Sendable`).
    let buffer: UnsafeMutableRawBufferPointer
    let options: FetchOptions
    let request: FetchRequest

    /// A read of `buffer.count` bytes from `offset`, checked.
    /// - Throws: `invalidArgument` for a negative offset; the item's and domain's name checks.
    @inline(never)  // Swift 6.3.1's release build crashes splitting the async read's coroutine with it inlined.
    init(
        item: ItemIdentifier, offset: Int64, buffer: UnsafeMutableRawBufferPointer, options: FetchOptions,
        request: FetchRequest
    ) throws {
        guard offset >= 0 else {
            throw CacheError(.invalidArgument, "offset \(offset) in item \(item) is negative; read from 0 or later")
        }
        try Records.validate(domain: item.domain, item: item.rawValue)
        (self.item, self.offset, self.buffer, self.options, self.request) = (item, offset, buffer, options, request)
    }

    var minimalRange: ByteRange { ByteRange(location: offset, length: Int64(buffer.count)) }

    /// Serves the read from bytes downloaded for it (`bytes` are `downloaded.range` of the version, which
    /// covers the read's range up to the end of the file).
    func copy(_ bytes: [UInt8], _ downloaded: ChunkCache.DownloadedRange, engine: Engine) throws -> ServedRead {
        let end = min(offset + Int64(buffer.count), downloaded.version.size)
        let count = Int(max(0, end - offset))
        if count > 0 {
            let start = Int(offset - downloaded.range.location)
            precondition(start >= 0 && start + count <= bytes.count, "a download covers the range it was made for")
            bytes.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[0..<count]).copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: $0[start..<(start + count)]))
            }
        }
        // Its use recorded as a read served from the store records it.
        downloaded.noteUse(in: engine)
        return ServedRead(
            offset: offset, fromOriginDomain: true,
            result: ReadResult(
                bytesRead: count, item: downloaded.publicItem, domainVersion: downloaded.domainVersion))
    }

    /// Plans the read of `version` and reads it, in one snapshot.
    func attempt(_ version: [UInt8]?, engine: Engine) throws -> FetchOutcome<ServedRead> {
        try read(.planning(version), engine: engine)
    }

    /// Reads `cold`, the plan a miss carried through its fill, without planning again (as
    /// ``FetchJob/serve(_:within:store:cancellation:)``).
    func serve(_ cold: ColdPlan, engine: Engine) throws -> FetchOutcome<ServedRead> {
        try read(.serving(cold), engine: engine)
    }

    private func read(_ source: PlanSource, engine: Engine) throws -> FetchOutcome<ServedRead> {
        let store = engine.store
        return try source.inSnapshot(
            engine: engine, item: item, minimal: minimalRange, alignment: 1, options: options, request: request
        ) { plan, txn -> FetchOutcome<ServedRead>? in
            switch try BufferReader.read(plan, at: offset, into: buffer, store: store, in: txn) {
            case .damaged(let chunk):
                return .missing(.damaged(plan.cold, chunk))
            case .read(let count):
                engine.usage.noteUse(
                    of: item, recorded: plan.item.lastUsedDate, reads: plan.policyReads, served: plan.servedChunks,
                    engine: engine)
                return .served(
                    ServedRead(
                        offset: offset, fromOriginDomain: plan.fromOrigin,
                        result: ReadResult(
                            bytesRead: count,
                            item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
                            domainVersion: plan.domainVersion)))
            }
        }!  // the body always answers
    }
}

/// A read's result and where it started, for read-ahead.
struct ServedRead: ServedBytes, Sendable {
    let offset: Int64
    let fromOriginDomain: Bool
    let result: ReadResult
    var servedItem: Item { result.item }
    var servedRange: Range<Int64> { offset..<(offset + Int64(result.bytesRead)) }
}

/// Where an attempt's plan comes from: planned in the attempt's snapshot (a warm fetch, the first attempt of
/// a cold one), or carried from a miss through its fill (``ColdPlan``), which is only checked.
enum PlanSource: Sendable {
    case planning([UInt8]?)
    /// A plan of the fetch of `requested` made in an earlier snapshot (a completion-handler fetch plans on
    /// the caller's thread): written when the store still holds its range, else planned again here.
    case planned(FetchPlan, requested: [UInt8]?)
    case serving(ColdPlan)

    /// Runs `body` with the plan in one snapshot, or returns what is missing.
    ///
    /// A plan made here runs in ``ChunkCache/inFreshSnapshots(of:fetching:_:)``; a carried plan is checked
    /// against the snapshot (``FetchPlanner/holding(_:in:_:)``), and a chunk that left the store since the
    /// fill, even from a parallel worker's newer snapshot (``ChunkVanished``), is returned missing for its one
    /// refill.
    /// The version asked for, when this plans.
    private var requested: [UInt8]? {
        switch self {
        case .planning(let version), .planned(_, let version): version
        case .serving(let cold): cold.version.contentVersion
        }
    }

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
