import Foundation

/// Receives a page of items, as `NSFileProviderEnumerationObserver`.
public protocol EnumerationObserver: AnyObject, Sendable {
    /// The page size the system suggests; nil for the default.
    var suggestedPageSize: Int? { get }
    func didEnumerate(_ items: [Item])
    /// The page is done; `nextPage` is nil after the last one.
    func finishEnumerating(upTo nextPage: EnumerationPage?)
    func finishEnumeratingWithError(_ error: any Error)
}

extension EnumerationObserver {
    public var suggestedPageSize: Int? { nil }
}

/// The observer and completion-handler shapes of `NSFileProviderEnumerator`, for an extension to forward
/// to. Each call reports exactly once: its items then `finish…`, or `finishEnumeratingWithError` with an
/// `NSError` in the File Provider domain (`pageExpired`, `syncAnchorExpired`: -1002).
extension ItemEnumerator {
    /// `enumerateItems(for:startingAt:)`.
    public func enumerateItems(for observer: any EnumerationObserver, startingAt page: EnumerationPage) {
        Task {
            do {
                let result = try await enumerateItems(startingAt: page, suggestedPageSize: observer.suggestedPageSize)
                observer.didEnumerate(result.items)
                observer.finishEnumerating(upTo: result.nextPage)
            } catch {
                observer.finishEnumeratingWithError(Self.systemError(error, cache.path))
            }
        }
    }

    /// `enumerateChanges(for:from:)`.
    public func enumerateChanges(for observer: any ChangeObserver, from anchor: SyncAnchor) {
        Task {
            do {
                let batch = try await enumerateChanges(from: anchor, suggestedBatchSize: observer.suggestedBatchSize)
                if !batch.updated.isEmpty { observer.didUpdate(batch.updated) }
                if !batch.deleted.isEmpty { observer.didDeleteItems(withIdentifiers: batch.deleted) }
                observer.finishEnumeratingChanges(upTo: batch.nextAnchor, moreComing: batch.moreComing)
            } catch {
                observer.finishEnumeratingWithError(Self.systemError(error, cache.path))
            }
        }
    }

    /// `currentSyncAnchor(completionHandler:)`: nil when the domain cannot be read.
    public func currentSyncAnchor(completionHandler: @escaping @Sendable (SyncAnchor?) -> Void) {
        Task { completionHandler(try? await currentSyncAnchor()) }
    }

    private static func systemError(_ error: any Error, _ store: String) -> any Error {
        CacheError.wrap(error, store: store, doing: "enumerating").systemError
    }
}
