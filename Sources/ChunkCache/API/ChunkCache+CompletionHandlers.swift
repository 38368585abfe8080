import FileIO
import Foundation

/// The File Provider–shaped layer: the seeds' completion-handler signatures, returning a `Progress` whose
/// `cancel()` stops the work. The completion runs exactly once on every path (<doc:FileProviderRules#A17>): success,
/// error, cancel; a cancel after the completion ran changes nothing. Errors reach the completion as `NSError`s in the
/// File Provider or Cocoa domain (``CacheError/systemError``).
///
/// A fetch's `Progress` counts bytes of the retrieved range (``FetchProgress``): determinate from the start,
/// its total the range's length, the completed count following the range's bytes downloaded from the origin
/// (never the read-ahead's), both equal when the file is returned.
extension ChunkCache {
    /// `fetchPartialContents(for:version:request:minimalRange:aligningTo:options:completionHandler:)`.
    ///
    /// The completion receives the file URL, the item, the retrieved range and flags, or an error; on
    /// `Progress.cancel()` it receives `(nil, nil, minimalRange, [], userCancelled)` (<doc:FileProviderRules#A16>) and
    /// in-flight chunk work stops.
    @discardableResult
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest, minimalRange: ByteRange,
        aligningTo alignment: Int, options: FetchOptions,
        completionHandler: @escaping @Sendable (URL?, Item?, ByteRange, MaterializationFlags, (any Error)?) -> Void
    ) -> Progress {
        let completed = SetOnce<Void>()
        let planned = planOnCaller(
            item, version: version, minimal: minimalRange, alignment: alignment, options: options, request: request)
        let (progress, request) = Self.tracking(
            request, expecting: expectedRange(planned, minimal: minimalRange, alignment: alignment))
        return runWithProgress(
            progress.progress, doing: "fetching \(minimalRange) of \(item)",
            work: {
                try Self.validate(minimalRange, of: item, alignment: alignment)
                let result = try await self.fetch(
                    item, version: version?.contentVersion, minimalRange: minimalRange, alignment: alignment,
                    options: options, request: request, destination: .handOff, planned: planned)
                progress.finish(result.retrievedRange.length)
                let handed = completed.runFirst {
                    completionHandler(result.url, result.item, result.retrievedRange, result.flags, nil)
                }
                if !handed {
                    // Cancelled after the file was made: nobody will own it, so remove it. Best effort: a
                    // hand-off file left behind is swept from tmp/ after the grace period.
                    try? FileSystem.unlink(result.url.path)
                }
            },
            fail: { error in completed.runFirst { completionHandler(nil, nil, minimalRange, [], error) } })
    }

    /// `fetchContents(for:version:request:completionHandler:)`: the whole file, or an error.
    ///
    /// As the seed says, a requested version is returned or the fetch fails (`versionNoLongerAvailable`): it
    /// runs with `.strictVersioning`; `nil` means the newest. The seed's handler has no flags: the file is
    /// whole, so its holes are the item's zero chunks. Use
    /// ``fetchContents(for:version:request:options:completionHandler:)`` to receive `knownSparseRanges`.
    @discardableResult
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest,
        completionHandler: @escaping @Sendable (URL?, Item?, (any Error)?) -> Void
    ) -> Progress {
        fetchContents(for: item, version: version, request: request, options: version == nil ? [] : .strictVersioning) {
            url, item, _, error in completionHandler(url, item, error)
        }
    }

    /// `fetchContents` as the async ``fetchContents(for:version:request:options:destination:)``, with its
    /// options and flags: the whole file, the item at the version served and `knownSparseRanges` when the
    /// file has holes, or an error.
    @discardableResult
    public func fetchContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest, options: FetchOptions,
        completionHandler: @escaping @Sendable (URL?, Item?, MaterializationFlags, (any Error)?) -> Void
    ) -> Progress {
        let completed = SetOnce<Void>()
        let planned = planOnCaller(
            item, version: version, minimal: nil, alignment: 1, options: options, request: request)
        let (progress, request) = Self.tracking(request, expecting: expectedRange(planned, minimal: nil, alignment: 1))
        return runWithProgress(
            progress.progress, doing: "fetching \(item)",
            work: {
                let result = try await self.fetch(
                    item, version: version?.contentVersion, minimalRange: nil, alignment: 1, options: options,
                    request: request, destination: .handOff, planned: planned)
                progress.finish(result.retrievedRange.length)
                let handed = completed.runFirst { completionHandler(result.url, result.item, result.flags, nil) }
                if !handed {
                    try? FileSystem.unlink(result.url.path)  // as above: nobody will own it
                }
            },
            fail: { error in completed.runFirst { completionHandler(nil, nil, [], error) } })
    }

    /// A fetch's `Progress`, whose total starts at `range`'s length, and the request that moves it: the
    /// request's counters, if any, still count.
    private static func tracking(_ request: FetchRequest, expecting range: ByteRange?) -> (FetchProgress, FetchRequest)
    {
        let progress = FetchProgress(expecting: range)
        var tracked = request
        tracked.progress = DownloadProgress(forwardingTo: request.progress, reporting: progress)
        return (progress, tracked)
    }

    /// A completion-handler fetch's plan, made once, on the caller's thread (one short catalogue read), so its
    /// `Progress` is determinate when it is returned (``expectedRange(_:minimal:alignment:)``): the fetch
    /// serves it when the store still holds its range, and a miss goes straight to the cold path with it.
    /// Nil when planning failed: the fetch plans again and reports why.
    private func planOnCaller(
        _ item: ItemIdentifier, version: ItemVersion?, minimal: ByteRange?, alignment: Int, options: FetchOptions,
        request: FetchRequest
    ) -> PlanOutcome? {
        guard (try? FetchPlanner.validate(alignment: alignment)) != nil,
            minimal.map({ $0.location >= 0 && $0.length >= 0 }) ?? true
        else { return nil }
        let engine = self.engine
        return try? engine.store.environment.read { txn in
            try FetchPlanner.plan(
                engine: engine, domain: item.domain, item: item.rawValue, requested: version?.contentVersion,
                minimal: minimal, alignment: alignment, options: options, request: request, in: txn)
        }
    }

    /// The range a completion-handler fetch's `Progress` starts from (``FetchProgress``): what the fetch
    /// retrieves by its plan. For an item the store knows no version of (or a plan that failed), a partial
    /// fetch's range rounded as though the file went on past it (the origin's first answer corrects it if the
    /// file ends sooner), and nil for a whole file: its size comes with the origin's first answer, before any
    /// byte is counted.
    func expectedRange(_ planned: PlanOutcome?, minimal: ByteRange?, alignment: Int) -> ByteRange? {
        switch planned {
        case .serve(let plan): return plan.retrieved
        case .miss(.chunks(let plan)), .miss(.damaged(let plan, _)): return plan.range
        case .miss(.undiscovered), nil:
            return minimal.map {
                store.layout.retrievedRange(for: $0, aligningTo: Int64(alignment), length: ChunkLayout.maxItemLength)
            }
        }
    }

    /// `import(_:fromDirectoryAt:completionHandler:)`: as the seed, the handler runs as soon as the new domain
    /// exists, the directory already moved into the store, with `nil`, or with the error that kept the import
    /// from starting (`fileExists`, `invalidArgument`, `noPermission`, as ``import(_:fromDirectoryAt:copy:)``
    /// throws them; the directory is then untouched).
    ///
    /// The import then goes on in the background: the items are published in batches, and `importDidFinish`
    /// follows when it is done (``observeImportsFinished(_:)``; ``DomainInfo/importFinished`` turns true).
    /// The returned `Progress` completes then too. `Progress.cancel()` before the handler ran undoes the
    /// import and reports `userCancelled`; after it, it changes nothing: the domain the handler announced
    /// stays and its import finishes (a crash meanwhile resumes it on the next open). What fails after the
    /// handler ran never undoes the domain: an entry that fails is announced through
    /// ``observeImportFailures(_:)`` and the rest goes on; an error that stops the import as a whole is
    /// announced there too, and the import resumes on the next open.
    @discardableResult
    public func `import`(
        _ domain: String, fromDirectoryAt url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) -> Progress {
        let completed = SetOnce<Void>()
        let what = "importing \(url.path) as domain \"\(domain)\""
        let hooks = ImportHooks(domainCreated: {
            guard completed.runFirst({ completionHandler(nil) }) else {
                throw CacheError(.userCancelled, "\(what) was cancelled")  // the cancel reached the handler first
            }
        })
        nonisolated(unsafe) let progress = Progress(totalUnitCount: 1)
        return runWithProgress(
            progress, doing: what,
            work: {
                let started = try await self.startImport(domain, from: url, copy: false, hooks: hooks)
                // Past the handler: a failure is announced to the observers of import failures, never undone.
                if (try? await started.result()) != nil { progress.completedUnitCount = 1 }
            },
            fail: { error in completed.runFirst { completionHandler(error) } })
    }

    /// Starts `work`, which completes `progress`, in a task tied to it. Cancelling the
    /// progress reports `userCancelled` through `fail` and, when that reached the completion handler, cancels
    /// the task; once the handler has run, a cancel changes nothing. `what` names the request in errors; it
    /// is built only when one happens, so a fetch that succeeds pays nothing for it.
    private func runWithProgress(
        _ progress: Progress, doing what: @escaping @Sendable @autoclosure () -> String,
        work: @escaping @Sendable () async throws -> Void, fail: @escaping @Sendable (any Error) -> Bool
    ) -> Progress {
        let storePath = path
        let task = Task {
            do {
                try await work()
            } catch {
                _ = fail(CacheError.wrap(error, store: storePath, doing: what()).systemError)
            }
        }
        progress.cancellationHandler = {
            if fail(CacheError(.userCancelled, "\(what()) was cancelled").systemError) { task.cancel() }
        }
        return progress
    }
}
