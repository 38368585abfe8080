#if canImport(Glibc)
import Glibc
#endif

/// What the kernel and libfuse agreed on, and what the file system asks of them (`struct fuse_conn_info`).
public struct FuseConnection: Sendable {
    /// How far the kernel reads ahead of a sequential reader, in bytes.
    public var maxReadahead: UInt32
    /// How many requests the kernel keeps in flight in the background (read-ahead among them).
    public var maxBackground: UInt32
    /// Features wanted (`FUSE_CAP_…`) and those the kernel offers.
    public var wanted: UInt32
    public let capable: UInt32
}
