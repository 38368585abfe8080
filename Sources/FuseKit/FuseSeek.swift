#if canImport(Glibc)
import Glibc
#endif

/// The `whence` values of ``FuseFilesystem/seek(_:node:handle:offset:whence:)`` (Linux's `SEEK_DATA` and
/// `SEEK_HOLE`, which glibc's headers hide from Swift behind `_GNU_SOURCE`).
public enum FuseSeek {
    public static let data: Int32 = 3
    public static let hole: Int32 = 4
}
