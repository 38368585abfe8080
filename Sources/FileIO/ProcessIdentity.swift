#if canImport(Glibc)
import Glibc
#endif

extension ThisProcess {
    /// This process's id, from `getpid(2)`: part of temporary files' names, so two processes never make the same.
    public static var id: Int32 { getpid() }
}
