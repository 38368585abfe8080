import Foundation
import Synchronization

/// What a fetch has downloaded from its domain's origin so far (CONTRACT §10), updated while it runs: give one
/// in ``FetchRequest/progress`` to show progress, read it from any thread.
public final class DownloadProgress: Sendable, Hashable {
    private let bytes = Atomic<Int64>(0)
    private let requests = Atomic<Int>(0)
    /// The caller's counters, which a fetch's own counters pass every figure on to.
    private let forward: DownloadProgress?
    /// The `Progress` of a completion-handler fetch, in bytes of its retrieved range.
    private let fetch: FetchProgress?

    public init() {
        forward = nil
        fetch = nil
    }

    /// Counters of one fetch that count into `forward` too and move `fetch`'s `Progress`.
    init(forwardingTo forward: DownloadProgress?, reporting fetch: FetchProgress) {
        self.forward = forward
        self.fetch = fetch
    }

    /// Bytes received from the origin.
    public var downloadedBytes: Int64 { bytes.load(ordering: .relaxed) }
    /// Requests made to the origin.
    public var originRequests: Int { requests.load(ordering: .relaxed) }

    /// Counts `count` bytes received from the origin.
    func received(_ count: Int) {
        let total = bytes.wrappingAdd(Int64(count), ordering: .relaxed).newValue
        forward?.received(count)
        fetch?.downloaded(total)
    }

    /// Counts a request made to the origin.
    func requested() {
        requests.add(1, ordering: .relaxed)
        forward?.requested()
    }

    /// Notes that the fetch is retrieving `length` bytes (its retrieved range), once the plan knows it.
    func expect(_ length: Int64) {
        fetch?.expect(length)
    }

    public static func == (lhs: DownloadProgress, rhs: DownloadProgress) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The `Progress` a completion-handler fetch returns, counted in bytes of the retrieved range: the total is
/// the range's length once the fetch has planned it (indeterminate, -1, before); the completed count follows
/// the bytes downloaded for it while it is cold, never past the total and never backwards, and equals the
/// total when the file is returned (bytes the store already held count then: assembling them is local and
/// brief, downloading is what takes time).
final class FetchProgress: Sendable {
    /// Unit counts are set under this lock, so concurrent downloads never move them backwards.
    private let state = Mutex<(total: Int64?, completed: Int64)>((nil, 0))
    nonisolated(unsafe) let progress: Progress

    init() {
        progress = Progress(totalUnitCount: -1)
    }

    /// The retrieved range is `length` bytes.
    func expect(_ length: Int64) {
        state.withLock { state in
            guard state.total != length else { return }
            state.total = length
            progress.totalUnitCount = length
            advance(&state, to: min(state.completed, length))
        }
    }

    /// `total` bytes have been downloaded so far.
    func downloaded(_ total: Int64) {
        state.withLock { state in advance(&state, to: state.total.map { min(total, $0) } ?? total) }
    }

    /// The fetch returned a file holding `length` bytes.
    func finish(_ length: Int64) {
        state.withLock { state in
            state.total = length
            progress.totalUnitCount = length
            state.completed = length
            progress.completedUnitCount = length
        }
    }

    private func advance(_ state: inout (total: Int64?, completed: Int64), to completed: Int64) {
        guard completed > state.completed else { return }
        state.completed = completed
        progress.completedUnitCount = completed
    }
}
