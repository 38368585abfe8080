import LMDBKit
import Synchronization

/// Reads the entries of one manifest in a transaction, keeping the current page borrowed from the map.
struct ManifestCursor {
    let manifestID: UInt64
    let dbs: Databases
    private var pageIndex: Int64 = -1
    private var page = UnsafeRawBufferPointer(start: nil, count: 0)

    init(manifestID: UInt64, dbs: Databases) {
        self.manifestID = manifestID
        self.dbs = dbs
    }

    /// The entry of chunk `index`. A missing page is `corruptData`: every published manifest is complete.
    mutating func entry<T: TransactionReading & ~Copyable>(_ index: Int64, in txn: borrowing T) throws -> ManifestEntry
    {
        let wanted = ManifestPage.page(ofChunk: index)
        try load(wanted, in: txn)
        return try ManifestPage.entry(in: page, at: Int(index - wanted * ManifestPage.entriesPerPage))
    }

    /// How many of the chunks `indices` are `absent` (``ManifestPage/absentCount(in:slots:)``), page by page.
    mutating func absentCount<T: TransactionReading & ~Copyable>(_ indices: Range<Int64>, in txn: borrowing T)
        throws -> Int64
    {
        var count: Int64 = 0
        var start = indices.lowerBound
        while start < indices.upperBound {
            let wanted = ManifestPage.page(ofChunk: start)
            let pageStart = wanted * ManifestPage.entriesPerPage
            let end = min(indices.upperBound, pageStart + ManifestPage.entriesPerPage)
            try load(wanted, in: txn)
            count += Int64(
                try ManifestPage.absentCount(in: page, slots: Int(start - pageStart)..<Int(end - pageStart)))
            start = end
        }
        return count
    }

    /// Borrows page `wanted` from the map, checked, unless it is the page borrowed already.
    private mutating func load<T: TransactionReading & ~Copyable>(_ wanted: Int64, in txn: borrowing T) throws {
        if wanted != pageIndex {
            // Kept past this call (`page`): a cursor lives inside one transaction.
            guard let raw = try txn.unsafeValue(dbs.manifests, key: Keys.manifestPage(manifestID, page: wanted)) else {
                throw CacheError(
                    .corruptData,
                    "\(RecordNames.manifest(manifestID, in: txn, dbs)) lacks page \(wanted); \(VersionRecord.remedy)")
            }
            // Checked once per page load, not per entry, and once per snapshot: a fetch reads a page's entries
            // many times, and its planner and assembler load the same page.
            let memo = CheckedPageMemo.Key(snapshot: txn.id, manifest: manifestID, page: wanted, value: raw)
            if dbs.checkedManifestPages.contains(memo) {
                page = UnsafeRawBufferPointer(rebasing: raw[..<(raw.count - Seal.size)])
            } else {
                guard let entries = ManifestPage.entries(ofStored: raw) else {
                    throw ManifestPage.damaged(manifestID, page: wanted, in: txn, dbs)
                }
                dbs.checkedManifestPages.insert(memo)
                page = entries
            }
            pageIndex = wanted
        }
    }
}
