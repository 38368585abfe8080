import FileIO

/// The clock every latency here is measured with: FileIO's ``Clocks/monotonicNanoseconds()``.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary fixed point (boot), on `CLOCK_MONOTONIC`.
    @inline(__always)
    public static func nanoseconds() -> UInt64 { Clocks.monotonicNanoseconds() }
}
