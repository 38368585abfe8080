#if canImport(Glibc)
import Glibc
#endif

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
