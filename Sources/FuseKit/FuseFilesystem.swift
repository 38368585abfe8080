#if canImport(Glibc)
import Glibc
#endif

/// A read-only file system served through ``FuseSession``: libfuse's low-level operations, one method each,
/// with nodes named by number (`1` is the root).
///
/// Every method but ``forget(_:lookups:)`` gets a ``FuseRequest`` it must answer exactly once, at once or
/// later from another thread. The methods are called on the session's threads, several at once.
public protocol FuseFilesystem: AnyObject, Sendable {
    /// Called once the kernel and libfuse have agreed on the protocol, before any request.
    func configure(_ connection: inout FuseConnection)
    /// Looks `name` up in the folder `parent`; a found entry adds one lookup to its node.
    func lookup(_ request: FuseRequest, parent: UInt64, name: String)
    /// The kernel dropped `lookups` of its lookups of `node`; at zero it no longer names the node.
    func forget(_ node: UInt64, lookups: UInt64)
    func attributes(_ request: FuseRequest, node: UInt64)
    func readLink(_ request: FuseRequest, node: UInt64)
    func open(_ request: FuseRequest, node: UInt64, flags: Int32)
    func read(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, size: Int)
    func release(_ request: FuseRequest, node: UInt64, handle: UInt64)
    /// `lseek` with `SEEK_DATA` or `SEEK_HOLE` (`whence`) from `offset`; the kernel answers the other kinds.
    func seek(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, whence: Int32)
    func openDirectory(_ request: FuseRequest, node: UInt64)
    /// Lists the folder from `offset` (0, or an offset an earlier answer gave) into at most `size` bytes.
    func readDirectory(_ request: FuseRequest, node: UInt64, handle: UInt64, offset: Int64, size: Int)
    func releaseDirectory(_ request: FuseRequest, node: UInt64, handle: UInt64)
    func filesystemStatus(_ request: FuseRequest, node: UInt64)
    /// The value of the extended attribute `name`; with `size` 0, its length.
    func extendedAttribute(_ request: FuseRequest, node: UInt64, name: String, size: Int)
    /// The names of the extended attributes, each ending in a NUL; with `size` 0, their length.
    func extendedAttributeNames(_ request: FuseRequest, node: UInt64, size: Int)
    func setExtendedAttribute(_ request: FuseRequest, node: UInt64, name: String, value: UnsafeRawBufferPointer)
}

/// The `whence` values of ``FuseFilesystem/seek(_:node:handle:offset:whence:)`` (Linux's `SEEK_DATA` and
/// `SEEK_HOLE`, which glibc's headers hide from Swift behind `_GNU_SOURCE`).
public enum FuseSeek {
    public static let data: Int32 = 3
    public static let hole: Int32 = 4
}

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

/// The feature bits of ``FuseConnection/wanted`` (`FUSE_CAP_…` of libfuse 3.14).
public enum FuseCapabilities {
    /// Several reads of one file in flight at once (read-ahead among them).
    public static let asyncRead: UInt32 = 1 << 0
    /// The kernel drops a file's pages when its size or modification time changes.
    public static let autoInvalidateData: UInt32 = 1 << 12
    /// `READDIRPLUS`: listings carry each entry's attributes.
    public static let readdirPlus: UInt32 = 1 << 13
    /// Let the kernel choose between `READDIR` and `READDIRPLUS`.
    public static let readdirPlusAuto: UInt32 = 1 << 14
    /// Lookups and listings of one folder at once.
    public static let parallelDirectoryOperations: UInt32 = 1 << 18
    /// The kernel caches link targets.
    public static let cacheSymlinks: UInt32 = 1 << 23
    /// A file's pages are dropped only when the file system says so.
    public static let explicitInvalidateData: UInt32 = 1 << 25
}
