import Foundation

/// A page of a container's items, as `enumerateItems(for:startingAt:)` delivers it.
public struct ItemPage: Sendable {
    /// The items, in the page's order.
    public var items: [Item]
    /// Where the listing continues; nil after its last page.
    public var nextPage: EnumerationPage?
    /// The anchor taken when the listing's first page was read (<doc:FileProviderRules#F2>): the changes from it cover
    /// everything the listing may have missed.
    public var syncAnchor: SyncAnchor
    /// The domain's version when this page was read, as the system reads `domainVersion` with each page
    /// (<doc:FileProviderRules#E5>); a waiter of ``ChunkCache/ChunkCache/waitForDomainVersion(of:after:timeout:)``
    /// starts from it.
    public var domainVersion: DomainVersion
}
