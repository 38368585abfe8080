import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// The kind of a file: regular file, folder, symbolic link, and the special kinds.
public struct FileKind: Sendable, Hashable, CustomStringConvertible {
    /// The `DT_*` value of `d_type`.
    public let rawValue: UInt8

    /// The kind whose `DT_*` value is `rawValue`.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The kind `readdir` reports in `d_type`.
    public init(directoryEntryType: UInt8) { rawValue = directoryEntryType }

    /// The kind of a `stat`'s `st_mode` (its `S_IFMT` bits).
    public init(mode: mode_t) {
        // The DT_* values are the S_IFMT bits shifted right by 12 (see `IFTODT` in dirent.h).
        rawValue = UInt8(truncatingIfNeeded: (mode & S_IFMT) >> 12)
    }

    /// The filesystem did not say (`DT_UNKNOWN`): `lstat` the entry to learn it.
    public static let unknown = FileKind(rawValue: UInt8(DT_UNKNOWN))
    /// A regular file (`DT_REG`, `S_IFREG`).
    public static let regular = FileKind(rawValue: UInt8(DT_REG))
    /// A folder (`DT_DIR`, `S_IFDIR`).
    public static let directory = FileKind(rawValue: UInt8(DT_DIR))
    /// A symbolic link (`DT_LNK`, `S_IFLNK`).
    public static let symbolicLink = FileKind(rawValue: UInt8(DT_LNK))
    /// A named pipe (`DT_FIFO`, `S_IFIFO`): opening or reading it can block.
    public static let fifo = FileKind(rawValue: UInt8(DT_FIFO))
    /// A Unix socket (`DT_SOCK`, `S_IFSOCK`).
    public static let socket = FileKind(rawValue: UInt8(DT_SOCK))
    /// A character device (`DT_CHR`, `S_IFCHR`).
    public static let characterDevice = FileKind(rawValue: UInt8(DT_CHR))
    /// A block device (`DT_BLK`, `S_IFBLK`).
    public static let blockDevice = FileKind(rawValue: UInt8(DT_BLK))

    /// The kind in words, for messages.
    public var description: String {
        switch self {
        case .regular: "regular file"
        case .directory: "directory"
        case .symbolicLink: "symbolic link"
        case .fifo: "FIFO"
        case .socket: "socket"
        case .characterDevice: "character device"
        case .blockDevice: "block device"
        default: "unknown"
        }
    }
}
