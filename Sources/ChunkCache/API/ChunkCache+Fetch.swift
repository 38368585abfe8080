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
    ///   - version: The version asked for; `nil` for the newest. Without `.strictVersioning` a version that
    ///     is gone is replaced by the newest that can serve the range, and the result says which.
    ///   - request: Who asks; a process on the domain's non-materializing list gets `noPermission`.
    ///   - minimalRange: The bytes needed.
    ///   - alignment: A power of two from 1 to 2^30.
    ///   - destination: A hand-off file (default) or a clone at a path.
    /// - Throws: `invalidArgument`, `noSuchItem`, `versionNoLongerAvailable`, `noPermission`, `corruptData`,
    ///   `userCancelled`, `fileExists` (clone destination).
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest = FetchRequest(),
        minimalRange: ByteRange, aligningTo alignment: Int, options: FetchOptions = [],
        destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try FetchPlanner.validate(alignment: alignment)
        guard minimalRange.location >= 0, minimalRange.length >= 0 else {
            throw CacheError(.invalidArgument, "range \(minimalRange) of item \"\(item.rawValue)\" has a negative start or length; give START:LENGTH with both ≥ 0")
        }
        return try await fetch(item, version: version?.contentVersion, minimalRange: minimalRange, alignment: alignment,
                               options: options, request: request, destination: destination)
    }

    /// Returns a file holding the whole item, as `fetchContents` (CONTRACT §4): zero chunks are holes and
    /// `knownSparseRanges` says so.
    ///
    /// - Parameter version: The version asked for; `nil` for the newest.
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion? = nil, request: FetchRequest = FetchRequest(),
        options: FetchOptions = [], destination: FetchDestination = .handOff
    ) async throws -> FetchResult {
        try await fetch(item, version: version?.contentVersion, minimalRange: nil, alignment: 1, options: options,
                        request: request, destination: destination)
    }

    /// Which strategies a clone may use; tests narrow it to exercise each fallback.
    static let cloneStrategies = Set(CloneStrategy.allCases)

    func fetch(
        _ item: ItemIdentifier, version: [UInt8]?, minimalRange: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest, destination: FetchDestination, strategies: Set<CloneStrategy> = cloneStrategies,
        inspectClone: (@Sendable (FileDescriptor) -> Void)? = nil
    ) async throws -> FetchResult {
        try Catalog.validate(domain: item.domain, item: item.rawValue)
        if Task.isCancelled { throw CacheError(.userCancelled, "the fetch of \(item) was cancelled") }
        let store = self.store
        // Plan, and for hand-offs up to a few MiB assemble too, in one snapshot on this thread: a hop to a
        // dispatch thread and back costs ~50 µs here (two wake-ups), as much as a warm 64 KiB fetch.
        // Clones and large ranges go to the blocking pool, off the cooperative threads.
        let outcome: InlineOutcome
        do {
            outcome = try store.environment.read { txn in
                let plan = try FetchPlanner.plan(
                    store: store, domain: item.domain, item: item.rawValue, requested: version, minimal: minimalRange,
                    alignment: alignment, options: options, request: request, in: txn)
                guard destination == .handOff && plan.retrieved.length <= RangeAssembler.inlineLimit else { return .handOver(plan) }
                return .done(try Self.materialize(plan, of: item, store: store, destination: destination,
                                                     cancellation: CancellationFlag(), strategies: strategies,
                                                     inspectClone: inspectClone, in: txn))
            }
        } catch {
            throw CacheError.wrap(error, store: store.path, doing: "fetching \(item)")
        }
        switch outcome {
        case .done(let result):
            return result
        case .handOver(let plan):
            return try await runBlocking { cancellation in
                try store.environment.read { txn in
                    try Self.materialize(plan, of: item, store: store, destination: destination, cancellation: cancellation,
                                         strategies: strategies, inspectClone: inspectClone, in: txn)
                }
            }
        }
    }

    /// What the caller's thread made of a fetch: the result, or a plan for the blocking pool.
    private enum InlineOutcome {
        case done(FetchResult)
        case handOver(FetchPlan)
    }

    /// Writes a planned fetch into a new hand-off file in the store's `tmp/`, or into its destination.
    private static func materialize<T: TransactionReading & ~Copyable>(
        _ plan: FetchPlan, of item: ItemIdentifier, store: Store, destination: FetchDestination, cancellation: CancellationFlag,
        strategies: Set<CloneStrategy>, inspectClone: (@Sendable (FileDescriptor) -> Void)?, in txn: borrowing T
    ) throws -> FetchResult {
        var result = FetchResult(
            url: URL(fileURLWithPath: "/"), item: Catalog.publicItem(plan.item, domain: item.domain, version: plan.version),
            retrievedRange: plan.retrieved,
            flags: plan.wholeFile && plan.hasZeroChunks ? .knownSparseRanges : [],
            owner: .caller, domainVersion: plan.domainVersion, cloneStrategy: nil)
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
            try RangeAssembler.assemble(plan, store: store, into: file, cancellation: cancellation, in: txn)
            keep = true
            result.url = URL(fileURLWithPath: path, isDirectory: false)
        case .clone(let target, let replaceExisting):
            result.cloneStrategy = try Destination(path: target, replaceExisting: replaceExisting).write(
                size: plan.version.size, scratch: store.tmpPath, strategies: strategies, inspect: inspectClone
            ) { file in
                try RangeAssembler.assemble(plan, store: store, into: file, cancellation: cancellation, in: txn)
            }
            result.url = URL(fileURLWithPath: target, isDirectory: false)
            result.owner = .destination
        }
        return result
    }
}
