import NIOCore
import SigV4
import Synchronization

/// A remote copy of a domain's items: an HTTP(S) server or an S3 bucket (CONTRACT §10).
///
/// Every method is async and never blocks a thread; cancelling the calling task abandons the request within
/// 100 ms. Errors are ``OriginFailure`` or `CancellationError`.
public protocol RemoteOrigin: Sendable {
    /// Reads `range` of `item` in one ranged request, retried as ``OriginPolicy`` allows from the first byte
    /// not yet delivered, pinned to the version the first response told.
    ///
    /// - Parameters:
    ///   - version: The version the bytes must be (HTTP: `If-Match`; S3: `versionId`, or `If-Match` for a
    ///     quoted ETag). nil reads whatever the origin holds and learns the version from the response.
    ///   - object: Called once, before any byte, with the item's size and version as the response tells
    ///     them. A range that starts at or past the end calls it and delivers nothing.
    ///   - deliver: Receives the bytes in order without gaps or repeats: `offset` is the item offset of the
    ///     first byte. The range is clamped to the item's size.
    func read(
        _ item: String, range: Range<Int64>, version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (_ offset: Int64, _ bytes: RemoteBytes) async throws -> Void
    ) async throws

    /// Whether one request can carry several ranges (HTTP: yes; S3: no): prefetch sends scattered runs together
    /// only where this holds.
    ///
    /// An HTTP origin answers true until its server once sends a whole item in answer to several ranges (nginx
    /// with `max_ranges` below their count, a server without multi-range support); from then on, false.
    var readsManyRanges: Bool { get }

    /// Reads several ranges of `item`, in as few requests as the origin allows: on HTTP, one `GET` with
    /// `Range: bytes=a-b,c-d,…` per 64 ranges (the requests go one after another; a caller wanting them at
    /// once splits the list); elsewhere one ranged read after another.
    ///
    /// The single-range ``read(_:range:version:object:deliver:)`` holds for the whole list: retries as
    /// ``OriginPolicy`` allows, asking again only for the bytes still missing, and one version pin across
    /// every request. Whatever a server does with the ranges (answers them in a multipart body, joins or
    /// reorders them, honours only the first, or sends the whole item), only the bytes asked for are
    /// delivered, and those it left out are asked again.
    ///
    /// - Parameters:
    ///   - ranges: Non-empty, sorted and disjoint (touching is fine), each range non-empty and at or after byte
    ///     0; otherwise ``RangeListError`` is thrown before any request.
    ///   - version: As for the single-range read.
    ///   - object: Called once, before any byte, with the item's size and version.
    ///   - deliver: Receives every byte of every range, clamped to the item's size, exactly once, in ascending
    ///     offset order: `offset` is the item offset of the first byte. No byte outside the ranges is given.
    func read(
        _ item: String, ranges: [Range<Int64>], version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (_ offset: Int64, _ bytes: RemoteBytes) async throws -> Void
    ) async throws

    /// Whether a read of `version` gets that version even after the item moved on (an S3 `VersionId`: a
    /// versioned bucket keeps older versions), rather than failing with ``OriginFailure/versionChanged(current:)``
    /// (an HTTP ETag or date, an S3 ETag: only the current version is served).
    func addresses(_ version: String) -> Bool

    /// The item's size and version without its bytes (`HEAD`, S3 `HeadObject`), for where no range is read.
    func head(_ item: String, version: String?) async throws -> RemoteObject

    /// Opens a connection to the origin ahead of the first read, and runs the client's code once (its first
    /// request costs milliseconds of one-time setup): a GET of the first byte of `item` (any item the origin
    /// has), whose answer, whatever it is, is read to its end so the connection stays open for the next
    /// request; without an item, a `HEAD` of the base. A failure is left for the first read to meet.
    func warmUp(probing item: String?) async

    /// Every item below the base or prefix, a page at a time (nginx `autoindex_format json`, walked
    /// recursively; S3 `ListObjectsV2`, following continuation tokens).
    func list(page: @Sendable ([RemoteEntry]) async throws -> Void) async throws
}

extension RemoteOrigin {
    /// False: one range per request (S3 does not take several ranges in one `GetObject`).
    public var readsManyRanges: Bool { false }

    /// The ranges one after another, each with the single-range read, pinned to the version the first told.
    public func read(
        _ item: String, ranges: [Range<Int64>], version: String?,
        object: @Sendable (RemoteObject) async throws -> Void,
        deliver: @Sendable (_ offset: Int64, _ bytes: RemoteBytes) async throws -> Void
    ) async throws {
        try RangeList.check(ranges, of: item)
        let told = Mutex<RemoteObject?>(nil)
        for range in ranges {
            let known = told.withLock { $0 }
            if let known, range.lowerBound >= known.size { return }
            try await read(
                item, range: range, version: known?.version ?? version,
                object: { current in
                    guard told.withLock({ $0 == nil }) else { return }
                    told.withLock { $0 = current }
                    try await object(current)
                }, deliver: deliver)
        }
    }
}
