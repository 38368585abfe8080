import NIOCore
import SigV4

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
