import Crypto
import LMDBKit

// The table of manifests, `manifests`: (manifest id, page) → a page of entries.

/// The on-disk form of a manifest page: up to 1024 entries of 33 bytes, `[tag][digest]`, then the page's
/// ``Seal``, checked once each time a page is loaded.
package enum ManifestPage {
    static let entriesPerPage: Int64 = 1024
    package static let entrySize = 33

    private static let storedTag: UInt8 = 1
    private static let zeroTag: UInt8 = 2
    private static let absentTag: UInt8 = 3
    private static let absentUnknownTag: UInt8 = 4
    private static let filledTag: UInt8 = 5

    static func page(ofChunk index: Int64) -> Int64 { index / entriesPerPage }

    static func append(_ entry: ManifestEntry, to bytes: inout [UInt8]) {
        switch entry {
        case .stored(let digest):
            bytes.append(storedTag)
            bytes.append(contentsOf: digest.bytes)
        case .zero:
            bytes.append(zeroTag)
            bytes.append(contentsOf: repeatElement(0, count: 32))
        case .absent(let digest):
            bytes.append(digest == nil ? absentUnknownTag : absentTag)
            bytes.append(contentsOf: digest?.bytes ?? Array(repeating: 0, count: 32))
        case .filled(let checksum):
            bytes.append(filledTag)
            withUnsafeBytes(of: checksum.littleEndian) { bytes.append(contentsOf: $0) }
            bytes.append(contentsOf: repeatElement(0, count: 24))
        }
    }

    /// The entries of a stored page, borrowed from it, or nil when the page fails its seal.
    package static func entries(ofStored value: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? { Seal.open(value) }

    /// Stores `entries`, sealed, as page `page` of `manifest`; `entries` is as it was on return.
    @available(*, noasync)
    static func store(
        _ entries: inout [UInt8], manifest: UInt64, page: Int64, in txn: inout WriteTransaction, _ dbs: Databases
    ) throws {
        Seal.append(to: &entries)
        defer { entries.removeLast(Seal.size) }
        try txn.put(dbs.manifests, key: Keys.manifestPage(manifest, page: page), value: entries)
    }

    /// The error for a page that fails its seal, naming the version it belongs to.
    static func damaged<T: TransactionReading & ~Copyable>(
        _ manifest: UInt64, page: Int64, in txn: borrowing T, _ dbs: Databases
    ) -> CacheError {
        CacheError(
            .corruptData,
            "the store's record of \(RecordNames.manifestPage(manifest, page: page, in: txn, dbs)) fails its check; \(VersionRecord.remedy)"
        )
    }

    /// The entry in `slot` of a page's entries (``entries(ofStored:)``).
    package static func entry(in page: UnsafeRawBufferPointer, at slot: Int) throws(CacheError) -> ManifestEntry {
        let offset = slot * entrySize
        guard offset + entrySize <= page.count else {
            throw CacheError(.corruptData, "a manifest page is shorter than its file; run `chunkcache verify`")
        }
        let digest = { ChunkDigest(raw: UnsafeRawBufferPointer(rebasing: page[(offset + 1)..<(offset + entrySize)])) }
        switch page[offset] {
        case storedTag: return .stored(digest())
        case zeroTag: return .zero
        case absentTag: return .absent(digest())
        case absentUnknownTag: return .absent(nil)
        case filledTag:
            return .filled(
                checksum: UInt64(littleEndian: page.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)))
        default: throw CacheError(.corruptData, "a manifest entry has an unknown tag; run `chunkcache verify`")
        }
    }

    /// How many of the entries in `slots` of a page are `absent`, from their tags alone: nothing is decoded,
    /// so a status of a large file (a 10 GiB file has 160 pages) costs microseconds, not the milliseconds
    /// decoding every entry took.
    /// - Throws: `corruptData` for a page shorter than `slots` or an unknown tag, as ``entry(in:at:)`` does.
    static func absentCount(in page: UnsafeRawBufferPointer, slots: Range<Int>) throws(CacheError) -> Int {
        guard slots.upperBound * entrySize <= page.count else {
            throw CacheError(.corruptData, "a manifest page is shorter than its file; run `chunkcache verify`")
        }
        var count = 0
        for slot in slots {
            switch page[slot * entrySize] {
            case absentTag, absentUnknownTag: count += 1
            case storedTag, zeroTag, filledTag: break
            default: throw CacheError(.corruptData, "a manifest entry has an unknown tag; run `chunkcache verify`")
            }
        }
        return count
    }

    /// Rewrites a page's entries (``entries(ofStored:)``) with `transform`, returning the new stored page,
    /// sealed, when anything changed.
    package static func rewrite(_ page: UnsafeRawBufferPointer, _ transform: (ManifestEntry) throws -> ManifestEntry?)
        throws -> [UInt8]?
    {
        var out: [UInt8] = []
        out.reserveCapacity(page.count + Seal.size)
        var changed = false
        for slot in 0..<(page.count / entrySize) {
            let entry = try entry(in: page, at: slot)
            if let replacement = try transform(entry) {
                append(replacement, to: &out)
                changed = true
            } else {
                append(entry, to: &out)
            }
        }
        guard changed else { return nil }
        Seal.append(to: &out)
        return out
    }
}

extension WriteTransaction {
    /// Deletes a manifest's pages and releases every chunk it references.
    ///
    /// A page that fails its seal names chunks that cannot be trusted: releasing them could free another
    /// item's chunks, so its references are left counted instead (the chunks stay, unused, and take space).
    @available(*, noasync)
    mutating func dropManifest(_ manifestID: UInt64, _ dbs: Databases) throws {
        var pageKeys: [[UInt8]] = []
        var digests: [ChunkDigest] = []
        try scan(dbs.manifests, prefix: Keys.manifest(manifestID)) { key, value in
            pageKeys.append(Array(key))
            guard let page = ManifestPage.entries(ofStored: value) else { return true }
            for slot in 0..<(page.count / ManifestPage.entrySize) {
                if case .stored(let digest) = try ManifestPage.entry(in: page, at: slot) { digests.append(digest) }
            }
            return true
        }
        for digest in digests { try releaseChunk(digest, dbs) }
        for key in pageKeys { try delete(dbs.manifests, key: key) }
        try delete(dbs.pending, key: Keys.manifest(manifestID))
        try policyForget(manifest: manifestID, dbs)
        try removeFills(of: manifestID, dbs)
    }

    /// Takes a fresh manifest id from `meta`'s ``MetaKey/nextManifestID``.
    @available(*, noasync)
    mutating func takeManifestID(_ dbs: Databases) throws -> UInt64 {
        let id = max(1, try counter(dbs, MetaKey.nextManifestID))
        try setCounter(dbs, MetaKey.nextManifestID, id + 1)
        return id
    }

    /// Writes a manifest of `chunkCount` entries, all `absent` with no known hash.
    @available(*, noasync)
    mutating func writeAbsentManifest(_ manifestID: UInt64, chunkCount: Int64, _ dbs: Databases) throws {
        var page: [UInt8] = []
        var first: Int64 = 0
        while first < chunkCount {
            let count = min(ManifestPage.entriesPerPage, chunkCount - first)
            page.removeAll(keepingCapacity: true)
            for _ in 0..<count { ManifestPage.append(.absent(nil), to: &page) }
            try ManifestPage.store(
                &page, manifest: manifestID, page: first / ManifestPage.entriesPerPage, in: &self, dbs)
            first += count
        }
    }

    /// Rewrites manifest entries at `indices` (ascending) of `manifestID`: `transform` gets each one's position
    /// in `indices` and current entry, and returns its replacement or nil to keep it. A missing page is skipped
    /// (the version went); a damaged one is `corruptData`.
    @available(*, noasync)
    mutating func rewriteEntries(
        of manifestID: UInt64, at indices: [Int64], _ dbs: Databases,
        _ transform: (Int, ManifestEntry) throws -> ManifestEntry?
    ) throws {
        var position = 0
        while position < indices.count {
            let pageIndex = ManifestPage.page(ofChunk: indices[position])
            var end = position
            while end < indices.count && ManifestPage.page(ofChunk: indices[end]) == pageIndex { end += 1 }
            defer { position = end }
            let key = Keys.manifestPage(manifestID, page: pageIndex)
            // Copied out: the page is rewritten below, which ends the stored value's life.
            guard
                let stored = try withValue(
                    dbs.manifests, key: key, { ManifestPage.entries(ofStored: $0).map { Array($0) } })
            else { continue }
            guard var entries = stored else { throw ManifestPage.damaged(manifestID, page: pageIndex, in: self, dbs) }
            var changed = false
            for at in position..<end {
                let slot = Int(indices[at] - pageIndex * ManifestPage.entriesPerPage)
                let current = try entries.withUnsafeBytes { try ManifestPage.entry(in: $0, at: slot) }
                if let replacement = try transform(at, current) {
                    ManifestPage.replace(slot: slot, with: replacement, in: &entries)
                    changed = true
                }
            }
            if changed { try ManifestPage.store(&entries, manifest: manifestID, page: pageIndex, in: &self, dbs) }
        }
    }
}

extension ManifestPage {
    /// Replaces the entry in `slot` of a page's unsealed entries.
    static func replace(slot: Int, with entry: ManifestEntry, in entries: inout [UInt8]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entrySize)
        append(entry, to: &bytes)
        entries.replaceSubrange((slot * entrySize)..<((slot + 1) * entrySize), with: bytes)
    }
}
