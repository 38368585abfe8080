import Foundation

/// The bytes of a cold fetch's whole range, served from the download as they arrive, before they are stored (CONTRACT §10,
/// "store behind"): the fetch writes its file from them while the chunks are hashed, compressed and committed
/// behind it. Used only when one fetch downloads every chunk of its range and the range is small (a hand-off
/// of at most ``FetchThresholds/inlineBytes``).
///
/// A chunk whose hash the manifest knows is checked before it counts, so no wrong byte reaches the caller;
/// the SHA-256 runs on the blocking pool (``runBlocking(doing:store:_:)``), not the cooperative one.
final class DirectBytes: Sendable {
    private struct Gathered: Sendable {
        var bytes: [UInt8]
        var missing: Set<Int64>
        var failure: (any Error)?
    }

    /// The range, chunk-aligned at its start.
    let range: ByteRange
    private let shift: Int
    private let queue: WaitQueue<Gathered>
    /// The store's path, for the message of an error while hashing.
    private let storePath: String

    init(range: ByteRange, chunkShift: Int, store storePath: String) {
        self.range = range
        shift = chunkShift
        self.storePath = storePath
        let first = range.location >> chunkShift
        let last = (range.end - 1) >> chunkShift
        queue = WaitQueue(Gathered(bytes: [UInt8](repeating: 0, count: Int(range.length)), missing: Set(first...last)))
    }

    /// Whether chunk `index` is one of the range's.
    func wants(_ index: Int64) -> Bool {
        let offset = index << shift
        return offset >= range.location && offset < range.end
    }

    /// Takes a chunk's raw bytes, checked against `expected` when it is known.
    func take(_ index: Int64, _ raw: [UInt8], expected: ChunkDigest?) async {
        if let expected {
            let actual = try? await runBlocking(doing: "hashing chunk \(index)", store: storePath) {
                raw.withUnsafeBytes { isAllZero($0) ? nil : ChunkDigest(hashing: $0) }
            }
            // A mismatch: the sink finds it too and downloads it again; the fetch then waits for the store.
            guard actual == expected else { return }
        }
        let waiters = queue.withLock { gathered, waiters -> [WaitQueue<Gathered>.Waiter] in
            guard gathered.missing.remove(index) != nil else { return [] }
            let start = Int((index << shift) - range.location)
            gathered.bytes.replaceSubrange(start..<(start + raw.count), with: raw)
            guard gathered.missing.isEmpty else { return [] }
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Gives up: the fetch stops waiting here and waits for the store instead.
    func fail(_ error: any Error) {
        let waiters = queue.withLock { gathered, waiters -> [WaitQueue<Gathered>.Waiter] in
            guard gathered.failure == nil, !gathered.missing.isEmpty else { return [] }
            gathered.failure = error
            defer { waiters.removeAll() }
            return waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// The range's bytes once every chunk is in.
    func wait() async throws -> [UInt8] {
        try await queue.wait { gathered, _ in
            if let failure = gathered.failure { return .failure(failure) }
            return gathered.missing.isEmpty ? .success(()) : nil
        }
        return queue.withLock { gathered, _ in gathered.bytes }
    }
}
