import ChunkCache
import Synchronization

/// Reads of open files that timed out waiting for the origin, by handle. When a read-ahead the kernel sent
/// fails, the kernel reads the page the program wanted again, at once, as a read of its own: without this
/// it would wait a whole read timeout more, one bounded wait per read becoming two (CONTRACT §13). A read
/// that overlaps one that timed out on the same handle just before fails at once.
final class TimedOutReads: Sendable {
    private let failed = Mutex<[UInt64: (range: Range<Int64>, at: ContinuousClock.Instant)]>([:])
    /// How long a timeout answers the reads that overlap it: the kernel's retry comes at once.
    static let memory: Duration = .seconds(2)

    /// Notes that the read of `range` through `handle` timed out now.
    func note(_ handle: UInt64, _ range: Range<Int64>) {
        failed.withLock { $0[handle] = (range, .now) }
    }

    /// Whether a read of `range` through `handle` overlaps one that timed out within ``memory``.
    func justFailed(_ handle: UInt64, _ range: Range<Int64>) -> Bool {
        failed.withLock { failed in
            guard let last = failed[handle] else { return false }
            return last.range.overlaps(range) && ContinuousClock.now - last.at < Self.memory
        }
    }

    /// The handle was closed.
    func forget(_ handle: UInt64) { _ = failed.withLock { $0.removeValue(forKey: handle) } }
}
