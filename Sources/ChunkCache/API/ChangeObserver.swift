import Foundation

/// Receives a batch of changes, as `NSFileProviderChangeObserver`.
public protocol ChangeObserver: AnyObject, Sendable {
    /// The batch size the system suggests; nil for the default.
    var suggestedBatchSize: Int? { get }
    func didUpdate(_ updatedItems: [Item])
    func didDeleteItems(withIdentifiers deletedItemIdentifiers: [String])
    func finishEnumeratingChanges(upTo anchor: SyncAnchor, moreComing: Bool)
    func finishEnumeratingWithError(_ error: any Error)
}

extension ChangeObserver {
    public var suggestedBatchSize: Int? { nil }
}
