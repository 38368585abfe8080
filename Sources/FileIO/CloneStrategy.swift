import CLinuxShims

#if canImport(Glibc)
import Glibc
#endif

/// How a file's bytes were copied to another file.
public enum CloneStrategy: String, Sendable, CaseIterable, Codable {
    /// The destination shares the source's blocks (`FICLONE`).
    case reflink
    /// The kernel copied the data ranges (`copy_file_range(2)`).
    case copyRange
    /// Plain `pread`/`pwrite` of the data ranges.
    case readWrite
}
