import Foundation
import LMDBKit

/// Lists a container's items in pages and follows its changes, as `NSFileProviderEnumerator`
/// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>).
///
/// Made by ``ChunkCache/enumerator(for:in:)``. Holds no cursor: pages and anchors carry where they are, so
/// a new enumerator (in a new process too) resumes any of them (<doc:FileProviderRules#F4>,
/// <doc:FileProviderRules#F5>).
///
/// ```swift
/// let root = try await cache.enumerator(for: Item.rootContainer, in: "docs")
/// var page = EnumerationPage.initialPageSortedByName
/// var anchor: SyncAnchor?
/// while true {
///     let result = try await root.enumerateItems(startingAt: page, suggestedPageSize: 200)
///     anchor = anchor ?? result.syncAnchor
///     // … show result.items …
///     guard let next = result.nextPage else { break }
///     page = next
/// }
/// let batch = try await root.enumerateChanges(from: anchor!, suggestedBatchSize: 200)
/// ```
public final class ItemEnumerator: Sendable {
    let cache: ChunkCache
    /// The domain enumerated.
    public let domain: String
    let container: EnumeratedContainer

    init(cache: ChunkCache, domain: String, container: EnumeratedContainer) {
        self.cache = cache
        self.domain = domain
        self.container = container
    }

    /// Pages and batches default to this many items when no size is suggested.
    public static let defaultPageSize = 200

    /// One page of items from `page`: at most `suggestedPageSize` of them (<doc:FileProviderRules#F8>).
    /// - Throws: `pageExpired` for an unknown, malformed or stale token (<doc:FileProviderRules#F7>); `noSuchItem` for
    ///   a domain removed since.
    public func enumerateItems(startingAt page: EnumerationPage, suggestedPageSize: Int? = nil) async throws -> ItemPage
    {
        let (store, domain, container) = (cache.store, self.domain, self.container)
        return try await runBlocking(doing: "listing \(container.described) of domain \"\(domain)\"", store: store.path)
        {
            try Self.expireRecentItemsIfDue(container, of: domain, store)
            return try store.environment.read { txn in
                try CatalogueReader.page(
                    domain: domain, container: container, from: page,
                    pageSize: suggestedPageSize ?? Self.defaultPageSize, in: txn, store.dbs)
            }
        }
    }

    /// The anchor of the domain's current version (<doc:FileProviderRules#F2>: at or before what a page read after it
    /// lists).
    public func currentSyncAnchor() async throws -> SyncAnchor {
        let (store, domain) = (cache.store, self.domain)
        return try await runBlocking(doing: "reading the sync anchor of domain \"\(domain)\"", store: store.path) {
            try store.environment.read { txn in try CatalogueReader.currentAnchor(domain: domain, in: txn, store.dbs) }
        }
    }

    /// The changes after `anchor`: at most `suggestedBatchSize` items (<doc:FileProviderRules#F8>), each as it is now.
    /// With no change the same anchor comes back and `moreComing` is false (<doc:FileProviderRules#F3>).
    /// - Throws: `syncAnchorExpired` for an anchor that is malformed, of another store or of an earlier
    ///   domain of this name, or older than the retained history (<doc:FileProviderRules#F5>,
    ///   <doc:FileProviderRules#F6>).
    public func enumerateChanges(from anchor: SyncAnchor, suggestedBatchSize: Int? = nil) async throws -> ChangeBatch {
        let (store, domain, container) = (cache.store, self.domain, self.container)
        return try await runBlocking(doing: "reading the changes of domain \"\(domain)\"", store: store.path) {
            try Self.expireRecentItemsIfDue(container, of: domain, store)
            return try store.environment.read { txn in
                try CatalogueReader.changes(
                    domain: domain, container: container, from: anchor,
                    batchSize: suggestedBatchSize ?? Self.defaultPageSize, in: txn, store.dbs)
            }
        }
    }

    /// Waits until the domain has a change after `anchor` (from any process), or `timeout` passes: the
    /// signal a client or a mount waits on before asking for changes (<doc:FileProviderRules#E2>, the seed's
    /// `signalEnumerator`).
    ///
    /// Every commit that bumps a domain version wakes every waiter of the store at once, in this process and
    /// in others (`ChangeSignal`: inotify on a file each such commit touches, where Linux offers it, else a
    /// check every 100 ms); a waiter whose domain logged no change waits on. To hear every bump, settings
    /// changes included, wait with ``ChunkCache/ChunkCache/waitForDomainVersion(of:after:timeout:)``. The
    /// wait holds no thread.
    /// - Returns: Whether a change exists; false once `timeout` has passed without one.
    /// - Throws: `syncAnchorExpired` as ``enumerateChanges(from:suggestedBatchSize:)``; `userCancelled`.
    public func waitForChanges(after anchor: SyncAnchor, timeout: Duration) async throws -> Bool {
        let found = try await cache.engine.changes.wait(
            for: "changes of domain \"\(domain)\"", until: .now + timeout
        ) { try await hasChanges(after: anchor) ? true : nil }
        return found ?? false
    }

    private func hasChanges(after anchor: SyncAnchor) async throws -> Bool {
        let (store, domain) = (cache.store, self.domain)
        return try await runBlocking(doing: "reading the changes of domain \"\(domain)\"", store: store.path) {
            try store.environment.read { txn in
                let record = try Records.domain(domain, in: txn, store.dbs)
                let position = try CatalogueReader.validate(
                    anchor, of: domain, record, store: try CatalogueReader.storeID(txn, store.dbs))
                let domainKey = Keys.domain(domain)
                var found = false
                try txn.scan(store.dbs.changes, prefix: domainKey, from: position.firstUnreadKey(domain: domainKey)) {
                    _, _ in
                    found = true
                    return false
                }
                return found
            }
        }
    }

    /// Ends the enumerator's use, as `invalidate()`. It holds nothing, so this does nothing.
    public func invalidate() {}

    /// Before the working set is read, takes out of it the items no longer recent (a write, at most hourly),
    /// on the blocking thread that then reads.
    @available(*, noasync)
    private static func expireRecentItemsIfDue(_ container: EnumeratedContainer, of domain: String, _ store: Store)
        throws
    {
        guard container == .workingSet else { return }
        let checked = try store.environment.read { txn in
            try Records.domain(domain, in: txn, store.dbs).recentCheckedThrough
        }
        guard checked < Date().timeIntervalSince1970 - RecentItems.window - 3600 else { return }
        _ = try store.writer.writeAndWait { txn in try txn.expireRecentItems(of: domain, store.dbs) }
    }
}
