import Foundation
import FileIO
import Synchronization

/// The File Provider–shaped layer: the seeds' completion-handler signatures, returning a `Progress` whose
/// `cancel()` stops the work. The completion runs exactly once on every path (A17): success, error, cancel.
/// Errors reach the completion as `NSError`s in the File Provider or Cocoa domain (``CacheError/nsError``).
extension ChunkCache {
    /// `fetchPartialContents(for:version:request:minimalRange:aligningTo:options:completionHandler:)`.
    ///
    /// The completion receives the file URL, the item, the retrieved range and flags, or an error; on
    /// `Progress.cancel()` it receives `(nil, nil, minimalRange, [], userCancelled)` (A16) and in-flight chunk
    /// work stops.
    @discardableResult
    public func fetchPartialContents(
        for item: ItemIdentifier, version: ItemVersion?, request: FetchRequest, minimalRange: ByteRange,
        aligningTo alignment: Int, options: FetchOptions,
        completionHandler: @escaping @Sendable (URL?, Item?, ByteRange, MaterializationFlags, (any Error)?) -> Void
    ) -> Progress {
        let once = CompleteOnce(completionHandler)
        return runWithProgress(
            doing: "fetching \(minimalRange) of \(item)",
            work: {
                let result = try await self.fetchPartialContents(
                    for: item, version: version, request: request, minimalRange: minimalRange, aligningTo: alignment,
                    options: options)
                if !once.call(result.url, result.item, result.retrievedRange, result.flags, nil) {
                    // Cancelled after the file was made: nobody will own it, so remove it. Best effort: a
                    // hand-off file left behind is swept from tmp/ after the grace period.
                    try? FileSystem.unlink(result.url.path)
                }
            },
            fail: { error in _ = once.call(nil, nil, minimalRange, [], error) })
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
        let once = CompleteOnce { (url: URL?, item: Item?, _: ByteRange, flags: MaterializationFlags, error: (any Error)?) in
            completionHandler(url, item, flags, error)
        }
        return runWithProgress(
            doing: "fetching \(item)",
            work: {
                let result = try await self.fetchContents(for: item, version: version, request: request, options: options)
                if !once.call(result.url, result.item, result.retrievedRange, result.flags, nil) {
                    try? FileSystem.unlink(result.url.path)  // as above: nobody will own it
                }
            },
            fail: { error in _ = once.call(nil, nil, ByteRange(location: 0, length: 0), [], error) })
    }

    /// `import(_:fromDirectoryAt:completionHandler:)`.
    @discardableResult
    public func `import`(
        _ domain: String, fromDirectoryAt url: URL, completionHandler: @escaping @Sendable ((any Error)?) -> Void
    ) -> Progress {
        let once = CompleteOnce { (_: URL?, _: Item?, _: ByteRange, _: MaterializationFlags, error: (any Error)?) in
            completionHandler(error)
        }
        return runWithProgress(
            doing: "importing \(url.path) as domain \"\(domain)\"",
            work: {
                _ = try await self.import(domain, fromDirectoryAt: url)
                _ = once.call(nil, nil, ByteRange(location: 0, length: 0), [], nil)
            },
            fail: { error in _ = once.call(nil, nil, ByteRange(location: 0, length: 0), [], error) })
    }

    /// Starts `work` in a task tied to a new `Progress`: cancelling the progress cancels the task and
    /// reports `userCancelled` through `fail` at once. `what` names the request in errors; it is built only
    /// when one happens, so a fetch that succeeds pays nothing for it.
    private func runWithProgress(
        doing what: @escaping @Sendable @autoclosure () -> String, work: @escaping @Sendable () async throws -> Void, fail: @escaping @Sendable (any Error) -> Void
    ) -> Progress {
        let storePath = path
        let progress = Progress(totalUnitCount: 1)
        let task = Task {
            do {
                try await work()
                progress.completedUnitCount = 1
            } catch {
                fail(CacheError.wrap(error, store: storePath, doing: what()).systemError)
            }
        }
        progress.cancellationHandler = {
            task.cancel()
            fail(CacheError(.userCancelled, "\(what()) was cancelled").systemError)
        }
        return progress
    }
}

/// Calls a completion handler at most once, whichever path gets there first.
final class CompleteOnce: Sendable {
    typealias Handler = @Sendable (URL?, Item?, ByteRange, MaterializationFlags, (any Error)?) -> Void
    private let handler: Mutex<Handler?>

    init(_ handler: @escaping Handler) { self.handler = Mutex(handler) }

    /// Calls the handler if nobody has; returns whether this call did.
    func call(_ url: URL?, _ item: Item?, _ range: ByteRange, _ flags: MaterializationFlags, _ error: (any Error)?) -> Bool {
        guard let handler = self.handler.withLock({ h -> Handler? in defer { h = nil }; return h }) else { return false }
        handler(url, item, range, flags, error)
        return true
    }
}
