import Crypto
import Foundation

/// The SHA-256 of a chunk's raw bytes: its name in the store.
public struct ChunkDigest: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 32 digest bytes (four words, so the value needs no allocation).
    let words: (UInt64, UInt64, UInt64, UInt64)

    /// Creates a digest from exactly 32 bytes.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { raw in raw.copyBytes(from: bytes) }
        words = w
    }

    init(raw: UnsafeRawBufferPointer) {
        var w: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &w) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[..<32])) }
        words = w
    }

    /// The SHA-256 of `bytes`.
    public init(hashing bytes: UnsafeRawBufferPointer) {
        let digest = SHA256.hash(data: bytes)
        self = digest.withUnsafeBytes { ChunkDigest(raw: $0) }
    }

    /// Parses 64 lowercase or uppercase hex digits.
    public init?(hex: String) {
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        for i in stride(from: 0, to: 64, by: 2) {
            guard let hi = hexValue(utf8[i]), let lo = hexValue(utf8[i + 1]) else { return nil }
            bytes.append(hi << 4 | lo)
        }
        self.init(bytes: bytes)
    }

    /// The 32 bytes.
    public var bytes: [UInt8] { Swift.withUnsafeBytes(of: words) { Array($0) } }

    /// Lends the 32 bytes, e.g. as an LMDB key.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try Swift.withUnsafeBytes(of: words, body)
    }

    /// Lowercase hex.
    public var description: String { hexString(bytes) }

    public static func == (a: ChunkDigest, b: ChunkDigest) -> Bool {
        a.words.0 == b.words.0 && a.words.1 == b.words.1 && a.words.2 == b.words.2 && a.words.3 == b.words.3
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    public static func < (a: ChunkDigest, b: ChunkDigest) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }
}

func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
    default: return nil
    }
}

/// `bytes` as lowercase hexadecimal, two digits a byte (keys and digests in messages and reports).
public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The store's chunk size, a power of two from 4 KiB to 4 MiB: `1 << shift` bytes.
public struct ChunkLayout: Hashable, Sendable, CustomStringConvertible {
    /// log2 of the chunk size.
    public let shift: Int

    /// The smallest and largest allowed shifts: 4 KiB and 4 MiB.
    public static let shifts = 12...22
    /// The default, 64 KiB.
    public static let standard = ChunkLayout(uncheckedShift: 16)

    init(uncheckedShift shift: Int) { self.shift = shift }

    /// A layout for `size` bytes per chunk.
    /// - Throws: `invalidArgument` when `size` is not a power of two from 4 KiB to 4 MiB.
    public init(chunkSize size: Int) throws(CacheError) {
        guard size > 0, size & (size - 1) == 0, Self.shifts.contains(size.trailingZeroBitCount) else {
            throw CacheError(.invalidArgument, "chunk size \(size) is not a power of two from 4 KiB to 4 MiB; pick e.g. 65536")
        }
        shift = size.trailingZeroBitCount
    }

    /// The chunk size in bytes.
    public var chunkSize: Int { 1 << shift }

    /// The largest item the engine stores: 1 PiB.
    ///
    /// CONTRACT §2 asks manifests to scale to 1 TiB files; a bound 1024 times that keeps every real file in,
    /// while any offset below it plus an alignment (≤ 2^30) or a chunk (≤ 2^22) stays far inside `Int64`, so
    /// no size arithmetic after the check can overflow, and chunk and manifest-page indices (LMDB keys hold
    /// them as 64-bit numbers) stay small.
    public static let maxItemLength: Int64 = 1 << 50

    /// Checks a size that came from outside (a file's length, a record read back) against ``maxItemLength``.
    /// - Parameters:
    ///   - length: The size in bytes.
    ///   - what: What has that size, for the message (a path, "a version record of ITEM").
    ///   - code: `invalidArgument` for input, `corruptData` for a record read back from the store.
    /// - Throws: `code`, naming `what`, its size and the limit.
    static func checkItemLength(_ length: Int64, of what: String, code: CacheError.Code = .invalidArgument) throws(CacheError) {
        guard length < 0 || length > maxItemLength else { return }
        let advice = code == .corruptData ? "run `chunkcache verify`" : "store a smaller file"
        throw CacheError(code,
            "\(what) is \(length) bytes, beyond the largest item the store takes (\(maxItemLength) bytes, \(formatSize(maxItemLength))); \(advice)")
    }

    /// The number of chunks a file of `length` bytes has (0 for a negative length). Never traps.
    public func chunkCount(forLength length: Int64) -> Int64 {
        guard length > 0 else { return 0 }
        // Rounds up without `length + chunkSize - 1`, which overflows near Int64.max.
        return (length >> shift) + (length & Int64(chunkSize - 1) == 0 ? 0 : 1)
    }

    /// The byte range chunk `index` covers in a file of `length` bytes: empty at the file's end when
    /// `index` is not one of the file's chunks. Never traps.
    public func range(ofChunk index: Int64, length: Int64) -> ByteRange {
        guard index >= 0, index < chunkCount(forLength: length) else { return ByteRange(location: max(length, 0), length: 0) }
        // index < ceil(length / chunkSize), so the start lies inside the file and cannot overflow.
        let start = index << shift
        return ByteRange(location: start, length: min(Int64(chunkSize), length - start))
    }

    /// The range a fetch of `minimal` aligned to `alignment` retrieves from a file of `length` bytes
    /// (CONTRACT §3): both ends clamped to the file, the start rounded down and the end rounded up to
    /// `max(alignment, chunkSize)`, the end capped at `length`.
    public func retrievedRange(for minimal: ByteRange, aligningTo alignment: Int64, length: Int64) -> ByteRange {
        FetchPlanner.retrievedRange(for: minimal, alignment: alignment, chunkSize: Int64(chunkSize), size: length)
    }

    public var description: String { formatSize(Int64(chunkSize)) }
}

/// A half-open byte range `[location, location + length)`.
public struct ByteRange: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The first byte.
    public var location: Int64
    /// The number of bytes.
    public var length: Int64

    public init(location: Int64, length: Int64) {
        self.location = location
        self.length = length
    }

    /// One past the last byte, saturating at `Int64`'s bounds (a range built from outside input may be huge).
    public var end: Int64 {
        let (sum, overflow) = location.addingReportingOverflow(length)
        guard overflow else { return sum }
        return length < 0 ? .min : .max
    }

    /// Whether `other` lies inside this range (an empty range lies inside any range that touches it).
    public func contains(_ other: ByteRange) -> Bool {
        other.location >= location && other.end <= end
    }

    public var description: String { "\(location):\(length)" }
}

/// A domain's version: a counter that only grows, bumped by every change to the domain's items.
public struct DomainVersion: Hashable, Sendable, Comparable, Codable, CustomStringConvertible {
    /// The counter.
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// The first version of a new domain.
    public static let initial = DomainVersion(rawValue: 1)

    /// The version that follows this one, as `NSFileProviderDomainVersion.next()`.
    public func next() -> DomainVersion { DomainVersion(rawValue: rawValue + 1) }

    public static func < (a: DomainVersion, b: DomainVersion) -> Bool { a.rawValue < b.rawValue }

    /// Decimal digits, as the CLI prints it.
    public var description: String { String(rawValue) }
}

/// The two components of an item's version, each at most 128 bytes.
public struct ItemVersion: Hashable, Sendable {
    /// Changes exactly when the bytes change.
    public var contentVersion: [UInt8]
    /// Changes when any metadata changes.
    public var metadataVersion: [UInt8]

    /// The most bytes either component may hold (D1).
    public static let maxComponentLength = 128

    public init(contentVersion: [UInt8], metadataVersion: [UInt8]) {
        self.contentVersion = contentVersion
        self.metadataVersion = metadataVersion
    }

    /// A version named by a content-version string, with the same string as metadata version.
    public init(_ contentVersion: String) {
        self.init(contentVersion: Array(contentVersion.utf8), metadataVersion: Array(contentVersion.utf8))
    }

    /// The content version as text (the CLI's form).
    public var contentVersionString: String { String(decoding: contentVersion, as: UTF8.self) }
    /// The metadata version as text.
    public var metadataVersionString: String { String(decoding: metadataVersion, as: UTF8.self) }
}

/// What kind of item an identifier names.
public enum ItemKind: UInt8, Sendable, Codable {
    case file = 0
    case folder = 1
    case symlink = 2
}

/// An item as the engine knows it, with the version a response served.
public struct Item: Hashable, Sendable {
    /// The domain it belongs to.
    public var domain: String
    /// Its identifier: for imported files, the path relative to the domain root.
    public var identifier: String
    /// Its parent's identifier (``Item/rootContainer`` at the top).
    public var parentIdentifier: String
    /// Its name in its folder.
    public var filename: String
    /// File, folder or symlink.
    public var kind: ItemKind
    /// The version these figures describe.
    public var itemVersion: ItemVersion
    /// The content length of that version, in bytes (0 for folders).
    public var documentSize: Int64
    /// A symlink's target.
    public var symlinkTarget: String?
    /// When the item was first recorded.
    public var creationDate = Date(timeIntervalSince1970: 0)
    /// When its content last changed (a file's modification time when put or imported).
    public var contentModificationDate = Date(timeIntervalSince1970: 0)
    /// When a fetch last used it; recent items are in the working set.
    public var lastUsedDate: Date?
    /// The user's tag, opaque bytes; nil when untagged.
    public var tagData: Data?
    /// Its rank among favorites; nil when not a favorite.
    public var favoriteRank: UInt64?
    public var isShared = false
    /// In the trash: listed in ``Item/trashContainer``.
    public var isTrashed = false
    /// Kept in the store whatever eviction does (CONTRACT §12).
    public var isPinned = false

    /// File Provider's name for ``identifier``.
    public var itemIdentifier: String { identifier }
    /// The container listing it, as File Provider names it: ``Item/trashContainer`` when trashed, else its
    /// real parent (never the working set, F9).
    public var parentItemIdentifier: String { isTrashed ? Item.trashContainer : parentIdentifier }
    /// File Provider's name for ``kind``.
    public var contentType: ItemKind { kind }

    /// The identifier of a domain's root, as `NSFileProviderItemIdentifier.rootContainer`.
    public static let rootContainer = "NSFileProviderRootContainerItemIdentifier"
    /// The working set's identifier, as `NSFileProviderItemIdentifier.workingSet`.
    public static let workingSetContainer = "NSFileProviderWorkingSetContainerItemIdentifier"
    /// The trash's identifier, as `NSFileProviderItemIdentifier.trashContainer`.
    public static let trashContainer = "NSFileProviderTrashContainerItemIdentifier"
}

/// Options of a fetch, as `NSFileProviderFetchContentsOptions`.
public struct FetchOptions: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Serve the requested version or fail with `versionNoLongerAvailable`.
    public static let strictVersioning = FetchOptions(rawValue: 1)
}

/// Flags of a materialized file, as `NSFileProviderMaterializationFlags`.
public struct MaterializationFlags: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The file's holes are known zeros. Set only when the whole file is returned (A8).
    public static let knownSparseRanges = MaterializationFlags(rawValue: 1)

    /// The flags' names, for the CLI.
    public var names: [String] { contains(.knownSparseRanges) ? ["knownSparseRanges"] : [] }
}

/// Who asks, as `NSFileProviderRequest`.
public struct FetchRequest: Sendable, Hashable {
    /// The requesting executable's name; matched against the domain's non-materializing list.
    public var requestingProcess: String?
    /// The domain version the requester last saw.
    public var domainVersion: DomainVersion?
    /// Updated as the fetch downloads from the domain's origin, for a progress display.
    public var progress: DownloadProgress?

    public init(requestingProcess: String? = nil, domainVersion: DomainVersion? = nil, progress: DownloadProgress? = nil) {
        self.requestingProcess = requestingProcess
        self.domainVersion = domainVersion
        self.progress = progress
    }
}

/// Who owns the file a fetch returned.
public enum FileOwner: String, Sendable {
    /// A hand-off file in the store's `tmp/`: the caller owns it and deletes it.
    case caller
    /// A clone at the destination the caller named.
    case destination
}

/// What a fetch returns.
public struct FetchResult: Sendable {
    /// The file holding the bytes at their own offsets.
    public var url: URL
    /// The item with the version served and its size.
    public var item: Item
    /// The bytes present in the file, aligned as asked or ending at EOF.
    public var retrievedRange: ByteRange
    /// `knownSparseRanges` when the whole file was returned with holes for zero chunks.
    public var flags: MaterializationFlags
    /// Who owns ``url``.
    public var owner: FileOwner
    /// The domain's version when the fetch read it.
    public var domainVersion: DomainVersion
    /// How a clone reached its destination. `nil` for a hand-off, and for a destination the engine
    /// assembled in place because it cannot share blocks with the store (each byte written once).
    public var cloneStrategy: CloneStrategy?
    /// Bytes this fetch downloaded from the domain's origin (CONTRACT §10); 0 when the store held them.
    public var downloadedBytes: Int64 = 0
    /// Requests this fetch made to the domain's origin.
    public var originRequests = 0
    /// The item's domain has an origin, so its reads move the item's read-ahead.
    var fromOriginDomain = false

    mutating func record(_ progress: DownloadProgress) {
        downloadedBytes = progress.downloadedBytes
        originRequests = progress.originRequests
    }
}

/// Where a fetch's file goes.
public enum FetchDestination: Sendable, Hashable {
    /// A fresh hand-off file in the store's `tmp/`.
    case handOff
    /// A clone at `path`; an existing file there is `fileExists` unless `replaceExisting`.
    case clone(to: String, replaceExisting: Bool)
}

/// A byte count as people read it: a power of two from 1 KiB in binary units (`64 KiB`, as chunk sizes are
/// named), anything else in decimal units with one decimal (`1.4 GB`), below 1000 in bytes (`512 B`).
///
/// The one formatter of the engine and the CLI's human summaries; JSON keeps exact bytes.
public func formatSize(_ bytes: Int64) -> String {
    if bytes >= 1024 && bytes & (bytes - 1) == 0 {
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var value = bytes >> 10
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value >>= 10
            unit += 1
        }
        return "\(value) \(units[unit])"
    }
    if bytes < 1000 { return "\(bytes) B" }
    let units = ["kB", "MB", "GB", "TB", "PB", "EB"]
    var value = Double(bytes) / 1000
    var unit = 0
    // Rounding to one decimal may carry to 1000.0: move up a unit then too ("1.0 MB", not "1000.0 kB").
    while value >= 999.95 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return String(format: "%.1f %@", value, units[unit])
}
