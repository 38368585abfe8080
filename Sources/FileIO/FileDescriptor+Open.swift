#if canImport(Glibc)
import Glibc
#endif

/// One buffer of a vectored write (`struct iovec`): its start (`iov_base`) and length (`iov_len`), as
/// ``FileDescriptor/writeAll(toAbsoluteOffset:vectors:)`` takes them.
public typealias IOVector = iovec

extension IOVector {
    /// The `count` bytes at `bytes`.
    public init(_ bytes: UnsafeMutableRawPointer, count: Int) { self.init(iov_base: bytes, iov_len: count) }
}

extension FileDescriptor {
    /// Whether a file is opened for reading, writing or both: the `O_ACCMODE` bits of the open flags.
    public enum AccessMode: Sendable, Hashable {
        /// Reading only (`O_RDONLY`).
        case readOnly
        /// Writing only (`O_WRONLY`).
        case writeOnly
        /// Reading and writing (`O_RDWR`).
        case readWrite

        /// The mode's flag.
        public var rawValue: Int32 {
            switch self {
            case .readOnly: O_RDONLY
            case .writeOnly: O_WRONLY
            case .readWrite: O_RDWR
            }
        }

        /// The access mode of the open flags `flags` (as `open(2)` takes them, and FUSE's `OPEN` passes them
        /// on); `nil` for the invalid `O_ACCMODE` value 3.
        public init?(openFlags flags: Int32) {
            switch flags & O_ACCMODE {
            case O_RDONLY: self = .readOnly
            case O_WRONLY: self = .writeOnly
            case O_RDWR: self = .readWrite
            default: return nil
            }
        }
    }

    /// How ``open(_:_:options:mode:retryOnInterrupt:)`` treats a missing or existing file.
    public struct OpenOptions: OptionSet, Sendable {
        /// The flag bits.
        public let rawValue: Int32
        /// The options whose bits are `rawValue`.
        public init(rawValue: Int32) { self.rawValue = rawValue }

        /// Create the file when it is missing (`O_CREAT`), with the mode given.
        public static let create = OpenOptions(rawValue: O_CREAT)
        /// With ``create``, fail with `EEXIST` when the file exists (`O_EXCL`).
        public static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        /// Cut an existing regular file to length 0 (`O_TRUNC`).
        public static let truncate = OpenOptions(rawValue: O_TRUNC)
    }

    /// Opens `path` for `access`, as `options` say (and with `mode` when creating); close-on-exec.
    ///
    /// - Throws: ``Errno``: `ENOENT` when `path` is missing without ``OpenOptions/create``, `EEXIST` when it
    ///   exists with ``OpenOptions/exclusiveCreate``, `EACCES` when the access is denied, `EISDIR` when
    ///   writing a folder.
    ///
    /// Uses the `open(2)` system call.
    public static func open(
        _ path: String, _ access: AccessMode, options: OpenOptions = [], mode: mode_t = 0o600,
        retryOnInterrupt: Bool = true
    ) throws(Errno) -> FileDescriptor {
        try open(path, access.rawValue | options.rawValue, mode: mode, retryOnInterrupt: retryOnInterrupt)
    }

    /// Standard input, descriptor 0.
    public static let standardInput = FileDescriptor(rawValue: STDIN_FILENO)
    /// Standard output, descriptor 1.
    public static let standardOutput = FileDescriptor(rawValue: STDOUT_FILENO)
    /// Standard error, descriptor 2.
    public static let standardError = FileDescriptor(rawValue: STDERR_FILENO)

    /// Makes `target` a second descriptor of this one's open file, closing what `target` had open first;
    /// `target` is not close-on-exec. Nothing changes when the two are the same descriptor.
    ///
    /// - Throws: ``Errno``: `EBADF` when this descriptor is not open.
    ///
    /// Uses the `dup2(2)` system call.
    public func duplicate(as target: FileDescriptor) throws(Errno) {
        _ = try valueOrErrno { dup2(rawValue, target.rawValue) }
    }

    /// Reads up to `buffer.count` bytes from the file's current position, returning how many were read (0 at
    /// end of file): for files read in order, such as the kernel's `/proc` files, pipes and terminals.
    ///
    /// Uses the `read(2)` system call.
    public func read(into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }
}
