import Foundation
import Synchronization

/// What a fetch has downloaded from its domain's origin so far (<doc:Contract#10-Origins-the-cold-path>), updated while
/// it runs: give one in ``FetchRequest/progress`` to show progress, read it from any thread.
public final class DownloadProgress: Sendable, Hashable {
    private let bytes = Atomic<Int64>(0)
    private let requests = Atomic<Int>(0)
    /// The caller's counters, which a fetch's own counters pass every figure on to.
    private let forward: DownloadProgress?
    /// The `Progress` of a completion-handler fetch, in bytes of its retrieved range.
    private let fetch: FetchProgress?
    /// Told of each piece received, with its offset: a trace's prefetch notes what it downloaded.
    private let observer: (@Sendable (Int, Int64) -> Void)?

    public init() {
        forward = nil
        fetch = nil
        observer = nil
    }

    /// Counters that tell `observer` the length and offset of each piece received.
    init(observing observer: @escaping @Sendable (Int, Int64) -> Void) {
        forward = nil
        fetch = nil
        self.observer = observer
    }

    /// Counters of one fetch that count into `forward` too and move `fetch`'s `Progress`.
    init(forwardingTo forward: DownloadProgress?, reporting fetch: FetchProgress) {
        self.forward = forward
        self.fetch = fetch
        observer = nil
    }

    /// Bytes received from the origin.
    public var downloadedBytes: Int64 { bytes.load(ordering: .relaxed) }
    /// Requests made to the origin.
    public var originRequests: Int { requests.load(ordering: .relaxed) }

    /// Counts `count` bytes received from the origin, of the item's bytes from `offset` on.
    func received(_ count: Int, at offset: Int64) {
        bytes.add(Int64(count), ordering: .relaxed)
        forward?.received(count, at: offset)
        fetch?.downloaded(count, at: offset)
        observer?(count, offset)
    }

    /// Counts a request made to the origin.
    func requested() {
        requests.add(1, ordering: .relaxed)
        forward?.requested()
    }

    /// Notes that the fetch retrieves `range`, once the plan or the origin's answer knows it.
    func expect(_ range: ByteRange) {
        fetch?.expect(range)
    }

    public static func == (lhs: DownloadProgress, rhs: DownloadProgress) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
