#if canImport(Glibc)
import Glibc
#endif

/// Facts about, and acts on, the running process and thread that are not about files.
public enum ThisProcess {
    /// The size of a memory page.
    ///
    /// Uses the `sysconf(3)` library call (`_SC_PAGESIZE`).
    public static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }

    /// Blocks the calling thread for `duration`, for a pause on a thread that may block (the store's writer
    /// queue, never a task of the cooperative pool).
    ///
    /// Uses the `nanosleep(2)` system call, continuing after an interrupting signal.
    public static func sleepBlocking(for duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
