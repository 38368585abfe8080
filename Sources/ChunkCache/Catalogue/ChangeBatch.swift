import Foundation

/// A batch of changes, as `enumerateChanges(for:from:)` delivers it.
public struct ChangeBatch: Sendable {
    /// Items created or changed, as they are now.
    public var updated: [Item]
    /// Identifiers of items deleted, or gone from the container.
    public var deleted: [String]
    /// The anchor to ask from next: distinct from the one given whenever anything was read
    /// (<doc:FileProviderRules#F3>), resumable by a new process (<doc:FileProviderRules#F4>).
    public var nextAnchor: SyncAnchor
    /// More changes follow: ask again from ``nextAnchor``.
    public var moreComing: Bool
    /// The domain's version when this batch was read, as the system reads `domainVersion` after
    /// `finishEnumeratingChanges` (<doc:FileProviderRules#E5>). With ``moreComing`` the batch stops before it; a bump
    /// that logs no item change (a settings change) moves it with no change in the batch.
    public var domainVersion: DomainVersion
}
