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
