#if canImport(Glibc)
import Glibc
#endif

/// The clocks measurements read: the system's monotonic clock, and this process's CPU time.
public enum Clocks {
    /// Nanoseconds since an arbitrary fixed point (boot) on `CLOCK_MONOTONIC`, which is never set back: what
    /// latencies and rates are timed with. Inlined into the caller, so timing a call costs only the clock's read.
    ///
    /// Uses the `clock_gettime(2)` system call (served by the vDSO, without entering the kernel).
    @inlinable @inline(__always)
    public static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// The CPU time this process has used, in seconds: user and system, of every thread (reads included,
    /// waiting for the disk not).
    ///
    /// Uses the `clock_gettime(2)` system call with `CLOCK_PROCESS_CPUTIME_ID`.
    public static func processCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
