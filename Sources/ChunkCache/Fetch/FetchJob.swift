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
    var strategies = ChunkCache.cloneStrategies
    var inspectClone: (@Sendable (FileDescriptor) -> Void)?
    /// Called before each chunk is read; tests set it to act at a known point.
    var beforeChunk: (@Sendable (Int64) -> Void)?

    /// The fetch may be served from the bytes it downloads, before they are stored (``DirectBytes``): a
    /// hand-off of a range (a clone, a whole file and a hooked test fetch read the store).
    var servesFromDownload: Bool { minimalRange != nil && destination == .handOff && beforeChunk == nil }

    /// Plans and writes the fetch of `version` in one snapshot.
    ///
    /// - Parameter readsAreHits: The chunks read count as hits for the eviction policy: false right after a
    ///   fill, when this fetch just downloaded them.
    func attempt(
        _ version: [UInt8]?, store: Store, cancellation: CancellationFlag, readsAreHits: Bool = true
    ) throws -> FetchOutcome<FetchResult> {
        // Without a limit the attempt never gives up.
        try run(version, store: store, cancellation: cancellation, within: nil, readsAreHits: readsAreHits)!
    }

    /// As ``attempt(_:store:cancellation:readsAreHits:)`` for a hand-off of at most `limit` bytes, the bounded
    /// work a caller may do on its own thread; nil, with nothing done but the plan, for a clone or a longer
    /// range, which the caller moves to the blocking pool.
    func attemptInline(
        _ version: [UInt8]?, within limit: Int64, store: Store, cancellation: CancellationFlag,
        readsAreHits: Bool = true
    ) throws -> FetchOutcome<FetchResult>? {
        try run(version, store: store, cancellation: cancellation, within: limit, readsAreHits: readsAreHits)
    }

    private func run(
        _ version: [UInt8]?, store: Store, cancellation: CancellationFlag, within limit: Int64?, readsAreHits: Bool
    ) throws -> FetchOutcome<FetchResult>? {
        let checkpoint = ChunkCheckpoint(cancellation: cancellation, beforeChunk: beforeChunk)
        return try usingReserveWhenFull(store) {
            try ChunkCache.inFreshSnapshots(of: store, fetching: item) { txn -> FetchOutcome<FetchResult>? in
                let planned = try FetchPlanner.plan(
                    store: store, domain: item.domain, item: item.rawValue, requested: version, minimal: minimalRange,
                    alignment: alignment, options: options, request: request, in: txn)
                let plan: FetchPlan
                switch planned {
                case .serve(let served): plan = served
                case .miss(let absence): return .missing(absence)
                }
                if let limit, destination != .handOff || plan.retrieved.length > limit { return nil }
                return try write(plan, store: store, checkpoint: checkpoint, readsAreHits: readsAreHits, in: txn)
            }
        }
    }

    /// Runs `attempt`, and once more after releasing the store's space reserve when it ran out of disk
    /// (``SpaceReserve``): a full disk must not stop a fetch of what the store holds.
    private func usingReserveWhenFull<R>(_ store: Store, _ attempt: () throws -> R) throws -> R {
        do {
            return try attempt()
        } catch let error as CacheError where error.code == .insufficientQuota && store.reserve.release() {
            return try attempt()
        }
    }

    /// Writes a planned fetch into a new hand-off file (``HandOff/make(size:in:fill:)``) or into its
    /// destination. On any throw, cancellation included, no file is left behind; a damaged chunk leaves none
    /// either and is returned as missing.
    private func write<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, store: Store, checkpoint: ChunkCheckpoint, readsAreHits: Bool, in txn: borrowing T
    ) throws -> FetchOutcome<FetchResult> {
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
            case .damaged(let chunk): return .missing(.damaged(version: plan.version, chunk))
            }
        case .clone(let target, let replaceExisting):
            let written = try Destination(path: target, replaceExisting: replaceExisting).write(
                size: plan.version.size, scratch: store.tmpPath, strategies: strategies, inspect: inspectClone
            ) { file in
                try RangeAssembler.assemble(plan, store: store, into: file, checkpoint: checkpoint, in: txn)
            }
            switch written {
            case .placed(let strategy): result.cloneStrategy = strategy
            case .damaged(let chunk): return .missing(.damaged(version: plan.version, chunk))
            }
            result.url = URL(fileURLWithPath: target, isDirectory: false)
            result.owner = .destination
        }
        store.usage.noteUse(
            of: item, recorded: plan.item.lastUsedDate, reads: readsAreHits ? plan.policyReads : nil,
            served: plan.servedChunks, store: store)
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
    func copy(_ bytes: [UInt8], _ downloaded: ChunkCache.DownloadedRange, store: Store) throws -> ServedRead {
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
        downloaded.noteUse(in: store)
        return ServedRead(
            offset: offset, fromOriginDomain: true,
            result: ReadResult(
                bytesRead: count, item: downloaded.publicItem, domainVersion: downloaded.domainVersion))
    }

    func attempt(_ version: [UInt8]?, store: Store) throws -> FetchOutcome<ServedRead> {
        try ChunkCache.inFreshSnapshots(of: store, fetching: item) { txn -> FetchOutcome<ServedRead> in
            let planned = try FetchPlanner.plan(
                store: store, domain: item.domain, item: item.rawValue, requested: version, minimal: minimalRange,
                alignment: 1, options: options, request: request, in: txn)
            let plan: FetchPlan
            switch planned {
            case .serve(let served): plan = served
            case .miss(let absence): return .missing(absence)
            }
            switch try BufferReader.read(plan, at: offset, into: buffer, store: store, in: txn) {
            case .damaged(let chunk):
                return .missing(.damaged(version: plan.version, chunk))
            case .read(let count):
                store.usage.noteUse(
                    of: item, recorded: plan.item.lastUsedDate, reads: plan.policyReads, served: plan.servedChunks,
                    store: store)
                return .served(
                    ServedRead(
                        offset: offset, fromOriginDomain: plan.fromOrigin,
                        result: ReadResult(
                            bytesRead: count,
                            item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
                            domainVersion: plan.domainVersion)))
            }
        }
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

extension ChunkCache {
    /// Runs `body` in a read snapshot. When a chunk the plan found left the cache before it was read (a
    /// parallel worker's newer snapshot saw `verify --repair` mark it absent), `body` runs again in a fresh
    /// snapshot, where the planner sees the loss; a fetch never reports that as `versionNoLongerAvailable` (C4).
    static func inFreshSnapshots<R>(
        of store: Store, fetching item: ItemIdentifier, _ body: (borrowing ReadTransaction) throws -> R
    ) throws -> R {
        var attempts = 0
        while true {
            do {
                return try store.environment.read(body)
            } catch let vanished as ChunkVanished {
                attempts += 1
                guard attempts < maxSnapshots else {
                    throw CacheError(
                        .corruptData,
                        "chunk \(vanished.index) of item \(item) kept leaving the cache while it was read; run `chunkcache verify --repair`, then retry"
                    )
                }
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
            }
        }
    }

    /// Snapshots a fetch tries before it gives up on chunks that keep leaving the cache.
    static let maxSnapshots = 3
}
