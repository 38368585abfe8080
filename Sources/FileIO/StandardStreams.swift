#if canImport(Glibc)
import Glibc
#endif

extension FileDescriptor {
    /// The process's standard error stream (descriptor 2): where progress lines and error messages go.
    public static let standardError = FileDescriptor(rawValue: STDERR_FILENO)
}
