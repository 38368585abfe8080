#if canImport(Glibc)
import Glibc
#endif

/// One buffer of a gathered write, ``FileDescriptor/writeAll(toAbsoluteOffset:vectors:)``: the platform's
/// `iovec`, named so callers need not import the platform's C library.
public typealias IOVector = iovec

extension IOVector {
    /// The `count` bytes at `bytes`.
    public init(_ bytes: UnsafeMutableRawPointer, count: Int) { self.init(iov_base: bytes, iov_len: count) }
}
