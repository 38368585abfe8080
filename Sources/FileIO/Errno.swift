#if canImport(Glibc)
import Glibc
#endif

/// A POSIX error number, with the call that returned it.
public struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The current thread's `errno`.
    public static var current: Errno { Errno(rawValue: errno) }

    public static let noSuchFile = Errno(rawValue: ENOENT)
    public static let fileExists = Errno(rawValue: EEXIST)
    public static let permissionDenied = Errno(rawValue: EACCES)
    public static let notPermitted = Errno(rawValue: EPERM)
    public static let isDirectory = Errno(rawValue: EISDIR)
    public static let notDirectory = Errno(rawValue: ENOTDIR)
    public static let noSpace = Errno(rawValue: ENOSPC)
    public static let quotaExceeded = Errno(rawValue: EDQUOT)
    public static let readOnlyFilesystem = Errno(rawValue: EROFS)
    public static let interrupted = Errno(rawValue: EINTR)
    public static let crossDevice = Errno(rawValue: EXDEV)
    public static let notSupported = Errno(rawValue: EOPNOTSUPP)
    public static let invalidArgument = Errno(rawValue: EINVAL)
    public static let notImplemented = Errno(rawValue: ENOSYS)
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    public static let wouldBlock = Errno(rawValue: EWOULDBLOCK)
    /// `EAGAIN`: the same number as ``wouldBlock`` on Linux, for a failure worth retrying.
    public static let tryAgain = Errno(rawValue: EAGAIN)
    public static let inputOutput = Errno(rawValue: EIO)
    public static let timedOut = Errno(rawValue: ETIMEDOUT)
    /// `ENXIO`: no such device or address; `lseek`'s answer for no data or hole past the offset.
    public static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    /// `ENODATA`: no such extended attribute.
    public static let noData = Errno(rawValue: ENODATA)
    /// `ERANGE`: the result does not fit in the buffer given.
    public static let resultTooLarge = Errno(rawValue: ERANGE)

    /// The text of `strerror`.
    public var description: String { String(cString: strerror(rawValue)) }

    public static func ~= (pattern: Errno, value: any Error) -> Bool { (value as? Errno) == pattern }
}

/// Retries `body` while it fails with `EINTR`, returning its non-negative result or throwing `errno`.
@inline(__always)
func valueOrErrno<T: BinaryInteger>(retryOnInterrupt: Bool = true, _ body: () -> T) throws(Errno) -> T {
    while true {
        let value = body()
        if value >= 0 { return value }
        let error = Errno.current
        if retryOnInterrupt && error == .interrupted { continue }
        throw error
    }
}
