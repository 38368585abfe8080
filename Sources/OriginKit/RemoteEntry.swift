import NIOCore
import SigV4

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
