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
