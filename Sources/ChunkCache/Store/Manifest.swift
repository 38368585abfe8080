import LMDBKit

/// One chunk index of a manifest.
public enum ManifestEntry: Hashable, Sendable {
    /// The chunk with this digest, stored in the cache.
    case stored(ChunkDigest)
    /// An all-zero chunk: nothing is stored.
    case zero
    /// Not in the cache (never downloaded, or dropped by `verify --repair`); the digest when known.
    case absent(ChunkDigest?)
}

/// The on-disk form of a manifest page: up to 1024 entries of 33 bytes, `[tag][digest]`.
enum ManifestPage {
    static let entriesPerPage: Int64 = 1024
    static let entrySize = 33

    private static let storedTag: UInt8 = 1
    private static let zeroTag: UInt8 = 2
    private static let absentTag: UInt8 = 3
    private static let absentUnknownTag: UInt8 = 4

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
        }
    }

    static func entry(in page: UnsafeRawBufferPointer, at slot: Int) throws(CacheError) -> ManifestEntry {
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
        default: throw CacheError(.corruptData, "a manifest entry has an unknown tag; run `chunkcache verify`")
        }
    }

    /// Rewrites the entries of `page` with `transform`, returning the new page when anything changed.
    static func rewrite(_ page: UnsafeRawBufferPointer, _ transform: (ManifestEntry) -> ManifestEntry?) throws(CacheError) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(page.count)
        var changed = false
        for slot in 0..<(page.count / entrySize) {
            let entry = try entry(in: page, at: slot)
            if let replacement = transform(entry) {
                append(replacement, to: &out)
                changed = true
            } else {
                append(entry, to: &out)
            }
        }
        return changed ? out : nil
    }
}

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
    mutating func entry<T: TransactionReading & ~Copyable>(_ index: Int64, in txn: borrowing T) throws -> ManifestEntry {
        let wanted = ManifestPage.page(ofChunk: index)
        if wanted != pageIndex {
            guard let raw = try txn.get(dbs.manifests, key: Keys.manifestPage(manifestID, page: wanted)) else {
                throw CacheError(.corruptData, "manifest \(manifestID) lacks page \(wanted); run `chunkcache verify`")
            }
            page = raw
            pageIndex = wanted
        }
        return try ManifestPage.entry(in: page, at: Int(index - wanted * ManifestPage.entriesPerPage))
    }
}
