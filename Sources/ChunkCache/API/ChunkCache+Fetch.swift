import Dispatch
import FileIO
import Foundation
import LMDBKit

extension ChunkCache {

    /// Returns a file holding at least `minimalRange` of the item, as `fetchPartialContents` (CONTRACT §3).
    ///
    /// The retrieved range starts at `minimalRange`'s start rounded down to `max(alignment, chunkSize)` and
    /// ends at its end rounded up, or at EOF; both ends are clamped to the file first, so a range past EOF
    /// is never an error. The file has the item's full length with the retrieved bytes at their own offsets
    /// and no holes inside the range, except when the range is the whole file: then zero chunks stay holes
    /// and `knownSparseRanges` is set.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest. With `.strictVersioning` only that version
    ///     serves. Without it, when that version cannot serve the range, the newest *newer* version that can
    ///     does, and the result says which; an older version never does (B6). A version the store does not
    ///     know is asked of the origin on an origin domain (served when the origin holds it, else the
    ///     origin's current version serves); elsewhere the newest version that can serve does.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - minimalRange: The bytes needed.
    ///   - alignment: A power of two from 1 to 2^30.
    ///   - options: `.strictVersioning` to accept only `version`.
    ///   - destination: A hand-off file (default) or a clone at a path.
    /// - Throws: `invalidArgument`, `noSuchItem` (confirmed only, C2), `versionNoLongerAvailable` (strict
    ///   fetches only, C4), `noPermission`, `corruptData` (also when no allowed version holds the range: it
    ///   names the lost chunks), `userCancelled`, `fileExists` (clone destination).
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try Self.validate(minimalRange, of: item, alignment: alignment)
        return try await fetch(item, version: version?.contentVersion, minimalRange: minimalRange, alignment: alignment,
                               options: options, request: request, destination: destination)
    }

    /// Returns a file holding the whole item, as `fetchContents` (CONTRACT §4): zero chunks are holes and
    /// `knownSparseRanges` says so.
    ///
    /// As the seed says, a requested version is returned or the fetch fails: with `options` left out, a
    /// non-nil `version` runs with `.strictVersioning` (B6, A11), exactly as the completion-handler
    /// ``fetchContents(for:version:request:completionHandler:)`` does.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest, never an older one.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - destination: A hand-off file (default) or a clone at a path.
    ///   - options: `nil` (the default) for the seed's rule above. Given, they apply as given: `[]` lets a
    ///     newer version serve when `version` cannot, following the rules of
    ///     ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)`` (the
    ///     command line's non-strict `fetch`, CONTRACT §7).
    /// - Throws: As the partial fetch; `versionNoLongerAvailable` when a strict fetch's version cannot serve.
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion? = nil, request: FetchRequest = FetchRequest(),
        options: FetchOptions? = nil, destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        let options = options ?? (version == nil ? [] : .strictVersioning)
        return try await fetch(item, version: version?.contentVersion, minimalRange: nil, alignment: 1, options: options,
                               request: request, destination: destination)
    }

    /// Returns a file holding at least `minimalRange` of the item, as the async
    /// ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)`` does, on the
    /// calling thread.
    ///
    /// This is the synchronous core the async API wraps, for callers that own their thread and cannot await
    /// (a FUSE worker, a C caller). It blocks for the whole fetch: system calls, LMDB reads and zstd decoding,
    /// and it cannot be cancelled. Never call it from a Swift concurrency task: use the async method there.
    ///
    /// - Throws: The errors of the async method except `userCancelled`.
    @available(*, noasync, message: "use the async fetchPartialContents in a task")
    public func fetchPartialContentsSynchronously(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) throws -> FetchResult {
        try Self.validate(minimalRange, of: item, alignment: alignment)
        try Records.validate(domain: item.domain, item: item.rawValue)
        let cold = ColdRequest(item: item, strict: options.contains(.strictVersioning), minimal: minimalRange, alignment: alignment, progress: request.progress,
                               downloads: store.space.unreadDownloads)
        let store = self.store
        var result = try throughOriginBlocking(cold, version: version?.contentVersion) { version in
            let fetch = Fetch(item: item, version: version, minimalRange: minimalRange, alignment: alignment,
                              options: options, request: request, destination: destination)
            return try fetch.run(store: store, checkpoint: ChunkCheckpoint(cancellation: CancellationFlag()))
        }
        result.record(cold.counters)
        return result
    }

    /// Reads the item's bytes from `offset` into `buffer`, with no temp file: the buffer-returning form of a
    /// partial fetch, on the calling thread (a FUSE read, a C caller).
    ///
    /// The version is chosen as for ``fetchPartialContents(for:version:request:minimalRange:aligningTo:options:destination:)``
    /// (B6, C4), and all bytes come from that one version. The read stops at EOF: a read at or past the end
    /// returns 0 bytes. It blocks for a buffer's worth of LMDB reads and zstd decoding; never call it from a
    /// Swift concurrency task.
    ///
    /// - Parameters:
    ///   - item: The item.
    ///   - version: The version asked for; `nil` for the newest.
    ///   - offset: The first byte to read, ≥ 0.
    ///   - buffer: Where the bytes go, from its start. On a throw its contents are unspecified.
    ///   - options: `.strictVersioning` to accept only `version`.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    /// - Returns: How many bytes were read and the item at the version they came from.
    /// - Throws: `invalidArgument` (a negative offset), `noSuchItem`, `versionNoLongerAvailable` (strict),
    ///   `noPermission`, `corruptData`.
    @available(*, noasync, message: "use the async fetchPartialContents in a task")
    public func read(
        _ item: ItemIdentifier, version: ItemVersion?, at offset: Int64, into buffer: UnsafeMutableRawBufferPointer,
        options: FetchOptions = [], request: FetchRequest = FetchRequest()
    ) throws -> ReadResult {
        guard offset >= 0 else {
            throw CacheError(.invalidArgument, "offset \(offset) in item \(item) is negative; read from 0 or later")
        }
        try Records.validate(domain: item.domain, item: item.rawValue)
        let store = self.store
        let minimal = ByteRange(location: offset, length: Int64(buffer.count))
        let cold = ColdRequest(item: item, strict: options.contains(.strictVersioning), minimal: minimal, alignment: 1, progress: request.progress,
                               downloads: store.space.unreadDownloads)
        nonisolated(unsafe) let buffer = buffer  // filled on this thread only
        return try throughOriginBlocking(cold, version: version?.contentVersion) { requested in
            try Self.inFreshSnapshots(of: store, fetching: item) { txn in
                let plan = try FetchPlanner.plan(
                    store: store, domain: item.domain, item: item.rawValue, requested: requested, minimal: minimal,
                    alignment: 1, options: options, request: request, in: txn)
                let count = try BufferReader.read(plan, at: offset, into: buffer, store: store, in: txn)
                store.usage.noteUse(of: item, recorded: plan.item.lastUsedDate, reads: plan.policyReads, store: store)
                return ServedRead(offset: offset, fromOriginDomain: plan.fromOrigin, result: ReadResult(
                    bytesRead: count, item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
                    domainVersion: plan.domainVersion))
            }
        }.result
    }

    /// A read's result and where it started, for read-ahead.
    private struct ServedRead: ServedBytes, Sendable {
        let offset: Int64
        let fromOriginDomain: Bool
        let result: ReadResult
        var servedItem: Item { result.item }
        var servedRange: Range<Int64> { offset..<(offset + Int64(result.bytesRead)) }
    }

    /// Checks a partial fetch's range and alignment.
    private static func validate(_ minimalRange: ByteRange, of item: ItemIdentifier, alignment: Int) throws(CacheError) {
        try FetchPlanner.validate(alignment: alignment)
        guard minimalRange.location >= 0, minimalRange.length >= 0 else {
            throw CacheError(.invalidArgument, "range \(minimalRange) of item \"\(item.rawValue)\" has a negative start or length; give START:LENGTH with both ≥ 0")
        }
    }

    /// Which strategies a clone may use; tests narrow it to exercise each fallback.
    static let cloneStrategies = Set(CloneStrategy.allCases)

    /// A fetch through the async API.
    ///
    /// Hand-offs of up to ``FetchThresholds/inlineBytes`` are planned and assembled in one snapshot on the
    /// calling thread: bounded, page-cache-hot work that costs less than the two thread wake-ups of a hop.
    /// Clones and larger ranges go to the blocking pool (``runBlocking(doing:store:_:)``), which plans again in its own
    /// snapshot. Task cancellation reaches both: it sets the flag the assembler checks before each chunk.
    ///
    /// - Parameter beforeChunk: Called before each chunk is read; tests set it to act at a known point.
    func fetch(
        _ item: ItemIdentifier, version: [UInt8]?, minimalRange: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, destination: FetchDestination, strategies: Set<CloneStrategy> = cloneStrategies,
        inspectClone: (@Sendable (FileDescriptor) -> Void)? = nil, beforeChunk: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> FetchResult {
        try Records.validate(domain: item.domain, item: item.rawValue)
        // The warm path first, with nothing of the cold path's allocated until something is missing.
        let firstMiss: ColdMiss
        do {
            let served = try await fetchFromStore(
                item, version: version, minimalRange: minimalRange, alignment: alignment, options: options, request: request,
                destination: destination, strategies: strategies, inspectClone: inspectClone, beforeChunk: beforeChunk)
            readAhead(after: served, item)
            return served
        } catch let miss as ColdMiss {
            firstMiss = miss
        }
        let cold = ColdRequest(item: item, strict: options.contains(.strictVersioning), minimal: minimalRange, alignment: alignment,
                               progress: request.progress, handOver: minimalRange != nil && destination == .handOff && beforeChunk == nil,
                               downloads: store.space.unreadDownloads)
        var result = try await throughOrigin(cold, version: version, firstMiss: firstMiss) { version in
            try await self.fetchFromStore(
                item, version: version, minimalRange: minimalRange, alignment: alignment, options: options, request: request,
                destination: destination, strategies: strategies, inspectClone: inspectClone, beforeChunk: beforeChunk,
                afterFill: true)
        }
        result.record(cold.counters)
        return result
    }

    /// A fetch served from the store alone; on an origin domain, what the store lacks is a ``ColdMiss``.
    private func fetchFromStore(
        _ item: ItemIdentifier, version: [UInt8]?, minimalRange: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, destination: FetchDestination, strategies: Set<CloneStrategy>,
        inspectClone: (@Sendable (FileDescriptor) -> Void)?, beforeChunk: (@Sendable (Int64) -> Void)?, afterFill: Bool = false
    ) async throws -> FetchResult {
        let store = self.store
        let fetch = Fetch(item: item, version: version, minimalRange: minimalRange, alignment: alignment, options: options,
                          request: request, destination: destination, strategies: strategies, inspectClone: inspectClone,
                          readsAreHits: !afterFill)
        if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(item) was cancelled") }
        do {
            let cancellation = CancellationFlag()
            let inline = try await withTaskCancellationHandler {
                try fetch.runIfWithin(FetchThresholds.inlineBytes, store: store,
                                      checkpoint: ChunkCheckpoint(cancellation: cancellation, beforeChunk: beforeChunk))
            } onCancel: {
                cancellation.cancel()
            }
            if let inline { return inline }
            return try await runBlocking(doing: "fetching \(item)", store: store.path) { cancellation in
                try fetch.run(store: store, checkpoint: ChunkCheckpoint(cancellation: cancellation, beforeChunk: beforeChunk))
            }
        } catch let miss as ColdMiss {
            // The plan knows the retrieved range now: a progress display learns how many bytes are coming.
            if case .fill(_, let range, _, _) = miss { request.progress?.expect(range.length) }
            throw miss
        }
    }

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
            } catch let signal as any EngineSignal {
                throw signal
            } catch let vanished as ChunkVanished {
                attempts += 1
                guard attempts < maxSnapshots else {
                    throw CacheError(.corruptData,
                        "chunk \(vanished.index) of item \(item) kept leaving the cache while it was read; run `chunkcache verify --repair`, then retry")
                }
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
            }
        }
    }

    /// Snapshots a fetch tries before it gives up on chunks that keep leaving the cache.
    static let maxSnapshots = 3
}

/// One fetch's request, as every path runs it.
private struct Fetch: Sendable {
    let item: ItemIdentifier
    let version: [UInt8]?
    let minimalRange: ByteRange?
    let alignment: Int
    let options: FetchOptions
    let request: FetchRequest
    let destination: FetchDestination
    var strategies = ChunkCache.cloneStrategies
    var inspectClone: (@Sendable (FileDescriptor) -> Void)?
    /// The chunks read count as hits for the eviction policy: false when this fetch just downloaded them.
    var readsAreHits = true

    /// Plans and materializes the fetch in one snapshot: the synchronous core of every path.
    func run(store: Store, checkpoint: ChunkCheckpoint) throws -> FetchResult {
        try usingReserveWhenFull(store) {
            try planned(store: store) { plan, txn in try materialize(plan, store: store, checkpoint: checkpoint, in: txn) }
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

    /// As ``run(store:checkpoint:)`` for a hand-off of at most `limit` bytes; nil, with nothing done but the
    /// plan, for a clone or a longer range.
    func runIfWithin(_ limit: Int64, store: Store, checkpoint: ChunkCheckpoint) throws -> FetchResult? {
        try usingReserveWhenFull(store) {
            try planned(store: store) { plan, txn in
                guard destination == .handOff && plan.retrieved.length <= limit else { return nil }
                return try materialize(plan, store: store, checkpoint: checkpoint, in: txn)
            }
        }
    }

    private func planned<R>(store: Store, _ body: (FetchPlan, borrowing ReadTransaction) throws -> R) throws -> R {
        try ChunkCache.inFreshSnapshots(of: store, fetching: item) { txn in
            let plan = try FetchPlanner.plan(
                store: store, domain: item.domain, item: item.rawValue, requested: version, minimal: minimalRange,
                alignment: alignment, options: options, request: request, in: txn)
            return try body(plan, txn)
        }
    }

    /// Writes a planned fetch into a new hand-off file in the store's `tmp/`, or into its destination. On any
    /// throw, cancellation included, no file is left behind.
    private func materialize<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, store: Store, checkpoint: ChunkCheckpoint, in txn: borrowing T
    ) throws -> FetchResult {
        var result = FetchResult(
            url: URL(fileURLWithPath: "/"), item: Records.publicItem(plan.item, domain: item.domain, version: plan.version),
            retrievedRange: plan.retrieved,
            flags: plan.wholeFile && plan.hasZeroChunks ? .knownSparseRanges : [],
            owner: .caller, domainVersion: plan.domainVersion, cloneStrategy: nil)
        result.fromOriginDomain = plan.fromOrigin
        switch destination {
        case .handOff:
            let (file, path) = try HandOff.createUniqueFile(in: store.tmpPath, prefix: "fetch-")
            var keep = false
            defer {
                try? file.close()
                if !keep { try? FileSystem.unlink(path) }
            }
            do {
                try file.resize(to: plan.version.size)
            } catch {
                throw CacheError.wrap(error, store: store.path, doing: "sizing the temp file \(path)")
            }
            try RangeAssembler.assemble(plan, store: store, into: file, checkpoint: checkpoint, in: txn)
            keep = true
            result.url = URL(fileURLWithPath: path, isDirectory: false)
        case .clone(let target, let replaceExisting):
            result.cloneStrategy = try Destination(path: target, replaceExisting: replaceExisting).write(
                size: plan.version.size, scratch: store.tmpPath, strategies: strategies, inspect: inspectClone
            ) { file in
                try RangeAssembler.assemble(plan, store: store, into: file, checkpoint: checkpoint, in: txn)
            }
            result.url = URL(fileURLWithPath: target, isDirectory: false)
            result.owner = .destination
        }
        store.usage.noteUse(of: item, recorded: plan.item.lastUsedDate, reads: readsAreHits ? plan.policyReads : nil, store: store)
        return result
    }
}
