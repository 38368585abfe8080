import NIOCore
import SigV4

/// What an origin says an item is, from a ranged `GET`'s headers or a `HEAD` (CONTRACT §10).
public struct RemoteObject: Sendable, Hashable {
    /// The whole item's size in bytes (from `Content-Range: bytes a-b/SIZE`, `*/SIZE` on a 416, or
    /// `Content-Length` of a whole-body response).
    public var size: Int64
    /// The content version: the strong `ETag` exactly as sent (quotes included); on S3 the `VersionId` of a
    /// versioned bucket; with neither, `Last-Modified` and the size (``fallbackVersion(lastModified:size:)``).
    public var version: String

    public init(size: Int64, version: String) {
        self.size = size
        self.version = version
    }

    /// The version of an HTTP item that has no strong ETag: its `Last-Modified` date and size, which change
    /// with the content on every server worth reading from.
    public static func fallbackVersion(lastModified: String, size: Int64) -> String {
        "\(lastModified); \(size) bytes"
    }
}

/// One item an origin lists (for `domain sync`, CONTRACT §11).
public struct RemoteEntry: Sendable, Hashable {
    /// The item's identifier: its path below the origin's base or prefix, `/`-separated, not percent-encoded.
    public var item: String
    public var size: Int64
    /// The version when the listing tells it (S3's ETag; for nginx, the ETag nginx derives from the
    /// modification time and size); nil when it cannot be told.
    public var version: String?
    /// When the item was last modified, in seconds since 1970, when the listing says.
    public var modificationDate: Double?

    public init(item: String, size: Int64, version: String?, modificationDate: Double? = nil) {
        self.item = item
        self.size = size
        self.version = version
        self.modificationDate = modificationDate
    }
}

/// Why an origin request failed, after the retries the failure allows. The engine maps each to the
/// `CacheError` code CONTRACT §10 names.
public enum OriginFailure: Error, Sendable, Hashable {
    /// 404 or 410 for the item itself: the only answer that means the item is gone (C2).
    case notFound(status: Int)
    /// 401.
    case unauthorized
    /// 403.
    case forbidden
    /// The item's bytes are no longer the version asked for: a 412 to `If-Match`, or a response whose
    /// version differs. `current` is what the origin holds now, when the response told it.
    case versionChanged(current: RemoteObject?)
    /// Connection refused, name not resolved, TLS failure, connect timeout or idle timeout. `detail` names
    /// the host and what happened, never a credential or a signed URL.
    case unreachable(detail: String)
    /// 5xx, 429, a reset or a short body, still failing after the last try.
    case transient(detail: String)
    /// A response that breaks HTTP or S3 (a `Content-Range` for other bytes, a size that changed within one
    /// version, an unparseable listing).
    case invalidResponse(detail: String)
}

/// Timeouts and retries of origin requests (CONTRACT §10). Tests shorten them; nothing else should.
public struct OriginPolicy: Sendable, Hashable {
    /// Connecting (TCP and TLS) gives up after this.
    public var connectTimeout: Duration = .seconds(5)
    /// A response that sends nothing for this long is abandoned.
    public var idleTimeout: Duration = .seconds(30)
    /// Tries of one request, the first included.
    public var attempts = 3
    /// The first retry waits about this long; each next one twice as long, with jitter.
    public var backoff: Duration = .milliseconds(200)
    /// A `Retry-After` longer than this is capped to it.
    public var maxRetryAfter: Duration = .seconds(10)

    public init() {}
}

/// Where an origin is and how to authenticate to it.
public struct OriginEndpoint: Sendable {
    public enum Location: Sendable, Hashable {
        /// `http[s]://host[:port]/base/`, ending with `/`.
        case http(base: String)
        /// Path-style S3: `endpoint` is `http[s]://host[:port]`; `prefix` is empty or ends with `/`.
        case s3(endpoint: String, region: String, bucket: String, prefix: String)
    }

    public var location: Location
    /// Sent with every request (`Authorization: Bearer …` and the like). Values are credentials.
    public var headers: [(name: String, value: String)]
    /// For S3 only: what requests are signed with; nil sends them unsigned.
    public var credentials: AWSCredentials?
    public var policy: OriginPolicy

    public init(
        location: Location, headers: [(name: String, value: String)] = [], credentials: AWSCredentials? = nil,
        policy: OriginPolicy = OriginPolicy()
    ) {
        self.location = location
        self.headers = headers
        self.credentials = credentials
        self.policy = policy
    }
}

/// Bytes an origin delivered, valid while the `deliver` closure that received them runs.
public struct RemoteBytes: Sendable {
    let buffer: ByteBuffer

    public init(_ buffer: ByteBuffer) { self.buffer = buffer }

    public var count: Int { buffer.readableBytes }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try buffer.withUnsafeReadableBytes(body)
    }
}

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
