import Foundation
import LMDBKit

/// Reads pages and change batches of a domain's catalogue in one read transaction each
/// (<doc:Contract#11-Catalogue,-enumeration,-changes-and-the-working-set>).
enum CatalogueReader {
    /// At most this many changes since a listing began are reconciled: past it the listing is stale, and
    /// its token `pageExpired`.
    static let staleListingChanges = 100_000
    /// The largest page or batch served, whatever is asked.
    static let largestPage = 100_000

    /// The store's identity in anchors and tokens.
    static func storeID<T: TransactionReading & ~Copyable>(_ txn: borrowing T, _ dbs: Databases) throws -> UInt64 {
        try txn.counter(dbs, MetaKey.storeID)
    }

    /// The anchor at the domain's current version.
    static func currentAnchor<T: TransactionReading & ~Copyable>(
        domain name: String, in txn: borrowing T, _ dbs: Databases
    ) throws -> SyncAnchor {
        let domain = try Records.domain(name, in: txn, dbs)
        return AnchorPosition(
            store: try storeID(txn, dbs), epoch: domain.epoch, version: domain.version,
            index: AnchorPosition.wholeVersion
        ).anchor
    }

    // MARK: - Pages

    /// One page of `container` from `start`.
    ///
    /// The listing is the container as it was when its first page was read (domain version V0), in the
    /// page's order: items changed since V0 are placed where they were then, so every item that exists
    /// throughout the listing appears exactly once whatever changes meanwhile; items created since V0, and
    /// every change's outcome, come through the changes from the listing's anchor.
    static func page<T: TransactionReading & ~Copyable>(
        domain name: String, container: EnumeratedContainer, from start: EnumerationPage, pageSize: Int,
        in txn: borrowing T, _ dbs: Databases
    ) throws -> ItemPage {
        let domain = try Records.domain(name, in: txn, dbs)
        let store = try storeID(txn, dbs)
        let domainKey = Keys.domain(name)
        let containerHash = ListingIndex.containerHash(container.listedIdentifier ?? "\u{1}all")
        let listing: PagePosition
        if start == .initialPageSortedByName || start == .initialPageSortedByDate {
            listing = PagePosition(
                store: store, epoch: domain.epoch, container: containerHash,
                sort: start == .initialPageSortedByName ? .name : .date, version: domain.version, position: [])
        } else {
            guard let position = PagePosition(start) else {
                throw CacheError(
                    .pageExpired, "the page token is malformed; list \(container.described) again from its first page")
            }
            guard position.store == store, position.epoch == domain.epoch, position.container == containerHash else {
                throw CacheError(
                    .pageExpired,
                    "the page token is of another listing, domain or store; list \(container.described) of domain \"\(name)\" again from its first page"
                )
            }
            guard position.version >= domain.compactedThrough, position.version <= domain.version else {
                throw CacheError(
                    .pageExpired,
                    "the listing began before the domain's retained history; list \(container.described) again from its first page"
                )
            }
            listing = position
        }
        let anchor = AnchorPosition(
            store: store, epoch: domain.epoch, version: listing.version, index: AnchorPosition.wholeVersion
        ).anchor
        let changed = try placementsAtListingStart(domainKey: domainKey, after: listing.version, in: txn, dbs)
        guard changed.count <= staleListingChanges else {
            throw CacheError(
                .pageExpired,
                "more than \(staleListingChanges) changes since the listing began; list \(container.described) again from its first page"
            )
        }
        func position(of placement: Placement, hash: [UInt8]) -> [UInt8] {
            container == .allItems ? hash : ListingIndex.position(sort: listing.sort, of: placement, itemHash: hash)
        }
        // Items changed since V0, where they were listed then.
        var earlier = changed.compactMap { hash, before -> [UInt8]? in
            guard let before, before.isListed(in: container) else { return nil }
            let key = position(of: before, hash: hash)
            return key.lexicographicallyPrecedes(listing.position) || key == listing.position ? nil : key
        }
        earlier.sort { $0.lexicographicallyPrecedes($1) }
        var nextEarlier = 0
        var items: [Item] = []
        var last = listing.position
        var more = false
        let pageSize = min(max(pageSize, 1), largestPage)
        // Takes the entry at `key`; false once the page is full.
        func take(_ key: [UInt8], unchanged: Bool) throws -> Bool {
            guard items.count < pageSize else {
                more = true
                return false
            }
            last = key
            let itemKey = domainKey + ListingIndex.itemHash(ofPosition: key)
            guard
                let record = try txn.withValue(
                    dbs.items, key: itemKey,
                    {
                        try ItemRecord(decoding: $0, name: "an item of \(RecordNames.domain(name))")
                    })
            else { return true }  // deleted since V0
            // An unchanged entry must be the container's (an 8-byte container hash could collide).
            if unchanged && !record.placement.isListed(in: container) { return true }
            items.append(try publicItem(record, domain: name, itemKey: itemKey, in: txn, dbs))
            return true
        }
        let prefix =
            container == .allItems
            ? domainKey
            : ListingIndex.prefix(domain: domainKey, container: container.listedIdentifier!, sort: listing.sort)
        var from = prefix + listing.position
        if !listing.position.isEmpty { from.append(0) }  // the first key after the last one returned
        var stopped = false
        try txn.scan(container == .allItems ? dbs.items : dbs.listing, prefix: prefix, from: from) { key, _ in
            let entry = Array(key[prefix.count...])
            guard entry.count >= ListingIndex.hashLength else { return true }
            while nextEarlier < earlier.count && earlier[nextEarlier].lexicographicallyPrecedes(entry) {
                guard try take(earlier[nextEarlier], unchanged: false) else {
                    stopped = true
                    return false
                }
                nextEarlier += 1
            }
            // listed where it was at V0
            if changed.index(forKey: ListingIndex.itemHash(ofPosition: entry)) != nil { return true }
            guard try take(entry, unchanged: true) else {
                stopped = true
                return false
            }
            return true
        }
        if !stopped {
            while nextEarlier < earlier.count {
                guard try take(earlier[nextEarlier], unchanged: false) else { break }
                nextEarlier += 1
            }
        }
        var next = listing
        next.position = last
        return ItemPage(
            items: items, nextPage: more ? next.page : nil, syncAnchor: anchor,
            domainVersion: DomainVersion(rawValue: domain.version))
    }

    /// Items changed after domain version `version`, by identifier hash, with where each was at that
    /// version (nil: it did not exist yet). Stops counting past ``staleListingChanges``.
    private static func placementsAtListingStart<T: TransactionReading & ~Copyable>(
        domainKey: [UInt8], after version: UInt64, in txn: borrowing T, _ dbs: Databases
    ) throws -> [[UInt8]: Placement?] {
        var placements: [[UInt8]: Placement?] = [:]
        var read = 0
        try txn.scan(
            dbs.changes, prefix: domainKey, from: Keys.change(domain: domainKey, version: version + 1, index: 0)
        ) { key, value in
            let change = try ChangeRecord(
                decoding: value,
                name:
                    "the change log of \(RecordNames.domain(key: UnsafeRawBufferPointer(rebasing: key[..<domainKey.count])))"
            )
            let hash = Keys.itemHash(change.identifier)
            if placements.index(forKey: hash) == nil { placements[hash] = .some(change.before) }
            read += 1
            return read <= staleListingChanges
        }
        return placements
    }

    // MARK: - Changes

    /// The changes of `container` after `anchor`: at most `batchSize` items, each as it is now.
    static func changes<T: TransactionReading & ~Copyable>(
        domain name: String, container: EnumeratedContainer, from anchor: SyncAnchor, batchSize: Int,
        in txn: borrowing T, _ dbs: Databases
    ) throws -> ChangeBatch {
        let domain = try Records.domain(name, in: txn, dbs)
        let store = try storeID(txn, dbs)
        let start = try validate(anchor, of: name, domain, store: store)
        let domainKey = Keys.domain(name)
        let batchSize = min(max(batchSize, 1), largestPage)
        var order: [(hash: [UInt8], identifier: String, before: Placement?)] = []
        var seen: Set<[UInt8]> = []
        var last: (version: UInt64, index: UInt32)?
        var more = false
        try txn.scan(dbs.changes, prefix: domainKey, from: start.firstUnreadKey(domain: domainKey)) { key, value in
            guard let position = Keys.parseChange(key, domainLength: domainKey.count) else { return true }
            let change = try ChangeRecord(
                decoding: value,
                name: "change \(position.index) of version \(position.version) of \(RecordNames.domain(name))")
            let hash = Keys.itemHash(change.identifier)
            if !seen.contains(hash) {
                guard order.count < batchSize else {
                    more = true
                    return false
                }
                seen.insert(hash)
                order.append((hash, change.identifier, change.before))
            }
            last = position
            return true
        }
        var updated: [Item] = []
        var deleted: [String] = []
        for change in order {
            let itemKey = domainKey + change.hash
            if let record = try txn.withValue(
                dbs.items, key: itemKey,
                {
                    try ItemRecord(decoding: $0, name: RecordNames.item(change.identifier, domain: name))
                })
            {
                if record.placement.isListed(in: container) {
                    updated.append(try publicItem(record, domain: name, itemKey: itemKey, in: txn, dbs))
                    continue
                }
            }
            if container == .allItems || (change.before?.isListed(in: container) ?? false) {
                deleted.append(change.identifier)
            }
        }
        let next: AnchorPosition
        if let last {
            // Read to the end: every version of this snapshot is delivered.
            next =
                more
                ? AnchorPosition(store: store, epoch: domain.epoch, version: last.version, index: last.index + 1)
                : AnchorPosition(
                    store: store, epoch: domain.epoch, version: domain.version, index: AnchorPosition.wholeVersion)
        } else {
            next = start  // no change: the same anchor (F3)
        }
        return ChangeBatch(
            updated: updated, deleted: deleted, nextAnchor: next.anchor, moreComing: more,
            domainVersion: DomainVersion(rawValue: domain.version))
    }

    /// The position of an anchor that can be resumed in this domain, or `syncAnchorExpired` saying why not.
    static func validate(_ anchor: SyncAnchor, of name: String, _ domain: DomainRecord, store: UInt64)
        throws(CacheError) -> AnchorPosition
    {
        let again = "enumerate domain \"\(name)\" again from its first page and follow its changes from the new anchor"
        guard let position = AnchorPosition(anchor) else {
            throw CacheError(.syncAnchorExpired, "the sync anchor is malformed; \(again)")
        }
        guard position.store == store else {
            throw CacheError(.syncAnchorExpired, "the sync anchor is of another store; \(again)")
        }
        guard position.epoch == domain.epoch else {
            throw CacheError(
                .syncAnchorExpired,
                "the sync anchor is of an earlier domain \"\(name)\", since removed and added again; \(again)")
        }
        guard position.version <= domain.version else {
            throw CacheError(
                .syncAnchorExpired,
                "the sync anchor is ahead of the domain (version \(position.version) > \(domain.version)): the store was restored or replaced; \(again)"
            )
        }
        let retained =
            position.version > domain.compactedThrough
            || (position.version == domain.compactedThrough && position.index == AnchorPosition.wholeVersion)
        guard retained else {
            throw CacheError(
                .syncAnchorExpired,
                "the sync anchor is older than the retained history (changes after version \(domain.compactedThrough)); \(again)"
            )
        }
        return position
    }

    /// The public form of an item with its newest version.
    static func publicItem<T: TransactionReading & ~Copyable>(
        _ record: ItemRecord, domain: String, itemKey: [UInt8], in txn: borrowing T, _ dbs: Databases
    ) throws -> Item {
        let newest = record.kind == .file ? try Records.versions(ofItemKey: itemKey, in: txn, dbs).first : nil
        return Records.publicItem(record, domain: domain, version: newest)
    }
}

extension EnumeratedContainer {
    /// The container as messages name it.
    var described: String {
        switch self {
        case .folder(Item.rootContainer): return "the root"
        case .folder(Item.trashContainer): return "the trash"
        case .folder(let identifier): return "folder \"\(identifier)\""
        case .workingSet: return "the working set"
        case .allItems: return "every item"
        }
    }
}
