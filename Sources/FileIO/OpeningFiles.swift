#if canImport(Glibc)
import Glibc
#endif

extension FileDescriptor {
    /// What an ``open(_:for:mode:)`` is for: whether it reads or writes, and what it does with a file that is
    /// there or not. Each closes on `exec` (`O_CLOEXEC`), so no child process inherits the descriptor.
    public enum OpenIntent: Sendable, Hashable {
        /// Read a file that exists (`O_RDONLY`).
        case read
        /// Write a file from its start, made when missing and emptied when there (`O_WRONLY | O_CREAT | O_TRUNC`).
        case replace
        /// Read and write a file that must not exist yet: one that does is ``Errno/fileExists``
        /// (`O_RDWR | O_CREAT | O_EXCL`).
        case createNew

        /// The `open(2)` flags of the intent.
        var flags: Int32 {
            switch self {
            case .read: O_RDONLY | O_CLOEXEC
            case .replace: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
            case .createNew: O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC
            }
        }
    }

    /// Opens `path` for `intent`, without naming the platform's `open(2)` flags.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - intent: Read, replace or create a new file.
    ///   - mode: The permissions of a file the open makes (before the umask).
    /// - Throws: `Errno` from `open(2)`: ``Errno/noSuchFile`` for a missing file read, ``Errno/fileExists`` for
    ///   ``OpenIntent/createNew`` of one that is there.
    public static func open(_ path: String, for intent: OpenIntent, mode: mode_t = 0o600) throws(Errno)
        -> FileDescriptor
    {
        try open(path, intent.flags, mode: mode)
    }
}
