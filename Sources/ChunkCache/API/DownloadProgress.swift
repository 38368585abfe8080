import Synchronization

/// What a fetch has downloaded from its domain's origin so far (CONTRACT §10), updated while it runs: give one
/// in ``FetchRequest/progress`` to show progress, read it from any thread.
public final class DownloadProgress: Sendable, Hashable {
    let bytes = Atomic<Int64>(0)
    let requests = Atomic<Int>(0)

    public init() {}

    /// Bytes received from the origin.
    public var downloadedBytes: Int64 { bytes.load(ordering: .relaxed) }
    /// Requests made to the origin.
    public var originRequests: Int { requests.load(ordering: .relaxed) }

    public static func == (lhs: DownloadProgress, rhs: DownloadProgress) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
